package statustopic

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Key prefixes of the member and slot records.
const (
	// MemberPrefix starts the key of a member's record: "member:<member id>".
	MemberPrefix = "member:"
	// SlotPrefix starts the key of a slot's record: "slot:<n>" (the first
	// chunk) and "slot:<n>:<chunk>" (the others).
	SlotPrefix = "slot:"
)

// MemberKey returns the key of member id's record.
func MemberKey(id string) string { return MemberPrefix + id }

// SlotKey returns the key of chunk chunk of slot n's record ("slot:<n>"
// for chunk 0, "slot:<n>:<chunk>" for the others).
func SlotKey(n int32, chunk int) string {
	if chunk == 0 {
		return SlotPrefix + strconv.Itoa(int(n))
	}
	return SlotPrefix + strconv.Itoa(int(n)) + ":" + strconv.Itoa(chunk)
}

// parseSlotKey parses "slot:<n>" and "slot:<n>:<chunk>".
func parseSlotKey(k string) (n int32, chunk int, ok bool) {
	rest, found := strings.CutPrefix(k, SlotPrefix)
	if !found {
		return 0, 0, false
	}
	a, b, hasChunk := strings.Cut(rest, ":")
	v, err := strconv.ParseInt(a, 10, 32)
	if err != nil || v < 0 {
		return 0, 0, false
	}
	if hasChunk {
		c, err := strconv.Atoi(b)
		if err != nil || c < 1 {
			return 0, 0, false
		}
		chunk = c
	}
	return int32(v), chunk, true
}

// StaleAfter is how many publication intervals old a member or slot record
// may be before readers take its publisher as gone.
const StaleAfter = 3

// DefaultInterval is the members' publication interval unless configured
// otherwise (the runner's -status-interval).
const DefaultInterval = 5 * time.Second

// MemberRecord is the value of a member's record: what one process running
// the flow publishes about itself every interval and within a second of a
// change. Counters are cumulative for the process.
type MemberRecord struct {
	// Flow is the flow's name, "source->target".
	Flow string `json:"flow"`
	// MemberID is the id in the record's key: unique per process and flow
	// run ("<worker id>-<random>").
	MemberID string `json:"member_id"`
	// WorkerID is the address the member advertises (the runner's -listen
	// host:port), as Kafka Connect's worker_id.
	WorkerID string `json:"worker_id"`
	// Version is the member's kmirror version.
	Version string `json:"version,omitempty"`
	// GroupMemberID and Generation are the member's id in the flow's group
	// and the generation of its last assignment.
	GroupMemberID string `json:"group_member_id,omitempty"`
	Generation    int32  `json:"generation"`
	// Tasks is the tasks.max this member is configured with;
	// HeartbeatsOnly is true when its configuration disables the flow
	// (<flow>.enabled=false: it only emits heartbeats).
	Tasks          int  `json:"tasks"`
	HeartbeatsOnly bool `json:"heartbeats_only,omitempty"`
	// Started is when the member's flow started: the member that started
	// last sets the flow's epoch (its tasks.max and enabled).
	Started time.Time `json:"started,omitzero"`
	// Fingerprint is a hash of Config.
	Fingerprint string `json:"fingerprint,omitempty"`
	// SourceClusterID is the ID of the cluster the member's source alias
	// reaches (empty before it learned it, and in the records of releases
	// before it): members whose alias reaches different clusters would mix
	// their copies in the same remote topics.
	SourceClusterID string `json:"source_cluster_id,omitempty"`
	// Config is the member's effective flow configuration, key by key,
	// with secret values replaced by a hash.
	Config map[string]string `json:"config,omitempty"`
	// Slots are the slots the group assigned to this member, sorted.
	Slots []int32 `json:"slots"`
	// Singleton is true while the member holds slot 0's duties.
	Singleton bool `json:"singleton"`
	// Applied is the target state the member has applied.
	Applied TargetState `json:"applied_state"`
	// AppliedOffset is the offset in the status topic of the target-state
	// record whose state Applied is (-1: none, the default RUNNING), so
	// that a command that wrote a state can tell a member that applied it
	// from one that applied the same state from an earlier record, before
	// a later change it has not applied yet. Nil in the records of releases
	// before it: [MemberState.AppliedOffset] is then -1, older than any
	// record.
	AppliedOffset *int64 `json:"applied_state_offset,omitempty"`
	// State and Error are the member's own flow state (RUNNING, RETRYING,
	// PAUSED, ...) and its error.
	State string `json:"state"`
	Error string `json:"error,omitempty"`
	// Waiting says why the member replicates nothing although it runs
	// (empty when it does not wait).
	Waiting string `json:"waiting,omitempty"`
	// Records and Bytes acknowledged by the target since the process
	// started (never decrease); ProvenanceSkipped likewise.
	Records           int64 `json:"records"`
	Bytes             int64 `json:"bytes"`
	ProvenanceSkipped int64 `json:"provenance_skipped,omitempty"`
	// Lag is the lag of the partitions the member replicates; LagUnknown
	// is set when it cannot be computed (Lag is then 0).
	Lag        int64 `json:"lag"`
	LagUnknown bool  `json:"lag_unknown,omitempty"`
	// TopicErrorLag is the part of Lag that topic errors keep back (the
	// records of source partitions without a usable remote partition;
	// only the member holding the singleton duties reports it).
	TopicErrorLag int64 `json:"topic_error_lag,omitempty"`
	// Rebalances counts the member's rebalances.
	Rebalances int64 `json:"rebalances"`
	// IntervalMS is the member's publication interval in milliseconds.
	IntervalMS int64 `json:"interval_ms"`
	// At is when the record was written.
	At time.Time `json:"at"`
	// Arrived is when the reader's View applied it (its clock; zero when
	// the View has no Clock); not encoded.
	Arrived time.Time `json:"-"`
}

