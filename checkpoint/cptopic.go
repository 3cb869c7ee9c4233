package checkpoint

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
)

// checkCheckpointsTopic restores the checkpoints topic when it was deleted
// or re-created on the target while the emitter runs (Run goroutine,
// before an emission). A write that failed with UNKNOWN_TOPIC_OR_PARTITION
// or UNKNOWN_TOPIC_ID asks for it at once (run.cpLost); otherwise the
// topic is listed once per targetSweepInterval (one Metadata request),
// which finds a topic lost under idle groups, whose checkpoints nothing
// else would write again.
//
// A missing topic is created again, as at the start. A topic under a new
// ID created by someone else is checked as at the start (createTopic: a
// topic whose records expire is refused, RetentionError or ensuretopic's
// PolicyError, until it is altered; TestBrkECheckpointsTopicRecreatedWithDeletePolicy).
// A topic under a new ID (created again by the emitter or by someone
// else) gets a new target client: kgo keeps the ID it knows for a name and would fail every record
// with UNKNOWN_TOPIC_ID. Then every checkpoint the emitter knows is written
// again: an unchanged checkpoint is never rewritten (MM2's rule), so
// without this the new topic would hold only the groups that moved since.
// Before the fix a deleted topic stopped checkpoints for good (the flow
// RUNNING, no group status saying so) and a re-created one stopped them
// until a restart (TestCheckpointsTopicDeletedCreatedAgain,
// TestCheckpointsTopicRecreated).
func (r *run) checkCheckpointsTopic(ctx context.Context) {
	e := r.e
	now := time.Now()
	if !r.cpLost && now.Before(r.nextCPCheck) {
		return
	}
	id, missing, err := r.checkpointsTopicID(ctx)
	if err != nil {
		if ctx.Err() == nil {
			e.log.Warn("describing the checkpoints topic", "topic", e.cpTopic, "err", err)
		}
		return // listed again before the next emission while cpLost
	}
	r.nextCPCheck = now.Add(max(e.sweepEvery, e.cfg.Interval))
	var zero [16]byte
	switch {
	case missing:
	case r.cpID == zero && !r.cpLost:
		r.cpID = id // the first listing: what Run started with
		return
	case id == r.cpID && id != zero:
		r.checkInPlace(ctx) // a write failed, or a sweep: the topic is the same
		return
	case id == zero && !r.cpLost:
		return // a broker without topic IDs, and nothing failed
	}
	if missing {
		e.log.Warn("checkpoints topic missing on the target: creating it again and writing every known checkpoint",
			"topic", e.cpTopic, "cluster", e.cfg.TargetAlias)
		if err := r.createTopic(ctx); err != nil {
			r.topicRefused(ctx, "creating checkpoints topic", err)
			return
		}
		if id, missing, err = r.checkpointsTopicID(ctx); err != nil || missing {
			r.cpLost = true
			return
		}
	} else {
		// Created again by someone else: checked as at the start (its
		// records must not expire). A refused topic gets nothing: the
		// writes of the old client fail (UNKNOWN_TOPIC_ID), every
		// group's status names the fix, and it is checked again before
		// every emission until it is altered.
		if err := r.createTopic(ctx); err != nil {
			r.topicRefused(ctx, "checkpoints topic re-created on the target; not written", err)
			return
		}
		e.log.Warn("checkpoints topic re-created on the target: writing every known checkpoint again",
			"topic", e.cpTopic, "cluster", e.cfg.TargetAlias)
	}
	if err := r.newTargetClient(); err != nil {
		r.cpLost = true
		e.log.Warn("checkpoints topic re-created", "err", err)
		return
	}
	r.cpID, r.cpLost = id, false
	e.checkpointsTopicBack()
	e.rewriteAll(ctx, r)
}

// topicRefused records that the checkpoints topic could not be created
// or is refused (err): nothing is written into it, every group's status
// names err, and it is logged (msg) and counted.
func (r *run) topicRefused(ctx context.Context, msg string, err error) {
	e := r.e
	r.cpLost = true
	e.markCheckpointsLost(err)
	if ctx.Err() == nil {
		e.log.Warn(msg, "topic", e.cpTopic, "err", err)
		e.fail("write_checkpoints", err)
	}
}

