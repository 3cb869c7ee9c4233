package mirror

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// testPrincipals are the principals of the ACLs aclSyncSemantics creates.
var testPrincipals = map[string]bool{"User:alice": true, "User:bob": true, "User:mallory": true, "User:carol": true}

// TestCaseB23ACLSyncSemantics: only LITERAL topic ACLs of replicated
// topics are copied to the remote topics; ALLOW WRITE is dropped, ALLOW
// ALL becomes ALLOW READ, DENY is copied as is, PREFIXED is ignored.
func TestCaseB23ACLSyncSemantics(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Real {
		t.Skip("the real test clusters run without an authorizer (KMIRROR_*_BROKERS set): TestRealAuthorizerACLSync runs this on the SASL listener (KMIRROR_KAFKA_SASL=1)")
	}
	orders := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	fc := fastFlow(p)
	fc.SyncTopicACLsInterval = 200 * time.Millisecond
	aclSyncSemantics(t, p, orders, append(clusterOpts(p), WithFlow(fc)))
}

// TestRealAuthorizerACLSync is TestCaseB23ACLSyncSemantics on Kafka's
// StandardAuthorizer (the SASL listener of `KMIRROR_KAFKA_SASL=1 kafka.sh`),
// kmirror running as the kmirror users with ACLS.md's least-privilege
// profile plus the ACL sync's own ACLs: DESCRIBE on the source cluster,
// ALTER on the target cluster.
func TestRealAuthorizerACLSync(t *testing.T) {
	p, sc := saslPair(t)
	orders := p.Topic("orders")
	fc := leastPrivilegeFlow(p)
	fc.DisableTopicACLSync = false
	fc.SyncTopicACLsInterval = 200 * time.Millisecond
	for _, pt := range leastPrivilegeTopics(p, fc, orders, 1) {
		createShared(t, pt.c, pt.name, pt.partitions, pt.configs)
	}
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	grantLeastPrivilege(t, p, fc, orders, sc)
	grant(t, &p.Source, kadm.NewACLs().Allow("User:"+sc.Source.User).Clusters().ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpDescribe))
	grant(t, &p.Target, kadm.NewACLs().Allow("User:"+sc.Target.User).Clusters().ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpAlter))
	aclSyncSemantics(t, p, orders, append(kmirrorClusters(p, sc), WithFlow(fc)))
}

