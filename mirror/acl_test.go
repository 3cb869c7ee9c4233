package mirror

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
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
	srcKM, dstKM := as(p.Source, sc.Source), as(p.Target, sc.Target)
	aclSyncSemantics(t, p, orders, []Opt{WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: srcKM.Opts()}),
		WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: dstKM.Opts()}), WithFlow(fc)})
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
