package mirror

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl/plain"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/connectoffsets"
	"github.com/kmirror/kmirror/internal/realkafka"
	"github.com/kmirror/kmirror/internal/statustopic"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// saslPair returns the real clusters' SASL listeners as a pair whose
// clients authenticate as the admin super user, and the kmirror users.
func saslPair(t *testing.T) (*testcluster.Pair, realkafka.SASLClusters) {
	t.Helper()
	sc, ok := realkafka.SASL()
	if !ok {
		t.Skip(realkafka.SASLSkipMessage)
	}
	admin := []kgo.Opt{plainAuth(sc.Admin)}
	return testcluster.NewReal("src", "dst", testcluster.Cluster{Brokers: sc.SourceBrokers, Extra: admin},
		testcluster.Cluster{Brokers: sc.TargetBrokers, Extra: admin}), sc
}

// plainAuth is SASL/PLAIN as u.
func plainAuth(u realkafka.PlainUser) kgo.Opt {
	return kgo.SASL(plain.Auth{User: u.User, Pass: u.Password}.AsMechanism())
}

// as returns c reached as user u.
func as(c testcluster.Cluster, u realkafka.PlainUser) testcluster.Cluster {
	c.Extra = []kgo.Opt{plainAuth(u)}
	return c
}

// kmirrorClusters returns the Mirror options of p's two clusters with
// kmirror's clients authenticated as sc's kmirror users.
func kmirrorClusters(p *testcluster.Pair, sc realkafka.SASLClusters) []Opt {
	srcKM, dstKM := as(p.Source, sc.Source), as(p.Target, sc.Target)
	return []Opt{WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: srcKM.Opts()}),
		WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: dstKM.Opts()})}
}

// grant creates the ACLs b on c (as the admin).
func grant(t *testing.T, c *testcluster.Cluster, b *kadm.ACLBuilder) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rs, err := testcluster.Admin(t, c).CreateACLs(ctx, b)
	if err == nil {
		for _, r := range rs {
			err = errors.Join(err, r.Err)
		}
	}
	if err != nil {
		t.Fatalf("creating ACLs on %s: %v", c.Alias, err)
	}
}

// grantLeastPrivilege grants exactly the ACLs of ACLS.md's least-privilege
// profile (no CREATE, no cluster ACL) for flow fc and the source topic
// orders to the kmirror users of sc.
func grantLeastPrivilege(t *testing.T, p *testcluster.Pair, fc FlowConfig, orders string, sc realkafka.SASLClusters) {
	t.Helper()
	src, dst := "User:"+sc.Source.User, "User:"+sc.Target.User
	lit := kadm.ACLPatternLiteral
	syncs := "mm2-offset-syncs." + p.Target.Alias + ".internal"
	// on src
	grant(t, &p.Source, kadm.NewACLs().Allow(src).Topics(orders).ResourcePatternType(lit).
		Operations(kadm.OpRead, kadm.OpDescribe, kadm.OpDescribeConfigs))
	grant(t, &p.Source, kadm.NewACLs().Allow(src).Topics(syncs, checkpoint.OffsetRunsTopic(syncs)).ResourcePatternType(lit).
		Operations(kadm.OpWrite, kadm.OpRead, kadm.OpDescribe))
	grant(t, &p.Source, kadm.NewACLs().Allow(src).Groups("*").ResourcePatternType(lit).Operations(kadm.OpDescribe))
	// on dst
	grant(t, &p.Target, kadm.NewACLs().Allow(dst).Topics(p.Source.Alias+".").ResourcePatternType(kadm.ACLPatternPrefixed).
		Operations(kadm.OpWrite, kadm.OpRead, kadm.OpDescribe, kadm.OpAlter, kadm.OpDescribeConfigs, kadm.OpAlterConfigs))
	grant(t, &p.Target, kadm.NewACLs().Allow(dst).Topics(connectoffsets.TopicName(p.Source.Alias)).ResourcePatternType(lit).
		Operations(kadm.OpWrite, kadm.OpRead, kadm.OpDescribe, kadm.OpDescribeConfigs))
	grant(t, &p.Target, kadm.NewACLs().Allow(dst).Topics("heartbeats").ResourcePatternType(lit).
		Operations(kadm.OpWrite, kadm.OpDescribe))
	grant(t, &p.Target, kadm.NewACLs().Allow(dst).Topics(unitsTopicName(p.Source.Alias)).ResourcePatternType(lit).
		Operations(kadm.OpRead, kadm.OpDescribe))
	grant(t, &p.Target, kadm.NewACLs().Allow(dst).Topics(statustopic.Topic(p.Source.Alias)).ResourcePatternType(lit).
		Operations(kadm.OpWrite, kadm.OpRead, kadm.OpDescribe, kadm.OpDescribeConfigs))
	grant(t, &p.Target, kadm.NewACLs().Allow(dst).Groups(defaultGroupID(fc.Source, fc.Target)).ResourcePatternType(lit).
		Operations(kadm.OpRead, kadm.OpDescribe))
	grant(t, &p.Target, kadm.NewACLs().Allow(dst).Groups("*").ResourcePatternType(lit).
		Operations(kadm.OpRead, kadm.OpDescribe))
}

