package mirror

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// probeEvery is how often the cluster probe runs: the offset flush
// interval, at least a second.
func (f *flow) probeEvery() time.Duration { return max(f.cfg.OffsetFlushInterval, time.Second) }

// probeLoop runs the cluster probe every probeEvery until ctx is done. It
// has its own goroutine: in the refresh loop, a probe due while discovery
// (or config or ACL sync) waited on a hung cluster ran only after it, so a
// hung target went unreported for over a minute (the admin timeout;
// TestHungTargetReportedWhileDiscoveryWaits).
func (f *flow) probeLoop(ctx context.Context) {
	t := time.NewTicker(f.probeEvery())
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			f.probe(ctx)
		}
	}
}

// refreshLoop runs, on their own intervals (MM2's MirrorSourceConnector
// scheduler): discovery of the source partitions ready to replicate, which
// every member runs and which, on the member holding slot 0, also creates
// remote topics and follows partition increases; topic-config sync and ACL
// sync (slot 0's member only). The cluster probe has its own goroutine
// (probeLoop).
func (f *flow) refreshLoop(ctx context.Context) {
	type job struct {
		every     time.Duration
		next      time.Time
		run       func(context.Context) error
		name      string
		topics    bool
		singleton bool          // only while this member holds slot 0
		retry     time.Duration // the next retry's delay after per-topic errors (errTopicsFailed)
		ran       time.Time     // its last run's start
	}
	now := time.Now()
	var jobs []*job
	probeEvery := f.probeEvery()
	if f.syncCl.Load() != nil {
		jobs = append(jobs, &job{every: probeEvery, next: now.Add(probeEvery), run: f.restoreSyncTopics, name: "restore offset-syncs topics"})
	}
	if !f.cfg.Disabled {
		// Discovery also runs when refresh.topics.enabled=false: units
		// need the partitions of the topics that existed at start, and a
		// member that joins later must find them too; topic creation
		// after the first round follows the setting.
		every := f.cfg.RefreshTopicsInterval
		first := now.Add(every)
		if f.topicsPending.Load() {
			first = now.Add(min(every, 500*time.Millisecond))
		}
		jobs = append(jobs, &job{every: every, next: first, run: f.discover,
			name: "refresh topics", topics: true})
		if every > listedCheckEvery && !f.cfg.DisableRefreshTopics {
			jobs = append(jobs, &job{every: listedCheckEvery, next: now.Add(listedCheckEvery), run: f.checkListedCreated,
				name: "check listed topics"})
		}
		if !f.cfg.DisableTopicConfigSync {
			jobs = append(jobs, &job{every: f.cfg.SyncTopicConfigsInterval, next: now.Add(f.cfg.SyncTopicConfigsInterval), run: f.syncConfigs,
				name: "sync topic configs", singleton: true})
		}
		if !f.cfg.DisableTopicACLSync {
			jobs = append(jobs, &job{every: f.cfg.SyncTopicACLsInterval, next: now, run: f.syncACLs, name: "sync topic ACLs", singleton: true})
		}
	}
	if len(jobs) == 0 {
		return // a disabled flow without offset-syncs topics to restore
	}
	wasSingleton := false
	// While some selected partitions are not ready (their remote partition
	// is missing), discovery retries quickly, backing off up to the refresh
	// interval: a remote topic that cannot be created (refused, no ACL)
	// must not make every member list both clusters twice a second.
	pendingDelay := 500 * time.Millisecond
	for {
		next := jobs[0].next
		for _, j := range jobs[1:] {
			if j.next.Before(next) {
				next = j.next
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(next)):
		case <-f.refreshWake:
			// Slot 0 was acquired, or discovery is needed now: run the
			// topic and singleton jobs at once.
			single := f.isSingleton.Load()
			for _, j := range jobs {
				if j.topics || (j.singleton && single && !wasSingleton) {
					j.next = time.Now()
				}
			}
		case <-f.rediscoverWake:
			for _, j := range jobs {
				if j.topics && j.ran.Add(rediscoverEvery).Before(j.next) {
					j.next = j.ran.Add(rediscoverEvery)
				}
			}
			continue
		}
		single := f.isSingleton.Load()
		wasSingleton = single
		if !single {
			f.forgetSynced()
		}
		for _, j := range jobs {
			if time.Now().Before(j.next) {
				continue
			}
			if j.singleton && !single {
				j.next = time.Now().Add(j.every)
				continue
			}
			j.ran = time.Now()
			err := j.run(ctx)
			if err != nil && ctx.Err() == nil && !errors.Is(err, errTopicsFailed) {
				f.log.Warn(j.name, "err", err)
				j.next = time.Now().Add(min(j.every, 5*time.Second)) // retry soon
				continue
			}
			j.next = time.Now().Add(j.every)
			if errors.Is(err, errTopicsFailed) && !j.topics {
				// Only some topics failed (recorded as topic errors and
				// logged once): retry them soon, backing off. Discovery
				// retries through topicsPending below.
				j.retry = max(j.retry, 500*time.Millisecond)
				j.next = time.Now().Add(min(j.every, j.retry))
				j.retry = min(2*j.retry, 30*time.Second)
			} else if err == nil {
				j.retry = 0
			}
			if j.topics {
				if f.topicsPending.Load() {
					j.next = time.Now().Add(min(j.every, pendingDelay))
					pendingDelay = min(2*pendingDelay, 30*time.Second)
				} else {
					pendingDelay = 500 * time.Millisecond
				}
			}
		}
	}
}

// rediscoverEvery is the least time between two discoveries a unit's
// rediscover asked for (flow.rediscover).
const rediscoverEvery = 2 * time.Second

// listedCheckEvery is how often a flow looks for the topics its topics
// setting names literally that the source did not have at the last
// discovery (skipNotOnSource). MM2 finds a new topic only at the next
// refresh.topics.interval.seconds (600 s by default), while the flow's
// status says the topic does not exist and counts none of its records in
// the lag. A topic an operator named is expected: one Metadata request of
// those names every 10 s, only while some are missing, finds it sooner.
const listedCheckEvery = 10 * time.Second

// checkListedCreated asks the source for the listed topics it did not have
// and, when one exists now, wakes discovery, which replicates it. It sends
// nothing while no listed topic is missing. Its errors are not reported:
// discovery, on its own interval, reports the source unreachable.
func (f *flow) checkListedCreated(ctx context.Context) error {
	names := f.skips.ofKind(skipNotOnSource)
	if len(names) == 0 {
		return nil
	}
	lctx, cancel := context.WithTimeout(ctx, f.cfg.AdminTimeout)
	defer cancel()
	td, err := f.srcAdm.ListTopics(lctx, names...)
	if err != nil {
		return nil
	}
	for _, t := range names {
		// An internal topic is answered when named, but discovery's
		// listing of all topics leaves it out: waking it would find
		// nothing, every listedCheckEvery.
		if d, ok := td[t]; ok && d.Err == nil && !d.IsInternal {
			f.log.Info("a topic listed in topics was created on the source: discovering it now", "topic", t)
			f.wakeRefresh()
			return nil
		}
	}
	return nil
}

