package checkpoint

import (
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	tTopic = "orders"
	tPart  = int32(0)
)

// addSync adds the sync upstream->downstream for tTopic/tPart.
func addSync(s *OffsetSyncStore, up, down int64) {
	s.Add(OffsetSync{Topic: tTopic, Partition: tPart, UpstreamOffset: up, DownstreamOffset: down})
}

// translate returns the translation of g for tTopic/tPart, -1 when there is
// no answer (MM2's -1 and "empty" both mean "no checkpoint").
func translate(s *OffsetSyncStore, g int64) int64 {
	d, ok := s.Translate(tTopic, tPart, g)
	if !ok {
		return -1
	}
	return d
}

// runScript executes a small script against s. Lines:
//
//	add U D          add sync U->D
//	start            MarkReadToEnd
//	translate G W    assert Translate(G) == W ("-" for no answer)
//	retained U...    assert distinct retained upstream offsets, newest first
func runScript(t *testing.T, s *OffsetSyncStore, script string) {
	t.Helper()
	for n, line := range strings.Split(strings.TrimSpace(script), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		var a, b int64
		switch f[0] {
		case "add":
			mustSscan(t, f[1], &a)
			mustSscan(t, f[2], &b)
			addSync(s, a, b)
		case "start":
			s.MarkReadToEnd()
		case "translate":
			mustSscan(t, f[1], &a)
			want := int64(-1)
			if f[2] != "-" {
				mustSscan(t, f[2], &want)
			}
			if got := translate(s, a); got != want {
				t.Errorf("line %d %q: Translate(%d) = %d, want %d", n+1, line, a, got, want)
			}
		case "retained":
			var want []int64
			for _, x := range f[1:] {
				mustSscan(t, x, &a)
				want = append(want, a)
			}
			if diff := cmp.Diff(want, retainedUpstream(s, tTopic, tPart)); diff != "" {
				t.Errorf("line %d: retained syncs (-want +got):\n%s", n+1, diff)
			}
		default:
			t.Fatalf("line %d: bad script line %q", n+1, line)
		}
	}
}

func mustSscan(t *testing.T, s string, v *int64) {
	t.Helper()
	if _, err := fmt.Sscan(s, v); err != nil {
		t.Fatalf("bad number %q: %v", s, err)
	}
}

// retainedUpstream returns the upstream offsets of the distinct syncs held
// in the slots, newest first.
func retainedUpstream(s *OffsetSyncStore, topic string, partition int32) []int64 {
	p := s.parts[tpKey{topic, partition}]
	if p == nil {
		return nil
	}
	var out []int64
	slots := p.all()
	for i, r := range slots {
		if i == 0 || r.id != slots[i-1].id {
			out = append(out, r.up)
		}
	}
	return out
}

// distinctSyncs counts distinct sync identities in the slots.
func distinctSyncs(p *partState) int {
	n := 0
	slots := p.all()
	for i, r := range slots {
		if i == 0 || r.id != slots[i-1].id {
			n++
		}
	}
	return n
}

// checkSlotInvariants asserts MM2's invariants B and C (docs/mm2-compat.md
// §6.3) on every pair of slots holding different upstream offsets, plus
// non-increasing upstream offsets from slot 0 to slot 63.
func checkSlotInvariants(t *testing.T, p *partState) {
	t.Helper()
	var up [SlotsPerPartition]int64
	for i, r := range p.all() {
		up[i] = r.up
	}
	for j := 0; j < SlotsPerPartition; j++ {
		for i := 0; i < j; i++ {
			ui, uj := up[i], up[j]
			if ui < uj {
				t.Fatalf("slots %d (%d) and %d (%d) out of order", i, ui, j, uj)
			}
			if ui == uj {
				continue
			}
			if lo := uj + int64(1)<<uint(max(i-2, 0)); lo >= 0 && ui < lo {
				t.Fatalf("invariant C(%d,%d): slot %d upstream %d < %d", i, j, i, ui, lo)
			}
			if hi := uj + int64(1)<<uint(j) - int64(1)<<uint(i); hi >= 0 && ui > hi {
				t.Fatalf("invariant B(%d,%d): slot %d upstream %d > %d", i, j, i, ui, hi)
			}
		}
	}
}

// sparseScript returns the translate lines MM2's test derives from a retained
// sync s with predecessor prev (-1 when none): s-1 -> prev+1 (or no answer),
// s -> s, s+1 and s+2 -> s+1 (downstream == upstream in those syncs).
func sparseScript(retained []int64) string {
	var b strings.Builder
	for i, s := range retained {
		prev := "-"
		if i+1 < len(retained) {
			prev = fmt.Sprint(retained[i+1] + 1)
		}
		fmt.Fprintf(&b, "translate %d %s\ntranslate %d %d\ntranslate %d %d\ntranslate %d %d\n",
			s-1, prev, s, s, s+1, s+1, s+2, s+1)
	}
	return b.String()
}

func syncsScript(from, to, step int64) string {
	var b strings.Builder
	for o := from; o <= to; o += step {
		fmt.Fprintf(&b, "add %d %d\n", o, o)
	}
	return b.String()
}