// TestRealAuthorizerLeastPrivilege (issue 18, part 3) runs ACLS.md's
// least-privilege profile against Kafka's StandardAuthorizer
// (allow.everyone.if.no.acl.found=false, `KMIRROR_KAFKA_SASL=1 kafka.sh`):
// the admin creates every topic in advance and grants exactly the profile's
// ACLs (no CREATE); kmirror runs as the kmirror users and copies 300 of 300
// records with their exact contents, writes checkpoints and syncs group
// offsets.
func TestRealAuthorizerLeastPrivilege(t *testing.T) {
	p, sc := saslPair(t)
	fc := leastPrivilegeFlow(p)
	orders := p.Topic("orders")
	// The authorizer is enforced on this listener: the kmirror user may
	// not create topics.
	km := as(p.Source, sc.Source)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := testcluster.Admin(t, &km).CreateTopic(ctx, 1, -1, nil, p.Topic("probe"))
	if err == nil {
		err = resp.Err
	}
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		t.Fatalf("creating a topic as %s: %v, want TOPIC_AUTHORIZATION_FAILED (is the authorizer enforced?)", sc.Source.User, err)
	}
	runProfileAsKmirror(t, p, sc, fc, orders)
}

// runProfileAsKmirror grants ACLS.md's least-privilege profile for flow
// fc and topic orders to the kmirror users of sc, then runs
// runLeastPrivilege with kmirror's clients authenticated as them (the
// pair's own clients stay the admin's).
func runProfileAsKmirror(t *testing.T, p *testcluster.Pair, sc realkafka.SASLClusters, fc FlowConfig, orders string) {
	t.Helper()
	grantLeastPrivilege(t, p, fc, orders, sc)
	admin := map[string]*testcluster.Cluster{p.Source.Alias: &p.Source, p.Target.Alias: &p.Target}
	runLeastPrivilege(t, p, fc, admin, kmirrorClusters(p, sc), func() {})
}

// TestRealAuthorizerMissingTopicNamesACL: on the real authorizer, with the
// profile's ACLs granted but the offset-syncs topic not created in advance,
// the flow retries with an error naming the topic, the ACL and how to
// create it.
func TestRealAuthorizerMissingTopicNamesACL(t *testing.T) {
	p, sc := saslPair(t)
	fc := leastPrivilegeFlow(p)
	orders := p.Topic("orders")
	syncs := "mm2-offset-syncs." + p.Target.Alias + ".internal"
	for _, pt := range leastPrivilegeTopics(p, fc, orders, 1) {
		if pt.name != syncs {
			createShared(t, pt.c, pt.name, pt.partitions, pt.configs)
		}
	}
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	grantLeastPrivilege(t, p, fc, orders, sc)
	m, _ := runMirror(t, append(kmirrorClusters(p, sc), WithFlow(fc))...)
	want := []string{"topic " + syncs + " is missing on " + p.Source.Alias, "TOPIC_AUTHORIZATION_FAILED",
		"CREATE on the cluster or on topic " + syncs, "create the topic in advance with 1 partition(s), cleanup.policy=compact"}
	testcluster.Eventually(t, 30*time.Second, "flow error names the topic, the ACL and the alternative", func() (bool, string) {
		st := m.Status().Flows[0]
		for _, w := range want {
			if !strings.Contains(st.Error, w) {
				return false, fmt.Sprintf("state %s, error %q lacks %q", st.State, st.Error, w)
			}
		}
		return st.State == StateRetrying, ""
	})
}
