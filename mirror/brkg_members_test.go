package mirror

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/statustopic"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestBrkGSharedGroupIDRefused: two flows of one Mirror with the same
// group id on the same target are refused. They shared one group, whose
// leader assigned the slots of its own flow only: the other flow's member
// held no slot and copied nothing, with state RUNNING and no error (a
// breaker's finding: other->dst copied 0 of 400 records while src->dst
// held both slots). The default group ids differ, and explicit ones on
// different targets are accepted.
func TestBrkGSharedGroupIDRefused(t *testing.T) {
	p := testcluster.NewFakePair(t, "src", "dst")
	other := WithCluster(ClusterConfig{Alias: "other", Client: p.Source.Opts()})
	fc := fastFlow(p)
	fc.GroupID = "shared"
	fc2 := fc
	fc2.Source = "other"
	_, err := newMirror(t, append(clusterOpts(p), other, WithFlow(fc), WithFlow(fc2))...)
	var ce *ConfigError
	if !errors.As(err, &ce) {
		t.Fatalf("New = %v, want a *ConfigError", err)
	}
	const reason = `flows src->dst and other->dst both use group shared on dst: the group's leader assigns the slots of its own flow only, so the other flow replicates nothing; give each flow its own GroupID ("" is kmirror.<source>-><target>)`
	if ce.Key != "FlowConfig.GroupID" || ce.Value != "shared" || ce.Reason != reason {
		t.Errorf("error %q %q %q, want FlowConfig.GroupID, shared, %q", ce.Key, ce.Value, ce.Reason, reason)
	}
	// A flow whose explicit group id is another flow's default one.
	fc.GroupID, fc2.GroupID = "", "kmirror.src->dst"
	if _, err := newMirror(t, append(clusterOpts(p), other, WithFlow(fc), WithFlow(fc2))...); !errors.As(err, &ce) || ce.Value != "kmirror.src->dst" {
		t.Errorf("New with other->dst in src->dst's default group = %v, want a *ConfigError for kmirror.src->dst", err)
	}
	// Default group ids, and one group id on two targets, are accepted.
	fc2.GroupID = ""
	if _, err := newMirror(t, append(clusterOpts(p), other, WithFlow(fc), WithFlow(fc2))...); err != nil {
		t.Errorf("New with the default group ids = %v", err)
	}
	fc.GroupID = "shared"
	back := FlowConfig{Source: "dst", Target: "src", GroupID: "shared"}
	if _, err := newMirror(t, append(clusterOpts(p), WithFlow(fc), WithFlow(back))...); err != nil {
		t.Errorf("New with one group id on two targets = %v", err)
	}
	// A flow that runs nothing (no replication, no heartbeats) has no group.
	fc2.GroupID, fc2.Disabled, fc2.DisableHeartbeats = "shared", true, true
	if _, err := newMirror(t, append(clusterOpts(p), other, WithFlow(fc), WithFlow(fc2))...); err != nil {
		t.Errorf("New with a flow that runs nothing in the same group = %v", err)
	}
}

// TestBrkGSharedGroupIDOtherFlowNoEpoch: two processes running different
// flows (src->dst with tasks.max 2, other->dst with 3, started later) with
// the same group id on one target, which New cannot see. The leader, a
// src->dst member, took the other flow's member, started last, for the
// newest epoch: it drained its own member's slots and assigned its flow's
// slots to the other member only, which is not subscribed to src's
// coordination topic and got none: src->dst replicated nothing (0 of 400
// records) and said nothing. Now members subscribed to another
// coordination topic take no part in the epoch decision: src->dst keeps
// both slots and replicates every record (the other flow replicates nothing
// while a src->dst member leads the group, as the leader's ERROR says).
func TestBrkGSharedGroupIDOtherFlowNoEpoch(t *testing.T) {
	p := testcluster.NewFakePair(t, "src", "dst")
	const topic, parts, n = "t", 4, 400
	testcluster.CreateTopic(t, &p.Source, topic, parts, nil)
	fc := fastFlow(p)
	fc.Topics = []string{topic}
	fc.Tasks = 2
	fc.GroupID = "shared"
	fc2 := fc
	fc2.Source, fc2.Tasks = "other", 3
	opt := WithStatusInterval(200 * time.Millisecond)
	m1, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc), opt)...)
	testcluster.Eventually(t, 30*time.Second, "the first member owns both slots", func() (bool, string) {
		s := m1.Status().Flows[0].Member.Slots
		return len(s) == 2, fmt.Sprint(s)
	})
	m2, _ := runMirror(t, append(clusterOpts(p), WithCluster(ClusterConfig{Alias: "other", Client: p.Source.Opts()}), WithFlow(fc2), opt)...)
	testcluster.Eventually(t, 30*time.Second, "both members in one generation", func() (bool, string) {
		a, b := m1.Status().Flows[0].Member, m2.Status().Flows[0].Member
		return a.MemberID != "" && b.MemberID != "" && a.Generation == b.Generation && a.Generation > 1, fmt.Sprint(a.Generation, b.Generation)
	})
	var recs []*kgo.Record
	for i := range n {
		recs = append(recs, &kgo.Record{Topic: topic, Partition: int32(i % parts), Value: []byte(fmt.Sprint(i))})
	}
	testcluster.Produce(t, &p.Source, recs...)
	testcluster.Eventually(t, 60*time.Second, "src->dst replicated every record", func() (bool, string) {
		got := targetEnd(t, &p.Target, "src."+topic)
		return got == n, fmt.Sprintf("src.t %d, slots %v", got, m1.Status().Flows[0].Member.Slots)
	})
	if a, b := m1.Status().Flows[0].Member.Slots, m2.Status().Flows[0].Member.Slots; !slices.Equal(a, []int32{0, 1}) || len(b) != 0 {
		t.Errorf("slots %v and %v, want [0 1] on the src->dst member and none on the other", a, b)
	}
}