// aclSyncSemantics creates the source ACLs of orders (as the pair's
// clients), runs a Mirror with opts and checks the remote topic's ACLs.
func aclSyncSemantics(t *testing.T, p *testcluster.Pair, orders string, opts []Opt) {
	t.Helper()
	ctx := context.Background()
	srcAdm := testcluster.Admin(t, &p.Source)
	create := func(b *kadm.ACLBuilder) {
		t.Helper()
		rs, err := srcAdm.CreateACLs(ctx, b)
		if err == nil {
			for _, r := range rs {
				if r.Err != nil {
					err = r.Err
				}
			}
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	create(kadm.NewACLs().Topics(orders).ResourcePatternType(kadm.ACLPatternLiteral).Allow("User:alice").Operations(kadm.OpAll))
	create(kadm.NewACLs().Topics(orders).ResourcePatternType(kadm.ACLPatternLiteral).Allow("User:bob").Operations(kadm.OpWrite))
	create(kadm.NewACLs().Topics(orders).ResourcePatternType(kadm.ACLPatternLiteral).Deny("User:mallory").Operations(kadm.OpRead))
	create(kadm.NewACLs().Topics("ord").ResourcePatternType(kadm.ACLPatternPrefixed).Allow("User:carol").Operations(kadm.OpRead))

	runMirror(t, opts...)
	remote := p.Source.Alias + "." + orders
	dstAdm := testcluster.Admin(t, &p.Target)
	want := []string{"DENY User:mallory READ", "ALLOW User:alice READ"}
	sort.Strings(want)
	testcluster.Eventually(t, 20*time.Second, "ACLs on the remote topic", func() (bool, string) {
		res, err := dstAdm.DescribeACLs(ctx, kadm.NewACLs().Topics().ResourcePatternType(kadm.ACLPatternAny).
			Operations(kadm.OpAny).Allow().AllowHosts().Deny().DenyHosts())
		if err != nil {
			return false, err.Error()
		}
		var got []string
		for _, r := range res {
			for _, d := range r.Described {
				if !testPrincipals[d.Principal] || (p.Real && !strings.HasSuffix(d.Name, p.Topic(""))) {
					continue // on the shared real clusters: the grants to the kmirror users, earlier runs' topics
				}
				perm := "ALLOW"
				if d.Permission == kmsg.ACLPermissionTypeDeny {
					perm = "DENY"
				}
				if d.Name != remote || d.Pattern != kadm.ACLPatternLiteral {
					got = append(got, "unexpected "+d.Name+" "+d.Pattern.String())
					continue
				}
				got = append(got, fmt.Sprintf("%s %s %s", perm, d.Principal, d.Operation))
			}
		}
		sort.Strings(got)
		return cmp.Equal(want, got), cmp.Diff(want, got)
	})
}

// aclCreations observes the CreateACLs requests c receives: the number of
// creations each carries, in order.
func aclCreations(c *kfake.Cluster) func() []int {
	var mu sync.Mutex
	var got []int
	c.ControlKey(int16(kmsg.CreateACLs), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		mu.Lock()
		got = append(got, len(r.(*kmsg.CreateACLsRequest).Creations))
		mu.Unlock()
		return nil, nil, false
	})
	return func() []int {
		mu.Lock()
		defer mu.Unlock()
		return append([]int(nil), got...)
	}
}

// createSourceACLs creates bindings on c in one request.
// readACLs returns the creations of a LITERAL ALLOW READ ACL on topic for
// each of principals, from any host.
func readACLs(topic string, principals ...string) []kmsg.CreateACLsRequestCreation {
	var out []kmsg.CreateACLsRequestCreation
	for _, u := range principals {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, topic, kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host = u, "*"
		c.Operation, c.PermissionType = kmsg.ACLOperationRead, kmsg.ACLPermissionTypeAllow
		out = append(out, c)
	}
	return out
}

func createSourceACLs(t *testing.T, c *testcluster.Cluster, creations []kmsg.CreateACLsRequestCreation) {
	t.Helper()
	req := kmsg.NewPtrCreateACLsRequest()
	req.Creations = creations
	resp, err := req.RequestWith(context.Background(), testcluster.Client(t, c))
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Results {
		if r.ErrorCode != 0 {
			t.Fatalf("creating source ACLs: %v", kerr.ErrorForCode(r.ErrorCode))
		}
	}
}

// remoteACLs lists the target's topic ACLs as "name principal op perm".
func remoteACLs(t *testing.T, c *testcluster.Cluster) ([]string, error) {
	adm, done := testcluster.ShortAdmin(t, c)
	defer done()
	res, err := adm.DescribeACLs(context.Background(), kadm.NewACLs().Topics().ResourcePatternType(kadm.ACLPatternAny).
		Operations(kadm.OpAny).Allow().AllowHosts().Deny().DenyHosts())
	if err != nil {
		return nil, err
	}
	var got []string
	for _, r := range res {
		if r.Err != nil {
			return nil, r.Err
		}
		for _, d := range r.Described {
			got = append(got, fmt.Sprintf("%s %s %s %s %s %s", d.Name, d.Pattern, d.Principal, d.Host, d.Operation, d.Permission))
		}
	}
	sort.Strings(got)
	return got, nil
}

// TestACLSyncThousandsBatched: 1500 source ACLs reach the target in two
// CreateACLs requests (1000 and 500 creations), not one request per ACL:
// 1500 round trips per interval, during which the refresh loop (discovery,
// probes, config sync) waited.
func TestACLSyncThousandsBatched(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's ACLs and request hooks: the real test clusters run without an authorizer (KMIRROR_*_BROKERS set)")
	}
	orders := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	const n = 1500
	var creations []kmsg.CreateACLsRequestCreation
	var want []string
	for i := range n {
		c := kmsg.NewCreateACLsRequestCreation()
		c.ResourceType, c.ResourceName, c.ResourcePatternType = kmsg.ACLResourceTypeTopic, orders, kmsg.ACLResourcePatternTypeLiteral
		c.Principal, c.Host = fmt.Sprintf("User:u%04d", i), "*"
		c.Operation, c.PermissionType = kmsg.ACLOperationAll, kmsg.ACLPermissionTypeAllow
		creations = append(creations, c)
		want = append(want, fmt.Sprintf("src.%s LITERAL User:u%04d * READ ALLOW", orders, i))
	}
	createSourceACLs(t, &p.Source, creations)
	sort.Strings(want)
	reqs := aclCreations(p.Target.Fake)
	runMirror(t, append(clusterOpts(p), WithFlow(fastFlow(p)))...)
	testcluster.Eventually(t, 30*time.Second, "the 1500 ACLs on the remote topic", func() (bool, string) {
		got, err := remoteACLs(t, &p.Target)
		if err != nil {
			return false, err.Error()
		}
		return cmp.Equal(want, got), fmt.Sprintf("%d ACLs, want %d", len(got), len(want))
	})
	if got := reqs(); len(got) < 2 || got[0] != 1000 || got[1] != 500 {
		t.Fatalf("CreateACLs requests carried %v creations (%d requests), want 1000 then 500", got[:min(len(got), 10)], len(got))
	}
}

