package statustopic

import (
	"testing"

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