// TestStoreMM2Vectors reproduces the expected values of MM2's
// OffsetSyncStoreTest listed in docs/mm2-compat.md §6.3.
func TestStoreMM2Vectors(t *testing.T) {
	mustRetained := []int64{10000, 9990, 9970, 9940, 9880, 9640, 9160, 8680, 6760, 4840, 1000}
	noMustStartup := []int64{1000, 990, 960, 900, 840, 720, 480, 0}
	noMustEnd := []int64{10000, 9990, 9960, 9900, 9840, 9600, 9120, 8640, 7680, 3840, 0}
	tests := []struct {
		name   string
		opts   []StoreOpt
		script string
	}{{
		name: "offset translation",
		script: `start
add 100 200
translate 150 201
add 150 251
translate 150 251
translate 5 -
add 200 10
translate 200 10
add 20 20
translate 20 20`,
	}, {
		name: "no translation before read to end",
		script: `translate 0 -
translate 100 -
translate 200 -
add 100 200
translate 0 -
translate 100 -
translate 200 -
start
translate 0 -
translate 100 200
translate 200 201`,
	}, {
		name:   "no translation without offset sync",
		script: "start\ntranslate 0 -",
	}, {
		name: "past offsets, must read to end",
		opts: []StoreOpt{WithMustReadToEnd(true)},
		script: syncsScript(0, 1000, 10) + "start\nretained 1000\n" + sparseScript([]int64{1000}) +
			syncsScript(1010, 10000, 10) + "retained " + join(mustRetained) + "\n" + sparseScript(mustRetained) +
			`add 1500 11000
retained 1500
translate 1499 -
translate 1500 11000
translate 2000 11001`,
	}, {
		name: "past offsets, without must read to end",
		opts: []StoreOpt{WithMustReadToEnd(false)},
		script: syncsScript(0, 1000, 10) + "start\nretained " + join(noMustStartup) + "\n" +
			sparseScript(noMustStartup) + syncsScript(1000, 10000, 10) +
			"retained " + join(noMustEnd) + "\n" + sparseScript(noMustEnd) +
			`add 1500 11000
translate 1499 -
translate 1500 11000
translate 2000 11001`,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runScript(t, NewOffsetSyncStore(tc.opts...), tc.script)
		})
	}
}

func join(xs []int64) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, " ")
}

// TestStoreSparseInvariantEveryAdd checks invariants B and C after every
// sync of the two "past offsets" vectors, with and without must-read-to-end.
func TestStoreSparseInvariantEveryAdd(t *testing.T) {
	for _, must := range []bool{true, false} {
		t.Run(fmt.Sprint("must=", must), func(t *testing.T) {
			s := NewOffsetSyncStore(WithMustReadToEnd(must))
			for o := int64(0); o <= 10000; o += 10 {
				if o == 1010 {
					s.MarkReadToEnd()
				}
				addSync(s, o, o)
				checkSlotInvariants(t, s.parts[tpKey{tTopic, tPart}])
			}
		})
	}
}

// assertBoundedExpirations feeds syncs at first, first+steps[0], ... and
// asserts what MM2's tests assert: the newest sync is in slot 0, the first
// sync stays in slot 63, and each new sync expires at most maxExpired
// retained syncs.
func assertBoundedExpirations(t *testing.T, first int64, steps []int64, maxExpired int) {
	t.Helper()
	s := NewOffsetSyncStore()
	s.MarkReadToEnd()
	addSync(s, first, first)
	p := s.parts[tpKey{tTopic, tPart}]
	off, last := first, 1
	for _, st := range steps {
		off += st
		if off < 0 {
			t.Fatalf("test invalid: offset overflow")
		}
		addSync(s, off, off)
		if p.all()[0].up != off {
			t.Fatalf("slot 0 = %d, want newest %d", p.all()[0].up, off)
		}
		if p.all()[SlotsPerPartition-1].up != first {
			t.Fatalf("slot 63 = %d, want first %d", p.all()[SlotsPerPartition-1].up, first)
		}
		n := distinctSyncs(p)
		if expired := last - n + 1; expired > maxExpired {
			t.Fatalf("after offset %d: %d syncs expired, want <= %d", off, expired, maxExpired)
		}
		last = n
	}
	checkSlotInvariants(t, p)
}

func TestStoreConsistentlySpacedSyncs(t *testing.T) {
	const iterations = 100
	maxStep := int64(1<<63-1) / iterations
	for step := int64(1); step < maxStep; step = step*2 + 1 {
		for first := int64(0); first < 30; first++ {
			steps := make([]int64, iterations)
			for i := range steps {
				steps[i] = step
			}
			assertBoundedExpirations(t, first, steps, 1)
		}
	}
}

func TestStoreRandomlySpacedSyncs(t *testing.T) {
	rng := rand.New(rand.NewSource(0))
	const iterationBits = 10
	for n := 1; n < 64-iterationBits; n++ {
		maxDiff := int64(1) << n
		for _, minStep := range []int64{0, 1 << 16} {
			steps := make([]int64, 1<<iterationBits)
			for i := range steps {
				steps[i] = minStep + rng.Int63n(maxDiff)
			}
			// At most n bits between smallest and largest step: n+2
			// expirations at once in the worst case.
			assertBoundedExpirations(t, 0, steps, n+2)
		}
	}
}

func TestStoreDroppedSyncsSpacing(t *testing.T) {
	rng := rand.New(rand.NewSource(0))
	steps := make([]int64, 10000)
	for i := range steps {
		steps[i] = 100
		if rng.Float64() < 0.5 {
			steps[i] = 200 // one sync in between was dropped
		}
	}
	assertBoundedExpirations(t, 0, steps, 2)
}

