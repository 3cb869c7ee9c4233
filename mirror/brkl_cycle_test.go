package mirror

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// identityPair returns flows a->b and b->a of p keeping topic names, both
// selecting topic only, heartbeats off (the counts are of topic's records).
func identityPair(t *testing.T, p *testcluster.Pair, topic string) (ab, ba FlowConfig) {
	t.Helper()
	ab, ba = fastFlow(p), fastFlow(p)
	ba.Source, ba.Target = p.Target.Alias, p.Source.Alias
	ab.Policy, ba.Policy = identity(t, ab.Source), identity(t, ba.Source)
	ab.Topics, ba.Topics = []string{regexp.QuoteMeta(topic)}, []string{regexp.QuoteMeta(topic)}
	ab.DisableHeartbeatsReplication, ba.DisableHeartbeatsReplication = true, true
	return ab, ba
}

// TestBrkLIdentityOneFlowWithoutHeaderWarned (breaker L): identity a->b
// with the provenance header off (or shallow copy, which requires it off)
// and b->a with it on. Nothing loops for good, but every record that
// crossed a->b comes back to a once more, stamped by b->a, and a->b copies
// that stamped copy to b too: a's records were on both clusters twice,
// b's twice on b, with no word in the log (only a pair with the header off
// on both flows was warned). Rings were not looked at at all: x->y->z->x
// with the header off everywhere loops without end unwarned. New now warns
// once per cycle of identity flows in which a flow has the header off.
func TestBrkLIdentityOneFlowWithoutHeaderWarned(t *testing.T) {
	type fl struct {
		src, dst         string
		off, shallow, id bool
	}
	for _, c := range []struct {
		name            string
		flows           []fl
		endless, duplic int
		names           []string
	}{
		{"pair, header off on a->b", []fl{{"a", "b", true, false, true}, {"b", "a", false, false, true}}, 0, 1, []string{"a->b", "b->a"}},
		{"pair, shallow a->b", []fl{{"a", "b", true, true, true}, {"b", "a", false, false, true}}, 0, 1, []string{"a->b", "b->a", "shallow.copy.enabled=false"}},
		{"pair, header off on both", []fl{{"a", "b", true, false, true}, {"b", "a", true, false, true}}, 1, 0, []string{"a->b", "b->a"}},
		{"pair, header on both", []fl{{"a", "b", false, false, true}, {"b", "a", false, false, true}}, 0, 0, nil},
		{"pair, b->a default policy", []fl{{"a", "b", true, false, true}, {"b", "a", false, false, false}}, 0, 0, nil},
		{"ring, header off everywhere", []fl{{"x", "y", true, false, true}, {"y", "z", true, false, true}, {"z", "x", true, false, true}}, 1, 0, []string{"x->y", "y->z", "z->x"}},
		{"ring, header off on x->y", []fl{{"x", "y", true, false, true}, {"y", "z", false, false, true}, {"z", "x", false, false, true}}, 0, 1, []string{"x->y", "y->z", "z->x"}},
		{"chain, no cycle", []fl{{"x", "y", true, false, true}, {"y", "z", true, false, true}}, 0, 0, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logs logBuf
			opts := []Opt{WithLogger(logs.logger())}
			for _, alias := range []string{"a", "b", "x", "y", "z"} {
				opts = append(opts, WithCluster(ClusterConfig{Alias: alias, Client: []kgo.Opt{kgo.SeedBrokers("127.0.0.1:1")}}))
			}
			for _, f := range c.flows {
				fc := FlowConfig{Source: f.src, Target: f.dst, Topics: []string{"orders"}, DisableProvenanceHeader: f.off, ShallowCopy: f.shallow}
				if f.id {
					fc.Policy = identity(t, f.src)
				}
				opts = append(opts, WithFlow(fc))
			}
			if _, err := New(opts...); err != nil {
				t.Fatalf("New: %v", err)
			}
			endless := logs.lines("level=WARN", "copied back and forth without end")
			duplic := logs.lines("level=WARN", "comes back to its origin once more")
			if len(endless) != c.endless || len(duplic) != c.duplic {
				t.Fatalf("%d endless-loop and %d duplicate warnings, want %d and %d: %v", len(endless), len(duplic), c.endless, c.duplic, logs.lines("level=WARN"))
			}
			for _, l := range append(endless, duplic...) {
				for _, n := range c.names {
					if !strings.Contains(l, n) {
						t.Errorf("warning does not name %s: %s", n, l)
					}
				}
			}
		})
	}
}