// discover lists the source topics the flow replicates and publishes, by
// slot, the partitions ready to replicate (those whose remote partition
// exists) to the units this member runs. On the member holding slot 0 it
// first creates missing remote topics (source partition count,
// replication.factor, source configs minus config.properties.exclude: cases
// B19/B20 of the field failures) and follows partition increases; it does
// so only in its first round holding slot 0 unless refresh.topics.enabled
// (retrying the topics that failed then).
//
// It returns an error only for the whole round (a cluster's topics could
// not be listed: also a health source, so the flow shows RETRYING): one
// topic's failed creation, partition increase or describe is recorded as a
// topic error (topicerrors.go) and the other topics go on; the round then
// returns errTopicsFailed so the refresh loop retries it soon.
func (f *flow) discover(ctx context.Context) error {
	src, err := f.srcAdm.ListTopics(ctx)
	if err != nil {
		err = fmt.Errorf("listing topics on %s: %w", f.src.Alias, err)
		f.listFailed(ctx, err)
		return err
	}
	dst, err := f.dstAdm.ListTopics(ctx)
	if err != nil {
		err = fmt.Errorf("listing topics on %s: %w", f.dst.Alias, err)
		f.listFailed(ctx, err)
		return err
	}
	f.listFailed(ctx, nil)
	rules := f.refreshRules()
	now := time.Now()
	dstHas := func(t string) bool { _, ok := dst[t]; return ok }
	var selected []string
	for _, t := range src.Names() {
		d := src[t]
		if d.Err != nil {
			continue
		}
		ok, sk := rules.decide(t, dstHas)
		if !ok {
			f.skips.note(t, sk, now)
			continue
		}
		selected = append(selected, t)
	}
	f.skips.retain(func(t string) bool { _, ok := src[t]; return ok || rules.listed[t] })
	// A topic named in topics that the source does not have: reported, as
	// a misspelt name would otherwise read as a flow that replicates
	// nothing (MM2 says nothing); forgotten once the topic exists.
	for t := range rules.listed {
		if _, ok := src[t]; ok || rules.listedSelects(t, maps.Keys(src)) {
			f.skips.clearKind(t, skipNotOnSource)
			continue
		}
		then := fmt.Sprintf("it is replicated within %v of its creation", min(f.cfg.RefreshTopicsInterval, listedCheckEvery))
		if f.cfg.DisableRefreshTopics {
			then = "refresh.topics.enabled=false: a topic created after the start is replicated only after a restart"
		}
		if !rules.filter.Match(t) {
			then = "topics.exclude matches it too, so it would not be replicated either"
		}
		f.skips.note(t, skip{skipNotOnSource, fmt.Sprintf("listed in topics, but source cluster %s has no topic of that name: check the spelling (names are case-sensitive); %s", f.src.Alias, then)}, now)
	}
	// Two flows of this Mirror must never write one remote topic: the
	// collisions with the other flows' selections (topology.go).
	if cs := f.topo.resolve(f.name, selected); len(cs) > 0 {
		kept := selected[:0:0]
		for _, t := range selected {
			sk, hit := cs[t]
			if hit {
				f.skips.note(t, sk, now)
			}
			if !hit || sk.kind.replicated() {
				kept = append(kept, t)
			}
		}
		selected = kept
	}
	// Topic errors are the singleton's (it alone creates topics and syncs
	// configs), and only of the topics still selected.
	single := f.isSingleton.Load()
	if !single {
		f.retainTopicErrs(func(string, TopicOp) bool { return false }, "this member no longer holds the singleton duties")
	} else {
		sel := make(map[string]bool, len(selected))
		for _, t := range selected {
			sel[t] = true
		}
		// ACL errors are the ACL sync's own: an ACL may name a topic the
		// source does not have (MM2 copies it too).
		f.retainTopicErrs(func(t string, op TopicOp) bool { return op == TopicOpACL || sel[t] }, "topic no longer selected or gone from the source")
	}
	topicsFailed := false
	// With refresh.topics.enabled=false the remote topics are created in
	// the first round this member holds slot 0 only (MM2 creates them when
	// its connector starts); a topic that failed then (a topic error) is
	// retried until it succeeds, as it would be at each restart, and a
	// topic the naming gate held back (empty and named after an unknown
	// alias, or its newest records all from the target: MM2 has no such
	// gate and creates it at start) is judged again in every round, so
	// that it is created once it holds a record from elsewhere, as its
	// skip reason says. (The
	// first round used to be judged by the catalog, which discovery at
	// start-up, before slot 0 is assigned, already set: nothing was ever
	// created.)
	create := single && (!f.cfg.DisableRefreshTopics || !f.createdOnce.Load())
	retryOnly := single && !create
	if create || retryOnly {
		// With refresh.topics.enabled=false, a topic the last round
		// replicated whose remote topic is gone now (deleted on the
		// target) is created again, as with refresh on: it was
		// replicated since the start, so this is no new topic, and its
		// partitions wait for it (their error says discovery re-creates
		// it). It used to be left missing for good: the partitions
		// stayed RETRYING until a restart.
		var replicated map[string]bool
		if retryOnly {
			replicated = map[string]bool{}
			for _, t := range f.catalog.Load().topicList() {
				replicated[t] = true
			}
		}
		var missing []string
		for _, t := range selected {
			remote := f.pol.FormatRemoteTopic(f.cfg.Source, t)
			n := len(src[t].Partitions)
			rd, ok := dst[remote]
			gone := replicated[t] && (!ok || errors.Is(rd.Err, kerr.UnknownTopicOrPartition))
			if retryOnly && !gone && !f.skips.gated(t) && (!f.hasTopicErr(t, notReplicatedOps...) || f.increaseHeld(t)) {
				f.holdIncrease(t, remote, n, rd, ok)
				continue
			}
			switch {
			case !ok || errors.Is(rd.Err, kerr.UnknownTopicOrPartition):
				f.topicOK(t, TopicOpDescribe)
				// A topic named after a cluster alias this Mirror does not
				// know gets its remote topic only once it holds a record
				// that did not come from the target (origin.go).
				create, sk := rules.gate(t, f.topo.aliases, f.prov, func() [][]kgo.RecordHeader { return f.sampleNewest(ctx, t) })
				if !create {
					f.skips.note(t, sk, now)
					f.topicOK(t, TopicOpCreate)
					continue
				}
				missing = append(missing, t)
			case rd.Err != nil:
				f.topicOK(t, TopicOpCreate) // it exists
				err := fmt.Errorf("describing %s on %s: %w", remote, f.dst.Alias, rd.Err)
				f.topicFailed(t, remote, TopicOpDescribe, err)
				topicsFailed = true
			case len(rd.Partitions) < n:
				f.topicOK(t, TopicOpCreate)
				f.topicOK(t, TopicOpDescribe)
				resp, err := f.dstAdm.UpdatePartitions(ctx, n, remote)
				if err == nil {
					if r := resp[remote]; r.Err != nil && r.ErrMessage != "" {
						err = fmt.Errorf("%w (broker: %s)", r.Err, r.ErrMessage)
					} else {
						err = resp.Error()
					}
				}
				if err != nil && ctx.Err() != nil {
					return ctx.Err() // stopping: not the topic's error
				}
				if err != nil && !errors.Is(err, kerr.InvalidPartitions) {
					if refused(err) {
						err = fmt.Errorf("%w; the target refuses it (policy, ACL or quota): allow it there, or add the partitions to %s yourself", err, remote)
					}
					err = fmt.Errorf("increasing %s on %s from %d to %d partitions: %w", remote, f.dst.Alias, len(rd.Partitions), n, err)
					f.topicFailed(t, remote, TopicOpPartitions, err)
					topicsFailed = true
				} else {
					f.topicOK(t, TopicOpPartitions)
					f.log.Info("remote topic partitions increased", "topic", remote, "partitions", n)
				}
			default:
				f.topicOK(t, TopicOpCreate)
				f.topicOK(t, TopicOpDescribe)
				f.topicOK(t, TopicOpPartitions)
			}
		}
		if len(missing) > 0 {
			failed, err := f.createRemoteTopics(ctx, missing, src, dst)
			if err != nil {
				return err
			}
			topicsFailed = topicsFailed || failed
			if dst, err = f.dstAdm.ListTopics(ctx); err != nil {
				err = fmt.Errorf("listing topics on %s: %w", f.dst.Alias, err)
				f.listFailed(ctx, err)
				return err
			}
		}
		if create {
			// The round reached every topic (a topic that failed has a
			// topic error and is retried): with refresh.topics.enabled=false
			// the next rounds only retry those.
			f.createdOnce.Store(true)
		}
	}
	cat := &catalog{bySlot: map[int32]map[tp]offered{}}
	ready, want := 0, 0
	notReady := map[string][]int32{} // source partitions without a usable remote partition
	for _, t := range selected {
		sd := src[t]
		want += len(sd.Partitions)
		remote := f.pol.FormatRemoteTopic(f.cfg.Source, t)
		rd, ok := dst[remote]
		if !ok || rd.Err != nil {
			f.log.Debug("remote topic not usable yet", "topic", remote, "known", ok, "err", rd.Err)
			for _, pd := range sd.Partitions.Sorted() {
				notReady[t] = append(notReady[t], pd.Partition)
			}
			continue
		}
		n := 0
		for _, pd := range sd.Partitions.Sorted() {
			if _, ok := rd.Partitions[pd.Partition]; !ok {
				notReady[t] = append(notReady[t], pd.Partition)
				continue
			}
			k := slotOf(t, pd.Partition, f.tasks)
			if cat.bySlot[k] == nil {
				cat.bySlot[k] = map[tp]offered{}
			}
			cat.bySlot[k][tp{t, pd.Partition}] = offered{remote: remote, id: sd.ID, remoteID: rd.ID}
			n++
		}
		if n > 0 {
			cat.topics = append(cat.topics, t)
			f.skips.clearWaiting(t)
		}
		ready += n
	}
	f.readLimits(ctx, cat)
	f.catalog.Store(cat)
	// Partitions whose remote partition is not usable yet (just created,
	// leader not elected, or created by another member) are retried within
	// a second, not a whole refresh interval later.
	f.topicsPending.Store(ready < want)
	f.mu.Lock()
	f.nTopics = len(selected)
	f.mu.Unlock()
	f.unitsMu.Lock()
	for k, u := range f.units {
		u.setOffer(cat.slot(k))
	}
	f.unitsMu.Unlock()
	if single {
		f.topicErrLags(ctx, notReady)
	}
	if topicsFailed {
		return errTopicsFailed
	}
	return nil
}

