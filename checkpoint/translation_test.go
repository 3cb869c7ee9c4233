package checkpoint

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/kmirror/kmirror/internal/testcluster"
)

func TestTranslationInfoRoundTrip(t *testing.T) {
	for _, c := range []struct {
		info TranslationInfo
		text string
	}{
		{TranslationInfo{Exact: true}, "exact"},
		{TranslationInfo{Kind: KindRun, Reread: 12}, "safe;run;reread<=12"},
		{TranslationInfo{Kind: KindSync, Reread: 0}, "safe;sync;reread<=0"},
		{TranslationInfo{Kind: KindRun, Reread: -1}, "safe;run"},
	} {
		if got := c.info.String(); got != c.text {
			t.Errorf("%+v.String() = %q, want %q", c.info, got, c.text)
		}
		got, err := ParseTranslationInfo(c.text)
		if err != nil || got != c.info {
			t.Errorf("ParseTranslationInfo(%q) = %+v, %v; want %+v", c.text, got, err, c.info)
		}
	}
	for _, bad := range []string{"", "Exact", "safe", "safe;mm2", "safe;run;reread<=-1", "safe;run;reread=3", "safe;sync;reread<=x", "safe;run;reread<=1;more"} {
		if got, err := ParseTranslationInfo(bad); err == nil {
			t.Errorf("ParseTranslationInfo(%q) = %+v, want an error", bad, got)
		}
	}
}

// TestTranslatorKindAndReread: each answer names the record kind it came
// from and bounds the records a consumer resuming there may read again.
func TestTranslatorKindAndReread(t *testing.T) {
	runs := NewRunStore()
	// 0-9 at 0-9, a hole (unlinked) 10-14, 15-19 at 16-20.
	session(runs, 1, 1, true, 0, -1).run(-1, -1, 0, 0, 10, -1).run(-1, -1, 15, 16, 5, -1)
	syncs := syncStore([2]int64{0, 0}, [2]int64{15, 16})
	for _, c := range []struct {
		name   string
		tr     Translator
		g      int64
		want   Translation
		header string
	}{
		{"exact from runs", Translator{Syncs: syncs, Runs: runs}, 7,
			Translation{Offset: 7, OK: true, Exact: true, Kind: KindRun, Reread: 0}, "exact"},
		// 12 lies in the hole: at least one past the copy of 9 (10), at
		// most the copy of 15 (16): 6 records may be read again.
		{"hole in the runs", Translator{Syncs: syncs, Runs: runs}, 12,
			Translation{Offset: 10, OK: true, Kind: KindRun, Reread: 6, Reason: ReasonNotExact}, "safe;run;reread<=6"},
		// Beyond the last run (19 at 20): the records 20-24 the group read
		// may have been copied since, from 21 on.
		{"beyond replicated", Translator{Syncs: syncs, Runs: runs}, 25,
			Translation{Offset: 21, OK: true, Kind: KindRun, Reread: 5, Reason: ReasonBeyondReplicated}, "safe;run;reread<=5"},
		// MM2's rule: one past the sync 0->0, records 1-6 read again.
		{"offset syncs alone", Translator{Syncs: syncs}, 7,
			Translation{Offset: 1, OK: true, Kind: KindSync, Reread: 6, Reason: ReasonNotExact}, "safe;sync;reread<=6"},
		{"on a sync", Translator{Syncs: syncs}, 15,
			Translation{Offset: 16, OK: true, Kind: KindSync, Reread: 0, Reason: ReasonNotExact}, "safe;sync;reread<=0"},
	} {
		got := c.tr.Translate(tTopic, tPart, [16]byte{1}, c.g)
		if got != c.want {
			t.Errorf("%s: Translate(%d) = %+v, want %+v", c.name, c.g, got, c.want)
		}
		if h := got.info().String(); h != c.header {
			t.Errorf("%s: header %q, want %q", c.name, h, c.header)
		}
	}
}

// TestEmitterTranslationHeader: every checkpoint kmirror writes says how it
// was translated (seam 5 of the design notes): exact from offset runs, or
// safe from offset syncs alone with the bound on records read again.
func TestEmitterTranslationHeader(t *testing.T) {
	f := newFixture(t, 2, 200)
	f.syncs(0, [2]int64{0, 0}, [2]int64{199, 199})
	f.syncs(1, [2]int64{0, 0}, [2]int64{100, 100}, [2]int64{199, 199})
	f.runs(0, [5]int64{-1, -1, 0, 0, 200}) // partition 1 has no runs: MM2's rule
	g := f.p.Group("g")
	f.commit(&f.p.Source, g, f.topic, map[int32]int64{0: 120, 1: 120})
	_, stop := f.start()
	want := map[int32]string{0: "exact", 1: "safe;sync;reread<=19"}
	testcluster.Eventually(t, 20*time.Second, "checkpoints with their translation header", func() (bool, string) {
		got := map[int32]string{}
		for _, r := range f.cpRecords() {
			cp, err := DecodeCheckpoint(r.Key, r.Value)
			if err != nil || cp.Group != g {
				continue
			}
			for _, h := range r.Headers {
				if h.Key == TranslationHeader {
					got[cp.Partition] = string(h.Value)
				}
			}
		}
		return cmp.Equal(want, got), fmt.Sprint(got)
	})
	stop()
}
