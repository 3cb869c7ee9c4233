package mirror

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Shallow copy (FlowConfig.ShallowCopy): a unit of work whose flow copies
// record batches as they are runs shallowLoop instead of pollLoop, in the
// same goroutine, with the same partition states, acks, resume points and
// offset syncs. DESIGN.md ("Shallow copy") describes it.

// shallowInbox carries the control goroutine's partition changes to the
// shallow loop (which owns the positions): the shallow counterpart of
// kgo's AddConsumePartitions and PurgeTopicsFromConsuming.
type shallowInbox struct {
	mu    sync.Mutex
	adds  []shallowAdd
	purge []string
	wake  chan struct{} // the loop has something to do (inbox, kgo acks)
}

type shallowAdd struct {
	k   tp
	off kgo.Offset
}

func newShallowInbox() *shallowInbox { return &shallowInbox{wake: make(chan struct{}, 1)} }

func (s *shallowInbox) signal() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// consume starts fetching partitions at the given offsets: kgo's consumer
// on the normal path, the shallow loop with shallow copy.
func (u *unit) consume(add map[string]map[int32]kgo.Offset) {
	if u.sh == nil {
		u.cons.AddConsumePartitions(add)
		return
	}
	u.sh.mu.Lock()
	for topic, ps := range add {
		for p, off := range ps {
			u.sh.adds = append(u.sh.adds, shallowAdd{tp{topic, p}, off})
		}
	}
	u.sh.mu.Unlock()
	u.sh.signal()
}

// purgeTopic stops fetching every partition of topic and drops what was
// fetched and not produced yet.
func (u *unit) purgeTopic(topic string) {
	if u.sh == nil {
		u.cons.PurgeTopicsFromConsuming(topic)
		return
	}
	u.sh.mu.Lock()
	u.sh.purge = append(u.sh.purge, topic)
	u.sh.mu.Unlock()
	u.sh.signal()
}

// Positions still to resolve with ListOffsets.
const (
	posEnd   = -1
	posStart = -2
)

// shPart is the shallow loop's state of one source partition.
type shPart struct {
	f      *feed
	k      tp
	gen    int      // bumped when the topic is purged: older fetches are ignored
	sentID [16]byte // the remote topic ID of the batch in flight (produce v13+ answers by ID)

	pos      int64 // next source offset to fetch; posStart/posEnd: to resolve
	items    []*shItem
	bytes    int  // of items
	fetching bool // in a fetch request in flight
	inflight bool // items[0] is in a produce request in flight
	kgoOut   atomic.Int64
	fbAck    func(*kgo.Record, error)
	retryAt  time.Time // after a retriable produce or fetch error
	stopped  bool      // purged with a produce in flight: dropped once it returns
}

// shItem is what the loop does next for a partition, in source order: a
// batch to copy (raw), records to produce through the unit's kgo producer
// (recs, the normal path), or nothing but moving the position (a control
// batch, an aborted transaction, records all below the position).
type shItem struct {
	raw   []byte
	orig  [rbHeaderLen]byte
	base  int64
	n     int32
	maxTs int64
	recs  []*kgo.Record
	end   int64 // next source offset after this item
}

func (it *shItem) size() int {
	if it.raw != nil {
		return len(it.raw)
	}
	n := 0
	for _, r := range it.recs {
		n += int(recordSize(r))
	}
	return n
}

// shallow is the state of one run of shallowLoop (owned by its goroutine).
type shallow struct {
	u     *unit
	parts map[tp]*shPart

	srcLeader map[tp]int32 // source partition leaders
	srcIDs    map[string][16]byte
	srcNames  map[[16]byte]string
	dstLeader map[tp]int32 // target (remote topic) partition leaders
	dstIDs    map[string][16]byte
	dstNames  map[[16]byte]string
	needMeta  bool
	metaAt    time.Time
	toResolve bool // some position is posStart/posEnd (resolvePositions)
	posCh     chan shPositions
	posBusy   bool      // a ListOffsets round in flight (resolvePositions)
	posRetry  time.Time // no new round before (a failed one's pause)
	wakeAt    time.Time // the earliest pause that ends (retryAt, metadata, positions): the loop's next look

	fetching map[int32]bool // source brokers with a fetch in flight
	// longPolls holds the cancel of each source broker's fetch in flight
	// that waits the long fetch.max.wait.ms (no partition of the broker
	// was held out of it): a partition of the broker ready to fetch
	// after it was sent (added or restarted) ends it (startFetches).
	longPolls map[int32]context.CancelFunc
	producing map[int32]bool // target brokers with a produce in flight
	fetchCh   chan shFetched
	metaCh    chan shMeta
	metaBusy  [2]bool // a metadata request in flight: [0] source, [1] target
	prodCh    chan shProduced
	pending   int // requests in flight

	acks     int16
	buffered int // bytes of items over all partitions
	maxBuf   int
	maxWait  time.Duration // the consumer's fetch.max.wait.ms (shallowFetchWait)
	dec      kgo.Decompressor

	copied, fellBack int64
	lastLog          time.Time
}

type shFetched struct {
	broker int32
	parts  map[tp]int // gen of each partition fetched
	resp   *kmsg.FetchResponse
	err    error
}

type shProduced struct {
	broker int32
	parts  []*shPart
	resp   *kmsg.ProduceResponse
	err    error
}

