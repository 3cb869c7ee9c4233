package mirrorprom

import (
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// sample is one counter or gauge sample built at scrape time, like
// prometheus.MustNewConstMetric's, but with label pairs the caller built
// once for all of a partition's samples (partPairs): a scrape of an idle
// member at 6 000 partitions made 18 000 const metrics and their label
// pairs, 12 or more allocations each.
type sample struct {
	desc   *prometheus.Desc
	labels []*dto.LabelPair // sorted by name; shared, never modified
	v      float64
	gauge  bool
}

// Desc returns the sample's descriptor (prometheus.Metric).
func (s *sample) Desc() *prometheus.Desc { return s.desc }

// Write fills m with the sample's labels and value (prometheus.Metric).
func (s *sample) Write(m *dto.Metric) error {
	m.Label = s.labels
	if s.gauge {
		m.Gauge = &dto.Gauge{Value: &s.v}
	} else {
		m.Counter = &dto.Counter{Value: &s.v}
	}
	return nil
}

// partLabelNames are partLabels sorted by name, the order the registry
// wants label pairs in.
var partLabelNames = [4]string{"partition", "source", "target", "topic"}

// pairBlock holds one partition's label pairs in one allocation.
type pairBlock struct {
	pairs [4]dto.LabelPair
	ptrs  [4]*dto.LabelPair
	part  string
}

// partPairs returns the label pairs of partLabels (source, target, topic,
// partition) for one partition, sorted by name, in one allocation. The
// values point at *src, *dst and *topic, which must not change while a
// scrape uses them (Status's and partSeries' strings do not).
func partPairs(src, dst, topic *string, part string) []*dto.LabelPair {
	b := &pairBlock{part: part}
	vals := [4]*string{&b.part, src, dst, topic}
	for i := range b.pairs {
		b.pairs[i].Name = &partLabelNames[i]
		b.pairs[i].Value = vals[i]
		b.ptrs[i] = &b.pairs[i]
	}
	// Capacity 4: a wrapping registerer (prometheus.WrapRegistererWith)
	// that appends its labels copies the slice instead of sorting the
	// shared pairs in place.
	return b.ptrs[:len(b.ptrs):len(b.ptrs)]
}