func TestStoreOptions(t *testing.T) {
	tests := []struct {
		name   string
		opts   []StoreOpt
		script string
	}{{
		// The target partition was recreated: 150->0 rewinds downstream.
		name: "downstream rewind resets history (default)",
		script: `start
add 100 200
add 150 251
add 160 0
retained 160
translate 150 -
translate 159 -
translate 160 0
translate 170 1`,
	}, {
		name: "downstream rewind kept (MM2 exact)",
		opts: []StoreOpt{WithResetOnDownstreamRewind(false)},
		script: `start
add 100 200
add 150 251
add 160 0
retained 160 150 100
translate 150 251
translate 159 252
translate 160 0`,
	}, {
		name: "recent history answers from every sync in the window",
		opts: []StoreOpt{WithRecentHistory(4), WithMustReadToEnd(false)},
		script: syncsScript(0, 100, 10) + `start
translate 70 70
translate 75 71
translate 69 61
translate 65 61
translate 60 60
translate 59 1
translate 0 0
translate 100 100
translate 101 101`,
	}, {
		name: "recent history resets on upstream rewind",
		opts: []StoreOpt{WithRecentHistory(8)},
		script: `start
add 10 10
add 20 20
add 30 30
add 5 40
translate 25 41
translate 4 -
translate 5 40
translate 6 41`,
	}, {
		name: "must read to end also empties recent history",
		opts: []StoreOpt{WithRecentHistory(8)},
		script: syncsScript(0, 50, 10) + `start
translate 45 -
translate 50 50
add 60 60
translate 55 51`,
	}, {
		name: "negative offsets rejected",
		script: `start
add -1 5
add 5 -1
translate 5 -
add 5 5
add 6 -3
translate 7 6`,
	}, {
		name: "downstream at max int64 cannot be passed",
		script: `start
add 5 9223372036854775807
translate 5 9223372036854775807
translate 6 -`,
	}, {
		name: "negative group offset",
		script: `start
add 0 0
translate -1 -
translate 0 0`,
	}, {
		name: "equal upstream offsets: newest wins",
		script: `start
add 10 5
add 10 8
translate 10 8
translate 11 9`,
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			runScript(t, NewOffsetSyncStore(tc.opts...), tc.script)
		})
	}
}

func TestValidateStoreOptions(t *testing.T) {
	tests := []struct {
		opts    []StoreOpt
		wantErr string
	}{
		{nil, ""},
		{[]StoreOpt{WithRecentHistory(100), WithMustReadToEnd(false), WithResetOnDownstreamRewind(false)}, ""},
		{[]StoreOpt{WithRecentHistory(-1)}, "checkpoint: recent history -1 syncs is negative"},
		{[]StoreOpt{WithRecentHistory(MaxRecentHistory + 1)}, "checkpoint: recent history 1048577 syncs exceeds the maximum 1048576"},
		{[]StoreOpt{nil}, "checkpoint: nil StoreOpt"},
	}
	for _, tc := range tests {
		err := ValidateStoreOpts(tc.opts...)
		got := ""
		if err != nil {
			got = err.Error()
		}
		if got != tc.wantErr {
			t.Errorf("ValidateStoreOpts = %q, want %q", got, tc.wantErr)
		}
	}
	// The constructor clamps instead of failing.
	if got := NewOffsetSyncStore(WithRecentHistory(-5), nil).cfg.recentHistory; got != 0 {
		t.Errorf("clamped history = %d, want 0", got)
	}
	if got := NewOffsetSyncStore(WithRecentHistory(MaxRecentHistory * 2)).cfg.recentHistory; got != MaxRecentHistory {
		t.Errorf("clamped history = %d, want %d", got, MaxRecentHistory)
	}
}

func TestStoreLatestPartitionsStats(t *testing.T) {
	s := NewOffsetSyncStore(WithRecentHistory(2))
	if _, ok := s.Latest("a", 0); ok {
		t.Fatal("Latest on empty store: ok")
	}
	s.Add(OffsetSync{Topic: "a", Partition: 0, UpstreamOffset: 5, DownstreamOffset: 3})
	s.Add(OffsetSync{Topic: "a", Partition: 1, UpstreamOffset: 7, DownstreamOffset: 7})
	s.Add(OffsetSync{Topic: "a", Partition: 0, UpstreamOffset: 9, DownstreamOffset: 6}) // reset: not read to end
	s.Add(OffsetSync{Topic: "b", Partition: 0, UpstreamOffset: -1, DownstreamOffset: 0})
	got, ok := s.Latest("a", 0)
	if !ok {
		t.Fatal("Latest(a,0): not ok")
	}
	if diff := cmp.Diff(OffsetSync{Topic: "a", Partition: 0, UpstreamOffset: 9, DownstreamOffset: 6}, got); diff != "" {
		t.Errorf("Latest (-want +got):\n%s", diff)
	}
	if s.ReadToEnd() {
		t.Error("ReadToEnd before MarkReadToEnd")
	}
	s.MarkReadToEnd()
	s.MarkReadToEnd()
	if !s.ReadToEnd() {
		t.Error("ReadToEnd after MarkReadToEnd = false")
	}
	want := StoreStats{Partitions: 2, Added: 3, Rejected: 1, Resets: 1, Bytes: 2*partBytes + 2*24 + 2*16}
	if diff := cmp.Diff(want, s.Stats()); diff != "" {
		t.Errorf("Stats (-want +got):\n%s", diff)
	}
	if s.Partitions() != 2 {
		t.Errorf("Partitions = %d, want 2", s.Partitions())
	}
	if d, ok := s.Translate("a", 1, 8); !ok || d != 8 {
		t.Errorf("Translate(a,1,8) = %d,%v, want 8,true", d, ok)
	}
	if _, ok := s.Translate("a", 2, 8); ok {
		t.Error("Translate of unknown partition: ok")
	}
}

