package mirror

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/kclient"
	"github.com/kmirror/kmirror/internal/statustopic"
)

// TargetState is the state an operator asked a flow to be in: Kafka
// Connect's connector target state (KIP-875: RUNNING, PAUSED, STOPPED). It
// is persisted in the flow's status topic on the target
// (mm2-kmirror-status.<source>.internal, key "target-state"), so every
// member of the flow applies it within seconds and it survives restarts.
// A flow with no target state recorded is RUNNING.
type TargetState string

// The target states of [Mirror.SetTargetState].
const (
	// TargetRunning replicates (the default).
	TargetRunning TargetState = "RUNNING"
	// TargetPaused stops replicating records: each member's units of work
	// stop gracefully (records in flight acknowledged, resume points and
	// final offset syncs stored) and keep their slots; checkpoints,
	// heartbeats and group offset sync go on. Connect's PUT
	// /connectors/<name>/pause.
	TargetPaused TargetState = "PAUSED"
	// TargetStopped stops the units and the singleton duties (topic
	// creation, config and ACL sync, checkpoints, group offset sync,
	// heartbeats): the flow writes nothing to the target but its status.
	// Connect's PUT /connectors/<name>/stop (KIP-875).
	TargetStopped TargetState = "STOPPED"
)

// ParseTargetState parses s (any case: "running", "PAUSED", "stopped") into
// a TargetState; anything else is an error naming s and the three states.
func ParseTargetState(s string) (TargetState, error) {
	t, err := statustopic.ParseTargetState(s)
	return TargetState(t), err
}

// ErrTargetStateRefused is matched (errors.Is) by the errors of
// [Mirror.SetTargetState] that refuse the request itself: an unknown flow,
// a state other than the three, a flow that runs nothing to pause or stop.
// Nothing was written, and asking again fails the same way (the runner
// answers them 409 Conflict). Its other errors are failed writes.
var ErrTargetStateRefused = errors.New("mirror: target state refused")

// refusedError marks an error of SetTargetState as a refusal of the
// request (ErrTargetStateRefused); its message is err's.
type refusedError struct{ err error }

func (e refusedError) Error() string        { return e.err.Error() }
func (e refusedError) Unwrap() error        { return e.err }
func (e refusedError) Is(target error) bool { return target == ErrTargetStateRefused }

// SetTargetState persists state as the target state of flow ("source->target",
// as [FlowStatus.Name]) in the flow's status topic on its target cluster
// and returns once the target acknowledged it; every member of the flow
// (this process and the others sharing it) applies it within 5 seconds,
// and members started later apply it before they start anything. by says
// who asks (a user, a command; empty: this Mirror's worker id, see
// [WithWorkerID]) and reason is free text; both are kept in the record.
//
// It is Kafka Connect's PUT /connectors/<name>/pause, /resume and /stop
// (Connect answers 202 Accepted to pause and resume, 204 No Content to
// stop): the members apply the state asynchronously.
// [FlowStatus.TargetState] shows the state asked for, [FlowStatus.State]
// PAUSED or STOPPED once this member applied it, and [Mirror.ClusterStatus]
// what each member applied. The Mirror need not be running: the call
// creates the status topic if it is missing (as members do) with its own
// client. Errors: refusals of the request, which match
// [ErrTargetStateRefused] (an unknown flow, listing the flows; a state
// other than the three; a flow that is only heartbeats,
// FlowConfig.Disabled with DisableHeartbeats: it has no members), or the
// target cluster not acknowledging the write before ctx ends.
func (m *Mirror) SetTargetState(ctx context.Context, flow string, state TargetState, by, reason string) error {
	if _, err := statustopic.ParseTargetState(string(state)); err != nil {
		return refusedError{fmt.Errorf("mirror: SetTargetState: %w", err)}
	}
	f, err := m.flowNamed("SetTargetState", flow)
	if err != nil {
		return refusedError{err}
	}
	if f.cfg.Disabled && f.cfg.DisableHeartbeats {
		return refusedError{fmt.Errorf("mirror: SetTargetState: flow %s neither replicates nor emits heartbeats: it runs nothing to pause or stop", flow)}
	}
	if by == "" {
		by = f.workerID
	}
	rec := statustopic.TargetStateRecord{Flow: f.name, State: statustopic.TargetState(state), At: time.Now().UTC(), By: by, Reason: reason}
	if err := f.writeStatusRecord(ctx, func(cl *kgo.Client) error { return statustopic.WriteTargetState(ctx, cl, f.cfg.Source, rec) }); err != nil {
		return fmt.Errorf("mirror: SetTargetState: %w", err)
	}
	f.log.Info("target state written", "state", state, "by", by, "reason", reason)
	return nil
}

// writeStatusRecord calls write with a client of its own on the flow's
// target, once the status topic exists (created as members create it):
// the operator's requests (SetTargetState, RestartFailedInCluster) may
// come while the flow opens or closes its clients, or before it runs.
func (f *flow) writeStatusRecord(ctx context.Context, write func(*kgo.Client) error) error {
	cl, err := kclient.New(f.clientOpts(f.dst, f.dst.Producer, statusProducerOpts...)...)
	if err != nil {
		return fmt.Errorf("client of %s: %w", f.dst.Alias, err)
	}
	defer cl.Close()
	// A target refusing the client (SASL credentials it rejects) made a
	// restart request retry until its deadline and answer "context
	// deadline exceeded" after 30 s: it is said at once, with the keys to
	// check.
	if err := kclient.Refusal(ctx, kclient.ProbeTimeout, f.clientOpts(f.dst, f.dst.Producer)...); err != nil { // the write's own settings
		return kclient.Unreachable("target cluster", f.dst.Alias, err)
	}
	// Its own client's admin, not the flow's (found by a reviewer, -race).
	if _, err := f.ensureTopic(ctx, kadm.NewClient(cl), f.statusTopicSpec()); err != nil {
		return refusedHint(f.dst.Alias, err)
	}
	return refusedHint(f.dst.Alias, write(cl))
}

