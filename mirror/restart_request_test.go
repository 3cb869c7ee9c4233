package mirror

import (
	"testing"

	"github.com/kmirror/kmirror/internal/statustopic"
)

// TestRestartApplies: which restart requests read from the status topic a
// member applies (RestartFailedInCluster): a new one of its flow, asking
// something, written by another member.
func TestRestartApplies(t *testing.T) {
	req := statustopic.RestartRecord{Flow: "a->b", Topic: "orders", Partition: 2, FromMember: "other-1"}
	with := func(f func(*statustopic.RestartRecord)) statustopic.RestartRecord {
		r := req
		f(&r)
		return r
	}
	for _, c := range []struct {
		name  string
		rec   statustopic.RestartRecord
		fresh bool
		want  bool
	}{
		{"another member's new request", req, true, true},
		{"every partition of every topic", with(func(r *statustopic.RestartRecord) { r.Topic, r.Partition = "", -1 }), true, true},
		{"already applied, or read before the start", req, false, false},
		{"written by this member (restarted its own first)", with(func(r *statustopic.RestartRecord) { r.FromMember = "self-1" }), true, false},
		{"another flow's", with(func(r *statustopic.RestartRecord) { r.Flow = "a->c" }), true, false},
		{"a tombstone or unreadable record", with(func(r *statustopic.RestartRecord) { r.Partition = -2 }), true, false},
		{"written by a caller that is no member", with(func(r *statustopic.RestartRecord) { r.FromMember = "" }), true, true},
	} {
		if got := restartApplies(c.rec, c.fresh, "a->b", "self-1"); got != c.want {
			t.Errorf("%s: restartApplies = %v, want %v", c.name, got, c.want)
		}
	}
}