// shallowLoop is the poll loop of a unit with shallow copy: raw Fetch
// requests to the source partitions' leaders (one in flight per broker),
// each fetched batch copied as it is with a raw Produce request to the
// remote partition's leader (one in flight per target broker, holding at
// most one batch per partition: without idempotence, one batch in flight
// per partition keeps the order), or, when it cannot be copied, decoded and
// produced through the unit's kgo producer (the normal path). It returns
// when ctx ends, after the produce requests in flight were answered.
func (u *unit) shallowLoop(ctx, hard context.Context) error {
	e := u.env
	s := &shallow{u: u, parts: map[tp]*shPart{},
		srcLeader: map[tp]int32{}, srcIDs: map[string][16]byte{}, srcNames: map[[16]byte]string{},
		dstLeader: map[tp]int32{}, dstIDs: map[string][16]byte{}, dstNames: map[[16]byte]string{},
		fetching: map[int32]bool{}, longPolls: map[int32]context.CancelFunc{}, producing: map[int32]bool{},
		fetchCh: make(chan shFetched, 16), prodCh: make(chan shProduced, 16), metaCh: make(chan shMeta, 2), posCh: make(chan shPositions, 1),
		acks: -1, maxBuf: budget(e.cfg.MaxBufferedBytes, e.tasks, 1<<20), dec: kgo.DefaultDecompressor()}
	if a, ok := u.prod.OptValue(kgo.RequiredAcks).(kgo.Acks); ok && a == kgo.LeaderAck() {
		s.acks = 1
	}
	s.maxWait = fetchMaxWait
	if d, ok := u.cons.OptValue(kgo.FetchMaxWait).(time.Duration); ok && d > 0 {
		s.maxWait = d
	}
	defer func() {
		if s.copied+s.fellBack > 0 {
			u.log.Info("shallow copy stopped", "batches_copied", s.copied, "batches_normal_path", s.fellBack)
		}
	}()
	timer := time.NewTimer(shallowIdleTick)
	defer timer.Stop()
	for {
		if ctx.Err() != nil {
			// Graceful or not: no new requests; wait for those in flight
			// (produce requests run on hard: their acks advance the
			// resume points stored on stop).
			for s.pending > 0 {
				select {
				case f := <-s.fetchCh:
					s.pending--
					s.fetching[f.broker] = false
				case r := <-s.prodCh:
					s.pending--
					s.produced(r)
				case m := <-s.metaCh:
					s.pending--
					s.metaBusy[m.side] = false
				case <-s.posCh:
					s.pending--
					s.posBusy = false
				}
			}
			return nil
		}
		s.wakeAt = time.Time{}
		s.applyInbox()
		if s.needMeta && time.Since(s.metaAt) >= shallowRetry {
			s.refreshMetadata(ctx)
		}
		s.resolvePositions(ctx)
		s.startProduces(hard)
		s.startFetches(ctx)
		if s.needMeta {
			s.wakeBy(s.metaAt.Add(shallowRetry))
		}
		timer.Reset(shallowNextLook(time.Now(), s.wakeAt))
		select {
		case <-ctx.Done():
		case f := <-s.fetchCh:
			s.pending--
			s.fetching[f.broker] = false
			s.fetched(f)
			u.codec.settle()
		case r := <-s.prodCh:
			s.pending--
			s.produced(r)
		case m := <-s.metaCh:
			s.pending--
			s.metaBusy[m.side] = false
			s.applyMeta(m)
		case r := <-s.posCh:
			s.pending--
			s.posBusy = false
			s.applyPositions(r)
		case <-u.sh.wake:
		case <-timer.C:
		}
	}
}

// shallowRetry is the shallow loop's pause after a retriable fetch or
// produce error of a partition, between metadata refreshes, and between
// attempts to resolve "start"/"end" positions.
const shallowRetry = 250 * time.Millisecond

// shallowIdleTick is the longest the shallow loop waits without an event
// (a fetch or produce answered, the inbox, a normal-path ack, a pause that
// ends): a safety net. The loop is event-driven: each look visits every
// partition of the unit, and with thousands of partitions a look every
// 100 ms, as it was, cost an idle unit more than anything else
// (issue 22: 60 % of an idle shallow member's CPU at 6 000 partitions).
const shallowIdleTick = time.Second

// wakeBy asks for the loop's next look at t at the latest.
func (s *shallow) wakeBy(t time.Time) {
	if s.wakeAt.IsZero() || t.Before(s.wakeAt) {
		s.wakeAt = t
	}
}

// shallowNextLook is how long the shallow loop waits for an event before
// it looks again: until wakeAt (zero: nothing pending), at most
// shallowIdleTick, never negative.
func shallowNextLook(now, wakeAt time.Time) time.Duration {
	if wakeAt.IsZero() {
		return shallowIdleTick
	}
	return min(max(wakeAt.Sub(now), 0), shallowIdleTick)
}