// checkInPlace checks the checkpoints topic the emitter writes (same ID)
// as at the start: its cleanup.policy or retention.ms may have been
// altered in place since, and a topic whose records expire loses the
// checkpoints of idle groups (an unchanged checkpoint is never written
// again). Refused, nothing is written into it (run.write), every group's
// status names the fix, and it is checked again before every emission;
// once altered back, every checkpoint is written again (those of idle
// groups may have expired meanwhile). TestBrkECheckpointsTopicAlteredToDelete.
func (r *run) checkInPlace(ctx context.Context) {
	e := r.e
	err := r.checkRetention(ctx)
	var re *RetentionError
	if err != nil && !errors.As(err, &re) {
		// Not known: judged again at the next listing (a describe that
		// failed stops no write).
		if ctx.Err() == nil {
			e.log.Warn("describing the checkpoints topic's configs", "topic", e.cpTopic, "err", err)
		}
		return
	}
	if err != nil {
		r.cpLost = true
		if ctx.Err() == nil && (e.cpTopicErr == nil || e.cpTopicErr.Error() != err.Error()) {
			e.log.Warn("checkpoints topic altered; not written", "topic", e.cpTopic, "err", err)
			e.fail("write_checkpoints", err)
		}
		e.markCheckpointsLost(err)
		return
	}
	r.cpLost = false
	if e.cpTopicErr != nil {
		e.log.Warn("checkpoints topic keeps its records again: writing every known checkpoint again", "topic", e.cpTopic)
		e.checkpointsTopicBack()
		e.rewriteAll(ctx, r)
	}
}

// checkpointsTopicID lists the checkpoints topic's ID, or that it is
// missing.
func (r *run) checkpointsTopicID(ctx context.Context) (id [16]byte, missing bool, err error) {
	e := r.e
	mctx, cancel := context.WithTimeout(ctx, e.cfg.AdminTimeout)
	defer cancel()
	md, err := r.dst.Metadata(mctx, e.cpTopic)
	if err != nil {
		return id, false, err
	}
	td, ok := md.Topics[e.cpTopic]
	switch {
	case !ok || errors.Is(td.Err, kerr.UnknownTopicOrPartition):
		return id, true, nil
	case td.Err != nil:
		return id, false, td.Err
	}
	return td.ID, false, nil
}

// markCheckpointsLost makes every group's status say why its checkpoints
// cannot be written (the checkpoints topic is missing and cannot be
// created).
func (e *Emitter) markCheckpointsLost(err error) {
	e.cpTopicErr = err
	for _, g := range e.groups {
		if g.cpErr != err.Error() {
			g.cpErr = err.Error()
			e.touch(g)
		}
	}
}

// checkpointsTopicBack records that the checkpoints topic exists again: no
// group's status says it is lost any more. A group with no checkpoint to
// write again kept the reason markCheckpointsLost gave it (a reviewer's
// finding); a failed rewrite sets it again.
func (e *Emitter) checkpointsTopicBack() {
	e.cpTopicErr = nil
	for _, g := range e.groups {
		if g.cpErr != "" {
			g.cpErr = ""
			e.touch(g)
		}
	}
}

// rewriteAll writes every checkpoint the emitter knows of the current
// target cluster into a checkpoints topic that lost them (deleted and
// created again), as last written; those that fail are written again at
// the next emission.
func (e *Emitter) rewriteAll(ctx context.Context, io emitIO) {
	all := make([]Checkpoint, 0, e.cps.Len())
	for k, v := range e.cps.all {
		// Not those recorded for another target cluster (the target was
		// rebuilt under the same alias, and the group is gone from the
		// source: checkTarget never forgot them): their offsets are of a
		// log the target no longer has.
		if v.has && (v.id == nil || v.id.cluster == "" || e.dstCluster == "" || v.id.cluster == e.dstCluster) {
			all = append(all, e.cps.checkpoint(k, v))
		}
	}
	if len(all) == 0 {
		return
	}
	slices.SortFunc(all, cpCompare)
	e.wrote(all, io.write(ctx, time.Now(), all), nil)
}
