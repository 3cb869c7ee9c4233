package mirror

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// refreshLoop runs, on their own intervals (MM2's MirrorSourceConnector
// scheduler): discovery of the source partitions ready to replicate, which
// every member runs and which, on the member holding slot 0, also creates
// remote topics and follows partition increases; topic-config sync and ACL
// sync (slot 0's member only); and the cluster probe (every member).
func (f *flow) refreshLoop(ctx context.Context) {
	type job struct {
		every     time.Duration
		next      time.Time
		run       func(context.Context) error
		name      string
		topics    bool
		singleton bool // only while this member holds slot 0
	}
	now := time.Now()
	var jobs []*job
	probeEvery := max(f.cfg.OffsetFlushInterval, time.Second)
	jobs = append(jobs, &job{every: probeEvery, next: now.Add(probeEvery), run: f.probe, name: "probe clusters"})
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
		jobs = append(jobs, &job{every: every, next: first, run: func(ctx context.Context) error { return f.discover(ctx, false) },
			name: "refresh topics", topics: true})
		if !f.cfg.DisableTopicConfigSync {
			jobs = append(jobs, &job{every: f.cfg.SyncTopicConfigsInterval, next: now.Add(f.cfg.SyncTopicConfigsInterval), run: f.syncConfigs,
				name: "sync topic configs", singleton: true})
		}
		if !f.cfg.DisableTopicACLSync {
			jobs = append(jobs, &job{every: f.cfg.SyncTopicACLsInterval, next: now, run: f.syncACLs, name: "sync topic ACLs", singleton: true})
		}
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
		}
		single := f.isSingleton.Load()
		wasSingleton = single
		for _, j := range jobs {
			if time.Now().Before(j.next) {
				continue
			}
			if j.singleton && !single {
				j.next = time.Now().Add(j.every)
				continue
			}
			if err := j.run(ctx); err != nil && ctx.Err() == nil {
				f.log.Warn(j.name, "err", err)
				j.next = time.Now().Add(min(j.every, 5*time.Second)) // retry soon
				continue
			}
			j.next = time.Now().Add(j.every)
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

// discover lists the source topics the flow replicates and publishes, by
// slot, the partitions ready to replicate (those whose remote partition
// exists) to the units this member runs. On the member holding slot 0 it
// first creates missing remote topics (source partition count,
// replication.factor, source configs minus config.properties.exclude: cases
// B19/B20 of the field failures) and follows partition increases; it does
// so only at start unless refresh.topics.enabled.
func (f *flow) discover(ctx context.Context, initial bool) error {
	src, err := f.srcAdm.ListTopics(ctx)
	if err != nil {
		return fmt.Errorf("listing topics on %s: %w", f.src.Alias, err)
	}
	dst, err := f.dstAdm.ListTopics(ctx)
	if err != nil {
		return fmt.Errorf("listing topics on %s: %w", f.dst.Alias, err)
	}
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
	f.skips.retain(func(t string) bool { _, ok := src[t]; return ok })
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
	var errs []error
	create := f.isSingleton.Load() && (initial || !f.cfg.DisableRefreshTopics || f.catalog.Load() == nil)
	if create {
		var missing []string
		for _, t := range selected {
			remote := f.pol.FormatRemoteTopic(f.cfg.Source, t)
			n := len(src[t].Partitions)
			rd, ok := dst[remote]
			switch {
			case !ok || errors.Is(rd.Err, kerr.UnknownTopicOrPartition):
				// A topic named after a cluster alias this Mirror does not
				// know gets its remote topic only once it holds a record
				// that did not come from the target (origin.go).
				create, sk := rules.gate(t, f.topo.aliases, f.prov, func() [][]kgo.RecordHeader { return f.sampleNewest(ctx, t) })
				if !create {
					f.skips.note(t, sk, now)
					continue
				}
				missing = append(missing, t)
			case rd.Err != nil:
				errs = append(errs, fmt.Errorf("describing %s on %s: %w", remote, f.dst.Alias, rd.Err))
			case len(rd.Partitions) < n:
				resp, err := f.dstAdm.UpdatePartitions(ctx, n, remote)
				if err == nil {
					err = resp.Error()
				}
				if err != nil && !errors.Is(err, kerr.InvalidPartitions) {
					errs = append(errs, fmt.Errorf("increasing %s on %s to %d partitions: %w", remote, f.dst.Alias, n, err))
				} else {
					f.log.Info("remote topic partitions increased", "topic", remote, "partitions", n)
				}
			}
		}
		if len(missing) > 0 {
			if err := f.createRemoteTopics(ctx, missing, src); err != nil {
				errs = append(errs, err)
			}
			if dst, err = f.dstAdm.ListTopics(ctx); err != nil {
				return errors.Join(append(errs, fmt.Errorf("listing topics on %s: %w", f.dst.Alias, err))...)
			}
		}
	}
	cat := &catalog{bySlot: map[int32]map[tp]offered{}}
	ready, want := 0, 0
	for _, t := range selected {
		sd := src[t]
		want += len(sd.Partitions)
		remote := f.pol.FormatRemoteTopic(f.cfg.Source, t)
		rd, ok := dst[remote]
		if !ok || rd.Err != nil {
			f.log.Debug("remote topic not usable yet", "topic", remote, "known", ok, "err", rd.Err)
			continue
		}
		n := 0
		for _, pd := range sd.Partitions.Sorted() {
			if _, ok := rd.Partitions[pd.Partition]; !ok {
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
	return errors.Join(errs...)
}

func (f *flow) createRemoteTopics(ctx context.Context, topics []string, src kadm.TopicDetails) error {
	rcs, err := f.srcAdm.DescribeTopicConfigs(ctx, topics...)
	if err != nil {
		return fmt.Errorf("describing configs of %d topics on %s: %w", len(topics), f.src.Alias, err)
	}
	byTopic := map[string]kadm.ResourceConfig{}
	for _, rc := range rcs {
		byTopic[rc.Name] = rc
	}
	var errs []error
	for _, t := range topics {
		remote := f.pol.FormatRemoteTopic(f.cfg.Source, t)
		configs := map[string]*string{}
		rc := byTopic[t]
		if rc.Err != nil {
			errs = append(errs, fmt.Errorf("describing configs of %s on %s: %w", t, f.src.Alias, rc.Err))
			continue
		}
		for _, c := range rc.Configs {
			if f.copyConfig(c) {
				configs[c.Key] = c.Value
			}
		}
		resp, err := f.dstAdm.CreateTopic(ctx, int32(len(src[t].Partitions)), f.cfg.ReplicationFactor, configs, remote)
		if err == nil {
			err = resp.Err
		}
		if err != nil && !errors.Is(err, kerr.TopicAlreadyExists) {
			if errors.Is(err, kerr.InvalidReplicationFactor) {
				err = fmt.Errorf("%w (replication.factor=%d)", err, f.cfg.ReplicationFactor)
			}
			errs = append(errs, fmt.Errorf("creating %s on %s: %w", remote, f.dst.Alias, err))
			continue
		}
		f.rememberConfigs(remote, configs)
		f.log.Info("remote topic created", "topic", remote, "partitions", len(src[t].Partitions), "configs", len(configs))
	}
	return errors.Join(errs...)
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

func (f *flow) rememberConfigs(remote string, configs map[string]*string) {
	m := map[string]string{}
	for k, v := range configs {
		if v != nil {
			m[k] = *v
		}
	}
	f.mu.Lock()
	f.setConfigs[remote] = m
	f.mu.Unlock()
}

// syncConfigs copies changed source topic configs to the remote topics with
// incremental SET operations (KIP-894). Unlike MM2 it never reverts a
// target-side setting the source does not set (docs/field-failures.md
// docs/field-failures.md case B21): a key is deleted on the target only when kmirror itself set it
// earlier and the source has dropped its override since. Excluded keys are
// never touched.
func (f *flow) syncConfigs(ctx context.Context) error {
	topics := f.catalog.Load().topicList()
	if len(topics) == 0 {
		return nil
	}
	srcRC, err := f.srcAdm.DescribeTopicConfigs(ctx, topics...)
	if err != nil {
		return fmt.Errorf("describing topic configs on %s: %w", f.src.Alias, err)
	}
	remotes := make([]string, len(topics))
	for i, t := range topics {
		remotes[i] = f.pol.FormatRemoteTopic(f.cfg.Source, t)
	}
	dstRC, err := f.dstAdm.DescribeTopicConfigs(ctx, remotes...)
	if err != nil {
		return fmt.Errorf("describing topic configs on %s: %w", f.dst.Alias, err)
	}
	current := map[string]map[string]string{}
	for _, rc := range dstRC {
		m := map[string]string{}
		for _, c := range rc.Configs {
			if c.Value != nil && c.Source == kmsg.ConfigSourceDynamicTopicConfig {
				m[c.Key] = *c.Value
			}
		}
		current[rc.Name] = m
	}
	var errs []error
	for _, rc := range srcRC {
		if rc.Err != nil {
			errs = append(errs, fmt.Errorf("describing configs of %s on %s: %w", rc.Name, f.src.Alias, rc.Err))
			continue
		}
		remote := f.pol.FormatRemoteTopic(f.cfg.Source, rc.Name)
		want := map[string]*string{}
		for _, c := range rc.Configs {
			if f.copyConfig(c) {
				want[c.Key] = c.Value
			}
		}
		f.mu.Lock()
		prevSet := f.setConfigs[remote]
		f.mu.Unlock()
		var alters []kadm.AlterConfig
		keys := make([]string, 0, len(want))
		for k := range want {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys {
			if cur, ok := current[remote][k]; !ok || cur != *want[k] {
				alters = append(alters, kadm.AlterConfig{Op: kadm.SetConfig, Name: k, Value: want[k]})
			}
		}
		for k := range prevSet {
			if _, still := want[k]; !still {
				if _, onTarget := current[remote][k]; onTarget && current[remote][k] == prevSet[k] {
					alters = append(alters, kadm.AlterConfig{Op: kadm.DeleteConfig, Name: k})
				}
			}
		}
		if len(alters) > 0 {
			resp, err := f.dstAdm.AlterTopicConfigs(ctx, alters, remote)
			if err == nil {
				for _, r := range resp {
					if r.Err != nil {
						err = r.Err
					}
				}
			}
			if err != nil {
				errs = append(errs, fmt.Errorf("altering configs of %s on %s: %w", remote, f.dst.Alias, err))
				continue
			}
			f.log.Info("remote topic configs synced", "topic", remote, "changes", len(alters))
		}
		f.rememberConfigs(remote, want)
	}
	return errors.Join(errs...)
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
// docs/field-failures.md case B23): ALLOW WRITE is dropped, ALLOW ALL becomes ALLOW READ, everything
// else is copied; nothing is deleted on the target. A source without an
// authorizer is logged once and skipped (docs/field-failures.md case B24: no
// error on every interval).
func (f *flow) syncACLs(ctx context.Context) error {
	if f.aclOff.Load() {
		return nil
	}
	b := kadm.NewACLs().Topics().ResourcePatternType(kadm.ACLPatternLiteral).Operations(kadm.OpAny).
		Allow().AllowHosts().Deny().DenyHosts()
	res, err := f.srcAdm.DescribeACLs(ctx, b)
	if err != nil {
		if errors.Is(err, kerr.SecurityDisabled) {
			f.disableACLSync()
			return nil
		}
		return fmt.Errorf("describing ACLs on %s: %w", f.src.Alias, err)
	}
	var create []aclEntry
	for _, r := range res {
		if r.Err != nil {
			if errors.Is(r.Err, kerr.SecurityDisabled) {
				f.disableACLSync()
				return nil
			}
			return fmt.Errorf("describing ACLs on %s: %w", f.src.Alias, r.Err)
		}
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
			create = append(create, aclEntry{topic: f.pol.FormatRemoteTopic(f.cfg.Source, d.Name),
				principal: d.Principal, host: d.Host, op: op, perm: d.Permission})
		}
	}
	if len(create) == 0 {
		return nil
	}
	var errs []error
	for _, e := range create {
		nb := kadm.NewACLs().Topics(e.topic).ResourcePatternType(kadm.ACLPatternLiteral).Operations(e.op)
		if e.perm == kmsg.ACLPermissionTypeDeny {
			nb = nb.Deny(e.principal).DenyHosts(e.host)
		} else {
			nb = nb.Allow(e.principal).AllowHosts(e.host)
		}
		rs, err := f.dstAdm.CreateACLs(ctx, nb)
		if err == nil {
			for _, r := range rs {
				if r.Err != nil {
					err = r.Err
				}
			}
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("creating ACL on %s for %s: %w", f.dst.Alias, e.topic, err))
		}
	}
	return errors.Join(errs...)
}

type aclEntry struct {
	topic, principal, host string
	op                     kadm.ACLOperation
	perm                   kmsg.ACLPermissionType
}

func (f *flow) disableACLSync() {
	if !f.aclOff.Swap(true) {
		f.log.Info("source cluster has no authorizer: topic ACL sync skipped from now on", "cluster", f.src.Alias)
	}
}