// applyInbox applies the control goroutine's partition changes.
func (s *shallow) applyInbox() {
	in := s.u.sh
	in.mu.Lock()
	adds, purge := in.adds, in.purge
	in.adds, in.purge = nil, nil
	in.mu.Unlock()
	for _, topic := range purge {
		for k, sp := range s.parts {
			if k.topic == topic {
				s.dropItems(sp)
				sp.gen++
				sp.stopped = true
			}
		}
	}
	feeds := *s.u.feeds.Load()
	for _, a := range adds {
		f := feeds[a.k]
		if f == nil {
			continue
		}
		sp := s.parts[a.k]
		if sp == nil || sp.f != f {
			gen := 0
			if sp != nil {
				// A successor state (a restarted or refilled partition):
				// fetches asked for its predecessor must not reach it.
				s.dropItems(sp)
				gen = sp.gen + 1
			}
			sp = &shPart{f: f, k: a.k, gen: gen}
			sp.fbAck = func(r *kgo.Record, err error) {
				f.ack(r, err)
				if sp.kgoOut.Add(-1) == 0 {
					s.u.sh.signal()
				}
			}
			s.parts[a.k] = sp
		} else {
			s.dropItems(sp)
			sp.gen++
		}
		sp.stopped = false
		eo := a.off.EpochOffset()
		switch {
		case eo.Offset >= 0:
			sp.pos = eo.Offset
		case eo.Offset == posEnd:
			sp.pos = posEnd
		default:
			sp.pos = posStart
		}
		if sp.pos < 0 {
			s.toResolve = true
		}
		if _, ok := s.srcLeader[a.k]; !ok {
			s.needMeta = true
		}
		if _, ok := s.dstLeader[tp{f.remote, a.k.partition}]; !ok {
			s.needMeta = true
		}
	}
}

func (s *shallow) dropItems(sp *shPart) {
	if sp.inflight && len(sp.items) > 0 {
		// The batch in flight stays until its produce returns.
		for _, it := range sp.items[1:] {
			s.buffered -= it.size()
		}
		sp.items = sp.items[:1]
		sp.bytes = sp.items[0].size()
		return
	}
	for _, it := range sp.items {
		s.buffered -= it.size()
	}
	sp.items, sp.bytes = nil, 0
}

// shMeta is the answer to one metadata request of the shallow loop.
type shMeta struct {
	side int // 0 source, 1 target
	resp *kmsg.MetadataResponse
	err  error
}

// refreshMetadata asks for the leaders and topic IDs of the unit's source
// topics (from the source) and remote topics (from the target), each in
// its own goroutine, unless that side's previous request is still in
// flight: the loop goes on meanwhile, so an unreachable source (whose
// request kgo retries up to its timeout) does not hold back the produce
// requests of batches already fetched, nor their acks. applyMeta applies
// the answers.
func (s *shallow) refreshMetadata(ctx context.Context) {
	s.metaAt = time.Now()
	var src, dst []string
	seenS, seenD := map[string]bool{}, map[string]bool{}
	for k, sp := range s.parts {
		if !seenS[k.topic] {
			seenS[k.topic] = true
			src = append(src, k.topic)
		}
		if !seenD[sp.f.remote] {
			seenD[sp.f.remote] = true
			dst = append(dst, sp.f.remote)
		}
	}
	s.needMeta = false // set again by a failed answer
	if len(src) == 0 {
		return
	}
	timeout := min(s.u.env.cfg.AdminTimeout, 10*time.Second)
	for side, x := range []struct {
		cl     *kgo.Client
		topics []string
	}{{s.u.cons, src}, {s.u.prod, dst}} {
		if s.metaBusy[side] {
			// Its answer wakes the loop; a need it does not cover
			// (a partition added since) shows again then.
			continue
		}
		req := kmsg.NewPtrMetadataRequest()
		for _, t := range x.topics {
			rt := kmsg.NewMetadataRequestTopic()
			rt.Topic = kmsg.StringPtr(t)
			req.Topics = append(req.Topics, rt)
		}
		s.metaBusy[side] = true
		s.pending++
		cl := x.cl
		go func() {
			mctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			resp, err := req.RequestWith(mctx, cl)
			s.metaCh <- shMeta{side: side, resp: resp, err: err}
		}()
	}
}

// applyMeta applies a metadata answer; a failed one (or one with a topic
// or partition error) asks for another refresh.
func (s *shallow) applyMeta(m shMeta) {
	ok := false
	if m.side == 0 {
		ok = s.loadMeta(m, s.srcLeader, s.srcIDs, s.srcNames)
	} else {
		ok = s.loadMeta(m, s.dstLeader, s.dstIDs, s.dstNames)
	}
	if !ok {
		s.needMeta = true
	}
}

func (s *shallow) loadMeta(m shMeta, leaders map[tp]int32, ids map[string][16]byte, names map[[16]byte]string) bool {
	resp, err := m.resp, m.err
	if err != nil {
		return false
	}
	ok := true
	for _, t := range resp.Topics {
		if t.Topic == nil {
			continue
		}
		if t.ErrorCode != 0 {
			ok = false
			continue
		}
		ids[*t.Topic] = t.TopicID
		names[t.TopicID] = *t.Topic
		for _, p := range t.Partitions {
			if p.ErrorCode != 0 || p.Leader < 0 {
				ok = false
				delete(leaders, tp{*t.Topic, p.Partition})
				continue
			}
			leaders[tp{*t.Topic, p.Partition}] = p.Leader
		}
	}
	return ok
}

// shPositions is the answer to one round of resolvePositions: the
// partitions it asked for, with their generation then (a partition
// restarted since ignores it), and the offsets listed (those of the
// leaders that answered, even when another did not).
type shPositions struct {
	asked      map[tp]int
	start, end kadm.ListedOffsets
}

