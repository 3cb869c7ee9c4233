package mirror

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// applyOffer starts the offered partitions the unit does not replicate yet
// and restarts those of re-created topics. It returns false when some
// offered partition could not start yet (the producer does not know its
// remote partition): the caller retries soon. Control goroutine: the
// offer's decisions are the lifecycle's events (evSourceRecreated,
// remoteChanged after the target confirmed a new remote topic ID,
// evStart with each new partition's start position).
func (u *unit) applyOffer(ctx context.Context) bool {
	u.offerMu.Lock()
	offer := u.offer
	u.offerMu.Unlock()
	u.drain(ctx) // the lifecycle is current before it takes the offer
	m := u.life
	// A source topic ID the offer has that differs from the one known
	// (running: m.topicIDs; starting: the one stored with the resume
	// point) is asked of the source first (confirmSourceIDs): an offer
	// listed before a re-creation the unit already saw, or from a broker
	// whose metadata lags, would otherwise restart the partition at its
	// log start and report a false gap (duplicates). The decisions below
	// use the ID the source answers.
	ask := map[string]bool{}
	offeredID := map[string]kadm.TopicID{} // of the topics asked about
	for k, o := range offer {
		if o.id == (kadm.TopicID{}) {
			continue
		}
		offeredID[k.topic] = o.id
		if old, seen := m.topicIDs[k.topic]; seen && old != o.id {
			ask[k.topic] = true
		}
		if _, running := m.parts[k]; !running {
			if sid := u.resumeIDs[k].source; sid != (kadm.TopicID{}) && sid != o.id && u.resumePoint(k) >= 0 {
				ask[k.topic] = true
			}
		}
	}
	// Source topics the unit replicates that the offer no longer has:
	// deleted on the source, when the source says so (gone).
	offered := map[string]bool{}
	for k := range offer {
		offered[k.topic] = true
	}
	gone := map[string]bool{}
	for k := range m.parts {
		if !offered[k.topic] {
			gone[k.topic] = true
		}
	}
	current := u.confirmSourceIDs(ctx, union(ask, gone))
	unconfirmed := false // some topic's ID is not settled: retry soon
	if deleted := u.settleDeleted(gone, current, &unconfirmed); len(deleted) > 0 {
		// The next session starts the offered partitions only (MM2
		// reconfigures its tasks when the topic set changes): the
		// deleted topics' partitions leave the unit's status, lag and
		// metrics, and the lifecycle forgets them at the next
		// session's start (forget): a topic re-created under the name
		// later is a new one, its stored resume points checked against
		// the new topic ID as for a re-creation while no unit ran.
		unreplicated := int64(0)
		for _, p := range m.parts {
			if deleted[p.topic] {
				unreplicated += max(p.hw-p.acked-1, 0)
			}
		}
		u.log.Warn("source topics deleted (or re-created without a partition of this unit): the unit's session restarts without their partitions",
			"topics", sortedKeys(deleted), "unreplicated_records", unreplicated)
		u.rebuild, u.forget = true, deleted
		return true
	}
	settled := map[string]kadm.TopicID{}
	for topic := range ask {
		if id, ok := u.settleID(topic, offeredID[topic], current); ok {
			settled[topic] = id // zero: the source does not have the topic
		} else {
			unconfirmed = true
		}
	}
	for topic := range u.disputes {
		if !ask[topic] && !gone[topic] {
			delete(u.disputes, topic) // the offer agrees now
		}
	}
	idOf := func(topic string, offered kadm.TopicID) (kadm.TopicID, bool) {
		if !ask[topic] {
			return offered, true
		}
		id, ok := settled[topic]
		return id, ok
	}
	recreated := map[string]kadm.TopicID{}
	for k, o := range offer {
		old, seen := m.topicIDs[k.topic]
		id, ok := idOf(k.topic, o.id)
		switch {
		case !ok || id == (kadm.TopicID{}):
		case !seen:
			m.topicIDs[k.topic] = id
		case old != id:
			recreated[k.topic] = id
		}
	}
	if vanished := u.vanishedParts(offer, recreated); len(vanished) > 0 {
		// A topic re-created with fewer partitions: the partitions the
		// new topic lacks leave the unit (restarted on the new topic ID
		// they failed with UNKNOWN_TOPIC_ID, RETRYING in the status for
		// good). The session ends; the next one starts the offered
		// partitions, which see the re-creation as any other (their gap,
		// the new log from its start), and the lifecycle forgets the
		// vanished ones at its start.
		u.rebuild, u.forgetParts = true, vanished
		return true
	}
	for _, topic := range sortedKeys(recreated) {
		m.apply(event{kind: evSourceRecreated, x: &evExtra{topic: topic, id: recreated[topic]}}, nil)
	}
	refill := map[string]kadm.TopicID{}
	remotes := map[string]string{} // source topic -> remote topic
	for k, o := range offer {
		old := m.remoteIDs[k.topic]
		switch {
		case o.remoteID == (kadm.TopicID{}):
		case old == (kadm.TopicID{}):
			m.remoteIDs[k.topic] = o.remoteID
		case old != o.remoteID:
			refill[k.topic] = o.remoteID
			remotes[k.topic] = o.remote
		}
	}
	if len(refill) > 0 {
		u.confirmRefills(ctx, refill, remotes)
	}
	for _, topic := range sortedKeys(refill) {
		m.remoteChanged(topic, refill[topic])
	}
	inOffer := map[string]bool{}
	for _, o := range offer {
		inOffer[o.remote] = true
	}
	if u.noteLimits(inOffer); u.rebuild {
		return true // the session ends: the next one starts these partitions
	}
	var add []pendingStart
	for k, o := range offer {
		if _, ok := m.parts[k]; ok {
			continue
		}
		id, ok := idOf(k.topic, o.id)
		if !ok {
			continue // its source topic ID is not known yet: the next try asks again
		}
		if id == (kadm.TopicID{}) && o.id != (kadm.TopicID{}) {
			continue // deleted on the source since discovery listed it: the next discovery round tells
		}
		o.id = id
		from := u.resumePoint(k)
		_, fill := refill[k.topic]
		ids := u.resumeIDs[k]
		if rid := ids.remote; rid != (kadm.TopicID{}) && from >= 0 && !fill && o.remoteID != (kadm.TopicID{}) && rid != o.remoteID {
			// The resume point was stored for another remote topic: it
			// was deleted and re-created on the target while no unit
			// replicated this partition (kmirror down, or the slot
			// between owners). The new one lacks every record up to the
			// resume point.
			u.log.Warn("the remote topic was re-created on the target since the resume point was stored: refilling the partition from the source's log start",
				"topic", k.topic, "partition", k.partition, "remote_topic", o.remote, "resume_point", from,
				"remote_topic_id", o.remoteID, "was", rid)
			fill = true
		}
		if sid := ids.source; sid != (kadm.TopicID{}) && from >= 0 && o.id != (kadm.TopicID{}) && sid != o.id {
			// The resume point is an offset of another source topic of
			// the same name: it was deleted and re-created while no unit
			// replicated this partition, or after the last resume point
			// was stored (a partition this unit replicated in an earlier
			// session: the re-creation was reported when it was seen,
			// by sourceRecreated). The new topic's records are
			// replicated from its log start (a fresh session of offset
			// syncs, tagged with its ID); the old topic's records after
			// the resume point, if it had any, are gone with it: reported
			// as a gap, as a re-creation seen while running is (how many
			// is not known: From == To).
			if m.carry[k] == nil {
				u.reportGap(&GapError{Flow: u.env.name, Topic: k.topic, Partition: k.partition, From: from + 1, To: from + 1, At: time.Now(),
					Reason: fmt.Sprintf("the source topic was deleted and re-created while no unit replicated it (topic ID %s, the resume point at offset %d was stored for %s); "+
						"replication restarts at the new topic's log start; records of the old topic after the resume point, if any, were not replicated", o.id, from, sid)})
			}
			fill = true
		}
		add = append(add, pendingStart{k, startPos{remote: o.remote, committed: from, fromStart: fill, topicID: o.id, remoteID: o.remoteID,
			limit: u.recordLimit(o.remote)}})
	}
	slices.SortFunc(add, func(a, b pendingStart) int {
		if a.k.topic != b.k.topic {
			if a.k.topic < b.k.topic {
				return -1
			}
			return 1
		}
		return int(a.k.partition - b.k.partition)
	})
	ready := u.waitProducerMetadata(ctx, add)
	if u.tailOK && len(ready) > 0 {
		u.tailStarts(ctx, ready)
	}
	for _, st := range ready {
		m.apply(event{kind: evStart, x: &evExtra{k: st.k, start: st.start}}, nil)
	}
	if len(ready) > 0 {
		u.log.Debug("partitions started", "count", len(ready))
	}
	u.execute(ctx)
	return len(ready) == len(add) && !unconfirmed
}