// PartitionRecord is one source partition in a slot record.
type PartitionRecord struct {
	Topic       string    `json:"topic"`
	RemoteTopic string    `json:"remote_topic,omitempty"`
	Partition   int32     `json:"partition"`
	State       string    `json:"state"`
	Error       string    `json:"error,omitempty"`
	SourceEnd   int64     `json:"source_end"`
	Replicated  int64     `json:"replicated"`
	Committed   int64     `json:"committed"`
	Lag         int64     `json:"lag"`
	LagUnknown  bool      `json:"lag_unknown,omitempty"`
	Records     int64     `json:"records"`
	Bytes       int64     `json:"bytes"`
	Since       time.Time `json:"since,omitzero"`
	NextRetry   time.Time `json:"next_retry,omitzero"`
	// Retries counts the partition's automatic restarts since it last
	// replicated (mirror.PartitionStatus.Retries); absent in records of
	// releases before it.
	Retries int `json:"retries,omitempty"`
}

// SlotRecord is the value of a slot's record (one chunk of it): the slot's
// owner and its source partitions. The owner writes it; for a slot with no
// live owner the member holding the singleton duties writes it with Owner
// empty, State UNASSIGNED and the lag computed from the stored resume
// points.
type SlotRecord struct {
	Flow string `json:"flow"`
	Slot int32  `json:"slot"`
	// Owner is the member id of the owner ("" when unassigned).
	Owner    string `json:"owner"`
	WorkerID string `json:"worker_id,omitempty"`
	// State is the slot's state: RUNNING, PAUSED, STOPPED, UNASSIGNED, ...
	State string `json:"state"`
	// Since is when the slot entered State (for UNASSIGNED: since when it
	// has no live owner).
	Since time.Time `json:"since,omitzero"`
	// Chunk is this record's chunk number, Chunks their count (the
	// partitions of a slot too large for one record are split).
	Chunk  int `json:"chunk"`
	Chunks int `json:"chunks"`
	// Partitions are the chunk's partitions, sorted by topic and partition.
	Partitions []PartitionRecord `json:"partitions"`
	IntervalMS int64             `json:"interval_ms"`
	At         time.Time         `json:"at"`
}

