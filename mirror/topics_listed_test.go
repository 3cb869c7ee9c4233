package mirror

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestListedCheckIgnoresInternalTopic: a listed topic the source holds as
// an internal topic (__consumer_offsets, __transaction_state) is answered
// when asked for by name, but discovery's listing of all topics never
// returns it, so it stays skipped as not on the source. Waking discovery
// for it found nothing new and ran a full discovery and logged an INFO line
// every listedCheckEvery, forever, while nothing changed. A listed topic
// created on the source does wake discovery.
func TestListedCheckIgnoresInternalTopic(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "us", "eu")
	if p.Source.Fake == nil {
		t.Skip("marks a topic internal with kfake's topic config: kfake only")
	}
	internal, created, missing := p.Topic("__internal"), p.Topic("created"), p.Topic("missing")
	yes := "true"
	testcluster.CreateTopic(t, &p.Source, internal, 1, map[string]*string{"kfake.is_internal": &yes})
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	f := &flow{log: log, skips: newSkipSet(log), srcAdm: testcluster.Admin(t, &p.Source),
		refreshWake: make(chan struct{}, 1), cfg: FlowConfig{AdminTimeout: 10 * time.Second}}
	now := time.Now()
	for _, tt := range []string{internal, created, missing} {
		f.skips.note(tt, skip{skipNotOnSource, "listed in topics, but not on the source"}, now)
	}
	if all, _ := f.srcAdm.ListTopics(context.Background()); all.Has(internal) {
		t.Fatalf("listing all topics returns the internal topic %s: the test needs it left out, as discovery sees it", internal)
	}
	if err := f.checkListedCreated(context.Background()); err != nil || len(f.refreshWake) != 0 {
		t.Fatalf("internal topic and a missing one: err %v, %d discovery wakes, want none", err, len(f.refreshWake))
	}
	testcluster.CreateTopic(t, &p.Source, created, 1, nil)
	f.srcAdm = testcluster.Admin(t, &p.Source) // not the cached metadata of the first answer (MetadataMinAge, 5 s, below the 10 s between checks)
	if err := f.checkListedCreated(context.Background()); err != nil || len(f.refreshWake) != 1 {
		t.Fatalf("a listed topic created: err %v, %d discovery wakes, want 1", err, len(f.refreshWake))
	}
}
