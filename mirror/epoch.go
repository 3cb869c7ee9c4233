package mirror

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/kclient"
)

// tasks.max changed by a rolling restart (issue 20 part 5).
//
// Members agree on the number of slots through the group itself: each
// member's JoinGroup metadata carries its epoch (its tasks.max, whether its
// configuration enables the flow, and when it started), and the group
// leader assigns slots only to the members of the newest epoch: the epoch
// of the member that started last. Members of other epochs get no slot and
// say they wait (Member.Waiting, from the status topic). A change of epoch
// goes through two rounds:
//
//  1. drain: some member owns a slot but is not of the newest epoch: the
//     leader assigns nothing to anyone; every owner revokes its slots
//     gracefully (records in flight acknowledged, resume points stored,
//     exactly-once transactions committed) and joins again (cooperative
//     protocol);
//  2. fresh: nobody owns a slot: with exactly once, the leader first fences
//     the transactional id of every slot the flow ever had ("<group>-<k>"
//     for k below the largest of the coordination topic's partition count
//     and the members' tasks.max; a zombie of the old layout can never
//     commit again), then assigns the newest epoch's slots 0..N-1 with the
//     cooperative-sticky balancer among its members; their units read the
//     resume points after that.
//
// Within one epoch the balancer is cooperative-sticky's, so a rebalance
// moves only the slots that must move. The coordination topic keeps the
// largest partition count any member needed (a member with more slots adds
// partitions); only those below the newest epoch's tasks.max are slots. A
// heartbeats-only flow (the flow disabled) uses slot 0 only, whatever the
// partition count.
//
// The epoch travels in the UserData of cooperative-sticky's own metadata (a
// ConsumerMemberMetadata: version, topics, user data, owned partitions,
// generation), which stays valid for the brokers: Kafka 4.x's group
// coordinator parses every "consumer" member's metadata (its V0 prefix) to
// know the topics a classic group subscribes to, and a JoinGroup with
// metadata it cannot parse never completes (found on Kafka 4.3.1, not on
// kfake).
//
// Members offer this protocol ("kmirror-slots-v1") and cooperative-sticky,
// which members of an older kmirror release use: while one of them is in
// the group the coordinator picks cooperative-sticky, under which a member
// whose tasks.max differs from the others' cannot share the work; such a
// member refuses to start (ensureUnitsTopic) or, if the group falls back to
// it later, replicates nothing and says why (onAssigned).

// slotsProtocol is the name of kmirror's group protocol.
const slotsProtocol = "kmirror-slots-v1"

// epochMagic starts kmirror's JoinGroup metadata.
var epochMagic = []byte("kmirror-slots/1\n")

// epochMeta is a member's epoch, in its JoinGroup metadata.
type epochMeta struct {
	Tasks   int32 `json:"tasks"`
	Enabled bool  `json:"enabled"`
	// Started is when the member's flow started (Unix milliseconds).
	Started int64 `json:"started"`
	// Fingerprint is the member's configuration fingerprint (shown only).
	Fingerprint string `json:"fingerprint,omitempty"`
}

// encodeEpochMeta is the UserData of kmirror's JoinGroup metadata: the
// magic, the length of the JSON epoch, the epoch, then cooperative-sticky's
// own UserData (inner).
func encodeEpochMeta(e epochMeta, inner []byte) []byte {
	j, _ := json.Marshal(e)
	out := append([]byte{}, epochMagic...)
	out = binary.AppendUvarint(out, uint64(len(j)))
	out = append(out, j...)
	return append(out, inner...)
}

// decodeEpochMeta splits the UserData of kmirror's JoinGroup metadata.
func decodeEpochMeta(b []byte) (epochMeta, []byte, error) {
	var e epochMeta
	rest, ok := bytes.CutPrefix(b, epochMagic)
	if !ok {
		return e, nil, errors.New("not kmirror-slots metadata")
	}
	n, k := binary.Uvarint(rest)
	if k <= 0 || uint64(len(rest)-k) < n {
		return e, nil, errors.New("truncated kmirror-slots metadata")
	}
	if err := json.Unmarshal(rest[k:k+int(n)], &e); err != nil {
		return e, nil, fmt.Errorf("kmirror-slots metadata: %w", err)
	}
	return e, rest[k+int(n):], nil
}

