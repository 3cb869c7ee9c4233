// Package statustopic owns the records of a flow's status topic,
// mm2-kmirror-status.<source>.internal on the target: the flow's persisted
// target state (RUNNING, PAUSED, STOPPED, as Kafka Connect's connector
// target states of KIP-875), and the members' and slots' published status.
// Kafka Connect's status.storage.topic is the model; the topic is kmirror's
// own and never one of MM2's Connect topics.
//
// Records are keyed by UTF-8 strings with UTF-8 JSON values; a null value is
// a tombstone. A reader takes the last record per key ([Latest]). Nothing
// outside this package encodes or decodes them.
package statustopic

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/ensuretopic"
	"github.com/kmirror/kmirror/internal/kread"
	"github.com/kmirror/kmirror/internal/topicname"
)

// Topic returns the status topic of the flows from source alias source:
// "mm2-kmirror-status.<source>.internal", on the flow's target cluster. An
// alias that cannot appear in a topic name (the source of a heartbeats-only
// flow may be any string MM2 accepts) appears there with its illegal
// characters replaced and a hash appended (topicname.WithAlias).
func Topic(source string) string {
	return topicname.WithAlias("mm2-kmirror-status.", source, ".internal")
}

// Spec returns the topic's ensuretopic specification: one partition (every
// record of the flow in one order), compacted.
func Spec(source, targetAlias string, replicationFactor int16) ensuretopic.Spec {
	compact := "compact"
	return ensuretopic.Spec{Topic: Topic(source), Cluster: targetAlias, Partitions: 1,
		ReplicationFactor: replicationFactor, Configs: map[string]*string{"cleanup.policy": &compact},
		RequireCompact: true}
}

// TargetState is the state an operator asked a flow to be in.
type TargetState string

// Target states (KIP-875's connector target states).
const (
	// Running replicates (the state of a flow with no target-state record).
	Running TargetState = "RUNNING"
	// Paused stops replicating records (units store their resume points and
	// stop fetching); checkpoints, heartbeats and group offset sync go on.
	Paused TargetState = "PAUSED"
	// Stopped stops the flow's units and its singleton duties.
	Stopped TargetState = "STOPPED"
)

// ParseTargetState parses s (any case) into a TargetState.
func ParseTargetState(s string) (TargetState, error) {
	switch t := TargetState(strings.ToUpper(strings.TrimSpace(s))); t {
	case Running, Paused, Stopped:
		return t, nil
	}
	return "", fmt.Errorf("target state %q: write RUNNING, PAUSED or STOPPED", s)
}

// TargetStateKey is the key of the flow's target-state record.
const TargetStateKey = "target-state"

// TargetStateRecord is the value of the target-state record.
type TargetStateRecord struct {
	// Flow is the flow's name, "source->target".
	Flow string `json:"flow"`
	// State is the target state.
	State TargetState `json:"state"`
	// At is when it was written.
	At time.Time `json:"at"`
	// By says who asked (a worker id, or a command such as "kmirror failover").
	By string `json:"by,omitempty"`
	// Reason is the asker's free-text reason.
	Reason string `json:"reason,omitempty"`
}

// TargetStateRecordOf returns the status-topic record carrying rec, for the
// status topic of the flow's source alias source.
func TargetStateRecordOf(source string, rec TargetStateRecord) (*kgo.Record, error) {
	if _, err := ParseTargetState(string(rec.State)); err != nil {
		return nil, err
	}
	v, err := Marshal(rec)
	if err != nil {
		return nil, err
	}
	return &kgo.Record{Topic: Topic(source), Key: []byte(TargetStateKey), Value: v}, nil
}

// Marshal encodes v as a record value: JSON without HTML escaping, so
// that a flow name reads "A->B" in the topic, as an operator dumping it
// expects.
func Marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}