// MaxChunkBytes bounds the encoded size of one slot record: well under
// Kafka's default 1 MiB record limit.
const MaxChunkBytes = 900 << 10

// SlotRecords encodes s as the records of slot s.Slot on the status topic
// of source alias source: one record per chunk of at most MaxChunkBytes,
// the chunks after the first one first (so a reader that sees chunk 0
// saw the others), then chunk 0. prevChunks is how many chunks the
// previous write had: the chunks beyond the new count are tombstoned.
func SlotRecords(source string, s SlotRecord, prevChunks int) ([]*kgo.Record, error) {
	parts := s.Partitions
	var chunks [][]PartitionRecord
	cur, size := []PartitionRecord{}, 0
	for _, p := range parts {
		b, err := json.Marshal(p)
		if err != nil {
			return nil, err
		}
		if len(cur) > 0 && size+len(b)+1 > MaxChunkBytes-1024 {
			chunks = append(chunks, cur)
			cur, size = nil, 0
		}
		cur = append(cur, p)
		size += len(b) + 1
	}
	chunks = append(chunks, cur)
	var out []*kgo.Record
	for i := len(chunks) - 1; i >= 0; i-- {
		c := s
		c.Chunk, c.Chunks, c.Partitions = i, len(chunks), chunks[i]
		v, err := Marshal(c)
		if err != nil {
			return nil, err
		}
		if len(v) > MaxChunkBytes {
			return nil, fmt.Errorf("slot %d: one partition's status is %d bytes", s.Slot, len(v))
		}
		out = append(out, &kgo.Record{Topic: Topic(source), Key: []byte(SlotKey(s.Slot, i)), Value: v})
	}
	for i := len(chunks); i < prevChunks; i++ {
		out = append(out, &kgo.Record{Topic: Topic(source), Key: []byte(SlotKey(s.Slot, i))})
	}
	return out, nil
}

// SlotTombstones returns the tombstones of the chunks of slot n
// (chunks: how many the last write had, at least 1).
func SlotTombstones(source string, n int32, chunks int) []*kgo.Record {
	var out []*kgo.Record
	for i := max(chunks, 1) - 1; i >= 0; i-- {
		out = append(out, &kgo.Record{Topic: Topic(source), Key: []byte(SlotKey(n, i))})
	}
	return out
}

// decodeMember decodes the value of member id's record ("member:<id>").
func decodeMember(id string, value []byte) (MemberRecord, error) {
	var m MemberRecord
	if err := json.Unmarshal(value, &m); err != nil {
		return MemberRecord{}, err
	}
	m.MemberID = id
	return m, nil
}

// MembersOf returns the member records in all ([ReadAll]'s or [Latest]'s
// map), by member id; records it cannot decode are left out.
func MembersOf(all map[string][]byte) map[string]MemberRecord {
	out := map[string]MemberRecord{}
	for k, v := range all {
		id, ok := strings.CutPrefix(k, MemberPrefix)
		if !ok {
			continue
		}
		if m, err := decodeMember(id, v); err == nil {
			out[id] = m
		}
	}
	return out
}

// MemberRecordOf returns the record of m on the status topic of source
// alias source.
func MemberRecordOf(source string, m MemberRecord) (*kgo.Record, error) {
	if m.MemberID == "" {
		return nil, fmt.Errorf("member record without a member id")
	}
	v, err := Marshal(m)
	if err != nil {
		return nil, err
	}
	return &kgo.Record{Topic: Topic(source), Key: []byte(MemberKey(m.MemberID)), Value: v}, nil
}

// MemberTombstone returns the tombstone of member id's record.
func MemberTombstone(source, id string) *kgo.Record {
	return &kgo.Record{Topic: Topic(source), Key: []byte(MemberKey(id))}
}