// holdIncrease reports, with refresh.topics.enabled=false (after the first
// round, which creates remote topics and partitions as MM2 does at start),
// a source topic with more partitions (n) than its remote topic (rd,
// listed when ok): the partitions added since are not replicated, as in
// MM2, where their records went unnoticed (no error, no lag). It is a
// topic error of op "partitions" (the records it keeps back in the flow's
// lag) naming what to do, not retried; it clears once the remote topic
// has the partitions.
func (f *flow) holdIncrease(t, remote string, n int, rd kadm.TopicDetail, ok bool) {
	if ok && rd.Err == nil && len(rd.Partitions) < n {
		f.mu.Lock()
		f.heldIncrease[t] = true
		f.mu.Unlock()
		f.topicHeld(t, remote, TopicOpPartitions, fmt.Errorf("source topic %s has %d partitions, %s on %s has %d: refresh.topics.enabled=false, so partitions added after the start are not replicated; "+
			"restart kmirror (it adds them at start), add them to %s yourself, or set refresh.topics.enabled=true", t, n, remote, f.dst.Alias, len(rd.Partitions), remote))
		return
	}
	if f.increaseHeld(t) {
		f.topicOK(t, TopicOpPartitions) // drops heldIncrease[t] too
	}
}

// increaseHeld reports whether topic's only topic error keeping records
// back is holdIncrease's report.
func (f *flow) increaseHeld(topic string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	// heldIncrease goes with the topic error (topicOK, retainTopicErrs);
	// a creation or describe error is retried, not held.
	_, create := f.topicErrs[topicErrKey{topic, TopicOpCreate}]
	_, describe := f.topicErrs[topicErrKey{topic, TopicOpDescribe}]
	return f.heldIncrease[topic] && !create && !describe
}

// listFailed records discovery's listing result as a health source: a
// cluster whose topics cannot be listed makes the flow RETRYING.
func (f *flow) listFailed(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	f.mu.Lock()
	same := (f.listErr == nil) == (err == nil) && (err == nil || err.Error() == f.listErr.Error())
	f.mu.Unlock()
	if !same {
		f.health(func() { f.listErr = err })
	}
}

// refused reports whether err is the target refusing an operation on a
// topic by rule (a create or alter policy, an ACL, a controller mutation
// quota) rather than failing it: the user has to change something.
func refused(err error) bool {
	return errors.Is(err, kerr.PolicyViolation) || errors.Is(err, kerr.TopicAuthorizationFailed) ||
		errors.Is(err, kerr.ClusterAuthorizationFailed) || errors.Is(err, kerr.ThrottlingQuotaExceeded)
}

// maxTopicName is Kafka's limit on the length of a topic name (its
// Topic.MAX_NAME_LENGTH).
const maxTopicName = 249

// createRemoteTopics creates the remote topics of the source topics
// topics, each on its own: a refused topic is recorded as a topic error
// (op "create", failed is true) and the others are created. dst is the
// target's topics as listed (to name the one a refused name collides
// with). err is returned only when nothing could be attempted (the source
// topics' configs could not be described at all).
func (f *flow) createRemoteTopics(ctx context.Context, topics []string, src, dst kadm.TopicDetails) (failed bool, err error) {
	byTopic, err := describeTopicConfigs(ctx, f.srcAdmCl, topics)
	if err != nil {
		return false, fmt.Errorf("describing configs of %d topics on %s: %w", len(topics), f.src.Alias, err)
	}
	for _, t := range topics {
		remote := f.pol.FormatRemoteTopic(f.cfg.Source, t)
		if len(remote) > maxTopicName {
			// Some brokers (and kfake) accept the name and every client
			// then refuses it; Kafka refuses it with
			// INVALID_TOPIC_EXCEPTION. Either way it cannot be written.
			f.topicFailed(t, remote, TopicOpCreate, fmt.Errorf("not creating %s on %s: the remote topic name has %d characters, Kafka allows %d: exclude %s with topics.exclude, or rename it on the source",
				remote, f.dst.Alias, len(remote), maxTopicName, t))
			failed = true
			continue
		}
		configs := map[string]*string{}
		rc := byTopic[t]
		if rc.Err != nil {
			err := describeRefused(rc.Err, t, f.src.Alias, fmt.Sprintf("create %s yourself, or exclude %s with topics.exclude", remote, t))
			f.topicFailed(t, remote, TopicOpCreate, fmt.Errorf("describing configs of %s on %s to create %s: %w", t, f.src.Alias, remote, err))
			failed = true
			continue
		}
		for _, c := range rc.Configs {
			if f.copyConfig(c) && !f.lacks(c.Key) {
				configs[c.Key] = c.Value
			}
		}
		var resp kadm.CreateTopicResponse
		var err error
		for {
			resp, err = f.dstAdm.CreateTopic(ctx, int32(len(src[t].Partitions)), f.cfg.ReplicationFactor, configs, remote)
			if resp.Err != nil && errors.Is(err, resp.Err) { // the topic's error (kadm returns it as err too)
				if k := unknownConfigKey(resp.Err, resp.ErrMessage); k != "" && configs[k] != nil {
					// A key the target does not know (a 3.x source's
					// message.format.version on a 4.x target): created
					// without it, as every remote topic from now on.
					f.targetLacks(k, t)
					delete(configs, k)
					continue
				}
				if resp.ErrMessage != "" {
					err = fmt.Errorf("%w (broker: %s)", resp.Err, resp.ErrMessage)
				}
			}
			break
		}
		if err != nil && ctx.Err() != nil {
			return failed, ctx.Err() // stopping: not the topic's error
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			switch {
			case errors.Is(err, kerr.InvalidReplicationFactor):
				err = fmt.Errorf("%w (replication.factor=%d)", err, f.cfg.ReplicationFactor)
			case refused(err):
				err = fmt.Errorf("%w; the target refuses this topic (create policy, ACL or quota): allow it there, create %s yourself, or exclude %s with topics.exclude", err, remote, t)
			case errors.Is(err, kerr.InvalidTopicException):
				c := collidingTopic(remote, dst)
				var wf, wt string
				var written bool
				if c != "" && f.topo != nil {
					wf, wt, written = f.topo.writerOf(f.cfg.Target, c)
				}
				switch {
				case written:
					// Another flow of this Mirror (or this flow, from
					// another source topic) replicates into it: deleting
					// it there would only have it created again.
					err = fmt.Errorf("%w; %s collides with topic %s on %s, the remote topic of %s that flow %s of this Mirror replicates (Kafka treats '.' and '_' in topic names alike, so only one of them can exist): exclude %s from %s or %s from %s with topics.exclude",
						err, remote, c, f.dst.Alias, wt, wf, t, f.name, wt, wf)
				case c != "":
					err = fmt.Errorf("%w; %s collides with topic %s on %s (Kafka treats '.' and '_' in topic names alike): delete or rename %s there, or exclude %s with topics.exclude",
						err, remote, c, f.dst.Alias, c, t)
				}
			case errors.Is(err, kerr.InvalidConfig) && len(configs) > 0:
				err = fmt.Errorf("%w; the target refuses a config copied from %s (%s): leave the key out with config.properties.exclude, or create %s yourself",
					err, t, strings.Join(slices.Sorted(maps.Keys(configs)), ", "), remote)
			}
			f.topicFailed(t, remote, TopicOpCreate, fmt.Errorf("creating %s on %s: %w", remote, f.dst.Alias, err))
			failed = true
			continue
		}
		f.topicOK(t, TopicOpCreate)
		if err != nil {
			// TOPIC_ALREADY_EXISTS: made since the listing (by someone
			// else), with its own partitions and configs, which the next
			// rounds and config sync follow.
			f.log.Info("remote topic exists already: not created", "topic", remote)
			continue
		}
		created := make(map[string]string, len(configs))
		for k, v := range configs {
			created[k] = *v
		}
		f.remember(remote, &syncedConfigs{src: created, dst: maps.Clone(created)})
		f.notePolicy(remote, configs["cleanup.policy"]) // nil (unknown): the target's default
		f.log.Info("remote topic created", "topic", remote, "partitions", len(src[t].Partitions), "configs", len(configs))
	}
	return failed, nil
}

