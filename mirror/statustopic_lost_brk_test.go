package mirror

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kmirror/kmirror/internal/statustopic"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// clusterViews sums up each Mirror's ClusterStatus: the flow's state,
// target state, live members and each slot's state and owner.
func clusterViews(ms ...*Mirror) string {
	var s string
	for i, m := range ms {
		cf := m.ClusterStatus().Flows[0]
		s += fmt.Sprintf("m%d view: state %s target %s members %d slots [", i+1, cf.State, cf.TargetState, len(cf.Members))
		for _, sl := range cf.Slots {
			s += fmt.Sprintf("%d:%s/%s ", sl.Slot, sl.State, sl.WorkerID)
		}
		s += "]; "
	}
	return s
}

// TestBrk1207StatusTopicDeletedStateApplied (a breaker's finding): the
// flow's status topic deleted while two members run. The members never
// created it again: each saw only itself in ClusterStatus (the other's
// slots UNASSIGNED) for good, and a pause written afterwards
// (SetTargetState creates the topic and returned nil) was applied by no
// member: records went on being copied. Now the members create the topic
// again and read it anew: both are listed by both, and the pause is
// applied by both (nothing copied while paused).
func TestBrk1207StatusTopicDeletedStateApplied(t *testing.T) {
	t.Parallel()
	w := newMembersWorld(t)
	p, orders, remote, fc := w.p, w.orders, w.remote, w.fc
	produceN(t, &p.Source, orders, 0, 50)
	m1, _ := w.start("w1:8083")
	m2, _ := w.start("w2:8083")
	both := func() (bool, string) {
		a, b := m1.ClusterStatus().Flows[0], m2.ClusterStatus().Flows[0]
		if len(a.Members) != 2 || len(b.Members) != 2 {
			return false, clusterViews(m1, m2)
		}
		for _, cf := range []ClusterFlowStatus{a, b} {
			for _, sl := range cf.Slots {
				if sl.State == StateUnassigned {
					return false, clusterViews(m1, m2)
				}
			}
		}
		return true, ""
	}
	testcluster.Eventually(t, 60*time.Second, "50 records replicated, 2 members and every slot owned in both views", func() (bool, string) {
		if n := targetEnd(t, &p.Target, remote); n != 50 {
			return false, fmt.Sprintf("%d records", n)
		}
		return both()
	})
	adm, done := testcluster.ShortAdmin(t, &p.Target)
	defer done()
	ctx := context.Background()
	topic := statustopic.Topic(p.Source.Alias)
	if _, err := adm.DeleteTopics(ctx, topic); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 30*time.Second, "the status topic back", func() (bool, string) {
		tds, err := adm.ListTopics(ctx, topic)
		return err == nil && tds.Has(topic) && tds[topic].Err == nil, fmt.Sprint(err)
	})
	testcluster.Eventually(t, 30*time.Second, "2 members and every slot owned in both views after the deletion", both)

	if err := m1.SetTargetState(ctx, fc.Name(), TargetPaused, "test", ""); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 30*time.Second, "both members PAUSED", func() (bool, string) {
		return m1.Status().Flows[0].AppliedState == TargetPaused && m2.Status().Flows[0].AppliedState == TargetPaused &&
			m1.ClusterStatus().Flows[0].State == StatePaused && m2.ClusterStatus().Flows[0].State == StatePaused, memberStates(m1, m2) + clusterViews(m1, m2)
	})
	produceN(t, &p.Source, orders, 1, 50)
	time.Sleep(1500 * time.Millisecond)
	if n := targetEnd(t, &p.Target, remote); n != 50 {
		t.Fatalf("%d records on the target while paused, want 50", n)
	}
	if err := m2.SetTargetState(ctx, fc.Name(), TargetRunning, "test", ""); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 30*time.Second, "100 records after the resume", func() (bool, string) {
		return targetEnd(t, &p.Target, remote) == 100, memberStates(m1, m2)
	})
}