// epochMember is one group member as the leader sees it.
type epochMember struct {
	ID    string
	Epoch epochMeta
	Owned []int32 // the coordination topic's partitions it owns now
}

// epochKey identifies an epoch: the settings members must share.
type epochKey struct {
	tasks   int32
	enabled bool
}

func epochKeyOf(e epochMeta) epochKey {
	if !e.Enabled {
		return epochKey{tasks: 1} // heartbeats only: slot 0, whatever tasks.max
	}
	return epochKey{e.Tasks, true}
}

// epochDecision is the leader's plan for one rebalance.
type epochDecision struct {
	// Newest is the newest epoch; Slots the number of slots it has
	// (tasks.max, or 1 for a heartbeats-only epoch).
	Newest epochMeta
	Slots  int32
	// Members are the ids of the newest epoch's members, sorted.
	Members []string
	// Drain: a member owns a slot outside the newest epoch's layout:
	// nobody gets a slot this round, so every owner revokes first.
	Drain bool
	// Fresh: nobody owns a slot: the assignment starts over (exactly
	// once: fence every slot's transactional id before it).
	Fresh bool
}

// decideEpoch is the leader's decision (pure; table-tested): the newest
// epoch is the one of the member that started last (ties: the larger
// tasks.max, then enabled); its members get the slots. While a member owns
// a slot but is not of that epoch, or owns a slot the epoch does not have,
// nobody gets one (drain).
func decideEpoch(members []epochMember) epochDecision {
	var d epochDecision
	if len(members) == 0 {
		return d
	}
	newest := members[0].Epoch
	for _, m := range members[1:] {
		e := m.Epoch
		if e.Started > newest.Started || (e.Started == newest.Started && (e.Tasks > newest.Tasks || (e.Tasks == newest.Tasks && e.Enabled && !newest.Enabled))) {
			newest = e
		}
	}
	d.Newest = newest
	k := epochKeyOf(newest)
	d.Slots = k.tasks
	d.Fresh = true
	for _, m := range members {
		same := epochKeyOf(m.Epoch) == k
		if same {
			d.Members = append(d.Members, m.ID)
		}
		for _, p := range m.Owned {
			d.Fresh = false
			if !same || p >= d.Slots {
				d.Drain = true
			}
		}
	}
	sort.Strings(d.Members)
	return d
}

// slotBalancer is kmirror's group balancer ("kmirror-slots-v1"): the
// epoch decision around cooperative-sticky.
type slotBalancer struct {
	f     *flow
	inner kgo.GroupBalancer // cooperative-sticky
}

func (b *slotBalancer) ProtocolName() string { return slotsProtocol }
func (b *slotBalancer) IsCooperative() bool  { return true }

func (b *slotBalancer) JoinGroupMetadata(interests []string, current map[string][]int32, generation int32) []byte {
	return withEpoch(b.inner.JoinGroupMetadata(interests, current, generation), b.f.epoch())
}

// withEpoch returns the consumer metadata inner with e in front of its
// UserData.
func withEpoch(inner []byte, e epochMeta) []byte {
	var meta kmsg.ConsumerMemberMetadata
	meta.Default()
	if err := meta.ReadFrom(inner); err != nil {
		panic(fmt.Sprintf("cooperative-sticky wrote metadata it cannot read: %v", err)) // kgo's own encoding
	}
	meta.UserData = encodeEpochMeta(e, meta.UserData)
	return meta.AppendTo(nil)
}

// splitEpoch returns the epoch in the consumer metadata b and the metadata
// as cooperative-sticky wrote it.
func splitEpoch(b []byte) (epochMeta, []byte, kmsg.ConsumerMemberMetadata, error) {
	var meta kmsg.ConsumerMemberMetadata
	meta.Default()
	if err := meta.ReadFrom(b); err != nil {
		return epochMeta{}, nil, meta, fmt.Errorf("consumer metadata: %w", err)
	}
	e, ud, err := decodeEpochMeta(meta.UserData)
	if err != nil {
		return e, nil, meta, err
	}
	meta.UserData = ud
	return e, meta.AppendTo(nil), meta, nil
}

func (b *slotBalancer) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	b.f.legacyGroup.Store(false)
	return parseAssignment(assignment)
}