// collidingTopic returns the topic of dst, other than topic, whose name
// differs from topic's only by '.' and '_' (Kafka refuses to create a topic
// colliding so with one that exists: their metric names would be the
// same), or "" if none does.
func collidingTopic(topic string, dst kadm.TopicDetails) string {
	norm := strings.ReplaceAll(topic, ".", "_")
	for _, n := range dst.Names() {
		if n != topic && strings.ReplaceAll(n, ".", "_") == norm {
			return n
		}
	}
	return ""
}

// describeTopicConfigs describes the configs of topics on the cluster of
// cl in one DescribeConfigs request (kgo routes it), keyed by topic, with
// each topic's own error in its ResourceConfig's Err (a topic the cluster
// answered nothing for gets one too). kadm's DescribeTopicConfigs is not
// used: it turns one resource's authorization error
// (TOPIC_AUTHORIZATION_FAILED: no DESCRIBE_CONFIGS on that topic) into the
// error of the whole call, which hid the configs of every other topic (and
// describing them one by one instead cost one request per topic in every
// round). err is only a failure of the whole request (the cluster not
// answering), or the context's.
func describeTopicConfigs(ctx context.Context, cl *kgo.Client, topics []string) (map[string]kadm.ResourceConfig, error) {
	out := make(map[string]kadm.ResourceConfig, len(topics))
	if len(topics) == 0 {
		return out, nil
	}
	req := kmsg.NewPtrDescribeConfigsRequest()
	req.IncludeSynonyms = true // as kadm
	for _, t := range topics {
		rr := kmsg.NewDescribeConfigsRequestResource()
		rr.ResourceType, rr.ResourceName = kmsg.ConfigResourceTypeTopic, t
		req.Resources = append(req.Resources, rr)
	}
	for _, shard := range cl.RequestSharded(ctx, req) {
		if shard.Err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			return nil, shard.Err
		}
		for _, r := range shard.Resp.(*kmsg.DescribeConfigsResponse).Resources {
			rc := kadm.ResourceConfig{Name: r.ResourceName, Err: kerr.ErrorForCode(r.ErrorCode)}
			if r.ErrorMessage != nil {
				rc.ErrMessage = *r.ErrorMessage
			}
			for _, c := range r.Configs {
				kc := kadm.Config{Key: c.Name, Value: c.Value, Sensitive: c.IsSensitive, Source: c.Source}
				for _, syn := range c.ConfigSynonyms {
					kc.Synonyms = append(kc.Synonyms, kadm.ConfigSynonym{Key: syn.Name, Value: syn.Value, Source: syn.Source})
				}
				rc.Configs = append(rc.Configs, kc)
			}
			out[rc.Name] = rc
		}
	}
	for _, t := range topics {
		if _, ok := out[t]; !ok {
			out[t] = kadm.ResourceConfig{Name: t, Err: errors.New("the cluster answered no configs for it")}
		}
	}
	return out, nil
}

// describeRefused returns err, a topic's DescribeConfigs error on cluster
// alias, with what to do when it is an authorization refusal (no
// DESCRIBE_CONFIGS on topic: the principal's ACLs, ACLS.md): grant it, or
// instead (the other way out, e.g. "set sync.topic.configs.enabled=false").
// Other errors are returned as they are.
func describeRefused(err error, topic, alias, instead string) error {
	if !errors.Is(err, kerr.TopicAuthorizationFailed) {
		return err
	}
	return fmt.Errorf("%w; kmirror may not read its configs: grant DESCRIBE_CONFIGS on topic %s on %s to kmirror's principal, or %s", err, topic, alias, instead)
}

// unknownConfigPrefix begins a Kafka broker's INVALID_CONFIG message for a
// topic config name it does not know (Kafka 4.3.1, creating or altering a
// topic with the message.format.version or message.downconversion.enable
// that Kafka 4.0 removed: "Unknown topic config name:
// message.format.version").
const unknownConfigPrefix = "Unknown topic config name: "

// unknownConfigKey returns the key a broker's INVALID_CONFIG refusal (err,
// with its message msg) says the broker does not know, or "" when the
// refusal is another one (a bad value, a policy) or has no such message
// (kfake's).
func unknownConfigKey(err error, msg string) string {
	if !errors.Is(err, kerr.InvalidConfig) {
		return ""
	}
	k, ok := strings.CutPrefix(strings.TrimSpace(msg), unknownConfigPrefix)
	if !ok || strings.ContainsAny(k, " \t\n,") {
		return ""
	}
	return k
}

// lacks reports whether the target refused config key k as unknown
// before: remote topics are created and synced without it.
func (f *flow) lacks(k string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.lacking[k]
}

// targetLacks records that the target refused config key k (copied from
// source topic t) as unknown, and warns the first time: the key is left
// out of every remote topic's creation and config sync from now on,
// instead of the topic failing (Apache MM2 retries such a creation for
// ever).
func (f *flow) targetLacks(k, t string) {
	f.mu.Lock()
	first := !f.lacking[k]
	if f.lacking == nil {
		f.lacking = map[string]bool{}
	}
	f.lacking[k] = true
	f.mu.Unlock()
	if first {
		f.log.Warn("topic config not copied: the target does not know it (Kafka 4.0 removed message.format.version and message.downconversion.enable); remote topics are created and synced without it; add it to config.properties.exclude to silence this",
			"config", k, "topic", t, "target", f.dst.Alias)
	}
}

// copyConfig is MM2's config filter (docs/mm2-compat.md §5.3): not sensitive,
// not a static broker setting, not excluded by config.properties.exclude;
// values that are the source's default are copied only with
// use.defaults.from=source.
func (f *flow) copyConfig(c kadm.Config) bool {
	if c.Sensitive || c.Value == nil || c.Source == kmsg.ConfigSourceStaticBrokerConfig || !f.configs.Match(c.Key) {
		return false
	}
	if c.Source == kmsg.ConfigSourceDefaultConfig {
		return f.cfg.UseDefaultsFromSource
	}
	return true
}

// timestampGuards are the topic configs by which a broker refuses records
// whose timestamp is too far in the past or the future (KIP-937; the
// deprecated message.timestamp.difference.max.ms before it). Copied to a
// remote topic they refuse the source's history: the default
// config.properties.exclude excludes them (DefaultConfigPropertiesExclude),
// config sync removes them where an earlier kmirror copied them
// (copiedGuards), LoadProperties warns about an exclude list that lets them
// through, and an INVALID_TIMESTAMP produce error names them
// (timestampAdvice).
var timestampGuards = []string{
	"message.timestamp.before.max.ms",
	"message.timestamp.after.max.ms",
	"message.timestamp.difference.max.ms",
}

