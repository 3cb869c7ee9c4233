package mirror

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/kclient"
	"github.com/kmirror/kmirror/internal/statustopic"
)

// SlotsResize reports what [Mirror.ResizeSlots] did for one flow.
type SlotsResize struct {
	// Flow is the flow's name, "source->target".
	Flow string
	// From and To are the flow's number of slots before (the partitions of
	// its coordination topic; 0 when it did not exist) and after (its
	// tasks.max).
	From, To int
	// Fenced are the transactional ids fenced ("<group id>-<slot>" for
	// every old slot): an exactly-once producer of the old layout can
	// never commit again.
	Fenced []string
	// TargetState is the flow's persisted target state (its status topic's
	// "target-state" record; [TargetRunning] when there is none), read
	// while resizing: members started after the resize apply it, so a flow
	// left PAUSED or STOPPED (by an operator or `kmirror failover`) stays
	// so until it is resumed. TargetStateBy and TargetStateAt say who wrote
	// it and when (empty and zero without a record). TargetStateErr is
	// non-empty when the status topic could not be read (the resize is not
	// refused for it; the state is then unknown and TargetState empty).
	TargetState    TargetState
	TargetStateBy  string
	TargetStateAt  time.Time
	TargetStateErr string
}

// ResizeSlots changes the number of slots (MM2's tasks.max) of every
// enabled flow to its configured Tasks: the offline operation that a
// change of tasks.max needs, since members configured with different
// numbers of slots refuse to share a flow. Every member of the flows must
// be stopped first: ResizeSlots refuses (an error naming the group and its
// members, by the worker id each advertises with [WithWorkerID] where its
// status record says, and by host and group member id) while a flow's
// group has members. For a flow whose coordination
// topic (mm2-kmirror-units.<source>.internal on the target) has another
// number of partitions, it fences every transactional id of the old slots
// ("<group id>-<slot>", InitProducerId: their open transactions abort and
// their producers can never commit again, as KIP-618 requires when a
// connector's task count changes), deletes the coordination topic and
// creates it with the new number of partitions. Resume points, offset
// syncs and checkpoints do not depend on the slots and are kept: the next
// members resume where the old ones stopped.
//
// It connects to the flows' target clusters only; call it on a Mirror that
// is not running (it returns [ErrClosed] after Close, and refuses to run
// concurrently with Run).
func (m *Mirror) ResizeSlots(ctx context.Context) ([]SlotsResize, error) {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	if m.running {
		m.mu.Unlock()
		return nil, errors.New("mirror: ResizeSlots while the Mirror runs: stop it (and every other member) first")
	}
	m.running = true // no Run meanwhile
	m.mu.Unlock()
	defer func() {
		m.mu.Lock()
		m.running = false
		m.mu.Unlock()
	}()
	var out []SlotsResize
	for _, f := range m.flows {
		if f.cfg.Disabled && f.cfg.DisableHeartbeats {
			continue
		}
		r, err := f.resizeSlots(ctx)
		if err != nil {
			return out, flowError{f.name, err}
		}
		out = append(out, r)
	}
	return out, nil
}