// parseAssignment parses a ConsumerMemberAssignment; an empty one assigns
// nothing.
func parseAssignment(assignment []byte) (map[string][]int32, error) {
	if len(assignment) == 0 {
		return map[string][]int32{}, nil
	}
	return kgo.ParseConsumerSyncAssignment(assignment)
}

func (b *slotBalancer) MemberBalancer(members []kmsg.JoinGroupResponseMember) (kgo.GroupMemberBalancer, map[string]struct{}, error) {
	mb := &slotMemberBalancer{b: b, all: members}
	var foreign []string
	for _, m := range members {
		e, inner, meta, err := splitEpoch(m.ProtocolMetadata)
		if err != nil {
			return nil, nil, fmt.Errorf("member %s: %w", m.MemberID, err)
		}
		if !slices.Contains(meta.Topics, b.f.unitsTopic) {
			// A member of another flow given the same group id (another
			// process's FlowConfig.GroupID): it would hold slots of this
			// flow and replicate nothing of them. It gets none.
			foreign = append(foreign, m.MemberID)
			continue
		}
		em := epochMember{ID: m.MemberID, Epoch: e}
		for _, o := range meta.OwnedPartitions {
			if o.Topic == b.f.unitsTopic {
				em.Owned = append(em.Owned, o.Partitions...)
			}
		}
		mb.members = append(mb.members, em)
		stripped := m
		stripped.ProtocolMetadata = inner
		mb.stripped = append(mb.stripped, stripped)
	}
	mb.d = decideEpoch(mb.members)
	if len(foreign) > 0 {
		b.f.log.Error("the flow's group has members of another flow (the same group id on this target): they get none of this flow's slots, and their flow replicates nothing while this flow's member leads the group; give each flow its own group id",
			"group", b.f.groupID, "other_members", foreign)
	}
	return mb, map[string]struct{}{b.f.unitsTopic: {}}, nil
}

// slotMemberBalancer balances one rebalance (the leader only).
type slotMemberBalancer struct {
	b        *slotBalancer
	all      []kmsg.JoinGroupResponseMember
	stripped []kmsg.JoinGroupResponseMember // cooperative-sticky's metadata
	members  []epochMember
	d        epochDecision
}

func (*slotMemberBalancer) Balance(map[string]int32) kgo.IntoSyncAssignment { panic("unreachable") }

func (m *slotMemberBalancer) BalanceOrError(topics map[string]int32) (kgo.IntoSyncAssignment, error) {
	f := m.b.f
	plan := map[string][]int32{}
	for _, mem := range m.all {
		plan[mem.MemberID] = nil
	}
	d := m.d
	switch {
	case d.Drain:
		f.log.Info("slots drained for a change of epoch: every member revokes its slots, then the newest epoch's members get them",
			"tasks", d.Newest.Tasks, "enabled", d.Newest.Enabled, "members", d.Members)
	case len(d.Members) > 0:
		if d.Fresh && f.cfg.ExactlyOnce {
			n := max(topics[f.unitsTopic], d.Slots)
			for _, mem := range m.members {
				n = max(n, mem.Epoch.Tasks)
			}
			if err := f.fenceSlots(n); err != nil {
				return nil, err
			}
		}
		var sel []kmsg.JoinGroupResponseMember
		for _, s := range m.stripped {
			if slices.Contains(d.Members, s.MemberID) {
				sel = append(sel, s)
			}
		}
		gmb, _, err := m.b.inner.MemberBalancer(sel)
		if err != nil {
			return nil, err
		}
		var ia kgo.IntoSyncAssignment
		if be, ok := gmb.(kgo.GroupMemberBalancerOrError); ok {
			ia, err = be.BalanceOrError(map[string]int32{f.unitsTopic: d.Slots})
			if err != nil {
				return nil, err
			}
		} else {
			ia = gmb.Balance(map[string]int32{f.unitsTopic: d.Slots})
		}
		for _, a := range ia.IntoSyncAssignment() {
			parts, err := parseAssignment(a.MemberAssignment)
			if err != nil {
				return nil, err
			}
			plan[a.MemberID] = parts[f.unitsTopic]
		}
	}
	return epochPlan{topic: f.unitsTopic, plan: plan}, nil
}

// epochPlan is the assignment of every member (an empty one for those
// that get nothing).
type epochPlan struct {
	topic string
	plan  map[string][]int32
}