// copiedGuards returns the timestamp guards (sorted as timestampGuards)
// to delete from a remote topic whose dynamic topic configs are cur: those
// the flow's config.properties.exclude excludes and that the remote topic
// sets (DYNAMIC_TOPIC_CONFIG) to exactly the value an unfiltered config
// sync would have copied from the source topic src, as kmirror did before
// its default list excluded them. A guard an operator set on the remote
// topic with another value, or one the source topic does not carry, is
// left alone. syncConfigs asks only for a topic it has no memory of (its
// first sync after a start or a slot-0 move, or of a remote topic it did
// not create): one it remembers was created or synced by this flow, which
// copied no guard.
func (f *flow) copiedGuards(src kadm.ResourceConfig, cur map[string]string) []string {
	var out []string
	for _, k := range timestampGuards {
		v, onTarget := cur[k]
		if !onTarget || f.configs.Match(k) {
			continue // not on the remote topic, or copied on purpose
		}
		for _, c := range src.Configs {
			if c.Key != k || c.Sensitive || c.Value == nil || *c.Value != v || c.Source == kmsg.ConfigSourceStaticBrokerConfig {
				continue
			}
			if c.Source != kmsg.ConfigSourceDefaultConfig || f.cfg.UseDefaultsFromSource {
				out = append(out, k)
			}
			break
		}
	}
	return out
}

// syncedConfigs is what config sync last saw of one remote topic and its
// source topic: at its last sync whose SETs went through, or at the remote
// topic's creation. It lives in memory only: a flow that starts, or whose
// member takes slot 0 over, has none for any topic (see configAlters).
type syncedConfigs struct {
	// src holds the source topic's values of the keys config sync copies
	// (copyConfig).
	src map[string]string
	// dst holds the remote topic's own settings (DYNAMIC_TOPIC_CONFIG) of
	// the keys config.properties.exclude lets through, after the sync.
	dst map[string]string
	// undeleted holds the keys whose DELETE decided without memory
	// (identity both ways, configAlters) the target refused (a
	// tiered-storage broker refuses to delete remote.storage.enable, for
	// one): sent again, in their own request,
	// from retry on (one sync interval after the refusal) while the remote
	// topic sets them and the source topic does not.
	undeleted map[string]bool
	retry     time.Time
	// goneSince is when config sync first ran without the topic (its
	// source topic deleted, or no longer selected) while its remote topic
	// still existed; zero while synced. The memory is kept through
	// syncedGrace so that a source topic deleted and created again with
	// other configs has the keys kmirror copied from the old one deleted
	// from the remote topic (syncRound).
	goneSince time.Time
}

// syncedGrace is how long config sync remembers what it copied onto a
// remote topic whose source topic went away, while the remote topic
// exists: a source topic re-created within it is synced with that
// memory. Without it, the keys copied from the old topic
// (cleanup.policy=compact, say) looked like the target's own settings
// and stayed on the remote topic while the flow ran
// (TestRecreatedSourceTopicDropsConfigsCopiedFromTheOld).
//
// An hour, not longer: kmirror never deletes a remote topic, so every
// source topic deleted within it is remembered, and described at every
// config sync round, until it passes (a review: a day of topic churn).
const syncedGrace = time.Hour

// remember records what config sync saw of remote topic remote (see
// syncedConfigs); the topic has had its first sync.
func (f *flow) remember(remote string, s *syncedConfigs) {
	f.mu.Lock()
	f.synced[remote] = s
	f.mu.Unlock()
}

// forgetSynced drops what config sync saw: the member no longer holds slot
// 0, so another member syncs the configs, and what this one saw is stale
// when slot 0 comes back (configAlters then has no memory of any topic).
// The ACL sync's failure goes too: the member holding slot 0 reports it.
func (f *flow) forgetSynced() {
	f.mu.Lock()
	if len(f.synced) > 0 {
		f.synced = map[string]*syncedConfigs{}
	}
	f.aclErr, f.aclErrSince = "", time.Time{}
	f.mu.Unlock()
}