// resolvePositions turns "start" and "end" positions into offsets: it
// lists the log start or end offsets of their topics in a goroutine of its
// own (one round in flight), so that an unreachable source, whose requests
// kgo retries up to the timeout, does not hold back the loop (the produce
// requests of batches already fetched and their acks, as refreshMetadata).
// applyPositions applies the answer; positions it could not resolve are
// asked again shallowRetry later.
func (s *shallow) resolvePositions(ctx context.Context) {
	if !s.toResolve || s.posBusy {
		return // a round in flight wakes the loop when it answers
	}
	if now := time.Now(); now.Before(s.posRetry) {
		s.wakeBy(s.posRetry)
		return
	}
	s.toResolve = false
	var start, end []string
	asked := map[tp]int{}
	for k, sp := range s.parts {
		switch {
		case sp.stopped || !sp.f.live() || sp.pos >= 0:
			continue
		case sp.pos == posStart && !slices.Contains(start, k.topic):
			start = append(start, k.topic)
		case sp.pos == posEnd && !slices.Contains(end, k.topic):
			end = append(end, k.topic)
		}
		asked[k] = sp.gen
	}
	if len(asked) == 0 {
		return
	}
	s.posBusy = true
	s.pending++
	timeout := min(s.u.env.cfg.AdminTimeout, 10*time.Second)
	adm := kadm.NewClient(s.u.cons)
	go func() {
		lctx, cancel := context.WithTimeout(ctx, timeout)
		defer cancel()
		r := shPositions{asked: asked}
		if len(start) > 0 {
			r.start, _ = adm.ListStartOffsets(lctx, start...) // a partition not listed is asked again
		}
		if len(end) > 0 {
			r.end, _ = adm.ListEndOffsets(lctx, end...)
		}
		s.posCh <- r
	}()
}

// applyPositions applies a round of resolvePositions to the partitions it
// asked for that were not restarted since and still wait for that kind of
// position; if any asked for is left unresolved, another round follows
// shallowRetry later.
func (s *shallow) applyPositions(r shPositions) {
	left := false
	for k, gen := range r.asked {
		sp := s.parts[k]
		if sp == nil || sp.gen != gen || sp.pos >= 0 {
			continue
		}
		offs := r.start
		if sp.pos == posEnd {
			offs = r.end
		}
		if o, ok := offs.Lookup(k.topic, k.partition); ok && o.Err == nil {
			sp.pos = o.Offset
			continue
		}
		left = true
	}
	s.toResolve = false
	for _, sp := range s.parts {
		if sp.pos < 0 && !sp.stopped && sp.f.live() {
			s.toResolve = true // left, or asked for since the round was sent
			break
		}
	}
	if left {
		s.posRetry = time.Now().Add(shallowRetry)
		s.wakeBy(s.posRetry)
	}
}

// shallowHeldWait is the longest a shallow fetch waits for records while
// one of its broker's partitions is left out of it (its items fill its
// share of the buffer, it waits out an error's pause, its position is not
// resolved yet): the partition can join only the next fetch, so a long
// poll would hold it back (Kafka's clients' fetch.max.wait.ms default).
const shallowHeldWait = 500 * time.Millisecond

// shallowFetchWait is the MaxWait of a shallow fetch: the unit consumer's
// fetch.max.wait.ms (long: fetchMaxWait unless the user set it) when the
// fetch names every partition of its broker that can be fetched, so an
// idle unit asks as rarely as the normal path's consumer does; at most
// shallowHeldWait when held is true (a partition of the broker was left
// out and may be ready before a long poll would end). Raw fetches have no
// fetch session (KIP-227): each one names all its partitions, which makes
// how often an idle unit fetches its main idle cost. A partition added or
// restarted while a long poll to its leader is in flight ends it
// (longPolls) and joins the next fetch.
func shallowFetchWait(long time.Duration, held bool) time.Duration {
	if held {
		return min(long, shallowHeldWait)
	}
	return long
}