// DecodeTargetState decodes a target-state record's value; its state,
// which may be written in any case, is returned in its canonical spelling
// (RUNNING, PAUSED, STOPPED). An "at" that is not an RFC 3339 time (a
// record written by hand) leaves At zero instead of failing: the state is
// what the members apply.
func DecodeTargetState(value []byte) (TargetStateRecord, error) {
	var raw struct {
		TargetStateRecord
		At json.RawMessage `json:"at"`
	}
	if err := json.Unmarshal(value, &raw); err != nil {
		return TargetStateRecord{}, fmt.Errorf("decoding the target-state record: %w", err)
	}
	rec := raw.TargetStateRecord
	if len(raw.At) > 0 {
		var at time.Time
		if json.Unmarshal(raw.At, &at) == nil {
			rec.At = at
		}
	}
	st, err := ParseTargetState(string(rec.State))
	if err != nil {
		return rec, fmt.Errorf("decoding the target-state record: %w", err)
	}
	// The canonical spelling: ParseTargetState accepts any case and
	// spaces (a record written by hand), and readers compare with the
	// constants (regression: TestTargetStateAnyCaseNormalized).
	rec.State = st
	return rec, nil
}

// Latest returns the last value of each key in records (log order), with
// keys whose last record is a tombstone left out.
func Latest(records []*kgo.Record) map[string][]byte {
	out := map[string][]byte{}
	for _, r := range records {
		if r.Value == nil {
			delete(out, string(r.Key))
			continue
		}
		out[string(r.Key)] = r.Value
	}
	return out
}

// ReadAll reads the status topic of source alias source on the cluster opts
// reach, to the end offsets listed at the call, and returns [Latest] of its
// records. A missing topic is no records (nil map, nil error).
func ReadAll(ctx context.Context, opts []kgo.Opt, source string) (map[string][]byte, error) {
	recs, err := kread.ReadToEnd(ctx, opts, Topic(source), kread.Options{})
	if errors.Is(err, kerr.UnknownTopicOrPartition) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", Topic(source), err)
	}
	return Latest(recs), nil
}

// ReadTargetState returns the target state of the flows from source alias
// source, as persisted in its status topic on the cluster opts reach. With
// no record (or no topic) it returns a [Running] record with a zero At and
// found false.
func ReadTargetState(ctx context.Context, opts []kgo.Opt, source string) (rec TargetStateRecord, found bool, err error) {
	all, err := ReadAll(ctx, opts, source)
	if err != nil {
		return TargetStateRecord{State: Running}, false, err
	}
	return TargetStateOf(all)
}

// TargetStateOf is [ReadTargetState] from a read already done: all is
// [ReadAll]'s (or [Latest]'s) map.
func TargetStateOf(all map[string][]byte) (rec TargetStateRecord, found bool, err error) {
	v, ok := all[TargetStateKey]
	if !ok {
		return TargetStateRecord{State: Running}, false, nil
	}
	rec, err = DecodeTargetState(v)
	if err != nil {
		return TargetStateRecord{State: Running}, false, err
	}
	return rec, true, nil
}

// WriteTargetState writes rec as the target state of the flows from source
// alias source with cl, a client of the target cluster, and waits for the
// target's acknowledgement. The status topic must exist (the flow's members
// create it; spec creates it otherwise, see [Spec] and ensuretopic).
func WriteTargetState(ctx context.Context, cl *kgo.Client, source string, rec TargetStateRecord) error {
	_, err := WriteTargetStateOffset(ctx, cl, source, rec)
	return err
}

// WriteTargetStateOffset is [WriteTargetState] returning the record's
// offset in the status topic: a member has applied it once its record's
// [MemberRecord.AppliedOffset] is at or past it.
func WriteTargetStateOffset(ctx context.Context, cl *kgo.Client, source string, rec TargetStateRecord) (int64, error) {
	r, err := TargetStateRecordOf(source, rec)
	if err != nil {
		return -1, err
	}
	res := cl.ProduceSync(ctx, r)
	if err := res.FirstErr(); err != nil {
		return -1, fmt.Errorf("writing the target state %s of %s to %s: %w", rec.State, rec.Flow, Topic(source), err)
	}
	return res[0].Record.Offset, nil
}

// DRKey is the key of the record kmirror failover and kmirror failback
// write in the status topic once they committed group offsets: per group,
// the command that committed it last. A run of the same command finds its
// groups there: their consumers may have moved on since, and are not moved
// back.
const DRKey = "dr"