// TestBrkLIdentityOneFlowWithoutHeaderCounts: what the warning of
// TestBrkLIdentityOneFlowWithoutHeaderWarned says, on running clusters:
// a->b without the header, b->a with it. Exact counts per cluster: a's 3
// records twice on a and on b, b's 2 records once on a and twice on b; the
// loop then stops (b->a skips the 5 stamped copies a->b brought back as
// looped; a->b copied all 8 records a holds), and the Mirror warned once. With the header on both flows every record is once on
// each side (TestEngineActiveActiveIdentity). The same with a->b a shallow
// copy (which cannot add the header).
func TestBrkLIdentityOneFlowWithoutHeaderCounts(t *testing.T) {
	t.Parallel()
	for _, shallow := range []bool{false, true} {
		t.Run(fmt.Sprintf("shallow=%t", shallow), func(t *testing.T) {
			t.Parallel()
			identityOneFlowWithoutHeader(t, shallow)
		})
	}
}

// identityOneFlowWithoutHeader is TestBrkLIdentityOneFlowWithoutHeaderCounts
// with a->b a shallow copy or not.
func identityOneFlowWithoutHeader(t *testing.T, shallow bool) {
	p, orders := testcluster.NewFakePair(t, "a", "b"), "orders"
	ab, ba := ordersBothWays(t, p, orders)
	ab.DisableProvenanceHeader, ab.ShallowCopy = true, shallow
	var lb logBuf
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(ab), WithFlow(ba), WithLogger(lb.logger()))...)
	for i := 0; i < 3; i++ {
		testcluster.Produce(t, &p.Source, &kgo.Record{Topic: orders, Value: []byte(fmt.Sprint("a", i))})
	}
	for i := 0; i < 2; i++ {
		testcluster.Produce(t, &p.Target, &kgo.Record{Topic: orders, Value: []byte(fmt.Sprint("b", i))})
	}
	wantA := map[string]int{"a0": 2, "a1": 2, "a2": 2, "b0": 1, "b1": 1}
	wantB := map[string]int{"a0": 2, "a1": 2, "a2": 2, "b0": 2, "b1": 2}
	testcluster.Eventually(t, 30*time.Second, "copies settled", func() (bool, string) {
		a, b := values(t, &p.Source, orders), values(t, &p.Target, orders)
		return fmt.Sprint(a) == fmt.Sprint(wantA) && fmt.Sprint(b) == fmt.Sprint(wantB), fmt.Sprintf("a %v b %v", a, b)
	})
	// Both flows caught up with what is there: nothing more is in flight.
	testcluster.Eventually(t, 30*time.Second, "flows idle", func() (bool, string) {
		st := m.Status()
		return st.Flows[0].Lag == 0 && st.Flows[1].Lag == 0 && st.Flows[0].Records+st.Flows[1].Records == 8+5,
			fmt.Sprintf("%s lag %d records %d, %s lag %d records %d", st.Flows[0].Name, st.Flows[0].Lag, st.Flows[0].Records, st.Flows[1].Name, st.Flows[1].Lag, st.Flows[1].Records)
	})
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if a, b := values(t, &p.Source, orders), values(t, &p.Target, orders); fmt.Sprint(a) != fmt.Sprint(wantA) || fmt.Sprint(b) != fmt.Sprint(wantB) {
		t.Errorf("a %v, want %v; b %v, want %v", a, wantA, b, wantB)
	}
	for _, fs := range m.Status().Flows {
		if want := map[string]int64{"a->b": 0, "b->a": 5}[fs.Name]; fs.ProvenanceSkipped != want {
			t.Errorf("%s skipped %d records by provenance, want %d", fs.Name, fs.ProvenanceSkipped, want)
		}
	}
	if n := len(lb.lines("level=WARN", "comes back to its origin once more", "a->b", "b->a")); n != 1 {
		t.Errorf("%d duplicate warnings, want 1: %v", n, lb.lines("level=WARN"))
	}
}

