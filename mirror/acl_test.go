package mirror

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestCaseB23ACLSyncSemantics: only LITERAL topic ACLs of replicated
// topics are copied to the remote topics; ALLOW WRITE is dropped, ALLOW
// ALL becomes ALLOW READ, DENY is copied as is, PREFIXED is ignored.
func TestCaseB23ACLSyncSemantics(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	if p.Real {
		t.Skip("the real test clusters run without an authorizer (KMIRROR_*_BROKERS set): ACL sync is covered on kfake")
	}
	orders := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
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

	fc := fastFlow(p)
	fc.SyncTopicACLsInterval = 200 * time.Millisecond
	runMirror(t, append(clusterOpts(p), WithFlow(fc))...)
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
