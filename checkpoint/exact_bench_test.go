package checkpoint

import (
	"math/rand/v2"
	"testing"
)

// benchTranslate translates random group offsets in [0, end).
func benchTranslate(b *testing.B, tr Translator, end int64) {
	rng := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if got := tr.Translate(tTopic, tPart, [16]byte{1}, rng.Int64N(end)); !got.OK {
			b.Fatalf("no translation: %+v", got)
		}
	}
}

// BenchmarkTranslateOneRun: a partition copied without gaps by one session
// (one run of 1,000,000 records): the common case.
func BenchmarkTranslateOneRun(b *testing.B) {
	runs := NewRunStore()
	session(runs, 1, 1, true, 0, 999_999).run(-1, -1, 0, 0, 1_000_000, -1)
	benchTranslate(b, Translator{Syncs: syncStore([2]int64{0, 0}), Runs: runs}, 1_000_000)
}

// BenchmarkTranslateTransactional: 1024 transactions of 10 records, one
// marker after each: 1024 linked runs in one session.
func BenchmarkTranslateTransactional(b *testing.B) {
	runs := NewRunStore()
	s := session(runs, 1, 1, true, 0, -1)
	s.run(-1, -1, 0, 0, 10, -1)
	for n := int64(1); n < 1024; n++ {
		s.run(n*11-2, n*10-1, n*11, n*10, 10, -1)
	}
	benchTranslate(b, Translator{Syncs: syncStore([2]int64{0, 0}), Runs: runs}, 1024*11)
}

// BenchmarkTranslateReplays: eight sessions, each crashed with unrecorded
// copies and replayed by the next from its last resume point, 128 runs
// each (the store's 1024 runs per partition).
func BenchmarkTranslateReplays(b *testing.B) {
	runs := NewRunStore()
	up, down := int64(0), int64(0)
	for k := range int64(8) {
		s := session(runs, uint64(k+1), 1, k == 0, up, up-1)
		prevU, prevD := int64(-1), int64(-1)
		for i := range int64(128) {
			s.run(prevU, prevD, up+i*3, down+i*2, 2, -1) // a gap of one after every two records
			prevU, prevD = up+i*3+1, down+i*2+1
		}
		// Resume point 100 records back; 50 unrecorded copies after the
		// last run.
		up += 128*3 - 100
		down += 128*2 + 50
	}
	benchTranslate(b, Translator{Syncs: syncStore([2]int64{0, 0}), Runs: runs}, up)
}
