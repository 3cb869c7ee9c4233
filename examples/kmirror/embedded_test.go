package main

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kfake"
)

// TestEmbeddedEffectiveSettings (regression, fresh-user round): the
// configuration an embedded member publishes for the members to compare
// names the embedded brokers it really uses, not the file's bootstrap
// servers. A second member running on a copy of the file that names those
// brokers no longer reports "members disagree".
func TestEmbeddedEffectiveSettings(t *testing.T) {
	fc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.ClusterID("A"))
	if err != nil {
		t.Fatal(err)
	}
	defer fc.Close()
	e := &embedded{fakes: map[string]*kfake.Cluster{"A": fc}}
	addrs := strings.Join(fc.ListenAddrs(), ",")
	got := e.effective(map[string]string{
		"A.bootstrap.servers":          "localhost:1",
		"A.client":                     "bootstrap=localhost:1 protocol=PLAINTEXT",
		"A.producer":                   "bootstrap=localhost:1 protocol=SASL_SSL sasl=PLAIN",
		"B.client":                     "bootstrap=localhost:2 protocol=PLAINTEXT",
		"A->B.topics":                  "orders.*",
		"A->B.sync.group.offsets.note": "bootstrap=not-a-connection-summary",
	})
	want := map[string]string{
		"A.bootstrap.servers":          addrs,
		"A.client":                     "bootstrap=" + addrs + " protocol=PLAINTEXT",
		"A.producer":                   "bootstrap=" + addrs + " protocol=SASL_SSL sasl=PLAIN",
		"B.client":                     "bootstrap=localhost:2 protocol=PLAINTEXT", // not embedded
		"A->B.topics":                  "orders.*",
		"A->B.sync.group.offsets.note": "bootstrap=not-a-connection-summary", // "A->B" is a flow, not an alias
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("effective settings (-want +got):\n%s", d)
	}
}