// TestBrkLResumePointPastSkippedCopies (breaker L): identity a->b and b->a
// with the provenance header, a->b with auto.offset.reset=latest (as after
// a planned switch), and every record of a's topic so far came from b (b
// writes, a only receives). a->b skipped them all by provenance, so it
// acknowledged no record and stored no resume point: its position lived
// only in memory. Stopped and started again, a->b found no resume point,
// started at the end again, and the record an application wrote on a
// meanwhile never reached b. (With the default earliest start, the same
// gap read every skipped copy again at each restart, and `kmirror
// failover` of a->b, whose catch-up compares resume points with the end
// offsets, waited for records a->b never copies.) The resume point now
// moves past records polled and not copied once nothing is in flight.
func TestBrkLResumePointPastSkippedCopies(t *testing.T) {
	t.Parallel()
	resumePointPastSkippedCopies(t, false)
}

// TestBrkLResumePointPastSkippedCopiesExactlyOnce is
// TestBrkLResumePointPastSkippedCopies with both flows exactly once: a
// transaction that holds only skipped records committed nothing (it was
// never due), so the resume point stayed behind them the same way; it now
// commits the resume point past them.
func TestBrkLResumePointPastSkippedCopiesExactlyOnce(t *testing.T) {
	t.Parallel()
	resumePointPastSkippedCopies(t, true)
}

// resumePointPastSkippedCopies runs TestBrkLResumePointPastSkippedCopies,
// both flows exactly once or not.
func resumePointPastSkippedCopies(t *testing.T, eos bool) {
	p, orders := testcluster.NewFakePair(t, "a", "b"), "orders"
	ab, ba := ordersBothWays(t, p, orders)
	ab.StartOffset = StartLatest
	ab.ExactlyOnce, ba.ExactlyOnce = eos, eos
	opts := append(clusterOpts(p), WithFlow(ab), WithFlow(ba))
	m, stop := runMirror(t, opts...)
	// a->b has polled a's empty partition (its start) before b writes.
	testcluster.Eventually(t, 30*time.Second, "a->b running", func() (bool, string) {
		fs := m.Status().Flows[0]
		return len(fs.Partitions) == 1 && fs.Partitions[0].State == StateRunning, fmt.Sprintf("%+v", fs.Partitions)
	})
	var fromB []string
	for i := 0; i < 4; i++ {
		v := fmt.Sprint("b", i)
		testcluster.Produce(t, &p.Target, &kgo.Record{Topic: orders, Value: []byte(v)})
		fromB = append(fromB, v)
	}
	testcluster.Eventually(t, 30*time.Second, "b's records on a, skipped by a->b", func() (bool, string) {
		fs := m.Status().Flows[0]
		rp := storedResumePoints(t, p, orders)
		return len(exactlyOnce(t, &p.Source, orders, fromB)) == 0 && fs.ProvenanceSkipped == 4 && maxKey(rp[0]) >= lastOffset(t, &p.Source, orders),
			fmt.Sprintf("a %v, a->b skipped %d, resume points %v", values(t, &p.Source, orders), fs.ProvenanceSkipped, rp)
	})
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	testcluster.Produce(t, &p.Source, &kgo.Record{Topic: orders, Value: []byte("a-while-stopped")})
	m, stop = runMirror(t, opts...)
	testcluster.Produce(t, &p.Source, &kgo.Record{Topic: orders, Value: []byte("a-after")})
	all := append(fromB, "a-while-stopped", "a-after")
	testcluster.Eventually(t, 30*time.Second, "a's records on b", func() (bool, string) {
		a, b := exactlyOnce(t, &p.Source, orders, all), exactlyOnce(t, &p.Target, orders, all)
		return len(a) == 0 && len(b) == 0, fmt.Sprintf("a: %v b: %v", a, b)
	})
	testcluster.Eventually(t, 30*time.Second, "flows idle", func() (bool, string) {
		st := m.Status()
		return st.Flows[0].Lag == 0 && st.Flows[1].Lag == 0, fmt.Sprintf("%+v", st.Flows)
	})
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for _, c := range []*testcluster.Cluster{&p.Source, &p.Target} {
		if bad := exactlyOnce(t, c, orders, all); len(bad) > 0 {
			t.Errorf("%s: %v", c.Alias, bad)
		}
	}
	// The second session did not read the skipped copies again.
	if n := m.Status().Flows[0].ProvenanceSkipped; n != 0 {
		t.Errorf("a->b skipped %d records after the restart, want 0 (they were behind its resume point)", n)
	}
	if rp, last := storedResumePoints(t, p, orders), lastOffset(t, &p.Source, orders); maxKey(rp[0]) < last {
		t.Errorf("a->b resume points %v, want one at %d (a-after) or past it", rp, last)
	}
}