// settleDeleted returns the topics of gone (replicated by the unit, not
// offered any more) that the source settled as deleted: it answered "no
// such topic" (current has the zero ID) disputeTries times in a row
// against the topic ID the unit knows (settleID: a broker whose metadata
// lags must not stop a topic's replication). A topic the source still
// has (deselected, or missing from one listing) keeps running; one whose
// dispute is under way sets *unconfirmed (the offer is applied again
// soon).
func (u *unit) settleDeleted(gone map[string]bool, current map[string]kadm.TopicID, unconfirmed *bool) map[string]bool {
	deleted := map[string]bool{}
	for topic := range gone {
		id, ok := u.settleID(topic, u.life.topicIDs[topic], current)
		if !ok {
			// Not settled. A dispute under way is asked about again
			// soon; a topic the source did not answer about (no answer
			// at all, an error such as TOPIC_AUTHORIZATION_FAILED, or
			// no topic ID: a broker before Kafka 2.8) is not deleted
			// and waits for the next offer instead of a request every
			// half second.
			if _, answered := current[topic]; answered {
				*unconfirmed = true
			}
			continue
		}
		if known := u.life.topicIDs[topic]; id == (kadm.TopicID{}) || (known != (kadm.TopicID{}) && id != known) {
			// Deleted; or re-created, the new topic having no partition
			// of this slot (fewer partitions): the unit's partitions of
			// it read a topic that is gone either way.
			deleted[topic] = true
		}
	}
	return deleted
}