// goneSynced returns the remote topics config sync remembers that are not
// among remotes (the round's), sorted: the round describes them too, to
// learn whether they still exist (syncRound).
func (f *flow) goneSynced(remotes []string) []string {
	in := make(map[string]bool, len(remotes))
	for _, r := range remotes {
		in[r] = true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for r := range f.synced {
		if !in[r] {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return out
}

// syncRound starts a config sync round over remote topics remotes (the
// round's topics were described) at now; dst holds the target's
// descriptions of the remembered remote topics not among them. What config
// sync remembers of such a topic is marked at the first round without it,
// and dropped at a later one that finds the remote topic gone (not
// described, or described as unknown) or after syncedGrace, so that
// topic churn does not grow it; until then it is kept for a source topic
// re-created under the same name (goneSince).
func (f *flow) syncRound(remotes []string, dst map[string]kadm.ResourceConfig, now time.Time) {
	in := make(map[string]bool, len(remotes))
	for _, r := range remotes {
		in[r] = true
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	for r, s := range f.synced {
		if in[r] {
			s.goneSince = time.Time{}
			continue
		}
		rc, described := dst[r]
		switch {
		case s.goneSince.IsZero():
			// Marked, not dropped, even when the target does not know
			// the topic: a remote topic discovery just created is out
			// of the round until the next discovery, and real Kafka may
			// answer UNKNOWN_TOPIC_OR_PARTITION for it a moment (its
			// memory was lost so in a CI run).
			s.goneSince = now
		case !described || errors.Is(rc.Err, kerr.UnknownTopicOrPartition), now.Sub(s.goneSince) > syncedGrace:
			delete(f.synced, r)
		}
	}
}

// configAlters returns the alterations (each list sorted by key) config
// sync makes to a remote topic: want holds the source topic's values of
// the keys config sync copies (copyConfig), defaults the keys the source
// topic leaves at its default that the filter would copy (the keys MM2 4.x
// sends as DELETE), cur the remote topic's own settings
// (DYNAMIC_TOPIC_CONFIG), prev what the flow saw at its last sync of the
// topic (nil when it has no memory of it), and back, when not nil, whether
// another flow of the Mirror copies a key's value from the remote topic
// back onto the source topic (identity active-active; configsBack). alters
// are sent in one request; deletes, the DELETEs decided without memory of
// the topic (both ways, below; and those the target refused before,
// prev.undeleted), in their own request after it, so that a refused DELETE
// does not lose the SETs.
//
// One way (back nil or false for the key) a key the source copies is SET
// wherever the remote topic's value differs, as MM2 does. A key the source
// no longer sets is DELETEd where kmirror set it (the remote topic still
// holds the value kmirror last copied). A setting made on the target only
// is never reverted, unlike MM2, which deletes every override of a key the
// source leaves at its default at every sync (docs/field-failures.md case
// B21). Without memory of the topic (after a start, a slot-0 move, or a
// remote topic an operator created) kmirror cannot tell a value it copied
// from the target's own, so such a key is left alone: a source override
// dropped while kmirror was stopped stays on the remote topic (README,
// Remote topic configs).
//
// Both ways (back true for the key) the two flows would undo each other's
// copies (the flow back would copy the old value over a change made on the
// flow's source), so a key is pushed only when the source's value changed
// since the flow last saw it. When the remote topic's value changed too (or
// without memory, when the flow cannot know which side changed), the two
// sides disagree and the flow whose source alias sorts first wins: its push
// goes through, the other flow leaves the key alone, so both settle on one
// value. The first alias's flow also pushes its source's value, changed or
// not, when the flow back yielded to it (yielded, from configsBack): when
// the remote topic changed after this flow's last push but before the flow
// back's round, the flow back saw both sides changed and yielded, this
// flow saw only the remote topic change and left it to the flow back, and
// the two sides kept different values for good.
func (f *flow) configAlters(want map[string]string, defaults map[string]bool, cur map[string]string, prev *syncedConfigs, back func(key string) bool, yielded func(key string, dst string, dok bool, src string, sok bool) bool) (alters, deletes []kadm.AlterConfig) {
	keys := map[string]bool{}
	for k := range want {
		keys[k] = true
	}
	for k := range cur {
		if f.configs.Match(k) {
			keys[k] = true
		}
	}
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		s, sok := want[k]
		d, dok := cur[k]
		if sok == dok && s == d {
			continue
		}
		if !sok && prev != nil && prev.undeleted[k] {
			deletes = append(deletes, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k}) // refused before: again
			continue
		}
		if back != nil && back(k) {
			srcChanged, dstChanged := true, true
			if prev != nil {
				ps, psok := prev.src[k]
				pd, pdok := prev.dst[k]
				srcChanged = sok != psok || s != ps
				dstChanged = dok != pdok || d != pd
			}
			// Not only in the round right after the remote topic's
			// change: this flow's memory of it is overwritten every round.
			won := f.cfg.Source < f.cfg.Target && yielded != nil && yielded(k, d, dok, s, sok)
			if !won && (!srcChanged || (dstChanged && f.cfg.Source > f.cfg.Target)) {
				continue // the flow back copies the target's change, or wins the disagreement
			}
			if !sok && prev == nil && !defaults[k] {
				continue // the source neither sets nor defaults it (sensitive, static broker config)
			}
		} else if !sok {
			if prev == nil {
				continue // no memory: kmirror cannot tell a value it copied from the target's own, which stays
			}
			if pv, had := prev.src[k]; !had || pv != d {
				continue // not a value kmirror copied: the target's own
			}
		}
		switch {
		case sok:
			v := s
			alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: &v})
		case prev == nil:
			deletes = append(deletes, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
		default:
			alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
		}
	}
	return alters, deletes
}

// configsBack returns, for remote topic remote (on f's target) of source
// topic topic, what the flows copying its configs back tell configAlters,
// both nil when no flow does. A flow back is one of an active-active pair
// whose policy maps the topic to the same name both ways (identity), with
// config sync on, that replicates the remote topic (selected, and not
// skipped by its discovery: a cycle, a refused collision). Two
// deployments that each run one direction are not seen (see
// configAlters).
//
// back reports whether a flow back copies key k back onto topic: the keys
// its own config.properties.exclude lets through. For any other key nobody
// copies the remote topic's value back, so f syncs it one way.
//
// yielded reports whether a flow back last synced key k seeing the remote
// topic's value dst (dok: set) on its source and this flow's source
// topic's value src (sok: set) on its target, and left them different: it
// yielded a disagreement to this flow. Both values must match what the
// flow back saw: one that copied the remote topic's value since has src
// in its memory as its target's value, and is not taken to have yielded
// (this flow's read of its source may predate that copy).
func (f *flow) configsBack(topic, remote string) (back func(k string) bool, yielded func(k, dst string, dok bool, src string, sok bool) bool) {
	backs := f.flowsBack(topic, remote)
	if len(backs) == 0 {
		return nil, nil
	}
	back = func(k string) bool {
		return slices.ContainsFunc(backs, func(g *flow) bool { return g.configs.Match(k) })
	}
	yielded = func(k, dst string, dok bool, src string, sok bool) bool {
		for _, g := range backs {
			if !g.configs.Match(k) {
				continue
			}
			g.mu.Lock()
			seen := g.synced[topic] // the flow back's remote topic is this flow's source topic
			var gs, gd string
			var gsok, gdok bool
			if seen != nil {
				gs, gsok = seen.src[k]
				gd, gdok = seen.dst[k]
			}
			g.mu.Unlock()
			if seen != nil && gsok == dok && gs == dst && gdok == sok && gd == src && (dok != sok || dst != src) {
				return true
			}
		}
		return false
	}
	return back, yielded
}

// flowsBack returns the flows of the Mirror that copy topic configs back
// from remote topic remote onto source topic topic (configsBack).
func (f *flow) flowsBack(topic, remote string) []*flow {
	if f.topo == nil {
		return nil
	}
	f.topo.mu.Lock()
	flows := make([]*flow, 0, len(f.topo.flows))
	for _, g := range f.topo.flows {
		flows = append(flows, g)
	}
	f.topo.mu.Unlock()
	var backs []*flow
	for _, g := range flows {
		if g == f || g.cfg.Source != f.cfg.Target || g.cfg.Target != f.cfg.Source || g.cfg.Disabled || g.cfg.DisableTopicConfigSync {
			continue
		}
		if g.pol.FormatRemoteTopic(g.cfg.Source, remote) == topic && g.shouldReplicate(remote) && !g.skips.notReplicated(remote) {
			backs = append(backs, g)
		}
	}
	return backs
}

// syncedByOther returns, for remote topic remote of source topic topic,
// whether another writer of the remote topic syncs a config key's value
// onto it, or nil when no other writer does. Several source topics write
// one remote topic only by an allowed collision (identity many-to-one, or a
// policy that merges topics; writers from mergedWriters): each writer,
// syncing one way, would SET its own source's value wherever the remote
// topic differs, so two sources with different values would overwrite each
// other at every sync, forever (a loop: cleanup.policy flipping between
// compact and delete). A key is synced by one writer only: the first (by
// flow, then source topic) whose flow syncs topic configs and whose
// config.properties.exclude lets the key through.
func (f *flow) syncedByOther(topic, remote string, writers map[string][]writer, flows map[string]*flow) func(key string) bool {
	ws := writers[remote]
	if len(ws) < 2 {
		return nil
	}
	return func(k string) bool {
		for _, w := range ws {
			g := flows[w.flow]
			if g == nil || g.cfg.Disabled || g.cfg.DisableTopicConfigSync || !g.configs.Match(k) {
				continue
			}
			return w.flow != f.name || w.topic != topic
		}
		return false
	}
}

// alterTopicConfigs applies alters to remote topic remote on the target:
// the error of the request, or the topic's (with the broker's message),
// and the key the broker said it does not know when that was the
// refusal (unknownConfigKey).
func (f *flow) alterTopicConfigs(ctx context.Context, remote string, alters []kadm.AlterConfig) (unknown string, err error) {
	resp, err := f.dstAdm.AlterTopicConfigs(ctx, alters, remote)
	if err == nil {
		for _, r := range resp {
			if r.Err != nil {
				err = r.Err
				unknown = unknownConfigKey(r.Err, r.ErrMessage)
				if r.ErrMessage != "" {
					err = fmt.Errorf("%w (broker: %s)", err, r.ErrMessage)
				}
			}
		}
		if err == nil {
			f.notePolicyAltered(remote, alters)
		}
	}
	if err != nil && refused(err) {
		err = fmt.Errorf("%w; the target refuses it (alter policy, ACL or quota): allow it there, or leave these keys out with config.properties.exclude", err)
	} else if errors.Is(err, kerr.InvalidConfig) {
		err = fmt.Errorf("%w; the target refuses a change copied from the source topic (a value set, or an override deleted): leave the key out with config.properties.exclude", err)
	}
	return unknown, err
}

// setTopicConfigs applies *alters (config sync's SETs and DELETEs of
// remote topic remote, of source topic t) with alterTopicConfigs. A key
// the target refuses as unknown (a 3.x source topic's
// message.format.version on a 4.x target) that the alters set is recorded
// (targetLacks) and dropped from *alters and want, and the rest is
// applied again, so that the other keys are still synced.
func (f *flow) setTopicConfigs(ctx context.Context, t, remote string, alters *[]kadm.AlterConfig, want map[string]string) error {
	for len(*alters) > 0 {
		unknown, err := f.alterTopicConfigs(ctx, remote, *alters)
		if unknown == "" || !slices.ContainsFunc(*alters, func(a kadm.AlterConfig) bool { return a.Name == unknown && a.Op == kadm.SetConfig }) {
			return err
		}
		f.targetLacks(unknown, t)
		*alters = slices.DeleteFunc(*alters, func(a kadm.AlterConfig) bool { return a.Name == unknown })
		delete(want, unknown)
	}
	return nil
}

// syncConfigs copies the source topics' configs to the remote topics with
// incremental SET and DELETE operations (KIP-894), as MM2 4.x does, with
// these differences (configAlters): a setting made on the remote topic only
// is never deleted (docs/field-failures.md case B21), only a key kmirror
// set and the source dropped since is; and with a flow back that copies the
// same topic's configs (identity active-active) only the source's changes
// are pushed. Excluded keys are never touched, with
// one exception: a timestamp guard
// (message.timestamp.before.max.ms, .after.max.ms, .difference.max.ms)
// that the remote topic sets to the source topic's value, as a kmirror
// whose default list did not exclude it copied it, is deleted
// (copiedGuards) at the first sync without memory of the topic. Each topic
// is synced on its own: one topic's failure
// (describing its configs on either cluster, or altering them) is recorded
// as a topic error of op "config" and the others are synced; the job then
// returns errTopicsFailed. A DELETE decided without memory (identity both
// ways) that the target refuses is a topic error too, but retried only once
// per sync interval (not with the job's quicker retries: a refusal by the
// broker's rules does not pass), and the topic's SETs go on meanwhile. An error is returned only when the
// configs could not be described at all.
func (f *flow) syncConfigs(ctx context.Context) error {
	cat := f.catalog.Load()
	topics := cat.topicList()
	remotes := make([]string, len(topics))
	for i, t := range topics {
		remotes[i] = f.pol.FormatRemoteTopic(f.cfg.Source, t)
	}
	if cat == nil {
		return nil // discovery has not run yet
	}
	gone := f.goneSynced(remotes)
	srcRC, err := describeTopicConfigs(ctx, f.srcAdmCl, topics)
	if err != nil {
		return fmt.Errorf("describing topic configs on %s: %w", f.src.Alias, err)
	}
	dstRC, err := describeTopicConfigs(ctx, f.dstAdmCl, append(slices.Clip(remotes), gone...))
	if err != nil {
		return fmt.Errorf("describing topic configs on %s: %w", f.dst.Alias, err)
	}
	f.syncRound(remotes, dstRC, time.Now())
	if len(topics) == 0 {
		return nil
	}
	current := map[string]map[string]string{}
	dstErr := map[string]error{}
	for _, rc := range dstRC {
		if rc.Err != nil {
			dstErr[rc.Name] = rc.Err
			continue
		}
		m := map[string]string{}
		for _, c := range rc.Configs {
			if c.Value != nil && c.Source == kmsg.ConfigSourceDynamicTopicConfig {
				m[c.Key] = *c.Value
			}
		}
		current[rc.Name] = m
	}
	// A config error of a topic no longer synced (not replicated any
	// more, or its remote topic not usable now) no longer holds.
	synced := make(map[string]bool, len(topics))
	for _, t := range topics {
		synced[t] = true
	}
	f.retainTopicErrs(func(t string, op TopicOp) bool { return op != TopicOpConfig || synced[t] }, "topic configs no longer synced")
	var merged map[string][]writer
	var mergedFlows map[string]*flow
	if f.topo != nil && slices.ContainsFunc(topics, f.skips.noCheckpoints) {
		merged, mergedFlows = f.topo.mergedWriters(f.cfg.Target)
	}
	failed := false
	for _, t := range topics {
		rc := srcRC[t]
		remote := f.pol.FormatRemoteTopic(f.cfg.Source, t)
		if rc.Err != nil {
			err := describeRefused(rc.Err, t, f.src.Alias, "set sync.topic.configs.enabled=false")
			f.topicFailed(t, remote, TopicOpConfig, fmt.Errorf("describing configs of %s on %s: %w", t, f.src.Alias, err))
			failed = true
			continue
		}
		if err := dstErr[remote]; err != nil {
			err = describeRefused(err, remote, f.dst.Alias, "set sync.topic.configs.enabled=false")
			f.topicFailed(t, remote, TopicOpConfig, fmt.Errorf("describing configs of %s on %s: %w", remote, f.dst.Alias, err))
			failed = true
			continue
		}
		want := map[string]string{}
		defaults := map[string]bool{}
		for _, c := range rc.Configs {
			switch {
			case f.lacks(c.Key): // the target does not know it (targetLacks)
			case f.copyConfig(c):
				want[c.Key] = *c.Value
			case c.Source == kmsg.ConfigSourceDefaultConfig && !c.Sensitive && f.configs.Match(c.Key):
				defaults[c.Key] = true
			}
		}
		f.mu.Lock()
		prev := f.synced[remote]
		f.mu.Unlock()
		back, yielded := f.configsBack(t, remote)
		cur := current[remote]
		if other := f.syncedByOther(t, remote, merged, mergedFlows); other != nil {
			// An allowed collision: the keys another writer syncs one
			// way are left to it (syncedByOther).
			mine := func(k string) bool { return !other(k) || back != nil && back(k) }
			want, cur = maps.Clone(want), maps.Clone(cur)
			maps.DeleteFunc(want, func(k, _ string) bool { return !mine(k) })
			maps.DeleteFunc(cur, func(k, _ string) bool { return !mine(k) })
		}
		alters, deletes := f.configAlters(want, defaults, cur, prev, back, yielded)
		// A timestamp guard an earlier kmirror copied (before the default
		// list excluded it) refuses the source's older records: delete it
		// (once, if the loop above already does). Only without memory of
		// the topic: with it, this flow created the remote topic without
		// the guard or synced it since (deleting such a guard then), so
		// a guard there now was set on the target (an operator's, or a
		// provisioning tool's for every topic), which stays like any
		// other setting made on the target only.
		var guards []string
		if prev == nil {
			guards = f.copiedGuards(rc, current[remote])
		}
		for _, k := range guards {
			if !slices.ContainsFunc(alters, func(a kadm.AlterConfig) bool { return a.Name == k }) {
				alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
			}
		}
		if len(alters) > 0 {
			if err := f.setTopicConfigs(ctx, t, remote, &alters, want); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				f.topicFailed(t, remote, TopicOpConfig, fmt.Errorf("altering %d configs of %s on %s (%s): %w", len(alters), remote, f.dst.Alias, alterKeys(alters), err))
				failed = true
				continue
			}
			if len(alters) > 0 { // none left when the only one was a key the target does not know
				f.log.Info("remote topic configs synced", "topic", remote, "changes", len(alters))
			}
			if len(guards) > 0 {
				f.log.Warn("timestamp guard removed from remote topic: it held the source topic's value, as an earlier kmirror copied it, and it would refuse older copied records (INVALID_TIMESTAMP); config.properties.exclude excludes it",
					"topic", remote, "configs", strings.Join(guards, ", "))
			}
		}
		next := &syncedConfigs{src: want, dst: syncedDst(f.configs.Match, current[remote], alters)}
		// The DELETEs decided without memory of the topic go in their own
		// request, after the SETs: the target may refuse them (a tiered
		// storage broker refuses to delete remote.storage.enable), which
		// must not lose the SETs. A refused one is a topic error, retried
		// once per sync interval while it still applies.
		held := false
		if len(deletes) > 0 {
			now := time.Now()
			if prev != nil && now.Before(prev.retry) {
				// Refused before (a DELETE decided without memory has
				// prev nil): the topic error stays until the retry.
				next.undeleted, next.retry, held = alterNames(deletes), prev.retry, true
			} else if _, err := f.alterTopicConfigs(ctx, remote, deletes); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				next.undeleted, next.retry, held = alterNames(deletes), now.Add(f.cfg.SyncTopicConfigsInterval), true
				f.topicFailed(t, remote, TopicOpConfig, fmt.Errorf("deleting %d configs of %s on %s (%s), the remote topic's overrides of keys source topic %s leaves at its default (decided without memory of the topic: identity both ways), retried every %s: %w",
					len(deletes), remote, f.dst.Alias, alterKeys(deletes), t, f.cfg.SyncTopicConfigsInterval, err))
			} else {
				next.dst = syncedDst(f.configs.Match, next.dst, deletes)
				f.log.Info("remote topic configs synced", "topic", remote, "changes", len(deletes),
					"deleted", alterKeys(deletes), "reason", "overrides of keys the source topic leaves at its default, decided without memory of the topic (identity both ways)")
			}
		}
		if !held {
			f.topicOK(t, TopicOpConfig)
		}
		f.remember(remote, next)
	}
	if failed {
		return errTopicsFailed
	}
	return nil
}

