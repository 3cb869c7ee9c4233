package checkpoint

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestDropTargetAdminMetadata: with DropTargetAdminMetadata the emitter
// leaves nothing of the remote topics it listed in TargetAdmin's metadata
// cache (issue 22: franz-go keeps a copy of every partition listed, for
// as long as no later request prunes it); without it, they stay (a
// listing within the client's MetadataMinAge is answered from the cache,
// with no Metadata request).
func TestDropTargetAdminMetadata(t *testing.T) {
	for _, drop := range []bool{true, false} {
		t.Run(fmt.Sprintf("drop=%v", drop), func(t *testing.T) {
			f := newFixture(t, 2, 20)
			f.syncs(0, [2]int64{0, 0})
			f.syncs(1, [2]int64{0, 0})
			g := f.p.Group("g")
			f.commit(&f.p.Source, g, f.topic, map[int32]int64{0: 5, 1: 7})
			reqs := &reqCounter{}
			// A long metadata age: whatever the emitter's listings left
			// in the cache answers the listing below.
			adm := testcluster.Client(t, &f.p.Target, kgo.MetadataMaxAge(time.Hour), kgo.MetadataMinAge(time.Hour), kgo.WithHooks(reqs))
			_, stop := f.start(func(c *EmitterConfig) {
				c.TargetAdmin = adm
				c.DropTargetAdminMetadata = drop
			})
			testcluster.Eventually(t, 20*time.Second, "checkpoints", func() (bool, string) {
				cps := latest(f.checkpoints())
				a, b := cps[g+"/"+f.remote+"/0"], cps[g+"/"+f.remote+"/1"]
				// MM2's rule on the syncs alone (no runs): one past the sync.
				return a.UpstreamOffset == 5 && a.DownstreamOffset == 1 && b.UpstreamOffset == 7 && b.DownstreamOffset == 1, fmt.Sprintf("%+v", cps)
			})
			stop()
			if n := reqs.take()[kmsg.Metadata.Int16()]; n == 0 {
				t.Fatal("the emitter sent no Metadata request on TargetAdmin: it did not list the remote topic with it")
			}
			td, err := kadm.NewClient(adm).ListTopics(context.Background(), f.remote)
			if err != nil {
				t.Fatal(err)
			}
			if len(td[f.remote].Partitions) != 2 {
				t.Fatalf("listed %d partitions of %s, want 2", len(td[f.remote].Partitions), f.remote)
			}
			want := 0 // answered from the cache the emitter's listing left
			if drop {
				want = 1
			}
			if got := reqs.take()[kmsg.Metadata.Int16()]; got != want {
				t.Fatalf("listing %s after the emitter stopped sent %d Metadata requests, want %d", f.remote, got, want)
			}
		})
	}
}
