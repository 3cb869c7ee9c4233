package mirror

import (
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestUnassignedNotListedWhenOwned: the partitions of the slots nobody
// owned when the member last read the status topic (every status
// interval) are not listed in UnassignedPartitions once this member's own
// units replicate them. A member that took over a dead member's slots
// listed them twice until its next read: the flow's lag counted their lag
// twice, and the runner's /metrics failed as a whole (500) on the
// duplicate kmirror_replication_lag_records series for up to a status
// interval after every takeover.
func TestUnassignedNotListedWhenOwned(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	orders := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, orders, 2, nil)
	testcluster.Produce(t, &p.Source, &kgo.Record{Topic: orders, Partition: 0, Value: []byte("a")}, &kgo.Record{Topic: orders, Partition: 1, Value: []byte("b")})
	fc := fastFlow(p)
	fc.Topics = []string{orders}
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	waitReplicated(t, m, 2)
	f := m.flows[0]
	// The view read just before this member was given the slot of
	// orders[0]: nobody owned it, 7 records behind.
	stale := PartitionStatus{Topic: orders, RemoteTopic: p.Source.Alias + "." + orders, Partition: 0, State: StateUnassigned,
		SourceEnd: 9, Replicated: 2, Committed: 1, Lag: 7}
	other := PartitionStatus{Topic: orders + "-other", RemoteTopic: p.Source.Alias + "." + orders + "-other", Partition: 0, State: StateUnassigned,
		SourceEnd: 3, Replicated: 0, Committed: -1, Lag: 3}
	f.mu.Lock()
	f.unassigned = []PartitionStatus{stale, other}
	f.mu.Unlock()
	st := m.Status().Flows[0]
	if !st.Member.Singleton {
		t.Fatalf("the only member does not hold the singleton duties: %+v", st.Member)
	}
	var own int64
	for _, ps := range st.Partitions {
		own += ps.Lag
	}
	if len(st.UnassignedPartitions) != 1 || st.UnassignedPartitions[0].Topic != other.Topic {
		t.Errorf("UnassignedPartitions %+v, want only %s[0] (%s[0] is this member's own)", st.UnassignedPartitions, other.Topic, orders)
	}
	if st.Lag != own+3 {
		t.Errorf("flow lag %d, want its own partitions' %d plus the unowned partition's 3", st.Lag, own)
	}
}
