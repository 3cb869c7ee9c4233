package mirror

import (
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestTailResumeProvenanceTrailingBackslash: source records whose
// provenance header value ends with a lone "\" (malformed: the reader keeps
// it as a literal backslash of the last ID) are copied, the resume point
// goes back to offset 0 (a crash), and the restart must recognize their
// copies as the flow's and resume after them ("ahead"): each copy's
// provenance must still name the source as its last hop (the stamp must
// not let the old value's backslash escape the comma before the source ID).
func TestTailResumeProvenanceTrailingBackslash(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	ts := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var topics []string
	for i, v := range []string{`\`, `up\`, `up\\\`, `a,b\`} {
		tt := p.Topic(fmt.Sprintf("bslash%d", i))
		topics = append(topics, tt)
		testcluster.CreateTopic(t, &p.Source, tt, 1, map[string]*string{"retention.ms": strp("-1")})
		testcluster.Produce(t, &p.Source, &kgo.Record{Topic: tt, Value: []byte("plain"), Timestamp: ts},
			&kgo.Record{Topic: tt, Value: []byte("odd"), Timestamp: ts, Headers: []kgo.RecordHeader{{Key: ProvenanceHeader, Value: []byte(v)}}})
	}
	fc := fastFlow(p)
	fc.Topics = topics
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicated(t, m, int64(2*len(topics)))
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	srcID := clusterID(t, &p.Source)
	for _, tt := range topics {
		recs := testcluster.ReadAll(t, &p.Target, p.Source.Alias+"."+tt)[0]
		if len(recs) != 2 {
			t.Fatalf("%s: %d records on the target, want 2", tt, len(recs))
		}
		h := recs[1].Headers
		if ids := ParseProvenance(h[len(h)-1].Value); len(ids) == 0 || ids[len(ids)-1] != srcID {
			t.Errorf("%s: copy's provenance %q parses as %q, want the source %q last", tt, h[len(h)-1].Value, ids, srcID)
		}
		rewindResumePoint(t, p, tt, 0)
	}
	m, _ = runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Eventually(t, 20*time.Second, "started", func() (bool, string) {
		c := tailCounts(m)
		var n int64
		for _, v := range c {
			n += v
		}
		return n == int64(len(topics)) && m.Status().Flows[0].Lag == 0, fmt.Sprint(c)
	})
	time.Sleep(500 * time.Millisecond)
	for _, tt := range topics {
		if got := len(testcluster.ReadAll(t, &p.Target, p.Source.Alias+"."+tt)[0]); got != 2 {
			t.Errorf("%s: the target holds %d records, want 2", tt, got)
		}
	}
	if c := tailCounts(m); c["ahead"] != int64(len(topics)) {
		t.Errorf("outcomes %v, want ahead %d", c, len(topics))
	}
}

// TestStampClosesTrailingEscape: both stamps (with and without the offset
// element) of a provenance value ending with an odd run of "\" keep the
// source as the copy's last hop, the earlier IDs as they were read.
func TestStampClosesTrailingEscape(t *testing.T) {
	pv := mustProv(t, "SRC", "DST")
	for _, v := range []string{`\`, `up\`, `up\\\`, `a,b\`, `up\\`, `up`} {
		was := ParseProvenance([]byte(v))
		h := []kgo.RecordHeader{{Key: ProvenanceHeader, Value: []byte(v)}}
		plain := pv.stamp(append([]kgo.RecordHeader{}, h...), 0)
		_, _, at := pv.stampAt(nil, nil, append([]kgo.RecordHeader{}, h...), 0, 7)
		for _, got := range [][]byte{plain[0].Value, at[0].Value} {
			want := fmt.Sprintf("%q", append(was, "SRC"))
			if ids := ParseProvenance(got); fmt.Sprintf("%q", ids) != want {
				t.Errorf("%q stamped %q: IDs %q, want %s", v, got, ids, want)
			}
		}
		if off, ok := ProvenanceOffset(at[0].Value); !ok || off != 7 {
			t.Errorf("%q stamped %q: offset %d %v, want 7", v, at[0].Value, off, ok)
		}
	}
}