func TestCheckpointStateNext(t *testing.T) {
	cp := func(up, down int64) Checkpoint {
		return Checkpoint{Group: "g1", Topic: "src.orders", Partition: 0, UpstreamOffset: up, DownstreamOffset: down, Metadata: "m"}
	}
	tests := []struct {
		name   string
		loaded []Checkpoint
		next   []Checkpoint
		want   []bool
		last   Checkpoint
	}{
		{"first checkpoint emitted", nil, []Checkpoint{cp(100, 90)}, []bool{true}, cp(100, 90)},
		{"offset 0 emitted (case B11)", nil, []Checkpoint{cp(0, 0)}, []bool{true}, cp(0, 0)},
		{"negative downstream never", nil, []Checkpoint{cp(5, -1)}, []bool{false}, Checkpoint{}},
		{"negative upstream never", nil, []Checkpoint{cp(-1, 5)}, []bool{false}, Checkpoint{}},
		{"repeat skipped", nil, []Checkpoint{cp(100, 90), cp(100, 90)}, []bool{true, false}, cp(100, 90)},
		{"downstream advance emitted", nil, []Checkpoint{cp(100, 90), cp(150, 91)}, []bool{true, true}, cp(150, 91)},
		{"upstream advance, downstream same skipped", nil, []Checkpoint{cp(100, 90), cp(150, 90)}, []bool{true, false}, cp(100, 90)},
		{"downstream rewind skipped", nil, []Checkpoint{cp(100, 90), cp(150, 80)}, []bool{true, false}, cp(100, 90)},
		{"upstream rewind emitted even lower", nil, []Checkpoint{cp(100, 90), cp(50, 40)}, []bool{true, true}, cp(50, 40)},
		{"loaded baseline blocks lower", []Checkpoint{cp(100, 90)}, []Checkpoint{cp(120, 85), cp(120, 95)}, []bool{false, true}, cp(120, 95)},
		{"load: last in log order wins", []Checkpoint{cp(100, 90), cp(10, 5)}, []Checkpoint{cp(20, 6)}, []bool{true}, cp(20, 6)},
		{"load skips negative", []Checkpoint{cp(100, 90), cp(5, -1)}, []Checkpoint{cp(100, 90)}, []bool{false}, cp(100, 90)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newCheckpointState()
			for _, l := range tc.loaded {
				c.Load(l)
			}
			var got []bool
			for _, n := range tc.next {
				got = append(got, c.Next(n))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Next results (-want +got):\n%s", diff)
			}
			last, _ := c.Last("g1", "src.orders", 0)
			if diff := cmp.Diff(tc.last, last); diff != "" {
				t.Errorf("Last (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCheckpointStateExactUpgrade: a checkpoint first written as a safe
// translation is written again, with the same offsets, once the same group
// offset translates exactly (the header then says "exact"); never twice,
// never for a safe one, and a moving offset still follows MM2's
// checkpointIsMoreRecent. Regression: on real Kafka the interop test's
// group at the end of a transactional topic kept a "safe;run;reread<=1"
// header for good, since its runs arrived after the first checkpoint.
func TestCheckpointStateExactUpgrade(t *testing.T) {
	cp := func(up, down int64) Checkpoint {
		return Checkpoint{Group: "g1", Topic: "src.orders", UpstreamOffset: up, DownstreamOffset: down}
	}
	type step struct {
		cp    Checkpoint
		exact bool
		write bool // want
	}
	tests := []struct {
		name   string
		loaded bool // the first checkpoint was read back with an "exact" header
		steps  []step
	}{
		{"safe then exact rewritten once", false, []step{{cp(55, 50), false, true}, {cp(55, 50), true, true}, {cp(55, 50), true, false}}},
		{"safe twice not rewritten", false, []step{{cp(55, 50), false, true}, {cp(55, 50), false, false}}},
		{"exact then safe not rewritten", false, []step{{cp(55, 50), true, true}, {cp(55, 50), false, false}, {cp(55, 50), true, false}}},
		{"exact lower downstream not written", false, []step{{cp(55, 50), false, true}, {cp(56, 49), true, false}}},
		{"exact higher upstream same downstream not written", false, []step{{cp(55, 50), false, true}, {cp(56, 50), true, false}}},
		{"advance resets exactness", false, []step{{cp(55, 50), true, true}, {cp(60, 55), false, true}, {cp(60, 55), true, true}}},
		{"loaded exact not rewritten", true, []step{{cp(55, 50), true, false}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newCheckpointState()
			if tc.loaded {
				c.Load(cp(55, 50))
				c.SetExact("g1", "src.orders", 0, true)
			}
			for i, s := range tc.steps {
				if got := c.NextExact(s.cp, s.exact); got != s.write {
					t.Errorf("step %d: NextExact(%+v, exact %v) = %v, want %v", i, s.cp, s.exact, got, s.write)
				}
				if got := c.Exact("g1", "src.orders", 0); s.write && got != s.exact {
					t.Errorf("step %d: Exact = %v after writing, want %v", i, got, s.exact)
				}
			}
			c.Forget("g1", "src.orders", 0)
			if c.Exact("g1", "src.orders", 0) {
				t.Error("Exact after Forget = true")
			}
		})
	}
}

func TestCheckpointStateGroups(t *testing.T) {
	c := newCheckpointState()
	if ok := c.Load(Checkpoint{Group: "g", Topic: "t", UpstreamOffset: 1, DownstreamOffset: -1}); ok {
		t.Error("Load of negative downstream returned true")
	}
	for _, cp := range []Checkpoint{
		{Group: "g2", Topic: "src.b", Partition: 1, UpstreamOffset: 3, DownstreamOffset: 3},
		{Group: "g1", Topic: "src.b", Partition: 0, UpstreamOffset: 2, DownstreamOffset: 2},
		{Group: "g2", Topic: "src.a", Partition: 7, UpstreamOffset: 1, DownstreamOffset: 1},
		{Group: "g2", Topic: "src.b", Partition: 0, UpstreamOffset: 4, DownstreamOffset: 4},
	} {
		if !c.Next(cp) {
			t.Fatalf("Next(%+v) = false", cp)
		}
	}
	if diff := cmp.Diff([]string{"g1", "g2"}, c.Groups()); diff != "" {
		t.Errorf("Groups (-want +got):\n%s", diff)
	}
	want := []Checkpoint{
		{Group: "g2", Topic: "src.a", Partition: 7, UpstreamOffset: 1, DownstreamOffset: 1},
		{Group: "g2", Topic: "src.b", Partition: 0, UpstreamOffset: 4, DownstreamOffset: 4},
		{Group: "g2", Topic: "src.b", Partition: 1, UpstreamOffset: 3, DownstreamOffset: 3},
	}
	if diff := cmp.Diff(want, c.Group("g2")); diff != "" {
		t.Errorf("Group(g2) (-want +got):\n%s", diff)
	}
	if c.Group("nope") != nil {
		t.Error("Group(nope) != nil")
	}
	c.Forget("g2", "src.b", 0)
	if _, ok := c.Last("g2", "src.b", 0); ok {
		t.Error("Last after Forget: ok")
	}
	if c.Len() != 3 {
		t.Errorf("Len = %d, want 3", c.Len())
	}
	// After Forget the same checkpoint is emitted again.
	if !c.Next(Checkpoint{Group: "g2", Topic: "src.b", Partition: 0, UpstreamOffset: 4, DownstreamOffset: 4}) {
		t.Error("Next after Forget = false")
	}
}

// ---------------------------------------------------------------------------
// A model of MM2's OffsetSyncWriter (docs/mm2-compat.md §5.5) and of a
// replicated partition, used by the case tests and the property test.

// syncWriter decides, per acknowledged record, whether MM2 queues an
// immediate or a delayed sync. One deliberate difference: a downstream
// offset equal to the previous one also forces a sync (MM2 only checks
// "lower"), otherwise a target partition recreated right after its first
// record goes unnoticed and the stale sync of the old partition translates
// the next record one past its new offset. The kmirror writer must do the
// same.
type syncWriter struct {
	lagMax                   int64
	prevUp, prevDown, lastSD int64
	pending, delayed         *OffsetSync
}

func newSyncWriter(lagMax int64) *syncWriter {
	return &syncWriter{lagMax: lagMax, prevUp: -1, prevDown: -1, lastSD: -1}
}

// ack queues the sync for record up->down and reports whether it was
// immediate.
func (w *syncWriter) ack(up, down int64) bool {
	immediate := w.lastSD == -1 ||
		down-(w.lastSD+1) >= w.lagMax ||
		up-w.prevUp != 1 ||
		down <= w.prevDown
	if immediate {
		w.lastSD = down
	}
	w.prevUp, w.prevDown = up, down
	s := &OffsetSync{Topic: tTopic, Partition: tPart, UpstreamOffset: up, DownstreamOffset: down}
	if immediate {
		w.delayed = nil
		w.pending = s
	} else {
		w.delayed = s
	}
	return immediate
}

// commit promotes the delayed sync (MM2's commit(), every offset flush).
func (w *syncWriter) commit() {
	if w.delayed != nil {
		w.pending, w.delayed = w.delayed, nil
	}
}

// fire delivers the pending sync, if any, to the stores.
func (w *syncWriter) fire(stores ...*OffsetSyncStore) {
	if w.pending == nil {
		return
	}
	for _, s := range stores {
		s.Add(*w.pending)
	}
	w.pending = nil
}

// replicateDense replicates upstream offsets ups to downstream 0,1,2,... with
// an MM2 writer that fires every sync immediately; when flush is true a final
// offset flush (commit) follows, like the periodic one of MM2 3.7+.
func replicateDense(s *OffsetSyncStore, lagMax int64, ups []int64, flush bool) {
	w := newSyncWriter(lagMax)
	for d, u := range ups {
		w.ack(u, int64(d))
		w.fire(s)
	}
	if flush {
		w.commit()
		w.fire(s)
	}
}

func offsets(from, to int64) []int64 {
	var out []int64
	for o := from; o < to; o++ {
		out = append(out, o)
	}
	return out
}

// TestStoreCaseB01EmptySourcePartition: no syncs => no answer (the group
// offset 100 is never copied literally); after the first record 100->0 the
// group translates to 0.
func TestStoreCaseB01EmptySourcePartition(t *testing.T) {
	s := NewOffsetSyncStore()
	s.MarkReadToEnd()
	if d, ok := s.Translate(tTopic, tPart, 100); ok {
		t.Fatalf("Translate(100) with no syncs = %d, want no answer", d)
	}
	replicateDense(s, 100, offsets(100, 105), true)
	runScript(t, s, "translate 100 0\ntranslate 99 -\ntranslate 105 5")
	c := newCheckpointState()
	if !c.Next(Checkpoint{Group: "g1", Topic: "src.orders", UpstreamOffset: 100, DownstreamOffset: translate(s, 100)}) {
		t.Error("checkpoint 100->0 not emitted")
	}
}

// TestStoreCaseB03LowTrafficTopic: with the time-based sync of the latest
// replicated record (engine flush) a caught-up group at the end of a quiet
// topic translates exactly to the target end; without it (MM2 3.5/3.6) it
// stays at first sync + 1.
func TestStoreCaseB03LowTrafficTopic(t *testing.T) {
	tests := []struct {
		name    string
		records int64
		group   int64
		flush   bool
		want    int64
	}{
		{"g_all with flush", 100, 100, true, 100},
		{"g_tiny with flush", 3, 3, true, 3},
		{"g_half with flush", 100, 50, true, 1}, // syncs 0->0 and 99->99 only
		{"g_all without flush (MM2 3.5/3.6)", 100, 100, false, 1},
		{"g_tiny without flush (MM2 3.5/3.6)", 3, 3, false, 1},
		{"g_none at 0", 3, 0, true, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewOffsetSyncStore()
			s.MarkReadToEnd()
			replicateDense(s, 100, offsets(0, tc.records), tc.flush)
			if got := translate(s, tc.group); got != tc.want {
				t.Errorf("Translate(%d) = %d, want %d", tc.group, got, tc.want)
			}
		})
	}
}

// TestStoreCaseB10DormantGroupAfterRestart: 10 000 records replicated with
// offset.lag.max=100 (syncs every 101 records plus the flushed 9999), then the
// checkpoint engine restarts and re-reads every sync before MarkReadToEnd.
// A dormant group at 3000 needs the history: with must-read-to-end (MM2 when
// the checkpoints topic could not be loaded) it gets no answer; with the
// full start-up read MM2's slots give a coarse value, the recent history
// 2930. A caught-up dormant group at 10000 is exact in every mode thanks to
// the flushed sync.
func TestStoreCaseB10DormantGroupAfterRestart(t *testing.T) {
	tests := []struct {
		name       string
		opts       []StoreOpt
		g3000, end int64
	}{
		{"must read to end", []StoreOpt{WithMustReadToEnd(true)}, -1, 10000},
		{"full start-up read, MM2 slots", []StoreOpt{WithMustReadToEnd(false)}, 1, 10000},
		{"full start-up read, recent history", []StoreOpt{WithMustReadToEnd(false), WithRecentHistory(128)}, 2930, 10000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewOffsetSyncStore(tc.opts...)
			replicateDense(s, 100, offsets(0, 10000), true)
			s.MarkReadToEnd()
			if got := translate(s, 3000); got != tc.g3000 {
				t.Errorf("Translate(3000) = %d, want %d", got, tc.g3000)
			}
			if got := translate(s, 10000); got != tc.end {
				t.Errorf("Translate(10000) = %d, want %d", got, tc.end)
			}
		})
	}
}

// TestStoreCaseB04LaggingGroup: offset.lag.max=10, 10 000 records, group at
// 5000. MM2's 64 slots give a coarse but safe value; WithRecentHistory keeps
// every sync of the window and brings the re-read distance down to the sync
// spacing.
func TestStoreCaseB04LaggingGroup(t *testing.T) {
	tests := []struct {
		name string
		opts []StoreOpt
		want int64
	}{
		// MM2 retains 9999 9988 9966 9944 9856 9680 9504 9152 8448 5632 0.
		{"MM2 64 slots", nil, 1},
		{"recent history 256 (window too short)", []StoreOpt{WithRecentHistory(256)}, 1},
		{"recent history 512", []StoreOpt{WithRecentHistory(512)}, 4995},
		{"recent history 1024", []StoreOpt{WithRecentHistory(1024)}, 4995},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewOffsetSyncStore(tc.opts...)
			s.MarkReadToEnd()
			replicateDense(s, 10, offsets(0, 10000), true)
			got := translate(s, 5000)
			if got < 1 || got > 5000 {
				t.Fatalf("Translate(5000) = %d, outside [1, 5000]", got)
			}
			if got != tc.want {
				t.Errorf("Translate(5000) = %d, want %d (re-read distance %d)", got, tc.want, 5000-got)
			}
		})
	}
}

// TestStoreCaseB11GroupAtZero: a group at offset 0 gets checkpoint 0.
func TestStoreCaseB11GroupAtZero(t *testing.T) {
	s := NewOffsetSyncStore()
	s.MarkReadToEnd()
	replicateDense(s, 100, offsets(0, 10), true)
	d, ok := s.Translate(tTopic, tPart, 0)
	if !ok || d != 0 {
		t.Fatalf("Translate(0) = %d,%v, want 0,true", d, ok)
	}
	c := newCheckpointState()
	if !c.Next(Checkpoint{Group: "g1", Topic: "src.orders", UpstreamOffset: 0, DownstreamOffset: d}) {
		t.Error("checkpoint 0->0 not emitted")
	}
}

// TestStoreCaseB32TransactionMarkers: 5 transactions of 10 records with a
// marker after each (source offsets 0-9, 11-20, ..., 44-53; log end 55),
// target offsets 0-49, offset.lag.max=100. The gaps force syncs 0->0,
// 11->10, 22->20, 33->30, 44->40; the flush adds 53->49. MM2's slots have
// dropped 11 and 33 by then (retained: 53 44 22 0), so a group at 33 gets
// 21 (hard bound 30 holds); the recent history gives the ideal 30.
func TestStoreCaseB32TransactionMarkers(t *testing.T) {
	var ups []int64
	for tx := int64(0); tx < 5; tx++ {
		ups = append(ups, offsets(11*tx, 11*tx+10)...)
	}
	recent := []StoreOpt{WithRecentHistory(16)}
	tests := []struct {
		name  string
		opts  []StoreOpt
		flush bool
		group int64
		want  int64
	}{
		{"caught up, after flush", nil, true, 55, 50},
		{"caught up, before flush", nil, false, 55, 41}, // sync 44->40 forced by the gap
		{"first record of txn 4, MM2", nil, true, 33, 21},
		{"first record of txn 4, before flush, MM2", nil, false, 33, 30},
		{"first record of txn 4, recent history", recent, true, 33, 30},
		{"on marker 32, recent history", recent, true, 32, 21},
		{"mid txn 4, recent history", recent, true, 38, 31},
		{"caught up, recent history", recent, true, 55, 50},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewOffsetSyncStore(tc.opts...)
			s.MarkReadToEnd()
			replicateDense(s, 100, ups, tc.flush)
			if got := translate(s, tc.group); got != tc.want {
				t.Errorf("Translate(%d) = %d, want %d", tc.group, got, tc.want)
			}
		})
	}
}

