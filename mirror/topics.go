package mirror

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// refreshLoop runs the periodic topic refresh (new topics, partition
// increases, re-created topics), topic-config sync and ACL sync, each on its
// own interval (MM2's MirrorSourceConnector scheduler, docs/mm2-compat.md
// §5.1).
func (f *flow) refreshLoop(ctx context.Context) {
	type job struct {
		every  time.Duration
		next   time.Time
		run    func(context.Context) error
		name   string
		topics bool
	}
	now := time.Now()
	var jobs []*job
	if !f.cfg.DisableRefreshTopics {
		first := now.Add(f.cfg.RefreshTopicsInterval)
		if f.topicsPending.Load() {
			first = now.Add(min(f.cfg.RefreshTopicsInterval, 500*time.Millisecond))
		}
		jobs = append(jobs, &job{f.cfg.RefreshTopicsInterval, first,
			func(ctx context.Context) error { return f.syncTopics(ctx, false) }, "refresh topics", true})
	}
	if !f.cfg.DisableTopicConfigSync {
		jobs = append(jobs, &job{f.cfg.SyncTopicConfigsInterval, now.Add(f.cfg.SyncTopicConfigsInterval), f.syncConfigs, "sync topic configs", false})
	}
	probeEvery := max(f.cfg.OffsetFlushInterval, time.Second)
	jobs = append(jobs, &job{probeEvery, now.Add(probeEvery), f.probe, "probe clusters", false})
	if !f.cfg.DisableTopicACLSync {
		jobs = append(jobs, &job{f.cfg.SyncTopicACLsInterval, now, f.syncACLs, "sync topic ACLs", false})
	}
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
		}
		for _, j := range jobs {
			if time.Now().Before(j.next) {
				continue
			}
			if err := j.run(ctx); err != nil && ctx.Err() == nil {
				f.log.Warn(j.name, "err", err)
				j.next = time.Now().Add(min(j.every, 5*time.Second)) // retry soon
				continue
			}
			j.next = time.Now().Add(j.every)
			if j.topics && f.topicsPending.Load() {
				j.next = time.Now().Add(min(j.every, 500*time.Millisecond))
			}
		}
	}
}

// syncTopics lists the source topics the flow replicates, creates missing
// remote topics (source partition count, replication.factor, source configs
// minus config.properties.exclude: docs/field-failures.md cases B19/B20),
// follows partition increases, detects re-created source topics, and starts
// replicating partitions whose remote partition exists.
func (f *flow) syncTopics(ctx context.Context, initial bool) error {
	src, err := f.srcAdm.ListTopics(ctx)
	if err != nil {
		return fmt.Errorf("listing topics on %s: %w", f.src.Alias, err)
	}
	dst, err := f.dstAdm.ListTopics(ctx)
	if err != nil {
		return fmt.Errorf("listing topics on %s: %w", f.dst.Alias, err)
	}
	var selected []string
	for _, t := range src.Names() {
		if d := src[t]; d.Err == nil && f.shouldReplicate(t) {
			selected = append(selected, t)
		}
	}
	var errs []error
	var create []string
	for _, t := range selected {
		remote := f.pol.FormatRemoteTopic(f.cfg.Source, t)
		n := len(src[t].Partitions)
		rd, ok := dst[remote]
		switch {
		case !ok || errors.Is(rd.Err, kerr.UnknownTopicOrPartition):
			create = append(create, t)
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
	if len(create) > 0 {
		if err := f.createRemoteTopics(ctx, create, src); err != nil {
			errs = append(errs, err)
		}
	}
	// Start partitions whose remote partition exists now.
	dst, err = f.dstAdm.ListTopics(ctx)
	if err != nil {
		return errors.Join(append(errs, fmt.Errorf("listing topics on %s: %w", f.dst.Alias, err))...)
	}
	parts := *f.parts.Load()
	var add []*partState
	for _, t := range selected {
		remote := f.pol.FormatRemoteTopic(f.cfg.Source, t)
		rd, ok := dst[remote]
		if !ok || rd.Err != nil {
			f.log.Debug("remote topic not usable yet", "topic", remote, "known", ok, "err", rd.Err)
			continue
		}
		sd := src[t]
		f.checkTopicID(t, sd.ID, parts)
		for _, pd := range sd.Partitions.Sorted() {
			if _, ok := parts[tp{t, pd.Partition}]; ok {
				continue
			}
			if _, ok := rd.Partitions[pd.Partition]; !ok {
				continue
			}
			add = append(add, newPartState(f, t, remote, pd.Partition, f.resume.resumePoint(t, pd.Partition)))
		}
	}
	ready := f.waitProducerMetadata(ctx, add, parts)
	f.addPartitions(ready)
	// Partitions whose remote partition is not usable yet (just created,
	// leader not elected) are retried within a second, not a whole
	// refresh interval later.
	started := len(parts) + len(ready)
	want := 0
	for _, t := range selected {
		want += len(src[t].Partitions)
	}
	f.topicsPending.Store(started < want)
	f.mu.Lock()
	f.nTopics = len(selected)
	f.mu.Unlock()
	if len(ready) > 0 && !initial {
		f.log.Info("new source partitions", "count", len(ready))
	}
	return errors.Join(errs...)
}

// waitProducerMetadata waits (up to AdminTimeout) until the target
// producer's metadata knows the new partitions of remote topics it already
// writes to: kgo fails a record for a partition its cached metadata lacks
// instead of waiting, which a partition increase would otherwise hit.
// Partitions still unknown at the deadline are left for the next refresh.
func (f *flow) waitProducerMetadata(ctx context.Context, add []*partState, parts map[tp]*partState) []*partState {
	known := map[string]bool{}
	for _, p := range parts {
		known[p.remote] = true
	}
	deadline := time.Now().Add(f.cfg.AdminTimeout)
	ready := add[:0]
	for _, p := range add {
		for known[p.remote] {
			if leader, _, _ := f.dstCl.PartitionLeader(p.remote, p.partition); leader >= 0 {
				break
			}
			if time.Now().After(deadline) || ctx.Err() != nil {
				return ready
			}
			f.dstCl.ForceMetadataRefresh()
			select {
			case <-ctx.Done():
				return ready
			case <-time.After(100 * time.Millisecond):
			}
		}
		ready = append(ready, p)
	}
	return ready
}

// checkTopicID notices a source topic deleted and re-created under the same
// name (new topic ID): the records of the old topic not yet replicated are
// lost, which is reported as a gap; replication restarts at the new
// topic's log start.
func (f *flow) checkTopicID(topic string, id kadm.TopicID, parts map[tp]*partState) {
	f.mu.Lock()
	old, seen := f.topicIDs[topic]
	f.topicIDs[topic] = id
	f.mu.Unlock()
	if !seen || old == id || id == (kadm.TopicID{}) {
		return
	}
	var reset []*partState
	for k, p := range parts {
		if k.topic != topic {
			continue
		}
		p.mu.Lock()
		hw, acked := p.hw, p.acked
		p.mu.Unlock()
		gap := &GapError{Flow: f.name, Topic: topic, Partition: k.partition, From: acked + 1, To: max(hw, acked+1),
			Reason: fmt.Sprintf("the source topic was deleted and re-created (topic ID %s, was %s); replication restarts at the new topic's log start", id, old)}
		if f.reportGap(p, gap) {
			reset = append(reset, p)
		}
	}
	f.restartTopic(topic, reset)
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
	var topics []string
	for _, p := range *f.parts.Load() {
		topics = append(topics, p.topic)
	}
	topics = dedupSorted(topics)
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

func dedupSorted(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
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
