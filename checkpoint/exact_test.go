package checkpoint

import (
	"bytes"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestOffsetRunRoundTrip(t *testing.T) {
	r := OffsetRun{Topic: "orders", Partition: 3, Session: 0xfedcba9876543210, TopicID: [16]byte{1, 2, 3}, Fresh: true,
		SessionUpstreamOffset: 5, SessionOffset: 0, PrevUpstreamOffset: 20, PrevOffset: 14, FirstUpstreamOffset: 22,
		FirstOffset: 15, Count: 10, EndUpstreamOffset: 40, ReadFrom: 0, Committed: 19}
	k, err := r.Key()
	if err != nil {
		t.Fatal(err)
	}
	wantKey := []byte{0, 0, 0, 6, 'o', 'r', 'd', 'e', 'r', 's', 0, 0, 0, 3,
		0xfe, 0xdc, 0xba, 0x98, 0x76, 0x54, 0x32, 0x10, 0, 0, 0, 0, 0, 0, 0, 15}
	if !bytes.Equal(k, wantKey) {
		t.Errorf("key = % x, want % x", k, wantKey)
	}
	v, err := r.Value()
	if err != nil {
		t.Fatal(err)
	}
	if len(v) != 99 {
		t.Errorf("value is %d bytes, want 99", len(v))
	}
	got, err := DecodeOffsetRun(k, append(v, 0xff, 0xff)) // trailing bytes: a later version
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(r, got); d != "" {
		t.Errorf("decoded (-want +got):\n%s", d)
	}
	if got.LastUpstreamOffset() != 31 || got.LastOffset() != 24 {
		t.Errorf("last = %d->%d, want 31->24", got.LastUpstreamOffset(), got.LastOffset())
	}
}

func TestOffsetRunRejectsBadRuns(t *testing.T) {
	ok := OffsetRun{Topic: "t", SessionUpstreamOffset: 0, SessionOffset: 0, PrevUpstreamOffset: -1, PrevOffset: -1,
		FirstUpstreamOffset: 0, FirstOffset: 0, Count: 1, EndUpstreamOffset: -1, Committed: -1}
	if _, err := ok.Value(); err != nil {
		t.Fatalf("valid run: %v", err)
	}
	for name, mut := range map[string]func(*OffsetRun){
		"no records":           func(r *OffsetRun) { r.Count = 0 },
		"negative first":       func(r *OffsetRun) { r.FirstUpstreamOffset = -1 },
		"before session start": func(r *OffsetRun) { r.SessionUpstreamOffset = 1 },
		"previous not before":  func(r *OffsetRun) { r.PrevUpstreamOffset, r.PrevOffset = 0, 0 },
		"previous half unknown": func(r *OffsetRun) {
			r.PrevUpstreamOffset = -1
			r.FirstUpstreamOffset, r.SessionUpstreamOffset = 5, 5
			r.PrevOffset = 0
			r.FirstOffset = 3
		},
		"end not after last": func(r *OffsetRun) { r.EndUpstreamOffset = 0 },
		"read after first":   func(r *OffsetRun) { r.ReadFrom = 1 },
		"negative partition": func(r *OffsetRun) { r.Partition = -1 },
		"bad resume point":   func(r *OffsetRun) { r.Committed = -2 },
	} {
		r := ok
		mut(&r)
		if _, err := r.Value(); err == nil {
			t.Errorf("%s: Value() accepted %+v", name, r)
		}
	}
	k, _ := ok.Key()
	v, _ := ok.Value()
	for name, tc := range map[string]struct {
		k, v []byte
		want error
	}{
		"nil key":     {nil, v, ErrNullKey},
		"tombstone":   {k, nil, ErrTombstone},
		"short value": {k, v[:50], ErrMalformed},
		"short key":   {k[:5], v, ErrMalformed},
	} {
		if _, err := DecodeOffsetRun(tc.k, tc.v); !errors.Is(err, tc.want) {
			t.Errorf("%s: err = %v, want %v", name, err, tc.want)
		}
	}
}

func TestOffsetRunsTopic(t *testing.T) {
	for in, want := range map[string]string{
		"mm2-offset-syncs.dst.internal":       "mm2-kmirror-runs.dst.internal",
		"mm2-offset-syncs__dst__internal":     "mm2-kmirror-runs__dst__internal",
		"custom-syncs.internal":               "mm2-kmirror-runs.custom-syncs.internal",
		"":                                    "",
		"mm2-offset-syncs.us-east-1.internal": "mm2-kmirror-runs.us-east-1.internal",
	} {
		if got := OffsetRunsTopic(in); got != want {
			t.Errorf("OffsetRunsTopic(%q) = %q, want %q", in, got, want)
		}
	}
}

// runB builds the runs of one session for TestTranslator*.
type runB struct {
	store    *RunStore
	session  uint64
	id       [16]byte
	fresh    bool
	readFrom int64
	first    [2]int64 // session's first record, set by the first run
	started  bool
	commit   int64
}

func (b *runB) run(prevUp, prevDown, up, down, count, endUp int64) *runB {
	if !b.started {
		b.first, b.started = [2]int64{up, down}, true
	}
	b.store.Add(OffsetRun{Topic: tTopic, Partition: tPart, Session: b.session, TopicID: b.id, Fresh: b.fresh,
		SessionUpstreamOffset: b.first[0], SessionOffset: b.first[1], PrevUpstreamOffset: prevUp, PrevOffset: prevDown,
		FirstUpstreamOffset: up, FirstOffset: down, Count: count, EndUpstreamOffset: endUp, ReadFrom: b.readFrom,
		Committed: b.commit})
	return b
}

func session(s *RunStore, id uint64, topicID byte, fresh bool, readFrom, committed int64) *runB {
	return &runB{store: s, session: id, id: [16]byte{topicID}, fresh: fresh, readFrom: readFrom, commit: committed}
}

func syncStore(pairs ...[2]int64) *OffsetSyncStore {
	s := NewOffsetSyncStore(WithMustReadToEnd(false), WithRecentHistory(16))
	for _, p := range pairs {
		addSync(s, p[0], p[1])
	}
	s.MarkReadToEnd()
	return s
}

type trCase struct {
	g     int64
	want  int64 // -1: no answer
	exact bool
}

func checkTr(t *testing.T, tr Translator, id byte, cases ...trCase) {
	t.Helper()
	for _, c := range cases {
		got := tr.Translate(tTopic, tPart, [16]byte{id}, c.g)
		off := got.Offset
		if !got.OK {
			off = -1
		}
		if off != c.want || got.Exact != c.exact {
			t.Errorf("Translate(%d) = %+v, want offset %d exact %t", c.g, got, c.want, c.exact)
		}
	}
}

// TestTranslatorIssueCases are the cases of the issue "Offset translation
// that is exact": a quiet topic of 300 records with a group at 86, a topic
// of 10 records with a group at 7 (syncs 0->0 and 9->9), and a topic
// re-created with the new incarnation's records after the old ones.
func TestTranslatorIssueCases(t *testing.T) {
	t.Run("quiet topic 300 records, group at 86", func(t *testing.T) {
		runs := NewRunStore()
		session(runs, 1, 1, true, 0, -1).run(-1, -1, 0, 0, 1, -1).run(-1, -1, 0, 0, 300, -1)
		checkTr(t, Translator{Syncs: syncStore([2]int64{0, 0}, [2]int64{299, 299}), Runs: runs}, 1,
			trCase{86, 86, true}, trCase{0, 0, true}, trCase{299, 299, true}, trCase{300, 300, true},
			trCase{301, 300, false}) // beyond what was replicated: where the next copy lands
		checkTr(t, Translator{Syncs: syncStore([2]int64{0, 0}, [2]int64{299, 299})}, 1, trCase{86, 1, false}) // MM2's rule
	})
	t.Run("10 records, group at 7", func(t *testing.T) {
		runs := NewRunStore()
		session(runs, 1, 1, true, 0, 9).run(-1, -1, 0, 0, 10, -1)
		syncs := syncStore([2]int64{0, 0}, [2]int64{9, 9})
		checkTr(t, Translator{Syncs: syncs, Runs: runs}, 1, trCase{7, 7, true}, trCase{10, 10, true})
		checkTr(t, Translator{Syncs: syncs}, 1, trCase{7, 1, false})
	})
	t.Run("re-created topic", func(t *testing.T) {
		runs := NewRunStore()
		session(runs, 1, 1, true, 0, 99).run(-1, -1, 0, 0, 100, -1)
		tr := Translator{Syncs: syncStore([2]int64{0, 0}, [2]int64{99, 99}), Runs: runs}
		// The new topic (ID 2) has a group at 20 before any of its records
		// was replicated: waiting, never translated with the old syncs.
		if got := tr.Translate(tTopic, tPart, [16]byte{2}, 20); got.OK || got.Reason != ReasonNewIncarnation {
			t.Errorf("before the new topic's first run: %+v, want no answer (%s)", got, ReasonNewIncarnation)
		}
		session(runs, 2, 2, true, 0, -1).run(-1, -1, 0, 100, 30, -1)
		checkTr(t, tr, 2, trCase{20, 120, true}, trCase{0, 100, true}, trCase{30, 130, true})
		checkTr(t, tr, 1, trCase{50, 50, true})  // the old topic's offsets still translate with its own runs
		checkTr(t, tr, 0, trCase{20, 120, true}) // topic ID unknown: the newest runs
	})
}

// TestTranslatorTransactionMarkers: case B32 of docs/field-failures.md,
// five transactions of ten records with a marker after each (source 0-9,
// marker 10, 11-20, marker 21, ...; log end 55), copied to 0-49.
func TestTranslatorTransactionMarkers(t *testing.T) {
	runs := NewRunStore()
	b := session(runs, 1, 1, true, 0, 53)
	b.run(-1, -1, 0, 0, 10, -1)
	for n := int64(1); n < 5; n++ {
		end := int64(-1)
		if n == 4 {
			end = 55 // polled past the last marker with nothing in flight
		}
		b.run(n*11-2, n*10-1, n*11, n*10, 10, end)
	}
	tr := Translator{Syncs: syncStore([2]int64{0, 0}, [2]int64{11, 10}, [2]int64{22, 20}, [2]int64{33, 30}, [2]int64{44, 40}, [2]int64{53, 49}), Runs: runs}
	checkTr(t, tr, 1, trCase{55, 50, true}, trCase{33, 30, true}, trCase{10, 10, true}, trCase{21, 20, true},
		trCase{54, 50, true}, trCase{38, 35, true}, trCase{56, 50, false})
	checkTr(t, Translator{Syncs: tr.Syncs}, 1, trCase{55, 50, false}, trCase{38, 31, false})
}

// TestTranslatorReplayAfterCrash: a session copied 0-99 at 0-99 but wrote
// runs up to 79 only, with resume point 49; the next one replays from 50
// at 100. Until the replay passed the unrecorded copies, a group beyond the
// replay's progress must not be translated past the older copies.
func TestTranslatorReplayAfterCrash(t *testing.T) {
	runs := NewRunStore()
	session(runs, 1, 1, true, 0, 49).run(-1, -1, 0, 0, 80, -1)
	tr := Translator{Syncs: syncStore([2]int64{0, 0}, [2]int64{79, 79}), Runs: runs}
	r2 := session(runs, 2, 1, false, 50, 49).run(-1, -1, 50, 100, 11, -1) // 50-60 at 100-110
	checkTr(t, tr, 1,
		trCase{30, 30, true},  // 30-49 were not replayed: their copies are the last
		trCase{55, 61, false}, // 61 is still at 61 (not replayed yet); not provable: the unrecorded 80-99
		trCase{70, 70, false},
		trCase{90, 80, false}) // the unrecorded copies of 80-99 lie from 80 on
	r2.run(-1, -1, 50, 100, 71, -1) // the replay copied 50-120 at 100-170
	checkTr(t, tr, 1, trCase{55, 105, true}, trCase{90, 140, true}, trCase{30, 30, true})
}

// TestTranslatorHoles: runs linked across an upstream gap translate
// offsets inside the gap exactly; an unlinked run (a target offset the
// session did not write before it) does not.
func TestTranslatorHoles(t *testing.T) {
	runs := NewRunStore()
	session(runs, 1, 1, true, 0, -1).run(-1, -1, 0, 0, 10, -1).run(9, 9, 15, 10, 5, -1).run(-1, -1, 22, 16, 3, -1)
	checkTr(t, Translator{Syncs: syncStore([2]int64{0, 0}, [2]int64{15, 10}), Runs: runs}, 1,
		trCase{12, 10, true}, trCase{15, 10, true}, trCase{17, 12, true},
		trCase{20, 15, false}, // 20-21 (unlinked gap): at least one past the copy of 19 at 14
		trCase{22, 16, true})
}

// TestTranslatorBeforeRuns: replication by a kmirror without offset runs
// (or MM2) up to 99, then a session with runs resuming at 100: offsets
// before it are translated with MM2's rule, later ones exactly.
func TestTranslatorBeforeRuns(t *testing.T) {
	runs := NewRunStore()
	session(runs, 1, 1, false, 100, 99).run(-1, -1, 100, 100, 50, -1)
	tr := Translator{Syncs: syncStore([2]int64{0, 0}, [2]int64{60, 60}, [2]int64{99, 99}, [2]int64{100, 100}), Runs: runs}
	checkTr(t, tr, 1, trCase{50, 1, false}, trCase{99, 99, false}, trCase{120, 120, true}, trCase{100, 100, true})
	// Without a sync before it, offsets before the session have no answer.
	runs2 := NewRunStore()
	session(runs2, 1, 1, false, 100, 99).run(-1, -1, 100, 100, 50, -1)
	checkTr(t, Translator{Syncs: syncStore([2]int64{100, 100}), Runs: runs2}, 1, trCase{50, -1, false}, trCase{120, 120, true})
}

// TestTranslatorTargetRecreated: a fresh session of the same source topic
// writing from target offset 0 again (the target partition was deleted and
// re-created) replaces the sessions above it.
func TestTranslatorTargetRecreated(t *testing.T) {
	runs := NewRunStore()
	session(runs, 1, 1, true, 0, 99).run(-1, -1, 0, 0, 100, -1)
	session(runs, 2, 1, true, 0, -1).run(-1, -1, 0, 0, 20, -1)
	checkTr(t, Translator{Syncs: syncStore([2]int64{0, 0}), Runs: runs}, 1, trCase{10, 10, true}, trCase{50, 20, false})
}