// syncedDst returns the remote topic's settings of the keys match lets
// through once alters (all applied) are: cur, its DYNAMIC_TOPIC_CONFIG
// values before them, with each SET and DELETE applied.
func syncedDst(match func(string) bool, cur map[string]string, alters []kadm.AlterConfig) map[string]string {
	out := map[string]string{}
	for k, v := range cur {
		if match(k) {
			out[k] = v
		}
	}
	for _, a := range alters {
		switch {
		case !match(a.Name):
		case a.Op == kadm.DeleteConfig:
			delete(out, a.Name)
		case a.Value != nil:
			out[a.Name] = *a.Value
		}
	}
	return out
}

// alterNames returns the keys alters name.
func alterNames(alters []kadm.AlterConfig) map[string]bool {
	out := make(map[string]bool, len(alters))
	for _, a := range alters {
		out[a.Name] = true
	}
	return out
}

// alterKeys names the config keys of alters ("retention.ms=SET,
// cleanup.policy=DELETE"), never their values (a value may be a secret the
// source does not flag sensitive).
func alterKeys(alters []kadm.AlterConfig) string {
	parts := make([]string, len(alters))
	for i, a := range alters {
		op := "SET"
		if a.Op == kadm.DeleteConfig {
			op = "DELETE"
		}
		parts[i] = a.Name + "=" + op
	}
	return strings.Join(parts, ", ")
}

