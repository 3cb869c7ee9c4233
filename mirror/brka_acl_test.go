package mirror

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/realkafka"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// brkaACLPair returns kfake clusters enforcing ACLs (SASL/PLAIN): the pair's
// clients authenticate as the super user admin, and kmirror's as km, who
// has no ACL until granted.
func brkaACLPair(t *testing.T) (*testcluster.Pair, realkafka.SASLClusters) {
	t.Helper()
	sc := realkafka.SASLClusters{Admin: realkafka.PlainUser{User: "admin", Password: "admin-pw"},
		Source: realkafka.PlainUser{User: "km", Password: "km-pw"}, Target: realkafka.PlainUser{User: "km", Password: "km-pw"}}
	// kfake's authorizer also in the real-broker pass: the SASL pair of
	// TestRealAuthorizer* is another set of clusters.
	p := testcluster.NewFakePair(t, "src", "dst", kfake.EnableSASL(), kfake.EnableACLs(),
		kfake.Superuser("PLAIN", sc.Admin.User, sc.Admin.Password), kfake.User("PLAIN", sc.Source.User, sc.Source.Password))
	p.Source.Extra = append(p.Source.Extra, plainAuth(sc.Admin))
	p.Target.Extra = append(p.Target.Extra, plainAuth(sc.Admin))
	return p, sc
}

// TestBrkALeastPrivilegeOnKfakeAuthorizer is TestRealAuthorizerLeastPrivilege
// on kfake's authorizer: ACLS.md's least-privilege profile, every topic
// created in advance, no CREATE.
func TestBrkALeastPrivilegeOnKfakeAuthorizer(t *testing.T) {
	t.Parallel()
	p, sc := brkaACLPair(t)
	runProfileAsKmirror(t, p, sc, leastPrivilegeFlow(p), p.Topic("orders"))
}

// TestBrkAOffsetSyncWriteRefusedShownInStatus: ACLS.md's least-privilege
// profile on kfake's authorizer, without WRITE on the offset-syncs topic
// and the offset runs beside it on the source (so kmirror may write no
// topic there: its idempotent producer is refused with
// CLUSTER_AUTHORIZATION_FAILED). Replication goes on, and the flow's
// status says that offset syncs cannot be written and which ACL to grant
// (it said RUNNING with no error, while no group offset was translated,
// the WARN lines in the log the only trace). Once WRITE is granted the
// error clears and the group's offsets are translated exactly.
func TestBrkAOffsetSyncWriteRefusedShownInStatus(t *testing.T) {
	t.Parallel()
	p, sc := brkaACLPair(t)
	fc := leastPrivilegeFlow(p)
	orders, g1 := p.Topic("orders"), p.Group("g1")
	remote := p.Source.Alias + "." + orders
	syncs := "mm2-offset-syncs." + p.Target.Alias + ".internal"
	grantLeastPrivilege(t, p, fc, orders, sc)
	write := kadm.NewACLs().Allow("User:"+sc.Source.User).AllowHosts("*").Topics(syncs, checkpoint.OffsetRunsTopic(syncs)).
		ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpWrite)
	if _, err := testcluster.Admin(t, &p.Source).DeleteACLs(context.Background(), write); err != nil {
		t.Fatal(err)
	}
	ordersWorld(t, p, fc, orders, g1)
	var lb logBuf
	m, _ := runMirror(t, append(kmirrorClusters(p, sc), WithFlow(fc), WithLogger(lb.logger()))...)
	want := []string{"writing to ", " on " + p.Source.Alias + ": CLUSTER_AUTHORIZATION_FAILED",
		"grant kmirror WRITE on topics " + syncs + " and " + checkpoint.OffsetRunsTopic(syncs) + " on " + p.Source.Alias}
	testcluster.Eventually(t, 30*time.Second, "records copied, the offset syncs' failure in the status", func() (bool, string) {
		st := m.Status().Flows[0]
		ok := st.State == StateRunning && st.Records == 50 && st.Lag == 0 && !st.OffsetSyncErrorSince.IsZero() &&
			strings.HasPrefix(st.Error, "offset syncs failing since ")
		for _, w := range want {
			ok = ok && strings.Contains(st.OffsetSyncError, w) && strings.Contains(st.Error, w)
		}
		return ok, fmt.Sprintf("state %s, %d records, lag %d, error %q, offset sync error %q", st.State, st.Records, st.Lag, st.Error, st.OffsetSyncError)
	})
	grant(t, &p.Source, write)
	testcluster.Eventually(t, 30*time.Second, "offset syncs written, the group translated exactly", func() (bool, string) {
		st := m.Status().Flows[0]
		got, err := fetchCommitted(&p.Target, g1, remote)
		return err == nil && st.OffsetSyncError == "" && st.Error == "" && fmt.Sprint(got) == fmt.Sprint(map[int32]int64{0: 25, 1: 20}),
			fmt.Sprintf("error %q, offset sync error %q, %s on the target %v %v", st.Error, st.OffsetSyncError, g1, got, err)
	})
	if l := lb.lines(sc.Source.Password); len(l) > 0 {
		t.Errorf("the password is logged: %v", l)
	}
}