// TestBrk1207StatusReopen: what a member does with its status topic once
// a read or write of it failed as if it were gone.
func TestBrk1207StatusReopen(t *testing.T) {
	a, b := kadm.TopicID{1}, kadm.TopicID{2}
	for _, c := range []struct {
		exists         bool
		id, known      kadm.TopicID
		create, reopen bool
	}{
		{false, kadm.TopicID{}, a, true, true}, // deleted
		{true, b, a, false, true},              // deleted and created again
		{true, a, a, false, false},             // the same topic: a transient error
		{true, a, kadm.TopicID{}, false, true}, // its ID never listed
	} {
		create, reopen := statusReopen(c.exists, c.id, c.known)
		if create != c.create || reopen != c.reopen {
			t.Errorf("statusReopen(%v, %v, %v) = %v, %v, want %v, %v", c.exists, c.id, c.known, create, reopen, c.create, c.reopen)
		}
	}
	v := statustopic.NewView()
	if got := v.Restarted(); got.Next != 0 {
		t.Fatal(got.Next)
	}
}

// TestBrk1207StatusTopicDeletedStopKept (a breaker's finding): a flow
// STOPPED (a failover) whose status topic is deleted. A member started
// afterwards created the topic, read no target state (RUNNING) and
// replicated while the others stayed stopped. The members keep the state
// they applied and the one that creates the topic again writes it there,
// so the new member starts nothing: no record is copied until a resume.
func TestBrk1207StatusTopicDeletedStopKept(t *testing.T) {
	t.Parallel()
	stopKeptAcrossStatusTopicDeletion(t, false)
}

// stopKeptAcrossStatusTopicDeletion runs two members of a flow, stops it,
// deletes its status topic (and, byOperator, creates it again at once, as
// an operator's script would), then checks that STOPPED is in the status
// topic again, that a third member started afterwards stays stopped with
// the others (no record copied), and that a resume copies the records
// produced meanwhile.
func stopKeptAcrossStatusTopicDeletion(t *testing.T, byOperator bool) {
	w := newMembersWorld(t)
	p, orders, remote, fc := w.p, w.orders, w.remote, w.fc
	for i := range int32(4) {
		produceN(t, &p.Source, orders, i, 20)
	}
	m1, _ := w.start("w1:8083")
	m2, _ := w.start("w2:8083")
	testcluster.Eventually(t, 60*time.Second, "80 records replicated", func() (bool, string) {
		return targetEnd(t, &p.Target, remote) == 80, memberStates(m1, m2)
	})
	ctx := context.Background()
	if err := m1.SetTargetState(ctx, fc.Name(), TargetStopped, "test", "failover"); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 30*time.Second, "the flow STOPPED", func() (bool, string) {
		return m1.ClusterStatus().Flows[0].State == StateStopped && m2.ClusterStatus().Flows[0].State == StateStopped, clusterViews(m1, m2)
	})
	adm, done := testcluster.ShortAdmin(t, &p.Target)
	defer done()
	topic := statustopic.Topic(p.Source.Alias)
	if _, err := adm.DeleteTopics(ctx, topic); err != nil {
		t.Fatal(err)
	}
	if byOperator {
		testcluster.CreateTopic(t, &p.Target, topic, 1, map[string]*string{"cleanup.policy": kadm.StringPtr("compact")})
	}
	testcluster.Eventually(t, 30*time.Second, "STOPPED in the status topic again", func() (bool, string) {
		rec, found, err := statustopic.ReadTargetState(ctx, p.Target.Opts(), p.Source.Alias)
		return err == nil && found && rec.State == statustopic.Stopped, fmt.Sprint(rec, found, err)
	})
	m3, _ := w.start("w3:8083")
	testcluster.Eventually(t, 60*time.Second, "3 members STOPPED in every view", func() (bool, string) {
		for _, m := range []*Mirror{m1, m2, m3} {
			cf := m.ClusterStatus().Flows[0]
			if len(cf.Members) != 3 || cf.State != StateStopped || m.Status().Flows[0].AppliedState != TargetStopped {
				return false, clusterViews(m1, m2, m3)
			}
		}
		return true, ""
	})
	for i := range int32(4) {
		produceN(t, &p.Source, orders, i, 5)
	}
	time.Sleep(1500 * time.Millisecond)
	if n := targetEnd(t, &p.Target, remote); n != 80 {
		t.Fatalf("%d records on the target while stopped, want 80", n)
	}
	if err := m3.SetTargetState(ctx, fc.Name(), TargetRunning, "test", ""); err != nil {
		t.Fatal(err)
	}
	testcluster.Eventually(t, 60*time.Second, "100 records after the resume", func() (bool, string) {
		return targetEnd(t, &p.Target, remote) == 100, memberStates(m1, m2, m3)
	})
}