// startFetches sends a fetch to every source broker that has none in
// flight, for its partitions that have room in the unit's buffer.
func (s *shallow) startFetches(ctx context.Context) {
	if s.buffered >= s.maxBuf {
		return
	}
	e := s.u.env
	now := time.Now()
	byBroker := map[int32][]*shPart{}
	held := map[int32]bool{} // brokers with a partition left out for a while
	for k, sp := range s.parts {
		if sp.stopped {
			continue // restarted through the inbox, or never
		}
		leader, ok := s.srcLeader[k]
		if ok && s.fetching[leader] {
			// The cheap test first: an idle unit's brokers all have a
			// fetch in flight, naming all their partitions.
			if cancel := s.longPolls[leader]; cancel != nil && !sp.fetching && s.ready(sp, now) {
				// Added or restarted since the broker's long poll was
				// sent: it joins the next fetch, which is sent as
				// soon as this one ends (not up to fetch.max.wait.ms
				// later).
				cancel()
				delete(s.longPolls, leader)
			}
			continue
		}
		if !sp.f.live() {
			continue // restarted through the inbox, or never
		}
		if !ok {
			s.needMeta = true
			continue
		}
		if id, cur := sp.f.srcID, kadm.TopicID(s.srcIDs[k.topic]); id != (kadm.TopicID{}) && cur != (kadm.TopicID{}) && cur != id {
			// The topic under this name is not the one the feed reads:
			// re-created (the new log, fetched at the old log's
			// position, was copied from its start here and again from
			// the lifecycle's restart there: TestShallowCopyRecreatedSourceNewLogOnce),
			// or the feed already reads the new one and the metadata is
			// older. It waits for discovery's restart (woken here), or
			// for the metadata.
			s.needMeta = true
			held[leader] = true
			if s.u.env.rediscover != nil {
				s.u.env.rediscover()
			}
			continue
		}
		if now.Before(sp.retryAt) {
			held[leader] = true
			s.wakeBy(sp.retryAt)
			continue
		}
		if sp.fetching || sp.pos < 0 || sp.bytes >= s.maxBuf/2 {
			held[leader] = true
			continue
		}
		byBroker[leader] = append(byBroker[leader], sp)
	}
	for broker, sps := range byBroker {
		req := kmsg.NewPtrFetchRequest()
		req.MaxWaitMillis = int32(shallowFetchWait(s.maxWait, held[broker]) / time.Millisecond)
		req.MinBytes = 1
		req.MaxBytes = e.fetchMax()
		if e.cfg.Isolation == ReadCommitted {
			req.IsolationLevel = 1
		}
		req.SessionID, req.SessionEpoch = 0, -1
		gens := map[tp]int{}
		idx := map[string]int{}
		for _, sp := range sps {
			i, ok := idx[sp.k.topic]
			if !ok {
				rt := kmsg.NewFetchRequestTopic()
				rt.Topic = sp.k.topic
				rt.TopicID = s.srcIDs[sp.k.topic]
				req.Topics = append(req.Topics, rt)
				i = len(req.Topics) - 1
				idx[sp.k.topic] = i
			}
			rp := kmsg.NewFetchRequestTopicPartition()
			rp.Partition = sp.k.partition
			rp.FetchOffset = sp.pos
			rp.CurrentLeaderEpoch = -1
			rp.LastFetchedEpoch = -1
			rp.LogStartOffset = -1
			rp.PartitionMaxBytes = e.cfg.FetchMaxPartitionBytes
			req.Topics[i].Partitions = append(req.Topics[i].Partitions, rp)
			sp.fetching = true
			gens[sp.k] = sp.gen
		}
		s.fetching[broker] = true
		s.pending++
		b := s.u.cons.Broker(int(broker))
		fctx, cancel := context.WithCancel(ctx)
		delete(s.longPolls, broker)
		if !held[broker] {
			s.longPolls[broker] = cancel
		}
		go func() {
			resp, err := req.RequestWith(fctx, b)
			cancel()
			s.fetchCh <- shFetched{broker: broker, parts: gens, resp: resp, err: err}
		}()
	}
}

// ready reports whether sp would be named by a fetch sent now (the
// conditions of startFetches for a partition whose leader is known and has
// no fetch in flight).
func (s *shallow) ready(sp *shPart, now time.Time) bool {
	return sp.f.live() && !now.Before(sp.retryAt) && !sp.fetching && sp.pos >= 0 && sp.bytes < s.maxBuf/2
}

// fetched processes a fetch response: each partition's batches become
// items (copied batches, records for the normal path, or position moves),
// with gap detection as on the normal path.
func (s *shallow) fetched(f shFetched) {
	for k := range f.parts {
		if sp := s.parts[k]; sp != nil {
			sp.fetching = false
		}
	}
	if f.err == nil && f.resp.ErrorCode != 0 {
		f.err = kerr.ErrorForCode(f.resp.ErrorCode)
	}
	if f.err != nil {
		if !errors.Is(f.err, context.Canceled) {
			s.needMeta = true
			for k := range f.parts {
				if sp := s.parts[k]; sp != nil {
					s.fetchError(sp, f.err)
				}
			}
		}
		return
	}
	for i := range f.resp.Topics {
		rt := &f.resp.Topics[i]
		topic := rt.Topic
		if f.resp.Version >= 13 {
			topic = s.srcNames[rt.TopicID]
		}
		for j := range rt.Partitions {
			rp := &rt.Partitions[j]
			k := tp{topic, rp.Partition}
			sp := s.parts[k]
			gen, asked := f.parts[k]
			if sp == nil || !asked || gen != sp.gen || sp.stopped {
				continue // purged or restarted while the fetch was in flight
			}
			s.fetchedPartition(sp, rp)
		}
	}
}

func (s *shallow) fetchError(sp *shPart, err error) {
	u := s.u
	u.env.metrics.flowErr(u.env.labels, "fetch")
	sp.retryAt = time.Now().Add(shallowRetry)
	if u.noteFetchErr(sp.f, err) {
		u.log.Warn("fetch error", "topic", sp.k.topic, "partition", sp.k.partition, "err", err)
	}
}