// vanishedParts returns the partitions the unit replicates of the topics
// in recreated (source topics re-created under their name, with their new
// IDs) that offer no longer has: the new topic has fewer partitions. Each
// is reported as a gap (what it had not replicated of the old topic is
// lost), as lifecycle.sourceRecreated reports those of the partitions the
// new topic has. Control goroutine.
func (u *unit) vanishedParts(offer map[tp]offered, recreated map[string]kadm.TopicID) map[tp]bool {
	var out map[tp]bool
	for _, p := range u.life.sortedParts() {
		k := tp{p.topic, p.partition}
		id, re := recreated[p.topic]
		if _, ok := offer[k]; ok || !re {
			continue
		}
		if out == nil {
			out = map[tp]bool{}
		}
		out[k] = true
		u.reportGap(&GapError{Flow: u.env.name, Topic: p.topic, Partition: p.partition, From: p.acked + 1, To: max(p.hw, p.acked+1), At: time.Now(),
			Reason: fmt.Sprintf("the source topic was deleted and re-created (topic ID %s, was %s) without this partition: it is no longer replicated", id, u.life.topicIDs[p.topic])})
	}
	if len(out) > 0 {
		u.log.Warn("source topic re-created with fewer partitions: the unit's session restarts without the partitions the new topic lacks",
			"partitions", len(out))
	}
	return out
}

// union returns the keys of a and b.
func union(a, b map[string]bool) map[string]bool {
	if len(b) == 0 {
		return a
	}
	out := make(map[string]bool, len(a)+len(b))
	for k := range a {
		out[k] = true
	}
	for k := range b {
		out[k] = true
	}
	return out
}

// pendingStart is an offered partition about to start at start.
type pendingStart struct {
	k     tp
	start startPos
}

// waitProducerMetadata waits (up to 5 s) until the producer's metadata
// knows the new partitions of remote topics it already writes to: kgo fails
// a record for a partition its cached metadata lacks instead of waiting,
// which a partition increase would otherwise hit. Partitions still unknown
// are left for a retry. With shallow copy, a remote topic the producer
// has no metadata of is not waited for (it has produced nothing there).
func (u *unit) waitProducerMetadata(ctx context.Context, add []pendingStart) []pendingStart {
	known := map[string]bool{}
	for _, p := range u.life.parts {
		known[p.remote] = true
	}
	deadline := time.Now().Add(min(u.env.cfg.AdminTimeout, 5*time.Second))
	ready := add[:0]
	for _, st := range add {
		for known[st.start.remote] {
			if leader, _, _ := u.prod.PartitionLeader(st.start.remote, st.k.partition); leader >= 0 {
				break
			}
			if l0, _, _ := u.prod.PartitionLeader(st.start.remote, 0); u.sh != nil && l0 < 0 {
				// Shallow copy writes batches in requests of its own,
				// to leaders the shallow loop looks up: the producer
				// never loads the remote topic's metadata until a
				// batch goes record by record (which loads it then),
				// so no refresh ever shows the partition and the
				// partitions added to a source topic never started.
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return ready
			}
			u.prod.ForceMetadataRefresh()
			select {
			case <-ctx.Done():
				return ready
			case <-time.After(100 * time.Millisecond):
			}
		}
		ready = append(ready, st)
	}
	return ready
}

