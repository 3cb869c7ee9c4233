package mirror

import (
	"context"
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestReadTailStarts reads real tails (kfake): a verified tail ahead of
// the resume point moves the start, and a tail behind it, a remote topic
// written without offsets (MM2), local writes after the flow's records, a
// tail past the source's end, and a tail whose source record differs each
// give the expected outcome.
func TestReadTailStarts(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Real {
		t.Skip("writes a remote topic by hand: kfake only (names are shared on real brokers)")
	}
	topic, remote := p.Topic("t"), p.Topic("src.t")
	testcluster.CreateTopic(t, &p.Source, topic, 6, nil)
	testcluster.CreateTopic(t, &p.Target, remote, 6, nil)
	pv := mustProv(t, "SRCID", "DSTID")
	var srcRecs []*kgo.Record
	for part := int32(0); part < 6; part++ {
		n := 50
		if part == 4 {
			n = 20
		}
		for i := 0; i < n; i++ {
			srcRecs = append(srcRecs, &kgo.Record{Topic: topic, Partition: part, Key: []byte(fmt.Sprint(i)), Value: []byte(fmt.Sprintf("v%d-%d", part, i))})
		}
	}
	testcluster.Produce(t, &p.Source, srcRecs...)
	srcOf := map[[2]int64]*kgo.Record{}
	for _, r := range testcluster.ReadAll(t, &p.Source, topic) {
		for _, x := range r {
			srcOf[[2]int64{int64(x.Partition), x.Offset}] = x
		}
	}
	copyOf := func(part int32, off int64, prov bool) *kgo.Record {
		s := srcOf[[2]int64{int64(part), off}]
		r := &kgo.Record{Topic: remote, Partition: part, Key: s.Key, Value: s.Value, Timestamp: s.Timestamp}
		if prov {
			_, _, r.Headers = pv.stampAt(nil, nil, nil, -1, off)
		}
		return r
	}
	var dst []*kgo.Record
	for i := int64(0); i < 50; i++ {
		dst = append(dst, copyOf(0, i, true)) // p0: copies of 0..49
	}
	for i := int64(0); i < 10; i++ {
		dst = append(dst, copyOf(1, i, true))  // p1: copies of 0..9
		dst = append(dst, copyOf(2, i, false)) // p2: copies without offsets
	}
	for i := int64(0); i < 6; i++ {
		dst = append(dst, copyOf(3, i, true)) // p3: copies of 0..5 ...
	}
	dst = append(dst, &kgo.Record{Topic: remote, Partition: 3, Value: []byte("local")}) // ... then a local write
	past := copyOf(4, 19, true)
	_, _, past.Headers = pv.stampAt(nil, nil, nil, -1, 30) // p4: claims offset 30 of a 20-record source
	dst = append(dst, past)
	other := copyOf(5, 3, true)
	other.Value = []byte("other") // p5: offset 3 with another value
	dst = append(dst, other)
	testcluster.Produce(t, &p.Target, dst...)

	parts := []tailPart{
		{tp{topic, 0}, remote, 10}, {tp{topic, 1}, remote, 20}, {tp{topic, 2}, remote, 3},
		{tp{topic, 3}, remote, -1}, {tp{topic, 4}, remote, 5}, {tp{topic, 5}, remote, 1},
	}
	got, err := readTailStarts(context.Background(), p.Target.Opts(), p.Source.Opts(), pv.src, true, parts)
	if err != nil {
		t.Fatal(err)
	}
	want := map[int32]tailStart{
		0: {after: 49, out: tailAhead, down: 49},
		1: {after: 20, out: tailBehind, down: -1},
		2: {after: 3, out: tailNone, down: -1},
		3: {after: 5, out: tailAhead, down: 5},
		4: {after: 5, out: tailPastEnd, down: -1},
		5: {after: 1, out: tailMismatch, down: -1},
	}
	for part, w := range want {
		if g := got[tp{topic, part}]; g != w {
			t.Errorf("partition %d: %+v (%v), want %+v (%v)", part, g, g.out, w, w.out)
		}
	}
	// An unreachable target: every partition falls back, and the error says
	// what could not be read.
	bad := append(append([]kgo.Opt{}, p.Target.Opts()...), kgo.SeedBrokers("127.0.0.1:1"), kgo.RequestRetries(0), kgo.RetryTimeout(1))
	ctx, cancel := context.WithTimeout(context.Background(), 3e9)
	defer cancel()
	got, err = readTailStarts(ctx, bad, p.Source.Opts(), pv.src, true, parts[:1])
	if err == nil || got[tp{topic, 0}] != (tailStart{after: 10, out: tailUnreadable, down: -1}) {
		t.Errorf("unreachable target: %+v, %v; want the resume point 10 (unreadable) and an error", got, err)
	}
}