// TestACLSyncTargetRefusesIsTopicError: a target that refuses CreateACLs
// (CLUSTER_AUTHORIZATION_FAILED: kmirror has no ALTER on its cluster) makes
// a topic error of Op "acl" for the topic, in one CreateACLs request per
// attempt; once the target accepts, the ACLs are created and the error
// cleared. Before, every attempt sent one request per ACL, was retried
// every 5 s with a WARN each time, and the status said nothing.
func TestACLSyncTargetRefusesIsTopicError(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's ACLs and fault injection: the real test clusters run without an authorizer (KMIRROR_*_BROKERS set)")
	}
	orders := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	createSourceACLs(t, &p.Source, readACLs(orders, "User:a", "User:b", "User:c"))
	refuse := p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.CreateACLs}, Err: kerr.ClusterAuthorizationFailed, Count: -1})
	reqs := aclCreations(p.Target.Fake)
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fastFlow(p)))...)
	remote := "src." + orders
	testcluster.Eventually(t, 20*time.Second, "an acl topic error", func() (bool, string) {
		tes := m.Status().Flows[0].TopicErrors
		if len(tes) != 1 {
			return false, fmt.Sprintf("topic errors %+v", tes)
		}
		te := tes[0]
		return te.Topic == orders && te.RemoteTopic == remote && te.Op == TopicOpACL && te.Lag == 0 &&
			strings.HasPrefix(te.Error, "creating ACL ALLOW User:") &&
			strings.HasSuffix(te.Error, " READ from host * on "+remote+" on dst: CLUSTER_AUTHORIZATION_FAILED: Cluster authorization failed.; "+
				"grant kmirror ALTER on the cluster dst (ACLS.md) or set sync.topic.acls.enabled=false"), fmt.Sprintf("%+v", te)
	})
	for i, n := range reqs() {
		if n != 3 {
			t.Fatalf("CreateACLs request %d carried %d creations, want the 3 ACLs in one request: %v", i, n, reqs())
		}
	}
	if st := m.Status().Flows[0]; st.State != StateRunning {
		t.Fatalf("flow state %s, want RUNNING (the records are replicated)", st.State)
	}
	refuse.Remove()
	want := []string{remote + " LITERAL User:a * READ ALLOW", remote + " LITERAL User:b * READ ALLOW", remote + " LITERAL User:c * READ ALLOW"}
	testcluster.Eventually(t, 60*time.Second, "the ACLs created and the topic error cleared", func() (bool, string) {
		got, err := remoteACLs(t, &p.Target)
		if err != nil {
			return false, err.Error()
		}
		tes := m.Status().Flows[0].TopicErrors
		return cmp.Equal(want, got) && len(tes) == 0, fmt.Sprintf("ACLs %v, topic errors %+v", got, tes)
	})
}

