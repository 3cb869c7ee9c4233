package mirror

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kmirror/kmirror/internal/clientconf"
	"github.com/kmirror/kmirror/internal/statustopic"
)

// WithWorkerID sets the worker id this process advertises to the other
// members of its flows, shown as the owner of its slots in
// [Mirror.ClusterStatus] (Kafka Connect's worker_id: the address of the
// worker's REST listener, host:port). Default: the host name. The runner
// uses its -listen address.
func WithWorkerID(id string) Opt {
	return optFunc(func(cfg *cfg) { cfg.workerID = id })
}

// WithStatusInterval sets how often each member publishes its state to
// the flow's status topic (mm2-kmirror-status.<source>.internal on the
// target); it also publishes within a second of a change of its slots,
// target state or partition states. Readers take a member whose last
// record is older than 3 of its intervals as gone. Default (and d <= 0)
// 5 s; values below 100 ms are raised to it.
func WithStatusInterval(d time.Duration) Opt {
	return optFunc(func(cfg *cfg) {
		if d > 0 {
			cfg.statusInterval = max(d, 100*time.Millisecond)
		}
	})
}

// WithFlowSettings gives the effective configuration of flow
// ("source->target"), key by key, that its members publish in the flow's
// status topic and compare: [Mirror.ClusterStatus] lists the keys whose
// values differ between live members ([ClusterFlowStatus.Mismatches]).
// [Properties.FlowSettings] returns it for a properties file, with MM2's
// key names and secrets masked ([Properties.Opts] adds this option). Values
// of keys that name a secret (password, secret, token, JAAS config, key
// material) are masked again here, so they never leave the process.
// Without it, a flow's settings are its [FlowConfig]'s fields, by Go name.
// It configures nothing: the keys are labels the members compare, taken
// as given (a misspelt key is published as it is, not refused); the
// flow's behaviour comes from its FlowConfig alone.
func WithFlowSettings(flow string, settings map[string]string) Opt {
	return optFunc(func(cfg *cfg) {
		if cfg.settings == nil {
			cfg.settings = map[string]map[string]string{}
		}
		masked := make(map[string]string, len(settings))
		for k, v := range settings {
			masked[k] = clientconf.Mask(k, v)
		}
		cfg.settings[flow] = masked
	})
}

// ClusterStatus is the state of a Mirror's flows across every member that
// runs them, from [Mirror.ClusterStatus].
type ClusterStatus struct {
	Flows []ClusterFlowStatus `json:"flows"`
}

// ClusterFlowStatus is one flow as all its members together run it: Kafka
// Connect's view of a connector from any worker (GET
// /connectors/<name>/status), built from the flow's status topic, where
// every member publishes its state (Connect's status.storage.topic is the
// model). Slots play the part of Connect's tasks: there are Tasks of them
// (tasks.max), each with its owner's worker id.
type ClusterFlowStatus struct {
	// Name is "source->target".
	Name   string `json:"name"`
	Source string `json:"source"`
	Target string `json:"target"`
	// State sums the flow up: the target state (PAUSED, STOPPED) once
	// every live member applied it; else FAILED, RETRYING or STARTING when
	// a live member is, else RUNNING; UNASSIGNED when no member is live.
	State State `json:"state"`
	// TargetState is the state asked for (RUNNING when never set), with
	// who asked, why and when (see [Mirror.SetTargetState]).
	TargetState       TargetState `json:"target_state"`
	TargetStateBy     string      `json:"target_state_by,omitempty"`
	TargetStateReason string      `json:"target_state_reason,omitempty"`
	TargetStateAt     time.Time   `json:"target_state_at,omitzero"`
	// Tasks is the number of slots (tasks.max) of the flow's newest
	// configuration among its live members: that of the member started
	// last, as the group's leader decides; this member's own when no
	// other is live. During a rolling change of tasks.max, a member still
	// on the old value lists the new count (and owns no slot).
	Tasks int `json:"tasks"`
	// Members are the members whose last record is not stale (younger than
	// 3 of their publication intervals), sorted by worker id then member
	// id; this process is one of them once it published.
	Members []ClusterMember `json:"members"`
	// Slots are the Tasks slots, by slot number.
	Slots []SlotStatus `json:"slots"`
	// Records, Bytes and ProvenanceSkipped add up the live members'
	// cumulative counters (each member's counts never go down while it
	// runs; a member that leaves takes its counts with it).
	Records           int64 `json:"records"`
	Bytes             int64 `json:"bytes"`
	ProvenanceSkipped int64 `json:"provenance_skipped,omitempty"`
	// Lag is the sum of every slot's lag, owned or not, plus the records
	// topic errors keep back (reported by the member holding the
	// singleton duties). LagUnknown is true when part of it could not be
	// computed: Lag is then a lower bound (the runner shows null).
	Lag        int64 `json:"lag"`
	LagUnknown bool  `json:"lag_unknown,omitempty"`
	// Mismatches lists the configuration keys whose values differ between
	// live members (secret values are never published), and Warnings says
	// in words what the members disagree on, each naming the members.
	Mismatches []ConfigMismatch `json:"mismatches,omitempty"`
	Warnings   []string         `json:"warnings,omitempty"`
}