func (f *flow) resizeSlots(ctx context.Context) (SlotsResize, error) {
	r := SlotsResize{Flow: f.name, To: int(f.tasks)}
	cl, adm, err := f.newAdmin(f.dst)
	if err != nil {
		return r, err
	}
	defer cl.Close()
	groups, err := adm.DescribeGroups(ctx, f.groupID)
	if err != nil {
		return r, fmt.Errorf("describing group %s on %s: %w", f.groupID, f.dst.Alias, err)
	}
	if g, ok := groups[f.groupID]; ok && g.Err != nil && !errors.Is(g.Err, kerr.GroupIDNotFound) {
		// Whether members still run is unknown: resizing under them would
		// fence their producers and delete their coordination topic.
		return r, fmt.Errorf("describing group %s on %s: %w: cannot tell whether processes still run the flow; retry once the group can be described", f.groupID, f.dst.Alias, g.Err)
	}
	status, serr := statustopic.ReadAll(ctx, cl.Opts(), f.cfg.Source)
	if g, ok := groups[f.groupID]; ok && g.Err == nil && len(g.Members) > 0 {
		return r, fmt.Errorf("group %s on %s still has %d member(s) (%s): stop every process running the flow first",
			f.groupID, f.dst.Alias, len(g.Members), strings.Join(memberNames(g.Members, status), ", "))
	}
	ts, found, err := statustopic.TargetStateOf(status)
	if err = cmp.Or(serr, err); err != nil {
		r.TargetStateErr = err.Error()
	} else {
		r.TargetState = TargetState(ts.State)
		if found {
			r.TargetStateBy, r.TargetStateAt = ts.By, ts.At
		}
	}
	td, err := adm.ListTopics(ctx, f.unitsTopic)
	if err != nil {
		return r, fmt.Errorf("listing %s on %s: %w", f.unitsTopic, f.dst.Alias, err)
	}
	if d, ok := td[f.unitsTopic]; ok && d.Err == nil {
		r.From = len(d.Partitions)
	}
	if r.From == r.To {
		return r, nil
	}
	for k := 0; k < r.From && !f.cfg.Disabled; k++ { // a disabled flow (heartbeats only) never produced in transactions
		id := transactionalID(f.groupID, int32(k))
		if err := fenceTransactionalID(ctx, f.dst.Alias, f.fenceOpts(id)); err != nil {
			if !f.cfg.ExactlyOnce && errors.Is(err, kerr.TransactionalIDAuthorizationFailed) {
				// An at-least-once flow's principal without the
				// TransactionalId ACL never ran an exactly-once producer
				// with this id: nothing to fence.
				continue
			}
			return r, fmt.Errorf("fencing transactional id %s on %s: %w", id, f.dst.Alias, err)
		}
		r.Fenced = append(r.Fenced, id)
	}
	if r.From > 0 {
		resp, err := adm.DeleteTopics(ctx, f.unitsTopic)
		if err == nil {
			err = resp.Error()
		}
		if err != nil && !errors.Is(err, kerr.UnknownTopicOrPartition) {
			return r, fmt.Errorf("deleting %s on %s: %w", f.unitsTopic, f.dst.Alias, err)
		}
	}
	// The deletion completes asynchronously: retry the creation until the
	// old topic is gone.
	deadline := time.Now().Add(f.cfg.AdminTimeout)
	for {
		_, err := f.ensureTopic(ctx, adm, f.unitsTopicSpec())
		if err == nil {
			td, lerr := adm.ListTopics(ctx, f.unitsTopic)
			if lerr == nil {
				if d, ok := td[f.unitsTopic]; ok && d.Err == nil && len(d.Partitions) == r.To {
					return r, nil
				}
			}
		}
		if time.Now().After(deadline) {
			return r, fmt.Errorf("re-creating %s on %s with %d partitions: not done within %v (last error: %v)", f.unitsTopic, f.dst.Alias, r.To, f.cfg.AdminTimeout, err)
		}
		select {
		case <-ctx.Done():
			return r, ctx.Err()
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// fenceTransactionalID initializes a producer with a transactional id:
// the coordinator bumps the id's epoch, aborting its open transaction and
// fencing every producer that used it before. target names the cluster in
// the advice on a refused configuration (initAdvice).
func fenceTransactionalID(ctx context.Context, target string, opts []kgo.Opt) error {
	cl, err := kclient.New(opts...)
	if err != nil {
		return err
	}
	defer cl.Close()
	_, _, err = cl.ProducerID(ctx)
	return initAdvice(err, cl, target)
}

// memberNames names the flow group's members for an operator: the worker
// id each advertises in its member record on the status topic (status:
// [statustopic.ReadAll]'s map; the runner's -listen address, as Kafka
// Connect's worker_id), then its host and id in the group. A member
// without a record (an older release, or status not readable) is named by
// host and group member id only.
func memberNames(members []kadm.DescribedGroupMember, status map[string][]byte) []string {
	workers := map[string]string{}
	for _, m := range statustopic.MembersOf(status) {
		if m.GroupMemberID != "" && m.WorkerID != "" {
			workers[m.GroupMemberID] = m.WorkerID
		}
	}
	out := make([]string, 0, len(members))
	for _, mem := range members {
		name := "host " + strings.TrimPrefix(mem.ClientHost, "/") + ", group member " + mem.MemberID
		if w := workers[mem.MemberID]; w != "" {
			name = "worker " + w + " (" + name + ")"
		}
		out = append(out, name)
	}
	return out
}