// TestACLSyncTargetWithoutAuthorizerSkipped: a target without an
// authorizer answers CreateACLs SECURITY_DISABLED (a secured source
// mirrored to an open target, with sync.topic.acls.enabled's default
// true). The sync is logged once and skipped from then on, as for a
// source without one: no topic error for every topic with ACLs, and no
// CreateACLs request after the first.
func TestACLSyncTargetWithoutAuthorizerSkipped(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's ACLs and fault injection: the real test clusters run without an authorizer (KMIRROR_*_BROKERS set)")
	}
	orders := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	createSourceACLs(t, &p.Source, readACLs(orders, "User:a", "User:b", "User:c"))
	p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.CreateACLs}, Err: kerr.SecurityDisabled, Count: -1})
	reqs := aclCreations(p.Target.Fake)
	lb := &logBuf{}
	fc := fastFlow(p)
	fc.SyncTopicACLsInterval = 200 * time.Millisecond
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithLogger(lb.logger()))...)
	testcluster.Eventually(t, 20*time.Second, "the sync skipped after one log line", func() (bool, string) {
		return len(lb.lines("target cluster has no authorizer: topic ACL sync skipped from now on")) == 1, fmt.Sprint(reqs())
	})
	// Five more heartbeats (every 200 ms, as the sync would run) pass.
	heartbeats := func() int {
		recs, err := testcluster.ReadTopic(context.Background(), p.Target.Opts(), "heartbeats", false)
		if err != nil {
			return -1
		}
		return len(recs[0])
	}
	// The sync may be skipped before the heartbeats topic exists: wait
	// for it (a first read of -1 failed the test now and then).
	from := -1
	testcluster.Eventually(t, 20*time.Second, "the heartbeats topic", func() (bool, string) {
		from = heartbeats()
		return from >= 0, "not readable yet"
	})
	testcluster.Eventually(t, 20*time.Second, "five more heartbeats", func() (bool, string) {
		n := heartbeats()
		return from >= 0 && n >= from+5, fmt.Sprintf("%d heartbeats, from %d", n, from)
	})
	if got := reqs(); !cmp.Equal(got, []int{3}) {
		t.Fatalf("CreateACLs requests carried %v creations, want one request of 3", got)
	}
	if st := m.Status().Flows[0]; len(st.TopicErrors) != 0 || st.Error != "" {
		t.Fatalf("topic errors %+v, error %q: want none", st.TopicErrors, st.Error)
	}
}

