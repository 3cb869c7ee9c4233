package mirror

import (
	"context"
)

// restoreSyncTopics runs in the refresh loop of every member (every unit
// writes offset syncs and runs) once a write found the offset-syncs or
// offset-runs topic missing (UNKNOWN_TOPIC_OR_PARTITION) or re-created
// (UNKNOWN_TOPIC_ID): it creates them again as at the start
// (ensureInternalTopics) and replaces the producer, since kgo keeps the
// topic ID it knows for a name and would fail every record of a re-created
// topic for good. Before, both topics were created only at the start: a
// deleted one stopped the flow's offset syncs or runs until a restart, and
// the checkpoints of its groups stopped at the last position the runs
// covered ("group offset beyond what was replicated"), the flow RUNNING
// (TestOffsetSyncTopicsRestored).
func (f *flow) restoreSyncTopics(ctx context.Context) error {
	if !f.syncsLost.Swap(false) {
		return nil
	}
	if err := f.ensureInternalTopics(ctx); err != nil {
		f.syncsLost.Store(true)
		return err
	}
	cl, err := f.newSyncClient()
	if err != nil {
		f.syncsLost.Store(true)
		return err
	}
	old := f.syncCl.Swap(cl)
	f.log.Warn("offset-syncs or offset-runs topic was deleted or re-created: created again if missing, producer replaced",
		"topic", f.offsetSyncsTopic)
	// What the old producer still holds for the topic that is there is
	// written if it can be within the bound; the rest is superseded by
	// later syncs and runs (a unit rewrites its open run).
	fctx, cancel := context.WithTimeout(ctx, syncFlushTimeout)
	defer cancel()
	_ = old.Flush(fctx)
	old.Close()
	// Then the units write their newest syncs and current runs again,
	// also those a unit handed to the old producer as it closed.
	f.syncEpoch.Add(1)
	return nil
}