// topicList returns the source topics with ready partitions (nil for a
// nil catalog).
func (c *catalog) topicList() []string {
	if c == nil {
		return nil
	}
	return c.topics
}

// syncACLs copies the source's LITERAL topic ACLs of replicated topics to the
// remote topics (docs/mm2-compat.md §5.6 and docs/field-failures.md
// case B23): ALLOW WRITE is dropped, ALLOW ALL becomes ALLOW READ, everything
// else is copied; nothing is deleted on the target. A source or target
// without an authorizer is logged once and skipped (docs/field-failures.md case B24: no
// error on every interval).
//
// The ACLs are created in batches of aclCreateBatch per CreateACLs request,
// as MM2's one createAcls call does: one request per ACL cost a round trip
// each, thousands of them per interval, while the refresh loop (discovery,
// probes, config sync) waited. An ACL the target refuses (no ALTER on the
// cluster) is a topic error (Op "acl") of its topic,
// retried with the topic errors' backoff, not every 5 s with a WARN each
// time and nothing in the status.
func (f *flow) syncACLs(ctx context.Context) error {
	if f.aclOff.Load() {
		return nil
	}
	b := kadm.NewACLs().Topics().ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpAny).
		Allow().AllowHosts().Deny().DenyHosts()
	res, err := f.srcAdm.DescribeACLs(ctx, b)
	for _, r := range res {
		if err == nil && r.Err != nil {
			err = r.Err
		}
	}
	if err != nil {
		if errors.Is(err, kerr.SecurityDisabled) {
			// A refusal shown before is over: the sync stops for good
			// (TestACLSyncErrorClearedWhenSourceLosesAuthorizer).
			f.aclDescribeFailed(nil)
			f.disableACLSyncFor("source", f.src.Alias)
			return nil
		}
		if ctx.Err() != nil {
			return err
		}
		return f.aclDescribeFailed(err)
	}
	f.aclDescribeFailed(nil)
	var create []aclEntry
	for _, r := range res {
		for _, d := range r.Described {
			if d.Type != kmsg.ACLResourceTypeTopic || d.Pattern != kadm.ACLPatternLiteral || !f.shouldReplicate(d.Name) {
				continue
			}
			op := d.Operation
			if d.Permission == kmsg.ACLPermissionTypeAllow {
				if op == kadm.OpWrite {
					continue
				}
				if op == kadm.OpAll {
					op = kadm.OpRead
				}
			}
			create = append(create, aclEntry{source: d.Name, topic: f.pol.FormatRemoteTopic(f.cfg.Source, d.Name),
				principal: d.Principal, host: d.Host, op: op, perm: d.Permission})
		}
	}
	failed := map[string]error{} // by source topic: the first refusal of its ACLs
	remotes := map[string]string{}
	for len(create) > 0 {
		batch := create[:min(len(create), aclCreateBatch)]
		create = create[len(batch):]
		req := kmsg.NewPtrCreateACLsRequest()
		for _, e := range batch {
			c := kmsg.NewCreateACLsRequestCreation()
			c.ResourceType = kmsg.ACLResourceTypeTopic
			c.ResourceName = e.topic
			c.ResourcePatternType = kmsg.ACLResourcePatternTypeLiteral
			c.Principal = e.principal
			c.Host = e.host
			c.Operation = e.op
			c.PermissionType = e.perm
			req.Creations = append(req.Creations, c)
		}
		resp, err := req.RequestWith(ctx, f.dstAdmCl)
		if err == nil && len(resp.Results) != len(batch) {
			err = fmt.Errorf("CreateACLs answered %d results for %d creations", len(resp.Results), len(batch))
		}
		if err != nil {
			return fmt.Errorf("creating ACLs on %s: %w", f.dst.Alias, err)
		}
		for i, r := range resp.Results {
			e := batch[i]
			remotes[e.source] = e.topic
			if r.ErrorCode == kerr.SecurityDisabled.Code {
				// The target has no authorizer: its topics have no ACLs
				// to copy to (a secured source mirrored to an open
				// target). Logged once, skipped as for a source without
				// one; not a topic error of every topic forever.
				f.disableACLSyncFor("target", f.dst.Alias)
				f.retainTopicErrs(func(_ string, op TopicOp) bool { return op != TopicOpACL }, "the target has no authorizer")
				return nil
			}
			if err := kerr.ErrorForCode(r.ErrorCode); err != nil && failed[e.source] == nil {
				var ke *kerr.Error
				if r.ErrorMessage != nil && *r.ErrorMessage != "" && !(errors.As(err, &ke) && *r.ErrorMessage == ke.Message) {
					err = fmt.Errorf("%w: %s", err, *r.ErrorMessage)
				}
				hint := ""
				if errors.Is(err, kerr.ClusterAuthorizationFailed) {
					hint = fmt.Sprintf("; grant kmirror ALTER on the cluster %s (ACLS.md) or set sync.topic.acls.enabled=false", f.dst.Alias)
				}
				failed[e.source] = fmt.Errorf("creating ACL %s %s %s from host %s on %s on %s: %w%s",
					e.perm, e.principal, e.op, e.host, e.topic, f.dst.Alias, err, hint)
			}
		}
	}
	f.retainTopicErrs(func(t string, op TopicOp) bool { return op != TopicOpACL || failed[t] != nil }, "topic ACLs synced or no longer copied")
	for t, err := range failed {
		f.topicFailed(t, remotes[t], TopicOpACL, err)
	}
	if len(failed) > 0 {
		return errTopicsFailed
	}
	return nil
}

// aclDescribeFailed records the ACL sync's failure to describe the
// source's ACLs (FlowStatus.ACLSyncError; nil: the describe succeeded,
// which clears it). A refusal (CLUSTER_AUTHORIZATION_FAILED: kmirror has
// no DESCRIBE on the source's cluster) used to be logged at WARN and
// retried every 5 s for good, with nothing in the status: now the first
// failure, and each one whose message differs, is logged once, every one
// counts an error of kind "topic_acl", and errTopicsFailed makes the
// refresh loop retry with the topic errors' backoff (up to 30 s, or the
// interval when shorter). MM2 logs such a failure at each
// sync.topic.acls.interval.seconds.
func (f *flow) aclDescribeFailed(err error) error {
	if err == nil {
		f.mu.Lock()
		was := f.aclErr
		f.aclErr, f.aclErrSince = "", time.Time{}
		f.mu.Unlock()
		if was != "" {
			f.log.Info("topic ACL sync: the source's ACLs described again", "cluster", f.src.Alias)
		}
		return nil
	}
	msg := fmt.Sprintf("describing ACLs on %s: %v", f.src.Alias, err)
	if errors.Is(err, kerr.ClusterAuthorizationFailed) {
		msg += fmt.Sprintf("; grant kmirror DESCRIBE on the cluster %s (ACLS.md) or set sync.topic.acls.enabled=false", f.src.Alias)
	}
	f.metrics.flowErr(f.labels, "topic_"+string(TopicOpACL))
	f.mu.Lock()
	changed := f.aclErr != msg
	if f.aclErr == "" {
		f.aclErrSince = time.Now()
	}
	f.aclErr = msg
	f.mu.Unlock()
	if changed {
		f.log.Warn("topic ACL sync failing, replication goes on; retried with backoff", "err", msg)
	}
	return errTopicsFailed
}

// aclCreateBatch is the most ACLs one CreateACLs request carries.
const aclCreateBatch = 1000

type aclEntry struct {
	source, topic, principal, host string
	op                             kadm.ACLOperation
	perm                           kmsg.ACLPermissionType
}

// disableACLSyncFor turns topic ACL sync off for the process, logging
// once that cluster alias, the flow's side ("source" or "target"), has no
// authorizer (SECURITY_DISABLED).
func (f *flow) disableACLSyncFor(side, alias string) {
	if !f.aclOff.Swap(true) {
		f.log.Info(side+" cluster has no authorizer: topic ACL sync skipped from now on", "cluster", alias)
	}
}