// TestACLSyncSourceRefusesDescribeShownInStatus: a source that refuses
// DescribeACLs (CLUSTER_AUTHORIZATION_FAILED: kmirror has no DESCRIBE on
// its cluster, with sync.topic.acls.enabled's default true) is shown in
// the flow's status (ACLSyncError, and Error while the flow has no other)
// with what to do, logged once however often it is retried, and cleared
// once the source answers and its ACLs are copied. Before, each attempt
// was retried every 5 s with a WARN each time and the status said nothing.
func TestACLSyncSourceRefusesDescribeShownInStatus(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Source.Fake == nil {
		t.Skip("needs kfake's ACLs and fault injection: the real test clusters run without an authorizer (KMIRROR_*_BROKERS set)")
	}
	orders := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	createSourceACLs(t, &p.Source, readACLs(orders, "User:a"))
	var mu sync.Mutex
	describes := 0
	p.Source.Fake.ControlKey(int16(kmsg.DescribeACLs), func(kmsg.Request) (kmsg.Response, error, bool) {
		p.Source.Fake.KeepControl()
		mu.Lock()
		describes++
		mu.Unlock()
		return nil, nil, false
	})
	refuse := p.Source.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.DescribeACLs}, Err: kerr.ClusterAuthorizationFailed, Count: -1})
	lb := &logBuf{}
	fc := fastFlow(p)
	fc.SyncTopicACLsInterval = time.Second
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithLogger(lb.logger()))...)
	const want = "describing ACLs on src: CLUSTER_AUTHORIZATION_FAILED: Cluster authorization failed.; " +
		"grant kmirror DESCRIBE on the cluster src (ACLS.md) or set sync.topic.acls.enabled=false"
	testcluster.Eventually(t, 30*time.Second, "four refused describes shown in the status", func() (bool, string) {
		mu.Lock()
		n := describes
		mu.Unlock()
		st := m.Status().Flows[0]
		return n >= 4 && st.ACLSyncError == want, fmt.Sprintf("%d describes, acl sync error %q", n, st.ACLSyncError)
	})
	st := m.Status().Flows[0]
	if st.State != StateRunning || !strings.HasPrefix(st.Error, "topic ACL sync failing since ") || !strings.HasSuffix(st.Error, ": "+want) {
		t.Fatalf("state %s, error %q: want RUNNING and the ACL sync's failure", st.State, st.Error)
	}
	if got := lb.lines("topic ACL sync failing"); len(got) != 1 {
		t.Fatalf("%d log lines of the failure, want 1 however often it is retried: %q", len(got), got)
	}
	refuse.Remove()
	remote := "src." + orders
	testcluster.Eventually(t, 30*time.Second, "the ACL copied and the error cleared", func() (bool, string) {
		got, err := remoteACLs(t, &p.Target)
		if err != nil {
			return false, err.Error()
		}
		st := m.Status().Flows[0]
		return cmp.Equal([]string{remote + " LITERAL User:a * READ ALLOW"}, got) && st.ACLSyncError == "" && st.Error == "",
			fmt.Sprintf("ACLs %v, acl sync error %q, error %q", got, st.ACLSyncError, st.Error)
	})
}

// TestACLSyncErrorClearedWhenSourceLosesAuthorizer: a source that refused
// DescribeAcls (ACLSyncError shown) and then answers SECURITY_DISABLED (its
// authorizer removed) turns the ACL sync off for good; the refusal shown
// before stayed in the status, and in the flow's Error, for as long as the
// member held slot 0, the sync never running again to clear it.
func TestACLSyncErrorClearedWhenSourceLosesAuthorizer(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	if p.Source.Fake == nil {
		t.Skip("needs kfake's fault injection")
	}
	orders := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	refuse := p.Source.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.DescribeACLs}, Err: kerr.ClusterAuthorizationFailed, Count: -1})
	fc := fastFlow(p)
	fc.SyncTopicACLsInterval = time.Second
	m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
	testcluster.Eventually(t, 30*time.Second, "the refusal shown", func() (bool, string) {
		st := m.Status().Flows[0]
		return st.ACLSyncError != "", fmt.Sprintf("acl sync error %q", st.ACLSyncError)
	})
	disabled := p.Source.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.DescribeACLs}, Err: kerr.SecurityDisabled, Count: -1})
	defer disabled.Remove()
	refuse.Remove()
	testcluster.Eventually(t, 30*time.Second, "the refusal cleared once the source has no authorizer", func() (bool, string) {
		st := m.Status().Flows[0]
		return st.ACLSyncError == "" && st.Error == "", fmt.Sprintf("acl sync error %q, error %q", st.ACLSyncError, st.Error)
	})
}