// lastOffset returns the offset of the last record of partition 0 of
// topic on c (-1: none).
func lastOffset(t *testing.T, c *testcluster.Cluster, topic string) int64 {
	t.Helper()
	last := int64(-1)
	for _, r := range testcluster.ReadAll(t, c, topic)[0] {
		last = max(last, r.Offset)
	}
	return last
}

// maxKey returns the largest key of m (-1: none).
func maxKey(m map[int64]bool) int64 {
	out := int64(-1)
	for k := range m {
		out = max(out, k)
	}
	return out
}

// TestBrkLIdentityRingWithHeartbeats (breaker L, no bug found): the ring
// x->y->z->x with identity names and heartbeats on: every record of
// "events" once on every cluster, and each cluster's heartbeats topics are
// MM2's (heartbeats keep the default names under identity, and isCycle
// stops a name whose upstream hop is the target): on x "heartbeats",
// "z.heartbeats", "z.y.heartbeats", and so on round the ring; nothing
// chains further.
func TestBrkLIdentityRingWithHeartbeats(t *testing.T) {
	t.Parallel()
	cs, opts := identityRing(t)
	wants := []string{"heartbeats z.heartbeats z.y.heartbeats", "heartbeats x.heartbeats x.z.heartbeats", "heartbeats y.heartbeats y.x.heartbeats"}
	_, stop := runMirror(t, opts...)
	var all []string
	for i := range cs {
		for j := 0; j < 5; j++ {
			v := fmt.Sprintf("%s%d", cs[i].Alias, j)
			testcluster.Produce(t, &cs[i], &kgo.Record{Topic: "events", Value: []byte(v)})
			all = append(all, v)
		}
	}
	testcluster.Eventually(t, 30*time.Second, "ring complete", func() (bool, string) {
		var bad []string
		for i := range cs {
			bad = append(bad, exactlyOnce(t, &cs[i], "events", all)...)
		}
		g := heartbeatsTopics(t, cs)
		return len(bad) == 0 && strings.Join(g, "|") == strings.Join(wants, "|"), fmt.Sprint(bad, g)
	})
	time.Sleep(2 * time.Second) // several refreshes: nothing chains, nothing loops
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	for i := range cs {
		if bad := exactlyOnce(t, &cs[i], "events", all); len(bad) > 0 {
			t.Errorf("%s: %v", cs[i].Alias, bad)
		}
	}
	if g := heartbeatsTopics(t, cs); strings.Join(g, "|") != strings.Join(wants, "|") {
		t.Errorf("heartbeats topics %q, want %q", g, wants)
	}
}

