package mirror

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// reqTally counts the requests a kfake cluster receives, by API key name,
// with a few details that tell an idle request from a busy one: a Fetch
// that names partitions (a full fetch, or an incremental one that changed
// its session) is counted as "Fetch+parts", and OffsetFetch also counts the
// groups it asks about ("OffsetFetch.groups"), Fetch its MaxWait
// ("Fetch(wait=ms)") and Metadata the topics it names, sorted ("Metadata[a,b]",
// "Metadata[]" for brokers only, "Metadata[ALL]").
type reqTally struct {
	mu    sync.Mutex
	n     map[string]int
	armed bool // IDLE_TRACE=1 prints each request but Fetch and Produce once armed
}

// tallyRequests counts every request c receives from now on (kfake's
// control hook, kept, never answering).
func tallyRequests(c *kfake.Cluster) *reqTally {
	r := &reqTally{n: map[string]int{}}
	c.Control(func(kreq kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		r.add(kreq)
		return nil, nil, false
	})
	return r
}

func (r *reqTally) add(kreq kmsg.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	name := kmsg.NameForKey(kreq.Key())
	r.n[name]++
	if r.armed && os.Getenv("IDLE_TRACE") != "" && name != "Fetch" && name != "Produce" {
		fmt.Fprintf(os.Stderr, "TRACE %s %p %s v%d\n", time.Now().Format("05.000"), r, name, kreq.GetVersion())
	}
	switch req := kreq.(type) {
	case *kmsg.FetchRequest:
		parts := 0
		for _, t := range req.Topics {
			parts += len(t.Partitions)
		}
		if parts > 0 || len(req.ForgottenTopics) > 0 {
			r.n["Fetch+parts"]++
		}
		r.n[fmt.Sprintf("Fetch(wait=%d)", req.MaxWaitMillis)]++
	case *kmsg.OffsetFetchRequest:
		r.n["OffsetFetch.groups"] += max(len(req.Groups), 1)
	case *kmsg.MetadataRequest:
		{
			var names []string
			for _, t := range req.Topics {
				if t.Topic != nil {
					names = append(names, *t.Topic)
				} else {
					names = append(names, "id")
				}
			}
			slices.Sort(names) // one key whatever the order a map gave them
			if req.Topics == nil {
				names = []string{"ALL"}
			}
			k := "Metadata[" + strings.Join(names, ",") + "]"
			r.n[k]++
		}
	}
}

// snap returns a copy of the counts.
func (r *reqTally) snap() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return maps.Clone(r.n)
}

// since returns the counts added since before.
func (r *reqTally) since(before map[string]int) map[string]int {
	now := r.snap()
	out := map[string]int{}
	for k, v := range now {
		if d := v - before[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

func fmtCounts(m map[string]int) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(m)) {
		fmt.Fprintf(&b, "\n\t%s=%d", k, m[k])
	}
	return b.String()
}

// idleFlow is a flow with intervals that an idle window's counts can be
// compared with: topics refreshed every 3 s, checkpoints and group offset
// sync every 2 s, heartbeats every second, resume points flushed every
// second, config and ACL sync out of the window.
func idleFlow(p *testcluster.Pair) FlowConfig {
	fc := trFlow(p)
	fc.RefreshTopicsInterval = 3 * time.Second
	fc.SyncTopicConfigsInterval = time.Minute
	fc.OffsetFlushInterval = time.Second
	fc.EmitCheckpointsInterval = 2 * time.Second
	fc.SyncGroupOffsetsInterval = 2 * time.Second
	fc.EmitHeartbeatsInterval = time.Second
	return fc
}

// idleWindow counts the requests both clusters receive over about d and
// logs them; span is the window's measured length.
func idleWindow(t *testing.T, src, dst *reqTally, d time.Duration) (s, g map[string]int, span time.Duration) {
	t.Helper()
	src.mu.Lock()
	src.armed = true
	src.mu.Unlock()
	dst.mu.Lock()
	dst.armed = true
	dst.mu.Unlock()
	sb, db, start := src.snap(), dst.snap(), time.Now()
	time.Sleep(d)
	s, g = src.since(sb), dst.since(db)
	span = time.Since(start) // past d when the sleep overshot on a loaded machine
	t.Logf("idle %v: source:%s", span, fmtCounts(s))
	t.Logf("idle %v: target:%s", span, fmtCounts(g))
	return s, g, span
}

// idleClusterOpts are clusterOpts with kmirror's own metadata ages: the
// test clusters' options refresh every client's metadata every second
// (kgo.MetadataMaxAge), which an idle count would take for kmirror's.
func idleClusterOpts(p *testcluster.Pair) []Opt {
	opts := func(c *testcluster.Cluster) []kgo.Opt {
		return append([]kgo.Opt{kgo.SeedBrokers(c.Brokers...)}, c.Extra...)
	}
	return []Opt{
		WithCluster(ClusterConfig{Alias: p.Source.Alias, Client: opts(&p.Source)}),
		WithCluster(ClusterConfig{Alias: p.Target.Alias, Client: opts(&p.Target)}),
	}
}

// scopeTB is t with its own cleanups, run by done: the test clusters'
// helpers keep their clients until the test ends, and every one of them
// refreshes its metadata every second, which an idle count would take for
// kmirror's requests.
type scopeTB struct {
	testing.TB
	cleanups []func()
}

func (s *scopeTB) Cleanup(f func()) { s.cleanups = append(s.cleanups, f) }

func (s *scopeTB) done() {
	for i := len(s.cleanups) - 1; i >= 0; i-- {
		s.cleanups[i]()
	}
	s.cleanups = nil
}

// scoped runs fn with a scopeTB of t and closes what it opened.
func scoped(t *testing.T, fn func(tb testing.TB)) {
	s := &scopeTB{TB: t}
	defer s.done()
	fn(s)
}

// waitCheckpointed waits until every group in want has n partitions with a
// checkpoint.
func waitCheckpointed(t *testing.T, m *Mirror, want map[string]int) {
	t.Helper()
	testcluster.Eventually(t, 30*time.Second, "checkpointed", func() (bool, string) {
		for g, n := range want {
			gs, _ := groupStatusOf(m, 0, g)
			c := 0
			for _, ps := range gs.Partitions {
				if ps.Checkpointed >= 0 {
					c++
				}
			}
			if c < n {
				return false, fmt.Sprintf("%s: %d of %d: %+v", g, c, n, gs)
			}
		}
		return true, ""
	})
}

// waitPartState waits until at least n partitions of the member's first
// flow are in state st.
func waitPartState(t *testing.T, m *Mirror, n int, st State) {
	t.Helper()
	testcluster.Eventually(t, 30*time.Second, "partitions in state", func() (bool, string) {
		c := 0
		for _, ps := range m.Status().Flows[0].Partitions {
			if ps.State == st {
				c++
			}
		}
		return c >= n, fmt.Sprintf("%d of %d %s: %+v", c, n, st, m.Status().Flows[0].Partitions)
	})
}