// TestBrkATopicACLMissingNamed: ACLS.md's least-privilege profile on
// kfake's authorizer, without READ on the source topic (partition 0 of
// orders) or without WRITE on the remote topics (partition 0 of events).
// The partitions' errors name the ACL to grant where they quoted Kafka's
// "Not authorized to access topics" alone; once granted, every record is
// copied, once.
func TestBrkATopicACLMissingNamed(t *testing.T) {
	t.Parallel()
	for _, c := range []struct{ name, op string }{{"read", "READ"}, {"write", "WRITE"}} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, sc := brkaACLPair(t)
			fc := leastPrivilegeFlow(p)
			fc.Tasks = 1
			orders := p.Topic("orders")
			remote := p.Source.Alias + "." + orders
			grantLeastPrivilege(t, p, fc, orders, sc)
			acl, on, topic, cluster := kadm.NewACLs().Allow("User:"+sc.Source.User).AllowHosts("*").Topics(orders).
				ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpRead), &p.Source, orders, p.Source.Alias
			if c.name == "write" {
				acl, on, topic, cluster = kadm.NewACLs().Allow("User:"+sc.Target.User).AllowHosts("*").Topics(p.Source.Alias+".").
					ResourcePatternType(kadm.ACLPatternPrefixed).Operations(kadm.OpWrite), &p.Target, remote, p.Target.Alias
			}
			if _, err := testcluster.Admin(t, on).DeleteACLs(context.Background(), acl); err != nil {
				t.Fatal(err)
			}
			for _, pt := range leastPrivilegeTopics(p, fc, orders, 1) {
				createShared(t, pt.c, pt.name, pt.partitions, pt.configs)
			}
			testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
			produceN(t, &p.Source, orders, 0, 30)
			m, _ := runMirror(t, append(kmirrorClusters(p, sc), WithFlow(fc))...)
			want := "TOPIC_AUTHORIZATION_FAILED: Not authorized to access topics: [Topic authorization failed.]; grant kmirror " + c.op +
				" on topic " + topic + " on " + cluster + " (ACLS.md); retried automatically"
			testcluster.Eventually(t, 30*time.Second, "the partition's error names the ACL", func() (bool, string) {
				ps := partStatus(m, 0)
				return strings.Contains(ps.Error, want) && ps.Replicated <= 0, fmt.Sprintf("%+v", ps)
			})
			grant(t, on, acl)
			testcluster.Eventually(t, 30*time.Second, "every record copied once granted", func() (bool, string) {
				ps := partStatus(m, 0)
				return ps.State == StateRunning && ps.Error == "" && ps.Replicated == 30, fmt.Sprintf("%+v", ps)
			})
			if got := targetValues(t, p, remote, 0); len(got) != 30 || got[0] != "0:0" || got[29] != "29:29" {
				t.Errorf("target holds %v, want 0:0 ... 29:29", got)
			}
		})
	}
}

// TestGroupSyncCommitRefusedNamesACL: ACLS.md's least-privilege profile
// on kfake's authorizer, with DESCRIBE but not READ on the target's
// groups: group offset sync's commits are refused. The group's partitions
// said "commit failed: GROUP_AUTHORIZATION_FAILED ..." alone, and the
// round's warning counted no failed group; the reason now names the ACL to
// grant. Once granted, the group lands at its exact offsets.
func TestGroupSyncCommitRefusedNamesACL(t *testing.T) {
	t.Parallel()
	p, sc := brkaACLPair(t)
	fc := leastPrivilegeFlow(p)
	orders, g1 := p.Topic("orders"), p.Group("g1")
	remote := p.Source.Alias + "." + orders
	grantLeastPrivilege(t, p, fc, orders, sc)
	read := kadm.NewACLs().Allow("User:"+sc.Target.User).AllowHosts("*").Groups("*").ResourcePatternType(kadm.ACLPatternLiteral).
		Operations(kadm.OpRead, kadm.OpDescribe)
	if _, err := testcluster.Admin(t, &p.Target).DeleteACLs(context.Background(), read); err != nil {
		t.Fatal(err)
	}
	grant(t, &p.Target, kadm.NewACLs().Allow("User:"+sc.Target.User).Groups("*").ResourcePatternType(kadm.ACLPatternLiteral).
		Operations(kadm.OpDescribe))
	ordersWorld(t, p, fc, orders, g1)
	m, _ := runMirror(t, append(kmirrorClusters(p, sc), WithFlow(fc))...)
	want := "commit failed: GROUP_AUTHORIZATION_FAILED: Not authorized to access group: Group authorization failed.; grant kmirror READ on group " +
		g1 + " on " + p.Target.Alias + " (ACLS.md: group offset sync)"
	testcluster.Eventually(t, 30*time.Second, "the group's partitions name the ACL", func() (bool, string) {
		gs, _ := groupStatusOf(m, 0, g1)
		ok := len(gs.Partitions) == 2
		for _, ps := range gs.Partitions {
			ok = ok && ps.Reason == want
		}
		return ok, fmt.Sprintf("%+v", gs)
	})
	grant(t, &p.Target, read)
	testcluster.Eventually(t, 30*time.Second, "the group translated exactly once granted", func() (bool, string) {
		got, err := fetchCommitted(&p.Target, g1, remote)
		return err == nil && fmt.Sprint(got) == fmt.Sprint(map[int32]int64{0: 25, 1: 20}), fmt.Sprintf("%s on the target %v %v", g1, got, err)
	})
}

// ordersWorld creates the topics of fc's least-privilege profile (as the
// admin), and topic orders on the source with 30 and 20 records in its two
// partitions, on which group g1 committed 25 and 20.
func ordersWorld(t *testing.T, p *testcluster.Pair, fc FlowConfig, orders, g1 string) {
	t.Helper()
	for _, pt := range leastPrivilegeTopics(p, fc, orders, 2) {
		createShared(t, pt.c, pt.name, pt.partitions, pt.configs)
	}
	testcluster.CreateTopic(t, &p.Source, orders, 2, nil)
	produceN(t, &p.Source, orders, 0, 30)
	produceN(t, &p.Source, orders, 1, 20)
	trCommit(t, &p.Source, g1, orders, map[int32]int64{0: 25, 1: 20})
}