// TestStoreCaseB34BoundedDuplicates: continuous traffic, offset.lag.max=100,
// group committing every 50 records, stopped; after the flush the re-read
// distance E-T is never negative, at most 200 with MM2's slots (the case's
// hard bound; MM2 sometimes drops the second-newest regular sync) and at
// most 100 (the "should") with a recent history.
func TestStoreCaseB34BoundedDuplicates(t *testing.T) {
	run := func(recent bool, end, commit int64) int64 {
		var opts []StoreOpt
		if recent {
			opts = []StoreOpt{WithRecentHistory(64)}
		}
		s := NewOffsetSyncStore(opts...)
		s.MarkReadToEnd()
		replicateDense(s, 100, offsets(0, end), true)
		return translate(s, commit)
	}
	// Syncs 0, 101, ..., 606 and the flushed 689; MM2 keeps 689 606 404 0.
	if got := run(false, 690, 600); got != 405 {
		t.Errorf("MM2: end 690 commit 600: Translate = %d, want 405", got)
	}
	if got := run(true, 690, 600); got != 506 {
		t.Errorf("recent history: end 690 commit 600: Translate = %d, want 506", got)
	}
	rng := rand.New(rand.NewSource(34))
	for i := 0; i < 100; i++ {
		end := int64(200 + rng.Intn(20000))
		commit := end - int64(rng.Intn(50)) // last commit, at most 50 behind
		commit -= commit % 50
		for _, recent := range []bool{false, true} {
			limit := int64(200)
			if recent {
				limit = 100
			}
			if got := run(recent, end, commit); got > commit || commit-got > limit {
				t.Fatalf("recent=%v end %d commit %d: Translate = %d, want in [%d, %d]", recent, end, commit, got, commit-limit, commit)
			}
		}
	}
}

