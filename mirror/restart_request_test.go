package mirror

import (
	"testing"

	"github.com/kmirror/kmirror/internal/statustopic"
)

// TestRestartApplies: which restart requests read from the status topic a
// member applies (RestartFailedInCluster): one of its flow written by
// another member (the View hands each out once, and openStatus drops
// those read before the member started).
func TestRestartApplies(t *testing.T) {
	req := statustopic.RestartRecord{Flow: "a->b", Topic: "orders", Partition: 2, FromMember: "other-1"}
	with := func(f func(*statustopic.RestartRecord)) statustopic.RestartRecord {
		r := req
		f(&r)
		return r
	}
	for _, c := range []struct {
		name string
		rec  statustopic.RestartRecord
		want bool
	}{
		{"another member's new request", req, true},
		{"every partition of every topic", with(func(r *statustopic.RestartRecord) { r.Topic, r.Partition = "", -1 }), true},
		{"written by this member (restarted its own first)", with(func(r *statustopic.RestartRecord) { r.FromMember = "self-1" }), false},
		{"another flow's", with(func(r *statustopic.RestartRecord) { r.Flow = "a->c" }), false},
		{"written by a caller that is no member", with(func(r *statustopic.RestartRecord) { r.FromMember = "" }), true},
	} {
		if got := restartApplies(statustopic.RestartEntry{RestartRecord: c.rec, Offset: 10}, 9, "a->b", "self-1"); got != c.want {
			t.Errorf("%s: restartApplies = %v, want %v", c.name, got, c.want)
		}
	}
	// Read again (the status client back at the topic's start): at or
	// below the last request read, never applied twice.
	for _, off := range []int64{3, 9} {
		if restartApplies(statustopic.RestartEntry{RestartRecord: req, Offset: off}, 9, "a->b", "self-1") {
			t.Errorf("a request at offset %d read again after offset 9: applied, want not", off)
		}
	}
}