// TestBrkLOddProvenanceOnSourceRecords (breaker L, no bug found): records
// on a carrying provenance headers kmirror did not write (garbage, empty,
// null, a huge value, several, an offset element alone or of another
// deployment, a key in other case, the target's own ID) in an identity
// a->b, b->a pair: each is copied once to b with its other headers byte
// for byte and its last provenance header extended by a and a's offset,
// except the one naming b, and none comes back to a.
func TestBrkLOddProvenanceOnSourceRecords(t *testing.T) {
	t.Parallel()
	p := testcluster.NewFakePair(t, "a", "b")
	orders := "orders"
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	testcluster.CreateTopic(t, &p.Target, orders, 1, nil)
	huge := strings.Repeat("g", 20000)
	type rec struct {
		name string
		h    []kgo.RecordHeader
		want string // the last provenance value on b ("" when not copied); %d: a's offset
	}
	h := func(kv ...string) []kgo.RecordHeader {
		var out []kgo.RecordHeader
		for i := 0; i < len(kv); i += 2 {
			out = append(out, kgo.RecordHeader{Key: kv[i], Value: []byte(kv[i+1])})
		}
		return out
	}
	recs := []rec{
		{"garbage", h("u", "1", ProvenanceHeader, "gar,bage\xff", "v", "2"), "gar,bage\xff,a,#%d"},
		{"empty", h(ProvenanceHeader, ""), "a,#%d"},
		{"null", []kgo.RecordHeader{{Key: ProvenanceHeader}}, "a,#%d"},
		{"huge", h(ProvenanceHeader, huge), huge + ",a,#%d"},
		{"two", h(ProvenanceHeader, "x", "u", "1", ProvenanceHeader, "y"), "y,a,#%d"},
		{"offset alone", h(ProvenanceHeader, "#7"), "a,#%d"},
		{"bad offset", h(ProvenanceHeader, "x,#abc"), "x,#abc,a,#%d"},
		{"other deployment", h(ProvenanceHeader, "x,#5"), "x,a,#%d"},
		{"other case", h(strings.ToUpper(ProvenanceHeader), "b"), "a,#%d"},
		{"from b", h("u", "1", ProvenanceHeader, "x,b,#3"), ""},
	}
	for _, r := range recs {
		testcluster.Produce(t, &p.Source, &kgo.Record{Topic: orders, Value: []byte(r.name), Headers: r.h})
	}
	ab, ba := identityPair(t, p, orders)
	m, stop := runMirror(t, append(clusterOpts(p), WithFlow(ab), WithFlow(ba))...)
	testcluster.Eventually(t, 30*time.Second, "copied and skipped", func() (bool, string) {
		st := m.Status()
		return st.Flows[0].Records == int64(len(recs)-1) && st.Flows[0].ProvenanceSkipped == 1 && st.Flows[1].ProvenanceSkipped == int64(len(recs)-1) &&
			st.Flows[0].Lag == 0 && st.Flows[1].Lag == 0, fmt.Sprintf("%+v", st.Flows)
	})
	if err := stop(); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if got := values(t, &p.Source, orders); len(got) != len(recs) {
		t.Errorf("a holds %v, want the %d originals once", got, len(recs))
	}
	onB := map[string]*kgo.Record{}
	for _, rs := range testcluster.ReadAll(t, &p.Target, orders) {
		for _, r := range rs {
			if onB[string(r.Value)] != nil {
				t.Errorf("%s twice on b", r.Value)
			}
			onB[string(r.Value)] = r
		}
	}
	for i, r := range recs {
		got := onB[r.name]
		if r.want == "" {
			if got != nil {
				t.Errorf("%s copied to b", r.name)
			}
			continue
		}
		if got == nil {
			t.Errorf("%s not on b", r.name)
			continue
		}
		// The source headers, the last provenance one extended.
		last := -1
		for j, hd := range r.h {
			if hd.Key == ProvenanceHeader {
				last = j
			}
		}
		want := append([]kgo.RecordHeader(nil), r.h...)
		v := []byte(fmt.Sprintf(r.want, i))
		if last >= 0 {
			want[last].Value = v
		} else {
			want = append(want, kgo.RecordHeader{Key: ProvenanceHeader, Value: v})
		}
		if fmt.Sprintf("%q", got.Headers) != fmt.Sprintf("%q", want) {
			t.Errorf("%s on b: headers %q, want %q", r.name, got.Headers, want)
		}
	}
}

// ordersBothWays creates topic orders (1 partition) on both clusters of p
// and returns the identity pair replicating it both ways (identityPair).
func ordersBothWays(t *testing.T, p *testcluster.Pair, orders string) (ab, ba FlowConfig) {
	t.Helper()
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	testcluster.CreateTopic(t, &p.Target, orders, 1, nil)
	return identityPair(t, p, orders)
}