// ClusterMember is one member of a flow, as its last status-topic record
// describes it.
type ClusterMember struct {
	// MemberID is the member's id in the status topic; WorkerID the
	// address it advertises ([WithWorkerID]); Self marks this process.
	MemberID string `json:"member_id"`
	WorkerID string `json:"worker_id"`
	Self     bool   `json:"self,omitempty"`
	// Version is its kmirror version.
	Version string `json:"version,omitempty"`
	// GroupMemberID and Generation are its id and generation in the
	// flow's group.
	GroupMemberID string `json:"group_member_id,omitempty"`
	Generation    int32  `json:"generation"`
	// Tasks is the tasks.max it is configured with; Fingerprint the hash
	// of its effective flow configuration; HeartbeatsOnly is true when its
	// configuration disables the flow (<flow>.enabled=false).
	Tasks          int    `json:"tasks"`
	Fingerprint    string `json:"fingerprint,omitempty"`
	HeartbeatsOnly bool   `json:"heartbeats_only,omitempty"`
	// Started is when its flow started: the member started last sets the
	// flow's epoch (tasks.max, enabled); members of other epochs wait.
	Started time.Time `json:"started,omitzero"`
	// Slots are the slots it owns; Singleton whether it holds the
	// singleton duties.
	Slots     []int32 `json:"slots"`
	Singleton bool    `json:"singleton"`
	// State and Error are its own flow state; AppliedState the target
	// state it applied; Waiting why it replicates nothing although it
	// runs.
	State        State       `json:"state"`
	Error        string      `json:"error,omitempty"`
	AppliedState TargetState `json:"applied_state"`
	Waiting      string      `json:"waiting,omitempty"`
	// Records, Bytes: acknowledged by the target since the member's
	// process started. Lag: of its partitions.
	Records    int64 `json:"records"`
	Bytes      int64 `json:"bytes"`
	Lag        int64 `json:"lag"`
	LagUnknown bool  `json:"lag_unknown,omitempty"`
	// LastSeen is when it last published.
	LastSeen time.Time `json:"last_seen"`
}

// SlotStatus is one slot of a flow (a Connect task): its owner, its state
// and its source partitions.
type SlotStatus struct {
	// Slot is the slot number, 0 to tasks.max-1 (Connect's task id).
	Slot int32 `json:"id"`
	// State is the slot's state: its owner's (RUNNING, RETRYING, PAUSED,
	// STOPPED, ...), or UNASSIGNED when no live member owns it.
	State State `json:"state"`
	// MemberID and WorkerID name the owner ("" when UNASSIGNED).
	MemberID string `json:"member_id,omitempty"`
	WorkerID string `json:"worker_id,omitempty"`
	// Since is when the slot entered State: for UNASSIGNED, since when no
	// live member owns it (zero when that is not known: no member ever
	// published it).
	Since time.Time `json:"since,omitzero"`
	// Partitions are the slot's source partitions with their progress,
	// sorted by topic and partition. For an UNASSIGNED slot their lag
	// comes from the source's end offsets and the stored resume points
	// (computed by the member holding the singleton duties), or is the
	// last its owner published.
	Partitions []PartitionStatus `json:"partitions"`
	// Lag, Records and Bytes add up the partitions'.
	Lag        int64 `json:"lag"`
	LagUnknown bool  `json:"lag_unknown,omitempty"`
	Records    int64 `json:"records"`
	Bytes      int64 `json:"bytes"`
	// Updated is when the slot's status was last written (zero: never):
	// its owner writes it when it changes and at least every 12 of its
	// publication intervals (its member record, every interval, proves it
	// current).
	Updated time.Time `json:"updated,omitzero"`
}

