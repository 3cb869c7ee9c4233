package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestTranslateRecordsFallback: a checkpoint written by MM2 (unknown
// translation, 6 -> 4) on a remote topic whose copies carry their source
// offsets: translate reports it as the checkpoint gives it; translate
// -records reports 6, exact, from the copies, the checkpoint's 4 kept;
// a checkpoint beyond what was replicated keeps its translation with the
// reason.
func TestTranslateRecordsFallback(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	remote := p.Source.Alias + ".orders"
	cps := p.Source.Alias + ".checkpoints.internal"
	testcluster.CreateTopic(t, &p.Target, remote, 2, nil)
	testcluster.CreateTopic(t, &p.Target, cps, 1, map[string]*string{"cleanup.policy": ptrTo("compact")})
	var copies []*kgo.Record
	for u := range 10 {
		copies = append(copies, &kgo.Record{Topic: remote, Partition: 0, Value: fmt.Appendf(nil, "%d", u),
			Headers: []kgo.RecordHeader{{Key: "kmirror-provenance", Value: fmt.Appendf(nil, "%s,#%d", p.Source.Alias, u)}}})
	}
	copies = append(copies, &kgo.Record{Topic: remote, Partition: 1, Value: []byte("x"),
		Headers: []kgo.RecordHeader{{Key: "kmirror-provenance", Value: fmt.Appendf(nil, "%s,#0", p.Source.Alias)}}})
	testcluster.Produce(t, &p.Target, copies...)
	group := p.Group("billing")
	var recs []*kgo.Record
	for _, c := range []checkpoint.Checkpoint{
		{Group: group, Topic: remote, Partition: 0, UpstreamOffset: 6, DownstreamOffset: 4},
		{Group: group, Topic: remote, Partition: 1, UpstreamOffset: 5, DownstreamOffset: 1},
	} {
		k, err := c.Key()
		if err != nil {
			t.Fatal(err)
		}
		v, err := c.Value()
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, &kgo.Record{Topic: cps, Key: k, Value: v}) // no kmirror-translation header: as MM2 writes
	}
	testcluster.Produce(t, &p.Target, recs...)
	props := writeVerifyProps(t, p.Source.Alias, p.Target.Alias, "127.0.0.1:1", strings.Join(p.Target.Brokers, ","), ".*")

	translate := func(args ...string) translateReport {
		t.Helper()
		code, out, errOut, _ := runDR(t, translateMain, append([]string{"-config", props, "-groups", group}, args...)...)
		if code != drOK {
			t.Fatalf("translate %q: exit %d\n%s\n%s", args, code, out, errOut)
		}
		var rep translateReport
		if len(args) > 0 && args[len(args)-1] == "-json" {
			if err := json.Unmarshal([]byte(out), &rep); err != nil {
				t.Fatal(err)
			}
		}
		return rep
	}
	plain := translate("-json")
	if ps := plain.Groups[0].Partitions; len(ps) != 2 || ps[0].Offset != 4 || ps[0].Translation != "unknown" || ps[0].From != "checkpoint" || ps[0].RecordFallback != "" {
		t.Errorf("without -records: %+v", ps)
	}
	rep := translate("-records", "-json")
	ps := rep.Groups[0].Partitions
	if len(ps) != 2 {
		t.Fatalf("partitions %+v", ps)
	}
	if g := ps[0]; g.SourceOffset != 6 || g.Offset != 6 || g.Translation != "exact" || g.Record != "record" || g.From != "record" ||
		g.CheckpointOffset != 4 || g.RereadMax != 0 {
		t.Errorf("partition 0 with -records: %+v, want 6 exact from the copies (checkpoint 4)", g)
	}
	if g := ps[1]; g.Offset != 1 || g.Translation != "unknown" ||
		g.RecordFallback != "the remote partition has not caught up with the source offset: the newest copy at 0 is of source offset 0, below 4" {
		t.Errorf("partition 1 with -records: %+v, want the checkpoint kept, not caught up", g)
	}
	if s := rep.Summary; s.Exact != 1 || s.FromRecords != 1 || s.Unknown != 1 {
		t.Errorf("summary %+v", s)
	}
	_, out, _, _ := runDR(t, translateMain, "-config", props, "-groups", group, "-records")
	for _, want := range []string{"exact (record; checkpoint 4)", "2 partition(s): 1 (1 from the copies) exact, 0 safe, 1 unknown"} {
		if !strings.Contains(out, want) {
			t.Errorf("table output lacks %q:\n%s", want, out)
		}
	}
}

func ptrTo[T any](v T) *T { return &v }