func (s *shallow) fetchedPartition(sp *shPart, rp *kmsg.FetchResponseTopicPartition) {
	u, f := s.u, sp.f
	if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
		if errors.Is(err, kerr.OffsetOutOfRange) {
			// As kgo's consumer (ConsumeResetOffset AtStart): restart at
			// the log start; the gap check reports what was lost.
			sp.pos = posStart
			s.toResolve = true
			return
		}
		s.needMeta = true
		s.fetchError(sp, err)
		return
	}
	if !f.live() {
		return
	}
	if len(rp.RecordBatches) > 0 {
		// The high watermark, and the fetch error cleared.
		u.box.postFetched(f, nil, -1, rp.HighWatermark)
	}
	var aborts map[int64][]int64 // producer id -> first offsets of aborted transactions
	for _, a := range rp.AbortedTransactions {
		if aborts == nil {
			aborts = map[int64][]int64{}
		}
		aborts[a.ProducerID] = append(aborts[a.ProducerID], a.FirstOffset)
	}
	for _, l := range aborts {
		slices.Sort(l)
	}
	in := rp.RecordBatches
	for len(in) > 0 {
		h, ok := readBatchHeader(in)
		if !ok {
			break // a partial batch at the end of the response
		}
		b := in[:h.length]
		in = in[h.length:]
		if h.magic == 2 && h.last() < sp.pos {
			continue // already replicated (a batch before the fetch position)
		}
		var it *shItem
		switch cp, _ := h.copyable(sp.pos); {
		case h.magic == 2 && h.attrs&attrControl != 0:
			// A transaction marker: not replicated; with read_committed,
			// an abort marker ends its producer's aborted range.
			if l := aborts[h.producerID]; len(l) > 0 && h.base >= l[0] && s.isAbortMarker(sp, rp, b) {
				aborts[h.producerID] = aborts[h.producerID][1:]
			}
			if !u.checkGapAt(f, h.base, rp.LogStartOffset) {
				return
			}
			f.next = h.last() + 1
			it = &shItem{end: h.last() + 1}
		case h.magic == 2 && h.attrs&attrTransactional != 0 && len(aborts[h.producerID]) > 0 && h.base >= aborts[h.producerID][0]:
			// An aborted transaction's batch (read_committed): skipped, as
			// kgo's consumer skips it; the marker after it moves the
			// position.
			it = &shItem{end: h.last() + 1}
		case cp:
			if !u.checkGapAt(f, h.base, rp.LogStartOffset) {
				return
			}
			f.next = h.last() + 1
			it = &shItem{raw: b, base: h.base, n: h.numRecords, maxTs: h.maxTs, end: h.last() + 1}
			rewriteForProduce(b, &it.orig)
			u.codec.observeN(uint8(h.attrs&attrCodec), int(h.numRecords))
			ts := kgo.Record{Timestamp: time.UnixMilli(h.maxTs)}
			u.env.metrics.polled(f.pm, &ts)
		default:
			var ok bool
			if it, ok = s.decode(sp, rp, b, sp.pos); !ok {
				return
			}
		}
		sp.pos = max(sp.pos, it.end)
		s.enqueue(sp, it)
	}
}

func (s *shallow) enqueue(sp *shPart, it *shItem) {
	n := it.size()
	sp.items = append(sp.items, it)
	sp.bytes += n
	s.buffered += n
}

// isAbortMarker decodes a control batch's record: an ABORT marker?
func (s *shallow) isAbortMarker(sp *shPart, rp *kmsg.FetchResponseTopicPartition, b []byte) bool {
	fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{KeepControlRecords: true,
		Topic: sp.k.topic, Partition: sp.k.partition},
		&kmsg.FetchResponseTopicPartition{Partition: rp.Partition, RecordBatches: b}, s.dec, nil)
	for _, r := range fp.Records {
		if len(r.Key) >= 4 && r.Key[2] == 0 && r.Key[3] == 0 {
			return true
		}
	}
	return false
}

// decode turns a batch that cannot be copied into records for the normal
// path (records below from skipped), with the normal path's gap checks. It
// returns false when the partition stopped (GapStop) or the batch is
// corrupt (kept as a fetch error; fetched again after a pause).
func (s *shallow) decode(sp *shPart, rp *kmsg.FetchResponseTopicPartition, b []byte, from int64) (*shItem, bool) {
	u, f := s.u, sp.f
	fp, next := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{KeepControlRecords: true, Offset: from,
		IsolationLevel: kgo.ReadUncommitted(), Topic: sp.k.topic, Partition: sp.k.partition},
		&kmsg.FetchResponseTopicPartition{Partition: rp.Partition, HighWatermark: rp.HighWatermark,
			LastStableOffset: rp.LastStableOffset, LogStartOffset: rp.LogStartOffset, RecordBatches: b}, s.dec, nil)
	if fp.Err != nil {
		s.fetchError(sp, fp.Err)
		return nil, false
	}
	it := &shItem{end: max(next, from)}
	for _, r := range fp.Records {
		if !u.checkGap(f, r, rp.LogStartOffset) {
			return nil, false
		}
		f.next = r.Offset + 1
		if r.Attrs.IsControl() {
			continue
		}
		u.codec.observe(r.Attrs.CompressionType())
		u.env.metrics.polled(f.pm, r)
		it.recs = append(it.recs, r)
	}
	s.fellBack++
	return it, true
}