// ConfigMismatch is a configuration key whose value differs between live
// members of a flow.
type ConfigMismatch struct {
	// Key is the key (an MM2 key when the configuration came from a
	// properties file, else a FlowConfig field name).
	Key string `json:"key"`
	// Values maps each value to the worker ids of the members that have
	// it ("" for a member without the key).
	Values map[string][]string `json:"values"`
}

// ClusterStatus returns the state of every flow across all the members
// running it, from the flows' status topics this process tails (it does
// no I/O): each slot with its owner and partitions, UNASSIGNED slots with
// their lag, each live member, the persisted target state, and the
// configuration differences between members. This process's own part is
// taken from [Mirror.Status] at the call, the others' from their last
// records (at most one status interval old, see [WithStatusInterval]).
// Before a flow read its status topic (starting), its view holds only
// this process.
func (m *Mirror) ClusterStatus() ClusterStatus {
	var cs ClusterStatus
	now := time.Now()
	for _, f := range m.flows {
		cs.Flows = append(cs.Flows, f.clusterStatus(now))
	}
	return cs
}

// clusterStatus builds the flow's cluster-wide status at now: the view of
// its status topic, with this member's part taken from its live status.
func (f *flow) clusterStatus(now time.Time) ClusterFlowStatus {
	// Without groups, and the partitions shared with the publisher's
	// gathering (buildCluster copies what it hands out): a scrape of the
	// cluster view costs no per-partition copy and keeps the publisher's
	// reuse (partitionsBySlot) intact.
	return f.clusterStatusOf(f.statusOf(false), now, true)
}

// clusterStatusOf is clusterStatus with this member's status fs. Without
// slots, it reads no slot record and builds no slot's partitions: its
// members, flow state and warnings are the same, its slots empty or
// UNASSIGNED (what the publisher's checkDisagreements needs, every
// interval, at thousands of partitions).
func (f *flow) clusterStatusOf(fs FlowStatus, now time.Time, withSlots bool) ClusterFlowStatus {
	tasks := f.tasks
	if f.cfg.Disabled {
		// Heartbeats only: the flow holds slot 0 (its singleton duties)
		// and replicates nothing; its other slots are not waiting for
		// anyone, so their lag is not unknown.
		tasks = 1
	}
	in := clusterInput{name: f.name, source: f.cfg.Source, target: f.cfg.Target, selfID: f.selfID, now: now,
		slots: map[int32]statustopic.SlotRecord{}, gone: map[int32]time.Time{}}
	self := f.memberRecord(fs, now)
	f.viewMu.Lock()
	in.targetRec, _ = f.view.TargetState()
	in.badTarget = f.view.BadTarget
	in.members = f.view.Members()
	in.members[f.selfID] = self
	tasks = viewSlots(in.members, f.selfID, now, tasks)
	in.tasks = tasks
	for k := range tasks {
		if !withSlots {
			break // nothing per slot is read
		}
		if rec, _, ok := f.view.Slot(k); ok {
			in.slots[k] = rec
		}
		if at := f.view.SlotGoneAt(k); !at.IsZero() {
			in.gone[k] = at
		}
	}
	f.viewMu.Unlock()
	if withSlots {
		for _, s := range f.slotRecords(fs, now) {
			in.slots[s.Slot] = s
		}
	}
	return buildCluster(in)
}

// viewSlots is the number of slots the cluster view lists: those of the
// newest configuration among the live members in the flow's group, as the
// group's leader decides (decideEpoch: the member started last), else
// own (this member's). During a rolling change of tasks.max, a member
// still on the old value owns nothing and listed only its own count of
// slots, so the partitions of the newest configuration's other slots
// vanished from its answers (tasks, offsets, topics, lag) while the newest
// member listed them (TestTasksMaxRollingViewSameOnEveryMember). A member
// whose record names no group membership (it never joined) is left out,
// as in epochWaiting; this member always counts. So is a record whose
// tasks.max no member can have (outside 1..maxTasks: a garbage or
// hand-written record): one claiming 2 000 000 000 slots made every
// member build that many slots at each publication and each
// ClusterStatus, and one claiming 3 000 listed 2 996 UNASSIGNED slots and
// the flow's lag unknown (TestBrk1207GarbageMemberTasksIgnored).
func viewSlots(members map[string]statustopic.MemberRecord, selfID string, now time.Time, own int32) int32 {
	var ems []epochMember
	for id, m := range members {
		if id != selfID && (m.Stale(now) || m.GroupMemberID == "" || m.Generation <= 0 || !possibleTasks(m.Tasks)) {
			continue
		}
		ems = append(ems, epochMember{ID: id, Epoch: epochMeta{Tasks: int32(m.Tasks), Enabled: !m.HeartbeatsOnly, Started: m.Started.UnixMilli()}})
	}
	if d := decideEpoch(ems); len(ems) > 0 && d.Slots > 0 {
		return d.Slots
	}
	return own
}

