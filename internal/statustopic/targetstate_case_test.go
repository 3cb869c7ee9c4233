package statustopic

import (
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// TestTargetStateAnyCaseNormalized shows that a target-state record whose
// state is written in another case (by hand, say `{"state":"stopped"}`
// with a console producer; ParseTargetState accepts any case) reads as the
// canonical state. Before, DecodeTargetState accepted it but kept
// "stopped": the engine then stopped the units but not the singleton duties
// (it compares with STOPPED), and its members reported "stopped", so a
// failover waiting for STOPPED never saw it.
func TestTargetStateAnyCaseNormalized(t *testing.T) {
	for in, want := range map[string]TargetState{"stopped": Stopped, " Paused ": Paused, "running": Running} {
		rec, err := DecodeTargetState([]byte(`{"flow":"a->b","state":"` + in + `"}`))
		if err != nil || rec.State != want {
			t.Errorf("DecodeTargetState(state %q) = %q, %v; want %q", in, rec.State, err, want)
		}
		v := NewView()
		v.Apply(&kgo.Record{Key: []byte(TargetStateKey), Value: []byte(`{"flow":"a->b","state":"` + in + `"}`)})
		if got, found := v.TargetState(); !found || got.State != want {
			t.Errorf("View after state %q: %q (found %v), want %q", in, got.State, found, want)
		}
	}
}

// TestHandWrittenTargetStateRecords (found by a review): a STOPPED written
// by hand with an "at" that is not RFC 3339 was not decoded, and the
// members ignored it without a word while the flow kept replicating. Its
// state now applies (at unknown); a record that still cannot be read (a
// state that does not exist, broken JSON) is reported in BadTarget,
// naming its offset and what to write, until a readable one follows.
func TestHandWrittenTargetStateRecords(t *testing.T) {
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	for in, want := range map[string]TargetStateRecord{
		`{"flow":"a->b","state":"STOPPED","at":"2026-12-01 10:00:00","by":"ops"}`: {Flow: "a->b", State: Stopped, By: "ops"},
		`{"flow":"a->b","state":"PAUSED","at":12345}`:                             {Flow: "a->b", State: Paused},
		`{"flow":"a->b","state":"STOPPED","at":"2026-12-01T10:00:00Z"}`:           {Flow: "a->b", State: Stopped, At: at},
	} {
		rec, err := DecodeTargetState([]byte(in))
		if err != nil || rec != want {
			t.Errorf("DecodeTargetState(%s) = %+v, %v; want %+v", in, rec, err, want)
		}
	}
	v := NewView()
	v.Apply(&kgo.Record{Topic: Topic("a"), Offset: 3, Key: []byte(TargetStateKey), Value: []byte(`{"flow":"a->b","state":"STOPPED"}`)})
	v.Apply(&kgo.Record{Topic: Topic("a"), Offset: 7, Key: []byte(TargetStateKey), Value: []byte(`{"flow":"a->b","state":"HALTED"}`)})
	if got, _ := v.TargetState(); got.State != Stopped || !strings.HasPrefix(v.BadTarget, "the target-state record at offset 7 of mm2-kmirror-status.a.internal cannot be read") ||
		!strings.Contains(v.BadTarget, `"HALTED"`) || !strings.Contains(v.BadTarget, "PUT /connectors/{flow}/stop|pause|resume") {
		t.Errorf("after an unreadable record: state %s, BadTarget %q; want STOPPED kept and the record named", got.State, v.BadTarget)
	}
	v.Apply(&kgo.Record{Topic: Topic("a"), Offset: 8, Key: []byte(TargetStateKey), Value: []byte(`{"flow":"a->b","state":"RUNNING"}`)})
	if got, _ := v.TargetState(); got.State != Running || v.BadTarget != "" {
		t.Errorf("after a readable record: state %s, BadTarget %q; want RUNNING, none", got.State, v.BadTarget)
	}
}