func (p epochPlan) IntoSyncAssignment() []kmsg.SyncGroupRequestGroupAssignment {
	out := make([]kmsg.SyncGroupRequestGroupAssignment, 0, len(p.plan))
	for member, parts := range p.plan {
		var a kmsg.ConsumerMemberAssignment
		if len(parts) > 0 {
			t := kmsg.NewConsumerMemberAssignmentTopic()
			t.Topic = p.topic
			t.Partitions = slices.Sorted(slices.Values(parts))
			a.Topics = append(a.Topics, t)
		}
		s := kmsg.NewSyncGroupRequestGroupAssignment()
		s.MemberID = member
		s.MemberAssignment = a.AppendTo(nil)
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].MemberID < out[j].MemberID })
	return out
}

// legacyBalancer is cooperative-sticky, offered second so that members of
// an older kmirror release (which offer only it) can share the group; it
// records that the group runs it.
type legacyBalancer struct {
	kgo.GroupBalancer
	f *flow
}

func (b legacyBalancer) ParseSyncAssignment(assignment []byte) (map[string][]int32, error) {
	b.f.legacyGroup.Store(true)
	return parseAssignment(assignment)
}

// epoch is this member's epoch.
func (f *flow) epoch() epochMeta {
	return epochMeta{Tasks: f.tasks, Enabled: !f.cfg.Disabled, Started: f.startedAt.Load(), Fingerprint: f.fingerprint}
}

// fenceOpts are the client options that fence transactional id id: the
// units' transaction timeout, so that the coordinator sees one timeout per
// id whoever initializes it, put before the target's producer options, as
// the units put it (unit.open), so that an explicit transaction.timeout.ms
// wins here too (a broker whose transaction.max.timeout.ms is below kgo's
// default refused every fencing: the group never assigned a slot, and an
// offline resize failed).
//
// Producer options that disable idempotent writes (at least once with
// enable.idempotence=false or acks=1; New refuses them exactly once) cannot
// go with a transactional id: franz-go refused the fencing client, and
// an offline resize of such a flow failed ("cannot both disable idempotent
// writes and use transactional IDs", TestBrkKResizeNonIdempotentProducer).
// The fencing only calls InitProducerId: it then takes the connection
// options and the transaction timeout the producer options give.
func (f *flow) fenceOpts(id string) []kgo.Opt {
	role := append([]kgo.Opt{kgo.TransactionTimeout(transactionTimeout(&f.cfg))}, f.dst.Producer...)
	opts := f.clientOpts(f.dst, role, kgo.TransactionalID(id))
	if kclient.Validate(opts...) == nil {
		return opts
	}
	timeout := transactionTimeout(&f.cfg)
	if cl, err := kclient.New(f.clientOpts(f.dst, role)...); err == nil {
		timeout, _ = kclient.OptValue(cl, kgo.TransactionTimeout).(time.Duration)
		cl.Close()
	}
	return f.clientOpts(f.dst, nil, kgo.TransactionTimeout(timeout), kgo.TransactionalID(id))
}

// fenceSlots fences the transactional ids of slots 0..n-1 (the leader, at
// a fresh assignment of an exactly-once flow), 16 at a time: their
// producers' open transactions abort and they can never commit again.
func (f *flow) fenceSlots(n int32) error {
	ctx, cancel := context.WithTimeout(f.runCtx, min(f.cfg.RebalanceTimeout/2, 30*time.Second))
	defer cancel()
	start := time.Now()
	sem := make(chan struct{}, 16)
	var mu sync.Mutex
	var errs []error
	var wg sync.WaitGroup
	for k := range n {
		wg.Go(func() {
			sem <- struct{}{}
			defer func() { <-sem }()
			id := transactionalID(f.groupID, k)
			if err := fenceTransactionalID(ctx, f.dst.Alias, f.fenceOpts(id)); err != nil {
				mu.Lock()
				errs = append(errs, fmt.Errorf("fencing transactional id %s on %s: %w", id, f.dst.Alias, err))
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		f.log.Warn("fencing the slots' transactional ids before assigning them", "err", err)
		return err
	}
	f.log.Info("transactional ids of every slot fenced before a fresh assignment", "slots", n, "took", time.Since(start).Round(time.Millisecond))
	return nil
}