// DRRecord is the value of the [DRKey] record.
type DRRecord struct {
	// Flow is the flow's name, "source->target".
	Flow string `json:"flow"`
	// At is when the last commits ended.
	At time.Time `json:"at"`
	// Groups maps each group either command committed to the one that
	// committed it last: "failover" or "failback".
	Groups map[string]string `json:"groups"`
	// Refused names, per group of Groups whose last commit was partial,
	// the partitions whose commit the broker refused in it: topic ->
	// partitions. That command never committed them, so a run of it
	// again commits their translation there instead of keeping the
	// offset it finds (which is not its consumers' progress).
	Refused map[string]map[string][]int32 `json:"refused,omitempty"`
}

// ReadDR returns the [DRKey] record of the flows from source alias source,
// on the cluster opts reach; found is false when there is none, or none
// that decodes (a record this release cannot read says nothing of what
// was committed).
func ReadDR(ctx context.Context, opts []kgo.Opt, source string) (rec DRRecord, found bool, err error) {
	all, err := ReadAll(ctx, opts, source)
	if err != nil {
		return DRRecord{}, false, err
	}
	rec, found = DROf(all)
	return rec, found, nil
}

// DROf is [ReadDR] from a read already done: all is [ReadAll]'s (or
// [Latest]'s) map. An unreadable record counts as none.
func DROf(all map[string][]byte) (rec DRRecord, found bool) {
	v, ok := all[DRKey]
	if !ok || json.Unmarshal(v, &rec) != nil {
		return DRRecord{}, false
	}
	return rec, true
}

// WriteDR writes rec as the [DRKey] record of the flows from source alias
// source with cl, a client of the flow's target cluster whose status topic
// exists, and waits for the acknowledgement.
func WriteDR(ctx context.Context, cl *kgo.Client, source string, rec DRRecord) error {
	v, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	if err := cl.ProduceSync(ctx, &kgo.Record{Topic: Topic(source), Key: []byte(DRKey), Value: v}).FirstErr(); err != nil {
		return fmt.Errorf("writing the record of the groups committed by kmirror failover and failback for %s to %s: %w", rec.Flow, Topic(source), err)
	}
	return nil
}

// RestartKey is the key of the flow's restart-request record: a request,
// written by one member, that every other member of the flow restart its
// own FAILED partitions matching a filter (Kafka Connect's distributed
// herder writes its KIP-745 restart requests to the config topic for the
// same reason: any worker may receive the REST call, each restarts what
// it runs). Compaction keeps the last request only; members apply each
// request they read after their start once, and never one written before
// it.
const RestartKey = "restart-request"

// RestartRecord is the value of the [RestartKey] record.
type RestartRecord struct {
	// Flow is the flow's name, "source->target".
	Flow string `json:"flow"`
	// Topic is the source topic whose FAILED partitions restart ("": every
	// topic) and Partition the partition of it (-1: every partition).
	Topic     string `json:"topic,omitempty"`
	Partition int32  `json:"partition"`
	// Slot, when set, restricts the request to the partitions of that
	// slot (Connect's task restart); unset: every slot.
	Slot *int32 `json:"slot,omitempty"`
	// At is when it was written.
	At time.Time `json:"at"`
	// By says who asked (a worker id, a user); FromMember is the member id
	// of the member that wrote it, which restarted its own partitions
	// before writing and skips the record when it reads it back.
	By         string `json:"by,omitempty"`
	FromMember string `json:"from_member,omitempty"`
}

// RestartRecordOf returns the status-topic record carrying rec, for the
// status topic of the flow's source alias source.
func RestartRecordOf(source string, rec RestartRecord) (*kgo.Record, error) {
	if err := rec.check(); err != nil {
		return nil, err
	}
	v, err := Marshal(rec)
	if err != nil {
		return nil, err
	}
	return &kgo.Record{Topic: Topic(source), Key: []byte(RestartKey), Value: v}, nil
}

// check refuses a restart request no member could apply as meant.
func (rec RestartRecord) check() error {
	switch {
	case rec.Partition < -1:
		return fmt.Errorf("restart request: partition %d: use -1 for every partition, or a partition number", rec.Partition)
	case rec.Partition >= 0 && rec.Topic == "":
		return fmt.Errorf("restart request: partition %d without a topic: name the source topic, or use -1", rec.Partition)
	case rec.Slot != nil && *rec.Slot < 0:
		return fmt.Errorf("restart request: slot %d: slots are numbered from 0; leave slot out for every slot", *rec.Slot)
	}
	return nil
}