// TestBrkGMembersOfDifferentSourceClustersWarned: two members of flow
// src->dst whose alias src reaches different clusters (the same
// bootstrap name resolved in two places, or a library user's
// ClusterConfig) copy two clusters' records into the same remote topics.
// The members' configurations were equal, so nothing said so. Now each
// member publishes the ID of the cluster its source alias reaches, and the
// cluster view warns, naming the clusters and the members.
func TestBrkGMembersOfDifferentSourceClustersWarned(t *testing.T) {
	p := testcluster.NewFakePair(t, "src", "dst")
	other := testcluster.NewFakePair(t, "elsewhere", "unused")
	fc := fastFlow(p)
	fc.Topics = []string{"t"}
	opt := WithStatusInterval(200 * time.Millisecond)
	m1, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithWorkerID("w1"), opt)...)
	m2, _ := runMirror(t, WithCluster(ClusterConfig{Alias: "src", Client: other.Source.Opts()}),
		WithCluster(ClusterConfig{Alias: "dst", Client: p.Target.Opts()}), WithFlow(fc), WithWorkerID("w2"), opt)
	const want = "flow src->dst: the members' source alias src reaches different clusters (cluster elsewhere on w2; cluster src on w1): their copies mix in the same remote topics; give every member the same src cluster"
	for _, m := range []*Mirror{m1, m2} {
		testcluster.Eventually(t, 30*time.Second, "the warning in the cluster view and the status", func() (bool, string) {
			cf, fs := m.ClusterStatus().Flows[0], m.Status().Flows[0]
			return len(cf.Members) == 2 && slices.Equal(cf.Warnings, []string{want}) && slices.Equal(fs.Warnings, []string{want}),
				fmt.Sprintf("%d members, warnings %q, status warnings %q", len(cf.Members), cf.Warnings, fs.Warnings)
		})
	}
}

// TestBrkGCrashedMembersDropped: the record of a member gone without a
// leave (SIGKILL: no tombstone) stayed in the compacted status topic, and
// in every member's view, for good: one more per crash. Now the member
// holding the singleton duties tombstones the stale records of members
// that own no slot record; the record of a gone member still named by a
// slot record is kept (it tells since when the slot is UNASSIGNED).
func TestBrkGCrashedMembersDropped(t *testing.T) {
	p := testcluster.NewFakePair(t, "src", "dst")
	testcluster.CreateTopic(t, &p.Source, "t", 2, nil)
	fc := fastFlow(p)
	fc.Topics, fc.Tasks = []string{"t"}, 2
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithWorkerID("w1"), WithStatusInterval(200*time.Millisecond))...)
	var self string
	testcluster.Eventually(t, 30*time.Second, "the member holds both slots", func() (bool, string) {
		cf := m.ClusterStatus().Flows[0]
		if len(cf.Members) != 1 || !slices.Equal(cf.Members[0].Slots, []int32{0, 1}) {
			return false, fmt.Sprint(cf.Members)
		}
		self = cf.Members[0].MemberID
		return true, ""
	})
	// Two members' last records, written a minute ago; the second is the
	// owner of slot 5's record (a slot of an older tasks.max).
	at := time.Now().Add(-time.Minute).UTC()
	var recs []*kgo.Record
	for _, id := range []string{"crashed", "owner-gone"} {
		r, err := statustopic.MemberRecordOf("src", statustopic.MemberRecord{Flow: "src->dst", MemberID: id, WorkerID: id, GroupMemberID: "g-" + id,
			Generation: 1, Tasks: 2, Started: at, Slots: []int32{}, Applied: statustopic.Running, State: string(StateRunning), IntervalMS: 200, At: at})
		if err != nil {
			t.Fatal(err)
		}
		recs = append(recs, r)
	}
	slot, err := statustopic.SlotRecords("src", statustopic.SlotRecord{Flow: "src->dst", Slot: 5, Owner: "owner-gone", WorkerID: "owner-gone",
		State: string(StateRunning), IntervalMS: 200, At: at}, 0)
	if err != nil {
		t.Fatal(err)
	}
	testcluster.Produce(t, &p.Target, append(recs, slot...)...)
	testcluster.Eventually(t, 30*time.Second, "the crashed member's record deleted", func() (bool, string) {
		v, err := statustopic.ReadView(context.Background(), p.Target.Opts(), "src")
		if err != nil {
			return false, err.Error()
		}
		ids := slices.Sorted(maps.Keys(v.Members()))
		want := []string{"owner-gone", self}
		slices.Sort(want)
		return slices.Equal(ids, want), fmt.Sprint(ids)
	})
}