// ---------------------------------------------------------------------------
// Property test.

// replica models the target partition of the current incarnation.
type replica struct {
	lastCopy []int64 // by upstream offset: downstream copy a consumer reads, -1 for none
	end      int64   // downstream log end
}

// forget drops the copies of upstream offsets >= from.
func (r *replica) forget(from int64) {
	for u := from; u < int64(len(r.lastCopy)); u++ {
		r.lastCopy[u] = -1
	}
}

// bounds returns, for every G in [0, maxUp+2], the highest translation that
// invariant I1 of docs/field-failures.md allows: the smallest downstream
// offset among the copies a consumer must read (for every record at or after
// G its latest copy, or for records the current replication pass has yet to
// copy, the target log end).
func (r *replica) bounds(maxUp int64) []int64 {
	b := make([]int64, maxUp+3)
	cur := r.end
	for g := maxUp + 2; g >= 0; g-- {
		if g < int64(len(r.lastCopy)) {
			if d := r.lastCopy[g]; d >= 0 && d < cur {
				cur = d
			}
		}
		b[g] = cur
	}
	return b
}

// TestStoreProperties replicates random source partitions (gaps from
// compaction and transaction markers, late start, task restarts that re-copy
// or skip records, target transaction markers, target recreation) with the
// MM2 sync rules (offset.lag.max, forced syncs on gaps and rewinds, delayed
// syncs promoted at commits, syncs lost when a newer one replaces them
// before sending) and, at random moments, checks every store variant:
// MM2's invariants B and C, I1 (Translate(G) is never past the first target
// copy a consumer must read, nor past the target end), exactness on every
// retained sync and on the newest delivered one, monotonicity in G, and that
// a recent history never answers worse than MM2's slots alone.
func TestStoreProperties(t *testing.T) {
	seeds := 150
	if testing.Short() {
		seeds = 30
	}
	for seed := int64(1); seed <= int64(seeds); seed++ {
		propertyRun(t, seed)
	}
}