// refusedHint is err, with unreachable's hint when the target's broker
// closed the connection or rejected the credentials: a pause answered
// only "...: EOF" when the target refused the client's SASL (a breaker's
// finding), where the flow's status said what to check.
func refusedHint(alias string, err error) error {
	if err != nil && (errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, kerr.SaslAuthenticationFailed)) {
		return kclient.Unreachable("target cluster", alias, err)
	}
	return err
}

// flowNamed returns the flow named name, or an error for op naming the
// flows.
func (m *Mirror) flowNamed(op, name string) (*flow, error) {
	var names []string
	for _, f := range m.flows {
		if f.name == name {
			return f, nil
		}
		names = append(names, f.name)
	}
	return nil, fmt.Errorf("mirror: %s: unknown flow %q: the flows are %q (names are \"source->target\")", op, name, names)
}

// applyTarget makes this member run what target state st lets run, and
// returns once it does: RUNNING starts a unit per owned slot (and the
// singleton duties with slot 0); PAUSED stops the units gracefully,
// keeping their slots, and runs the singleton duties; STOPPED stops both.
// Only the target-state goroutine calls it, so applications never overlap;
// the group's callbacks read f.applied, set first, to start what it
// allows. The state it reports (f.reported: its status and member record)
// changes only once what it stops has stopped: a member reporting STOPPED
// writes nothing more (found by a review: it reported STOPPED while a
// slow produce of its units was still landing records). off is the offset
// of the target-state record st comes from, reported with it in the member
// record (applied_state_offset): the same state written again only moves
// it.
func (f *flow) applyTarget(st TargetState, off int64) {
	f.unitsMu.Lock()
	if f.leaving {
		f.unitsMu.Unlock()
		return
	}
	if st == f.applied {
		// The same state written again (kmirror failover's STOPPED on a
		// stopped flow): applied already (applications never overlap, so
		// reported is applied), now from that record too.
		changed := off != f.reportedOffset
		f.appliedOffset, f.reportedOffset = off, off
		f.unitsMu.Unlock()
		if changed {
			f.wakePublish()
		}
		return
	}
	prev := f.applied
	f.applied, f.appliedAt, f.appliedOffset = st, time.Now(), off
	for k := range f.owned {
		f.slotSince[k] = f.appliedAt
	}
	var stop, single []int32
	var started []int32
	if st != TargetRunning {
		// The running units, and those a release is stopping: the state
		// is reported once they all stopped (a revoked unit still
		// flushing writes records; found by a review).
		stop = sortedSlots(f.units)
		for _, k := range sortedSlots(f.stopping) {
			if !slices.Contains(stop, k) {
				stop = append(stop, k)
			}
		}
	}
	if st == TargetStopped {
		single = []int32{0}
	}
	if st != TargetRunning {
		// The partitions kept paused or stopped take the new state
		// (PAUSED <-> STOPPED; FAILED ones stay FAILED): they kept the
		// label of the first pause or stop, so a paused, then stopped
		// flow showed every partition PAUSED (found by a review).
		for _, ps := range f.pausedParts {
			for i := range ps {
				if ps[i].State == StatePaused || ps[i].State == StateStopped {
					ps[i].State = State(st)
				}
			}
		}
	}
	started = f.startOwnedLocked()
	f.unitsMu.Unlock()
	begin := time.Now()
	us, _ := f.stopSlots(stop, true, single)
	f.unitsMu.Lock()
	for _, u := range us {
		if !f.owned[u.slot] || f.applied == TargetRunning {
			continue
		}
		ps := u.snapshot(nil)
		for i := range ps {
			if ps[i].State == StateRunning || ps[i].State == StateRetrying {
				ps[i].State = State(f.applied)
			}
		}
		f.pausedParts[u.slot] = ps
	}
	f.reported, f.reportedOffset = st, off
	f.unitsMu.Unlock()
	f.log.Info("target state applied", "state", st, "was", prev, "stopped_units", len(us), "started_units", started,
		"took", time.Since(begin).Round(time.Millisecond))
	f.wakePublish()
}

// targetLoop applies the flow's target state whenever the status topic's
// tail says it changed (wakeTarget), one application at a time, until ctx
// ends.
func (f *flow) targetLoop(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-f.targetWake:
		}
		f.applyTarget(f.desiredTargetOffset())
	}
}

// desiredTarget returns the target state the status topic holds.
func (f *flow) desiredTarget() TargetState {
	st, _ := f.desiredTargetOffset()
	return st
}

// desiredTargetOffset returns the target state the status topic holds and
// the offset of its record (-1: none).
func (f *flow) desiredTargetOffset() (TargetState, int64) {
	f.viewMu.Lock()
	defer f.viewMu.Unlock()
	rec, _ := f.view.TargetState()
	return TargetState(rec.State), f.view.TargetOffset()
}

func (f *flow) wakeTarget() {
	select {
	case f.targetWake <- struct{}{}:
	default:
	}
}
