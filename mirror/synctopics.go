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
		return f.checkSyncProducer(ctx)
	}
	if err := f.ensureInternalTopics(ctx); err != nil {
		f.syncsLost.Store(true)
		return err
	}
	if err := f.replaceSyncClient(ctx); err != nil {
		f.syncsLost.Store(true)
		return err
	}
	f.log.Warn("offset-syncs or offset-runs topic was deleted or re-created: created again if missing, producer replaced",
		"topic", f.offsetSyncsTopic)
	return nil
}

// checkSyncProducer runs after a write of an offset sync or run failed
// otherwise (syncsCheck): when the producer's id failed to load with a
// non-retriable InitProducerId error (one UNKNOWN_SERVER_ERROR from the
// source), kgo keeps that error and fails every later record at once,
// without a request, so no offset sync or run was written again and every
// group stayed "no offset sync yet", the flow RUNNING
// (TestSyncProducerInitProducerIDErrorReplaced). The producer is replaced.
func (f *flow) checkSyncProducer(ctx context.Context) error {
	if !f.syncsCheck.Swap(false) || f.syncCl.Load() == nil {
		return nil
	}
	err := keptInitErr(ctx, f.syncCl.Load(), f.cfg.AdminTimeout)
	if err == nil {
		return nil
	}
	if rerr := f.replaceSyncClient(ctx); rerr != nil {
		f.syncsCheck.Store(true)
		return rerr
	}
	f.log.Warn("offset-sync producer could not load its producer id: producer replaced", "topic", f.offsetSyncsTopic, "err", err)
	return nil
}

// replaceSyncClient replaces the offset-sync producer, and has the units
// write their newest syncs and current runs again.
func (f *flow) replaceSyncClient(ctx context.Context) error {
	cl, err := f.newSyncClient()
	if err != nil {
		return err
	}
	old := f.syncCl.Swap(cl)
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