// startProduces moves every partition's items forward: position moves and
// normal-path records at once (kgo keeps their order), a batch to copy when
// nothing of the partition is in flight, in one produce request per target
// broker that has none in flight.
func (s *shallow) startProduces(hard context.Context) {
	now := time.Now()
	reqs := map[int32]*kmsg.ProduceRequest{}
	sent := map[int32][]*shPart{}
	for k, sp := range s.parts {
		for len(sp.items) > 0 && !sp.inflight {
			it := sp.items[0]
			if it.raw == nil {
				s.pop(sp)
				s.produceRecords(sp, it)
				continue
			}
			if sp.kgoOut.Load() > 0 || sp.stopped {
				break // the last normal-path ack or the inbox wakes the loop
			}
			if now.Before(sp.retryAt) {
				s.wakeBy(sp.retryAt)
				break
			}
			leader, ok := s.dstLeader[tp{sp.f.remote, k.partition}]
			if !ok {
				s.needMeta = true
				break
			}
			if s.producing[leader] {
				break
			}
			// In flight from here (one entry for the batch), unless the
			// control goroutine stopped the partition.
			if !s.u.box.postFetched(sp.f, []inflight{{up: it.base, size: int64(len(it.raw)), n: it.n}}, it.end, -1) {
				// Failed (a normal-path record refused) or held for a
				// restart: its successor fetches these batches again.
				// Dropped: counted in the unit's buffer until the
				// partition restarts (an operator's restart, for a
				// record's own error), they could hold back every fetch
				// of the unit, its healthy partitions' too.
				s.dropItems(sp)
				break
			}
			req := reqs[leader]
			if req == nil {
				req = kmsg.NewPtrProduceRequest()
				req.Acks = s.acks
				req.TimeoutMillis = int32(min(s.u.env.cfg.AdminTimeout, 30*time.Second) / time.Millisecond)
				reqs[leader] = req
			}
			var rt *kmsg.ProduceRequestTopic
			// The remote topic's ID when the partition started, if
			// known: a remote topic re-created since is refused
			// (UNKNOWN_TOPIC_ID) instead of receiving the batches of the
			// old one's tail, and the partition is refilled.
			id := s.dstIDs[sp.f.remote]
			if pid := sp.f.remoteID; pid != (kadm.TopicID{}) {
				id = [16]byte(pid)
			}
			for i := range req.Topics {
				if req.Topics[i].Topic == sp.f.remote && req.Topics[i].TopicID == id {
					rt = &req.Topics[i]
				}
			}
			if rt == nil {
				t := kmsg.NewProduceRequestTopic()
				t.Topic = sp.f.remote
				t.TopicID = id
				req.Topics = append(req.Topics, t)
				rt = &req.Topics[len(req.Topics)-1]
			}
			rp := kmsg.NewProduceRequestTopicPartition()
			rp.Partition = k.partition
			rp.Records = it.raw
			rt.Partitions = append(rt.Partitions, rp)
			sp.inflight = true
			sp.sentID = id
			sent[leader] = append(sent[leader], sp)
		}
	}
	for broker, req := range reqs {
		s.producing[broker] = true
		s.pending++
		b, parts := s.u.prod.Broker(int(broker)), sent[broker]
		go func() {
			resp, err := req.RequestWith(hard, b)
			s.prodCh <- shProduced{broker: broker, parts: parts, resp: resp, err: err}
		}()
	}
}

func (s *shallow) pop(sp *shPart) *shItem {
	it := sp.items[0]
	sp.items[0] = nil
	sp.items = sp.items[1:]
	n := it.size()
	sp.bytes -= n
	s.buffered -= n
	return it
}

// produceRecords hands an item's records to the unit's kgo producer, as
// the normal path's poll loop does.
func (s *shallow) produceRecords(sp *shPart, it *shItem) {
	f := sp.f
	batch := make([]inflight, 0, len(it.recs))
	var tooLarge error // the last record of batch, which the target would refuse (limits.go)
	polledTo := it.end
	lim := s.u.recordLimit(f.remote)
	for _, r := range it.recs {
		batch = append(batch, inflight{up: r.Offset, size: recordSize(r), rec: r, ts: r.Timestamp.UnixMilli(), nokey: r.Key == nil})
		if sz := recordBatchSize(r); sz > lim {
			tooLarge = s.u.tooLarge(f.remote, r, sz, lim)
			polledTo = r.Offset
			break
		}
	}
	if !s.u.box.postFetched(f, batch, polledTo, -1) {
		return // failed or restarted: its successor fetches these records again
	}
	recs := it.recs[:len(batch)]
	if tooLarge != nil {
		recs = recs[:len(recs)-1]
	}
	sp.kgoOut.Add(int64(len(recs)))
	defer func() {
		if tooLarge != nil {
			// Nothing after the record is produced; the partition
			// fails at it once the records before it are acknowledged.
			// Items fetched after it are dropped: counted in the
			// unit's buffer until the partition restarts, they could
			// hold back every fetch of the unit.
			sp.stopped = true
			s.dropItems(sp)
			f.stopped.Store(true)
			s.u.box.postResult(f, batch[len(batch)-1].rec, tooLarge)
		}
	}()
	for _, r := range recs {
		retarget(r, f.remote, f.gate)
		s.u.prod.Produce(context.Background(), r, sp.fbAck)
	}
}