// confirmSourceIDs asks the source for the current IDs of topics (none:
// no request) and returns those it answered: a topic it does not know
// (deleted) with the zero ID; one it could not answer about (another
// error, no answer) is left out. The request goes to a broker (kadm's
// listing answers from the client's metadata cache, which can predate the
// re-creation in question) and waits at most confirmIDTimeout (the
// control goroutine waits with it); after a request without an answer the
// next waits confirmBackoff, doubling up to confirmBackoffMax (a source
// outage does not hold the control goroutine at every retry). Control
// goroutine only.
func (u *unit) confirmSourceIDs(ctx context.Context, topics map[string]bool) map[string]kadm.TopicID {
	if len(topics) == 0 {
		return nil
	}
	if time.Now().Before(u.confirmAfter) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, min(u.env.cfg.AdminTimeout, confirmIDTimeout))
	defer cancel()
	req := kmsg.NewPtrMetadataRequest()
	for _, t := range sortedKeys(topics) {
		rt := kmsg.NewMetadataRequestTopic()
		rt.Topic = kmsg.StringPtr(t)
		req.Topics = append(req.Topics, rt)
	}
	resp, err := req.RequestWith(ctx, u.cons)
	if err != nil {
		u.confirmDelay = min(max(u.confirmDelay*2, confirmBackoff), confirmBackoffMax)
		u.confirmAfter = time.Now().Add(u.confirmDelay)
		u.log.Debug("asking the source for topic IDs", "topics", len(topics), "err", err, "next_in", u.confirmDelay)
		return nil
	}
	u.confirmDelay, u.confirmAfter = 0, time.Time{}
	out := make(map[string]kadm.TopicID, len(topics))
	for _, t := range resp.Topics {
		switch {
		case t.Topic == nil || !topics[*t.Topic]:
		case t.ErrorCode == kerr.UnknownTopicOrPartition.Code:
			out[*t.Topic] = kadm.TopicID{}
		case t.ErrorCode == 0 && t.TopicID != (kadm.TopicID{}):
			out[*t.Topic] = t.TopicID
		}
	}
	return out
}

// confirmSourceIDs' bounds: one request's wait, and the pause after a
// request without an answer (doubling).
const (
	confirmIDTimeout  = 3 * time.Second
	confirmBackoff    = time.Second
	confirmBackoffMax = 30 * time.Second
)

// disputeTries is how many answers in a row must contradict an offer's
// topic ID before the answer is taken: a broker's metadata can lag a
// re-creation the offer saw, and a re-creation ignored would resume the
// new topic at the old one's offset (records lost), while one taken wrongly
// only copies a partition again.
const disputeTries = 3

// idDispute is a topic's run of answers contradicting offered.
type idDispute struct {
	offered kadm.TopicID
	n       int
}

// settleID decides the ID of topic, offered as offered, from the source's
// answer (current): the answer when it agrees, or when it contradicted the
// same offered ID disputeTries times in a row (also "no such topic", the
// zero ID: a broker that did not learn of a re-creation yet answers so);
// not settled (false) without an answer or while the dispute is shorter.
func (u *unit) settleID(topic string, offered kadm.TopicID, current map[string]kadm.TopicID) (kadm.TopicID, bool) {
	id, ok := current[topic]
	switch {
	case !ok:
		return kadm.TopicID{}, false
	case id == offered:
		delete(u.disputes, topic)
		return id, true
	}
	d := u.disputes[topic]
	if d.offered != offered {
		d = idDispute{offered: offered}
	}
	d.n++
	if d.n < disputeTries {
		if u.disputes == nil {
			u.disputes = map[string]idDispute{}
		}
		u.disputes[topic] = d
		return kadm.TopicID{}, false
	}
	delete(u.disputes, topic)
	u.log.Info("discovery offered a source topic ID the source contradicts: keeping the source's", "topic", topic, "offered", offered, "source", id)
	return id, true
}

// confirmRefills keeps in refill only the remote topics whose ID on the
// target is, asked now, the one discovery offered: an offer listed before
// a re-creation that the lifecycle already handled carries the old ID, and
// must not refill the topic a second time. A topic that cannot be asked
// about waits for the next offer. Control goroutine only.
func (u *unit) confirmRefills(ctx context.Context, refill map[string]kadm.TopicID, remotes map[string]string) {
	names := make([]string, 0, len(remotes))
	for _, r := range remotes {
		names = append(names, r)
	}
	ctx, cancel := context.WithTimeout(ctx, min(u.env.cfg.AdminTimeout, 10*time.Second))
	defer cancel()
	listed, err := kadm.NewClient(u.prod).ListTopics(ctx, names...)
	for topic, id := range refill {
		td, ok := listed[remotes[topic]]
		if err != nil || !ok || td.Err != nil || td.ID != id {
			delete(refill, topic)
		}
	}
}