// possibleTasks reports whether a member record's tasks.max is one a
// member can run with (1 to maxTasks, as New and the properties loader
// allow).
func possibleTasks(n int) bool { return n >= 1 && n <= maxTasks }

// clusterInput is what buildCluster works from.
type clusterInput struct {
	name, source, target string
	badTarget            string // why the newest target-state record cannot be read ("" none)
	tasks                int32
	selfID               string
	now                  time.Time
	targetRec            statustopic.TargetStateRecord
	members              map[string]statustopic.MemberRecord // every member's last record, this one's current
	slots                map[int32]statustopic.SlotRecord    // slot -> last record (all chunks)
	gone                 map[int32]time.Time                 // slot -> when its record was tombstoned
}

// stateRank orders states from the best to the worst for a flow's
// summary.
var stateRank = map[State]int{StateRunning: 0, StateDisabled: 0, StatePaused: 0, StateStopped: 1, StateUnassigned: 2, StateStarting: 3,
	StateRetrying: 4, StateFailed: 5}

// buildCluster derives the cluster-wide status of a flow from its status
// topic's records (pure; table-tested):
//   - live members are those whose last record is not stale (younger than
//     3 of their intervals); this member always is;
//   - a slot is owned by the live member listing it in its record (the
//     highest generation when two do, during a rebalance); its partitions
//     and state come from its slot record when the owner wrote it;
//   - a slot no live member lists is UNASSIGNED, since the record of its
//     last owner or its tombstone; its partitions and their lag are those
//     of its last record (the singleton's computation, or what the gone
//     owner last published), so its lag is still counted;
//   - LagUnknown: a partition or member says so, an UNASSIGNED slot has
//     no record at all, or its lag is not refreshed: no live member holds
//     the singleton duties, which compute it (its last lag still counts).
func buildCluster(in clusterInput) ClusterFlowStatus {
	cf := ClusterFlowStatus{Name: in.name, Source: in.source, Target: in.target, Tasks: int(in.tasks),
		TargetState: TargetState(in.targetRec.State), TargetStateBy: in.targetRec.By, TargetStateReason: in.targetRec.Reason,
		TargetStateAt: in.targetRec.At, Members: []ClusterMember{}, Slots: []SlotStatus{}}
	if cf.TargetState == "" {
		cf.TargetState = TargetRunning
	}
	live := map[string]statustopic.MemberRecord{}
	for id, m := range in.members {
		if id == in.selfID || !m.Stale(in.now) {
			live[id] = m
		}
	}
	owner := map[int32]statustopic.MemberRecord{}
	for _, m := range live {
		for _, k := range m.Slots {
			o, taken := owner[k]
			if !taken || m.Generation > o.Generation || (m.Generation == o.Generation && m.At.After(o.At)) {
				owner[k] = m
			}
		}
	}
	// A live member holding the singleton duties refreshes the lag of the
	// slots no live member owns; without one (it died and its session has
	// not expired, or the flow is stopped) nobody does.
	singletonLive := false
	for _, m := range live {
		singletonLive = singletonLive || m.Singleton
	}
	topicErrLag := int64(0)
	for id, m := range live {
		cm := ClusterMember{MemberID: id, WorkerID: m.WorkerID, Self: id == in.selfID, Version: m.Version, GroupMemberID: m.GroupMemberID,
			Generation: m.Generation, Tasks: m.Tasks, Fingerprint: m.Fingerprint, HeartbeatsOnly: m.HeartbeatsOnly, Started: m.Started, Slots: append([]int32{}, m.Slots...), Singleton: m.Singleton,
			State: State(m.State), Error: m.Error, AppliedState: TargetState(m.Applied), Waiting: m.Waiting,
			Records: m.Records, Bytes: m.Bytes, Lag: m.Lag, LagUnknown: m.LagUnknown, LastSeen: m.At}
		cf.Members = append(cf.Members, cm)
		cf.Records += m.Records
		cf.Bytes += m.Bytes
		cf.ProvenanceSkipped += m.ProvenanceSkipped
		if m.Singleton {
			topicErrLag = max(topicErrLag, m.TopicErrorLag)
		}
		if m.LagUnknown && m.Lag == 0 && len(m.Slots) == 0 {
			cf.LagUnknown = true // a member that could not start (RETRYING) and counts nothing
		}
	}
	slices.SortFunc(cf.Members, func(a, b ClusterMember) int {
		if c := strings.Compare(a.WorkerID, b.WorkerID); c != 0 {
			return c
		}
		return strings.Compare(a.MemberID, b.MemberID)
	})
	for k := range in.tasks {
		ss := SlotStatus{Slot: k, Partitions: []PartitionStatus{}}
		rec, hasRec := in.slots[k]
		if o, ok := owner[k]; ok {
			ss.MemberID, ss.WorkerID, ss.State = o.MemberID, o.WorkerID, State(o.State)
			if hasRec && rec.Owner == o.MemberID {
				ss.State, ss.Since, ss.Updated = State(rec.State), rec.Since, rec.At
				ss.Partitions = partitionStatuses(rec.Partitions)
			}
		} else {
			ss.State = StateUnassigned
			switch {
			case hasRec && rec.Owner == "":
				// Written by the member holding the singleton duties.
				ss.Since, ss.Updated = rec.Since, rec.At
				ss.Partitions = partitionStatuses(rec.Partitions)
				if rec.Stale(in.now) {
					// Rewritten only when it changes: stale, it is still
					// current while its writer lives.
					ss.LagUnknown = len(ss.Partitions) == 0 || !singletonLive
				}
			case hasRec:
				// Its owner is gone (or handing it over): the last it
				// published still counts.
				// Its record is rewritten only when it changes: the owner's
				// last member record tells when it was last seen.
				seen := rec.At
				if m, ok := in.members[rec.Owner]; ok && m.At.After(seen) {
					seen = m.At
				}
				ss.Since, ss.Updated = seen, rec.At
				ss.Partitions = partitionStatuses(rec.Partitions)
				for i := range ss.Partitions {
					ss.Partitions[i].State = StateUnassigned
				}
				// Nobody refreshes it: the lag it last published only
				// bounds the lag from below while records keep coming
				// (0 for 8 s after a SIGKILL of the member holding the
				// singleton duties, TestBuildCluster).
				ss.LagUnknown = !singletonLive
			default:
				ss.Since = in.gone[k]
				ss.LagUnknown = true
			}
		}
		for _, p := range ss.Partitions {
			ss.Lag += p.Lag
			ss.Records += p.Records
			ss.Bytes += p.Bytes
			ss.LagUnknown = ss.LagUnknown || p.LagUnknown
		}
		cf.Lag += ss.Lag
		cf.LagUnknown = cf.LagUnknown || ss.LagUnknown
		cf.Slots = append(cf.Slots, ss)
	}
	cf.Lag += topicErrLag
	if len(owner) == 0 && len(in.slots) == 0 {
		// No member replicates yet (all retrying their start-up): each
		// computes the whole flow's lag itself; take the largest known.
		cf.Lag, cf.LagUnknown = 0, true
		for _, m := range live {
			if !m.LagUnknown {
				cf.Lag, cf.LagUnknown = max(cf.Lag, m.Lag), false
			}
		}
	}
	// The flow's state.
	switch {
	case len(live) == 0:
		cf.State = StateUnassigned
	default:
		all := true
		worst := StateRunning
		allDisabled := true
		for _, m := range live {
			if TargetState(m.Applied) != cf.TargetState {
				all = false
			}
			st := State(m.State)
			if st != StateDisabled {
				allDisabled = false
			}
			if r, ok := stateRank[st]; ok && r > stateRank[worst] {
				worst = st
			}
		}
		switch {
		case cf.TargetState != TargetRunning && all && stateRank[worst] <= stateRank[StateStopped]:
			cf.State = State(cf.TargetState)
		case allDisabled:
			cf.State = StateDisabled
		case worst == StateStopped || worst == StatePaused:
			cf.State = StateRunning // a member still applying a resume
		default:
			cf.State = worst
		}
	}
	cf.Mismatches, cf.Warnings = disagreements(live, owner, in)
	if in.badTarget != "" {
		cf.Warnings = append(cf.Warnings, fmt.Sprintf("flow %s: %s; the flow keeps target state %s", in.name, in.badTarget, cf.TargetState))
	}
	return cf
}