func propertyRun(t *testing.T, seed int64) {
	rng := rand.New(rand.NewSource(seed))
	pick := func(xs ...float64) float64 { return xs[rng.Intn(len(xs))] }
	lagMax := []int64{0, 1, 10, 100}[rng.Intn(4)]
	gapP := pick(0, 0.01, 0.1, 0.5)
	downGapP := pick(0, 0, 0.05)
	fireP := pick(1, 0.7, 0.3)
	commitP := pick(0.01, 0.1)
	restartP := pick(0, 0.002)
	truncP := pick(0, 0, 0.001)
	startUp := rng.Intn(3) // 0: read to end first; 1: must-read-to-end start-up; 2: full history start-up

	// Source partition: offsets with gaps (compaction, markers), possibly
	// starting late (retention).
	n := 500 + rng.Intn(2500)
	ups := make([]int64, n)
	o := int64(rng.Intn(3)) * int64(rng.Intn(1000))
	for i := range ups {
		ups[i] = o
		o++
		if rng.Float64() < gapP {
			o += 1 + int64(rng.Intn(5))
		}
	}
	maxUp := ups[n-1]

	must := startUp != 2
	stores := []*OffsetSyncStore{
		NewOffsetSyncStore(WithMustReadToEnd(must)),
		NewOffsetSyncStore(WithMustReadToEnd(must), WithRecentHistory(1+rng.Intn(64))),
	}
	const mm2, ring = 0, 1
	if truncP == 0 {
		stores = append(stores, NewOffsetSyncStore(WithMustReadToEnd(must), WithResetOnDownstreamRewind(false)))
	}
	readToEndAt := 0
	if startUp != 0 {
		readToEndAt = n / 3
	}
	if readToEndAt == 0 {
		for _, s := range stores {
			s.MarkReadToEnd()
		}
	}

	rep := &replica{lastCopy: make([]int64, maxUp+1)}
	rep.forget(0)
	w := newSyncWriter(lagMax)
	var lastDelivered *OffsetSync
	fire := func(force bool) {
		if w.pending != nil && (force || rng.Float64() < fireP) {
			p := *w.pending
			lastDelivered = &p
			w.fire(stores...)
		}
	}
	check := func(step int) {
		if !stores[0].ReadToEnd() {
			return
		}
		fail := func(format string, args ...any) {
			t.Helper()
			t.Fatalf("seed %d step %d (lag %d gap %.2f fire %.1f): %s", seed, step, lagMax, gapP, fireP, fmt.Sprintf(format, args...))
		}
		bound := rep.bounds(maxUp)
		gs := []int64{0, maxUp + 1, maxUp + 2}
		for range 100 {
			gs = append(gs, rng.Int63n(maxUp+3))
		}
		for _, s := range stores {
			p := s.parts[tpKey{tTopic, tPart}]
			if p == nil {
				continue
			}
			checkSlotInvariants(t, p)
			// Exact on every retained sync that is the newest with its
			// upstream offset: slots newest first, then the ring (newer
			// than any slot entry outside its window) in arrival order.
			want := map[int64]int64{}
			for _, r := range p.all() {
				if _, ok := want[r.up]; !ok {
					want[r.up] = r.down
				}
			}
			for i := range p.recent {
				e := p.recent[(p.head+i)%len(p.recent)]
				want[e.up] = e.down
			}
			for up, down := range want {
				gs = append(gs, up)
				if got := translate(s, up); got != down {
					fail("retained sync %d->%d translates to %d", up, down, got)
				}
			}
		}
		if lastDelivered != nil {
			for _, s := range stores {
				if got := translate(s, lastDelivered.UpstreamOffset); got != lastDelivered.DownstreamOffset {
					fail("latest sync %d->%d translates to %d", lastDelivered.UpstreamOffset, lastDelivered.DownstreamOffset, got)
				}
			}
		}
		slices.Sort(gs)
		gs = slices.Compact(gs)
		for si, s := range stores {
			prev := int64(-1)
			for _, g := range gs {
				got := translate(s, g)
				if g <= maxUp+2 && got > bound[g] {
					fail("store %d: Translate(%d) = %d > I1 bound %d", si, g, got, bound[g])
				}
				if got < prev {
					fail("store %d: not monotonic: Translate(%d) = %d after %d", si, g, got, prev)
				}
				prev = got
			}
		}
		// The ring store answers at least as well as MM2's slots.
		for _, g := range gs {
			if a, b := translate(stores[mm2], g), translate(stores[ring], g); b < a {
				fail("recent history Translate(%d) = %d < MM2 %d", g, b, a)
			}
		}
		// Slots are identical with or without the ring.
		if pa, pb := stores[mm2].parts[tpKey{tTopic, tPart}], stores[ring].parts[tpKey{tTopic, tPart}]; pa != nil && pa.all() != pb.all() {
			fail("slots differ with recent history:\n%v\n%v", pa.all(), pb.all())
		}
	}

	hi := 0 // index of the first record never replicated
	for i := 0; i < n; {
		if i == readToEndAt && readToEndAt > 0 && !stores[0].ReadToEnd() {
			for _, s := range stores {
				s.MarkReadToEnd()
			}
		}
		truncated := false
		if rng.Float64() < truncP {
			// Target partition recreated: old copies are gone.
			rep.forget(0)
			rep.end = 0
			truncated = true
		}
		u := ups[i]
		d := rep.end
		rep.end++
		rep.lastCopy[u] = d
		if rng.Float64() < downGapP {
			rep.end++ // transaction marker on the target
		}
		w.ack(u, d)
		fire(truncated) // the truncation sync must arrive before the target regrows
		if rng.Float64() < commitP {
			w.commit()
			fire(false)
		}
		if rng.Intn(100) == 0 {
			check(i)
		}
		i++
		hi = max(hi, i)
		if rng.Float64() < restartP {
			// Task restart: unsent syncs are lost and the writer state is
			// new. Replication resumes at or before its position
			// (re-copying records), or, when it is not re-copying, skips
			// records that were never replicated (source retention or
			// auto.offset.reset=latest). Resuming past records that were
			// copied only by an earlier pass cannot happen in MM2 (the
			// resume point is the last committed source offset).
			w = newSyncWriter(lagMax)
			if i == hi && rng.Intn(2) == 0 {
				i = min(i+rng.Intn(50), n-1)
			} else {
				i = max(0, i-rng.Intn(200))
				// The new pass will copy every record from ups[i] on
				// again, after the current target end: the consumer
				// reads those copies, so older ones do not bound I1.
				rep.forget(ups[i])
			}
		}
	}
	w.commit()
	fire(true)
	if !stores[0].ReadToEnd() {
		for _, s := range stores {
			s.MarkReadToEnd()
		}
	}
	check(n)
}

// TestStoreMM2ModeOvershootsAfterTruncation documents why
// WithResetOnDownstreamRewind defaults to true: MM2's exact store keeps
// syncs of the previous target incarnation and translates a group beyond the
// new target log end.
func TestStoreMM2ModeOvershootsAfterTruncation(t *testing.T) {
	for _, tc := range []struct {
		reset bool
		want  int64
	}{{false, 89}, {true, -1}} {
		s := NewOffsetSyncStore(WithResetOnDownstreamRewind(tc.reset))
		s.MarkReadToEnd()
		replicateDense(s, 10, offsets(0, 100), true) // syncs ..., 88->88, 99->99
		addSync(s, 100, 0)                           // target recreated, log end now 1
		if got := translate(s, 90); got != tc.want {
			t.Errorf("reset=%v: Translate(90) = %d, want %d", tc.reset, got, tc.want)
		}
	}
}
