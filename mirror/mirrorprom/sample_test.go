package mirrorprom

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// flat is a written metric as comparable values: its label pairs in
// order, and its counter or gauge value (NaN-free in these tests).
type flat struct {
	Labels  [][2]string
	Counter *float64
	Gauge   *float64
}

func flatten(t *testing.T, m prometheus.Metric) flat {
	t.Helper()
	var d dto.Metric
	if err := m.Write(&d); err != nil {
		t.Fatal(err)
	}
	var f flat
	for _, lp := range d.GetLabel() {
		f.Labels = append(f.Labels, [2]string{lp.GetName(), lp.GetValue()})
	}
	if d.Counter != nil {
		v := d.GetCounter().GetValue()
		f.Counter = &v
	}
	if d.Gauge != nil {
		v := d.GetGauge().GetValue()
		f.Gauge = &v
	}
	return f
}

// TestSampleMatchesConstMetric: a sample with partPairs writes the same
// labels (sorted by name) and value as client_golang's const metric of
// the same descriptor and label values, for a counter and a gauge.
func TestSampleMatchesConstMetric(t *testing.T) {
	src, dst, topic := "us-east", "eu-west", "us-east.orders"
	lp := partPairs(&src, &dst, &topic, "17")
	for _, tc := range []struct {
		name  string
		desc  *prometheus.Desc
		v     float64
		gauge bool
	}{
		{"counter", prometheus.NewDesc("kmirror_test_total", "test", partLabels, nil), 1234, false},
		{"gauge", prometheus.NewDesc("kmirror_test_seconds", "test", partLabels, nil), 2.5, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			typ := prometheus.CounterValue
			if tc.gauge {
				typ = prometheus.GaugeValue
			}
			want := flatten(t, prometheus.MustNewConstMetric(tc.desc, typ, tc.v, src, dst, topic, "17"))
			got := flatten(t, &sample{desc: tc.desc, labels: lp, v: tc.v, gauge: tc.gauge})
			if diff := cmp.Diff(want, got); diff != "" {
				t.Fatalf("sample differs from the const metric (-want +got):\n%s", diff)
			}
		})
	}
}