// produced handles a produce response: acks, fallbacks, retries, failures.
func (s *shallow) produced(r shProduced) {
	s.producing[r.broker] = false
	u := s.u
	// Results by topic name, or from version 13 by the topic ID the
	// request carried (a pinned ID may not be in the metadata yet).
	type resKey struct {
		topic string
		id    [16]byte
		part  int32
	}
	results := map[resKey]kmsg.ProduceResponseTopicPartition{}
	byID := r.err == nil && r.resp.Version >= 13
	if r.err == nil {
		for _, t := range r.resp.Topics {
			k := resKey{topic: t.Topic}
			if byID {
				k = resKey{id: t.TopicID}
			}
			for _, p := range t.Partitions {
				k.part = p.Partition
				results[k] = p
			}
		}
	}
	for _, sp := range r.parts {
		sp.inflight = false
		it := sp.items[0]
		f := sp.f
		k := resKey{topic: f.remote, part: sp.k.partition}
		if byID {
			k = resKey{id: sp.sentID, part: sp.k.partition}
		}
		res, ok := results[k]
		var err error
		switch {
		case r.err != nil:
			err = r.err
		case !ok:
			err = fmt.Errorf("the produce response has no result for %s[%d]", f.remote, sp.k.partition)
		default:
			err = kerr.ErrorForCode(res.ErrorCode)
		}
		switch {
		case err == nil:
			s.pop(sp)
			s.copied++
			u.box.post(event{kind: evBatchAck, f: f, a: it.base, b: res.BaseOffset, c: int64(it.n), d: int64(len(it.raw)),
				x: &evExtra{ts: time.UnixMilli(it.maxTs)}})
		case errors.Is(err, kgo.ErrClientClosed) || errors.Is(err, context.Canceled),
			sp.stopped || s.parts[sp.k] != sp:
			// The unit stops: nothing acknowledged, the next session
			// replays from the resume point. Or the partition was stopped
			// (its topic purged) or replaced by a successor state (a
			// restarted or refilled partition) while this batch was in
			// flight: an error must not queue anything on it again, which
			// would stay counted in the unit's buffer with nothing left to
			// send or drop it.
			u.box.post(event{kind: evUnpush, f: f, a: it.base})
			s.pop(sp)
		case fallsBack(err):
			// The target refuses the batch as it is: its records take the
			// normal path (decoded, produced through kgo, which splits and
			// re-encodes them).
			u.box.post(event{kind: evUnpush, f: f, a: it.base})
			restoreHeader(it.raw, &it.orig)
			s.pop(sp)
			fp, _ := kgo.ProcessFetchPartition(kgo.ProcessFetchPartitionOpts{Offset: it.base,
				IsolationLevel: kgo.ReadUncommitted(), Topic: sp.k.topic, Partition: sp.k.partition},
				&kmsg.FetchResponseTopicPartition{Partition: sp.k.partition, RecordBatches: it.raw}, s.dec, nil)
			if fp.Err != nil {
				s.fail(sp, fmt.Errorf("the target refused a batch (%v) and it could not be decoded: %w", err, fp.Err))
				continue
			}
			s.fellBack++
			if time.Since(s.lastLog) > 10*time.Second {
				s.lastLog = time.Now()
				u.log.Info("shallow copy: the target refused a batch as it is; its records take the normal path",
					"topic", sp.k.topic, "partition", sp.k.partition, "offset", it.base, "err", err)
			}
			fb := &shItem{recs: fp.Records, end: it.end}
			for _, r := range fb.recs {
				u.codec.observe(r.Attrs.CompressionType())
			}
			sp.items = append([]*shItem{fb}, sp.items...)
			sp.bytes += fb.size()
			s.buffered += fb.size()
		case retriableProduce(err):
			u.box.post(event{kind: evUnpush, f: f, a: it.base})
			s.needMeta = true
			sp.retryAt = time.Now().Add(shallowRetry)
			u.env.metrics.flowErr(u.env.labels, "produce")
		default:
			u.box.post(event{kind: evUnpush, f: f, a: it.base})
			s.pop(sp)
			s.fail(sp, err)
		}
		if sp.stopped && len(sp.items) == 0 {
			// Purged with this batch in flight: nothing more to do.
			continue
		}
	}
}

func (s *shallow) fail(sp *shPart, err error) {
	f := sp.f
	s.dropItems(sp)
	f.stopped.Store(true)
	auto := int64(0)
	if !recordError(err) {
		auto = 1
	}
	s.u.box.post(event{kind: evFailed, f: f, a: auto, err: &PartitionError{Flow: s.u.env.name, Topic: sp.k.topic, Partition: sp.k.partition,
		Err: aclAdvice(timestampAdvice(err, f.remote, s.u.env.dst.Alias, timeSpan{}), "WRITE", f.remote, s.u.env.dst.Alias)}})
}

// fallsBack reports the produce errors by which the target refuses a batch
// as it is, but may accept its records re-encoded by the normal path.
func fallsBack(err error) bool {
	for _, e := range []error{kerr.CorruptMessage, kerr.InvalidRecord, kerr.MessageTooLarge, kerr.RecordListTooLarge,
		kerr.UnsupportedCompressionType, kerr.UnsupportedForMessageFormat, kerr.InvalidTimestamp, kerr.InvalidProducerEpoch,
		kerr.InvalidRequiredAcks, kerr.UnsupportedVersion} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// retriableProduce reports errors after which the same batch is produced
// again (after a metadata refresh): leadership moves, timeouts, network.
// UNKNOWN_TOPIC_ID is not one: the batches carry the remote topic's ID of
// when the partition started, so it means the remote topic was deleted
// and re-created; the partition fails and is refilled, as on the record
// path.
func retriableProduce(err error) bool {
	var ke *kerr.Error
	if errors.As(err, &ke) {
		return ke.Retriable && !errors.Is(err, kerr.UnknownTopicID)
	}
	return !errors.Is(err, kgo.ErrClientClosed) // network and request errors
}