// partitionStatuses converts status-topic partitions.
func partitionStatuses(prs []statustopic.PartitionRecord) []PartitionStatus {
	out := make([]PartitionStatus, 0, len(prs))
	for _, pr := range prs {
		out = append(out, partitionStatus(pr))
	}
	return out
}

// maxMismatchKeys bounds the keys a disagreement warning names.
const maxMismatchKeys = 3

// disagreements returns the configuration keys whose values differ between
// the live members (sorted by key; a member without the key counts as
// value ""), and the warnings the members' disagreements give, each
// naming the members (pure):
//   - the keys that differ, with each value's members (at most 3 keys,
//     then how many more);
//   - the member holding slot 0 runs the flow as heartbeats only
//     (<flow>.enabled=false) while others replicate: it creates no remote
//     topic and emits no checkpoint;
//   - a heartbeats-only member owns slots other than 0 while others
//     replicate: their partitions are not replicated;
//   - the members' source alias reaches different clusters (their
//     records' source cluster IDs differ).
func disagreements(live map[string]statustopic.MemberRecord, owner map[int32]statustopic.MemberRecord, in clusterInput) ([]ConfigMismatch, []string) {
	ids := make([]string, 0, len(live))
	for id := range live {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int {
		if c := strings.Compare(live[a].WorkerID, live[b].WorkerID); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	keys := map[string]bool{}
	for _, id := range ids {
		for k := range live[id].Config {
			keys[k] = true
		}
	}
	var mismatches []ConfigMismatch
	for _, k := range sortedKeys(keys) {
		values := map[string][]string{}
		for _, id := range ids {
			v := live[id].Config[k]
			values[v] = append(values[v], live[id].WorkerID)
		}
		if len(values) > 1 {
			mismatches = append(mismatches, ConfigMismatch{Key: k, Values: values})
		}
	}
	var warnings []string
	if n := len(mismatches); n > 0 {
		var parts []string
		for _, m := range mismatches[:min(n, maxMismatchKeys)] {
			var vs []string
			for _, v := range sortedKeys(m.Values) {
				shown := v
				if shown == "" {
					shown = "(not set)"
				}
				vs = append(vs, fmt.Sprintf("%s on %s", shown, strings.Join(m.Values[v], ", ")))
			}
			parts = append(parts, fmt.Sprintf("%s: %s", m.Key, strings.Join(vs, "; ")))
		}
		more := ""
		if n > maxMismatchKeys {
			more = fmt.Sprintf(" and %d more (GET /status mismatches)", n-maxMismatchKeys)
		}
		warnings = append(warnings, fmt.Sprintf("flow %s: members disagree on %d configuration key(s): %s%s; give every member the same configuration",
			in.name, n, strings.Join(parts, " | "), more))
	}
	sources := map[string][]string{} // source cluster ID -> worker ids
	for _, id := range ids {
		if c := live[id].SourceClusterID; c != "" {
			sources[c] = append(sources[c], live[id].WorkerID)
		}
	}
	if len(sources) > 1 {
		var vs []string
		for _, c := range sortedKeys(sources) {
			vs = append(vs, fmt.Sprintf("cluster %s on %s", c, strings.Join(sources[c], ", ")))
		}
		warnings = append(warnings, fmt.Sprintf("flow %s: the members' source alias %s reaches different clusters (%s): their copies mix in the same remote topics; give every member the same %s cluster",
			in.name, in.source, strings.Join(vs, "; "), in.source))
	}
	var replicating, hbOnly []string
	for _, id := range ids {
		if live[id].HeartbeatsOnly {
			hbOnly = append(hbOnly, id)
		} else {
			replicating = append(replicating, live[id].WorkerID)
		}
	}
	if len(replicating) > 0 && len(hbOnly) > 0 {
		if o, ok := owner[0]; ok && o.HeartbeatsOnly {
			warnings = append(warnings, fmt.Sprintf("flow %s: the member holding slot 0 (%s) has the flow disabled (%s.enabled=false, heartbeats only): "+
				"it creates no remote topic, syncs no topic config and emits no checkpoint, so the members that replicate (%s) copy nothing of topics whose remote topic does not exist; "+
				"set %s.enabled the same on every member", in.name, o.WorkerID, in.name, strings.Join(replicating, ", "), in.name))
		}
		for _, id := range hbOnly {
			var slots []int32
			for _, k := range live[id].Slots {
				if k != 0 {
					slots = append(slots, k)
				}
			}
			if len(slots) > 0 {
				warnings = append(warnings, fmt.Sprintf("flow %s: %s has the flow disabled (%s.enabled=false) but owns slots %v: their partitions are not replicated; "+
					"set %s.enabled the same on every member", in.name, live[id].WorkerID, in.name, slots, in.name))
			}
		}
	}
	return mismatches, warnings
}

// checkDisagreements logs the warnings of cf (what the flow's live
// members disagree on) at WARN once per change, and INFO once they are
// gone, and keeps them for Status (FlowStatus.Warnings, the runner's
// /readyz) with the reason this member waits, if any. The publisher calls
// it at each tick.
func (f *flow) checkDisagreements(cf ClusterFlowStatus) {
	waiting := ""
	for _, m := range cf.Members {
		if slices.Contains(m.Slots, 0) && m.HeartbeatsOnly && !f.cfg.Disabled && !m.Self {
			waiting = fmt.Sprintf("the member holding slot 0 (%s) has the flow disabled (%s.enabled=false): it creates no remote topic, so partitions of topics without one are not replicated", m.WorkerID, f.name)
		}
	}
	f.unitsMu.Lock()
	owns := len(f.owned) > 0
	f.unitsMu.Unlock()
	if w := epochWaiting(cf.Members, f.epoch()); w != "" && !owns {
		// A member that owns slots was given them by the group's leader
		// for its own epoch: it replicates, whatever the records say.
		waiting = w
	}
	sig := strings.Join(cf.Warnings, "\n")
	f.mu.Lock()
	changed := sig != f.warnSig
	f.warnSig, f.warnings, f.waiting = sig, cf.Warnings, waiting
	f.mu.Unlock()
	if !changed {
		return
	}
	if len(cf.Warnings) == 0 {
		f.log.Info("the flow's members agree again")
		return
	}
	for _, w := range cf.Warnings {
		msg := "members disagree"
		if strings.Contains(w, "the target-state record at offset") {
			msg = "unreadable target-state record"
		}
		f.log.Warn(msg, "warning", w)
	}
}

// epochWaiting says why a member of epoch self waits for the newest epoch
// among the members in the flow's group (the epoch of the member started
// last, as the group's leader decides), or "" when self is of it. A member
// whose record names no group membership (GroupMemberID empty or
// generation 0: it never joined, say its session timeout is refused) is
// not one the leader decides with, and is left out.
func epochWaiting(members []ClusterMember, self epochMeta) string {
	var ems []epochMember
	var newestWorkers []string
	for _, m := range members {
		if !m.Self && (m.GroupMemberID == "" || m.Generation <= 0 || !possibleTasks(m.Tasks)) {
			continue
		}
		ems = append(ems, epochMember{ID: m.WorkerID, Epoch: epochMeta{Tasks: int32(m.Tasks), Enabled: !m.HeartbeatsOnly, Started: m.Started.UnixMilli()}})
	}
	d := decideEpoch(ems)
	if len(ems) == 0 || epochKeyOf(d.Newest) == epochKeyOf(self) {
		return ""
	}
	newestWorkers = d.Members
	switch {
	case d.Newest.Enabled != self.Enabled && !d.Newest.Enabled:
		return fmt.Sprintf("the newest member(s) (%s) have the flow disabled (heartbeats only) and hold its slots: this member waits (restart it with the same configuration)", strings.Join(newestWorkers, ", "))
	case d.Newest.Enabled != self.Enabled:
		return fmt.Sprintf("the newest member(s) (%s) replicate the flow and hold its slots; this member has it disabled and waits (restart it with the same configuration)", strings.Join(newestWorkers, ", "))
	}
	return fmt.Sprintf("waiting: tasks.max %d in use by the newest member(s) (%s); this member has tasks.max %d and replicates nothing until restarted with tasks.max=%d",
		d.Newest.Tasks, strings.Join(newestWorkers, ", "), self.Tasks, d.Newest.Tasks)
}