// TestBrkGStatusTopicRecreatedWhileStarting: the status topic deleted and
// created again (another member's restore, an operator) while a member
// starts, after its status client read the old topic's metadata (here its
// first reads are refused while it happens). kgo keeps the topic ID it
// knows for a name, and the start-up kept its client across tries: every
// try failed with UNKNOWN_TOPIC_ID, the member stayed RETRYING for good and
// never applied the new topic's target state. Now a try that finds the
// topic lost reads it again with a new client.
func TestBrkGStatusTopicRecreatedWhileStarting(t *testing.T) {
	p := testcluster.NewFakePair(t, "src", "dst")
	testcluster.CreateTopic(t, &p.Source, "t", 2, nil)
	topic := statustopic.Topic("src")
	compact := map[string]*string{"cleanup.policy": kadm.StringPtr("compact")}
	testcluster.CreateTopic(t, &p.Target, topic, 1, compact)
	var refusing atomic.Bool
	var refused atomic.Int32
	refusing.Store(true)
	p.Target.Fake.ControlKey(int16(kmsg.ListOffsets), func(kr kmsg.Request) (kmsg.Response, error, bool) {
		p.Target.Fake.KeepControl()
		req := kr.(*kmsg.ListOffsetsRequest)
		if !refusing.Load() || !slices.ContainsFunc(req.Topics, func(rt kmsg.ListOffsetsRequestTopic) bool { return rt.Topic == topic }) {
			return nil, nil, false
		}
		resp := req.ResponseKind().(*kmsg.ListOffsetsResponse)
		for _, rt := range req.Topics {
			st := kmsg.NewListOffsetsResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewListOffsetsResponseTopicPartition()
				sp.Partition, sp.ErrorCode = rp.Partition, kerr.NotLeaderForPartition.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		refused.Add(1)
		return resp, nil, true
	})
	fc := fastFlow(p)
	fc.Topics = []string{"t"}
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithWorkerID("w1"), WithStatusInterval(200*time.Millisecond))...)
	testcluster.Eventually(t, 30*time.Second, "the status topic's offsets refused a few times", func() (bool, string) {
		return refused.Load() >= 4, fmt.Sprint(refused.Load())
	})
	adm, done := testcluster.ShortAdmin(t, &p.Target)
	defer done()
	if _, err := adm.DeleteTopics(context.Background(), topic); err != nil {
		t.Fatal(err)
	}
	testcluster.CreateTopic(t, &p.Target, topic, 1, compact)
	rec := statustopic.TargetStateRecord{Flow: "src->dst", State: statustopic.Paused, At: time.Now().UTC(), By: "test"}
	if _, err := statustopic.WriteTargetStateOffset(context.Background(), testcluster.Client(t, &p.Target), "src", rec); err != nil {
		t.Fatal(err)
	}
	refusing.Store(false)
	testcluster.Eventually(t, 60*time.Second, "started, with the new topic's target state", func() (bool, string) {
		fs := m.Status().Flows[0]
		return fs.State == StatePaused && fs.TargetState == TargetPaused && fs.AppliedState == TargetPaused && fs.Error == "",
			fmt.Sprintf("%s %s %s %q", fs.State, fs.TargetState, fs.AppliedState, fs.Error)
	})
}

// TestBrkGStatusTopicRecreatedByOperatorStopKept: a flow STOPPED whose
// status topic an operator deletes and creates again (a script fixing its
// settings) before any member noticed. No member created the new topic,
// so none wrote the STOPPED they kept there: a member started afterwards
// read no target state (RUNNING) and replicated while the others stayed
// stopped. Now a member that reopens a topic it did not create writes the
// state it keeps there too when the new topic holds none.
func TestBrkGStatusTopicRecreatedByOperatorStopKept(t *testing.T) {
	t.Parallel()
	stopKeptAcrossStatusTopicDeletion(t, true)
}
