package mirror

import (
	"context"
	"fmt"
	"iter"
	"log/slog"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kmirror/kmirror/internal/mm2filter"
	"github.com/kmirror/kmirror/policy"
)

// skipKind says why a topic a flow selects is not replicated (or not
// checkpointed); it picks the log level and whether records still flow.
type skipKind uint8

const (
	skipNone             skipKind = iota
	skipCycle                     // the name says the topic came from the target (MM2's isCycle), or from an alias of the target's cluster ID
	skipOwnCycle                  // a cycle that is the remote topic of this Mirror's own flow into the source: expected, logged at INFO
	skipKafkaInternal             // "__" or "." name: Kafka's own topic
	skipMM2Internal               // MM2's (or kmirror's) own internal topic, listed explicitly in topics, or a topic whose remote name is one's
	skipExcluded                  // listed explicitly in topics, but topics.exclude matches it
	skipCollision                 // another flow writes the same remote topic; refused
	skipCollisionAllowed          // another flow writes the same remote topic; allowed: replicated, checkpoints and group sync off
	skipProvenance                // the records sampled from it were all copied from the target (cycle by provenance)
	skipAwaitRecord               // empty, named after an unknown cluster alias: created on the target at its first record from elsewhere
	skipNotOnSource               // listed in topics by name, but the source has no topic of that name (a typo, or not created yet)
)

// skip is the classification of one selected topic that is not replicated.
type skip struct {
	kind   skipKind
	reason string
}

// level is the log level of a skip: INFO for the expected ones, WARN for
// the rest.
func (k skipKind) level() slog.Level {
	switch k {
	case skipOwnCycle, skipAwaitRecord:
		return slog.LevelInfo
	}
	return slog.LevelWarn
}

// replicated reports whether records of a topic skipped for this reason are
// still replicated (only checkpoints and group offset sync skip it).
func (k skipKind) replicated() bool { return k == skipCollisionAllowed }

// topicRules decides, for one flow, which source topics are replicated
// (MM2's MirrorSourceConnector.shouldReplicateTopic) and why a topic the
// filter selects is not. It is pure and immutable after construction, so it
// is safe for concurrent use.
type topicRules struct {
	pol            policy.ReplicationPolicy
	source, target string
	filter         mm2filter.Filter
	heartbeats     bool            // heartbeats.replication.enabled
	listed         map[string]bool // topics named literally in FlowConfig.Topics
	// listedRe is, per listed name, its entry in FlowConfig.Topics as the
	// full-match regular expression it also is ("orders.v1" selects
	// "orders-v1"; "orders\.v1" does not).
	listedRe map[string]*regexp.Regexp
	inbound  map[string]bool // sources of this Mirror's flows into source (their remote topics on source are expected cycles)

	// Known at run time only (nil/"" before): alias -> cluster ID of every
	// cluster of the Mirror, and the target's cluster ID; with them a name
	// whose source alias names the target's cluster under another alias is
	// a cycle too (see withClusterIDs).
	ids      map[string]string
	targetID string
}

// newTopicRules builds the rules of fc (with defaults applied) whose topic
// filter is filter. inbound lists the sources of the Mirror's other flows
// whose target is fc.Source.
func newTopicRules(fc FlowConfig, filter mm2filter.Filter, inbound map[string]bool) topicRules {
	r := topicRules{pol: fc.Policy, source: fc.Source, target: fc.Target, filter: filter,
		heartbeats: !fc.DisableHeartbeatsReplication, listed: map[string]bool{}, inbound: inbound}
	r.listedRe = map[string]*regexp.Regexp{}
	for _, e := range fc.Topics {
		for _, t := range listedTopics([]string{e}) {
			r.listed[t] = true
			if re, err := regexp.Compile("^(?:" + strings.TrimSpace(e) + ")$"); err == nil {
				r.listedRe[t] = re
			}
		}
	}
	return r
}

// listedSelects reports whether the entry of topics that names t (read as
// the regular expression it is) selects a source topic other than t.
func (r *topicRules) listedSelects(t string, names iter.Seq[string]) bool {
	re := r.listedRe[t]
	if re == nil {
		return false
	}
	for n := range names {
		if n != t && re.MatchString(n) {
			return true
		}
	}
	return false
}

// withClusterIDs returns a copy of r that also judges names by cluster ID:
// ids maps every cluster alias of the Mirror to its cluster ID (as
// Metadata/DescribeCluster report it) and targetID is the flow's target's.
// A topic whose name says it came from an alias whose cluster ID is
// targetID is a cycle even though the alias differs from the target's
// (one cluster configured under two aliases).
func (r topicRules) withClusterIDs(ids map[string]string, targetID string) topicRules {
	r.ids, r.targetID = ids, targetID
	return r
}

// isTarget reports whether alias names the flow's target: the same alias,
// or (once cluster IDs are known) an alias of the same cluster.
func (r *topicRules) isTarget(alias string) bool {
	if alias == r.target {
		return true
	}
	return r.targetID != "" && r.ids != nil && r.ids[alias] == r.targetID
}

// decide says whether the flow replicates topic, MM2's
// shouldReplicateTopic: (selected by the topic filter, or a heartbeats topic
// while heartbeats replication is on) and not internal and not a cycle.
// When the topic is not replicated although the filter selects it (or it
// is listed explicitly), sk says why; sk.kind is skipNone for topics the
// filter does not select, for MM2's own internal topics that only a pattern
// selects (topics=.* always matches them; they are never replicated, as in
// MM2) and for heartbeats topics selected only by the heartbeats rule.
//
// targetHas, when not nil, reports whether a topic exists on the target;
// with it, a cycle that looks like this Mirror's own remote topic but
// whose upstream topic the target does not have is reported as a local
// topic named like a remote one (WARN) instead of as expected (INFO).
func (r *topicRules) decide(topic string, targetHas func(string) bool) (replicate bool, sk skip) {
	byFilter := r.filter.Match(topic)
	selected := byFilter || (r.heartbeats && r.pol.IsHeartbeatsTopic(topic))
	listed := r.listed[topic]
	if !selected && !listed {
		return false, skip{}
	}
	if r.pol.IsInternalTopic(topic) {
		switch {
		case policy.IsKafkaInternalTopic(topic) && (byFilter || listed):
			return false, skip{skipKafkaInternal, `internal topic: names starting with "__" or "." are Kafka's own topics and are never replicated, even when listed in topics`}
		case listed:
			return false, skip{skipMM2Internal, "MM2 internal topic (mm2*.internal or *.checkpoints.internal): never replicated, even when listed in topics"}
		}
		return false, skip{}
	}
	if !selected {
		return false, skip{skipExcluded, "listed in topics, but topics.exclude matches it: remove the pattern that matches it from topics.exclude to replicate it"}
	}
	if alias, upstream, ok := r.cycle(topic); ok {
		if !byFilter {
			return false, skip{}
		}
		first, _ := r.pol.TopicSource(topic)
		// Expected (INFO): the remote topic of one of this Mirror's flows
		// into the source, or, named after the target, whose upstream
		// topic the target has: the remote topic of the reverse flow,
		// even when another process runs it (MM2's --clusters split; a
		// new user's finding: "if it is a local topic, rename it" at WARN
		// for every such topic, B.heartbeats included).
		own := r.inbound[first] && (targetHas == nil || targetHas(upstream)) ||
			first == r.target && targetHas != nil && targetHas(upstream)
		who := alias + ", the target"
		if alias != r.target {
			who = fmt.Sprintf("%s, the same cluster as the target %s (cluster ID %s)", alias, r.target, r.targetID)
		}
		if own {
			return false, skip{skipOwnCycle, fmt.Sprintf("cycle by name: remote topic of flow %s->%s, read as topic %q replicated from %s", first, r.source, upstream, who)}
		}
		msg := fmt.Sprintf("cycle by name: the replication policy reads %q as topic %q replicated from %s, so it is never replicated back there", topic, upstream, who)
		if targetHas != nil && !targetHas(upstream) {
			msg += fmt.Sprintf("; %s has no topic %q, so this is probably a local topic named like a remote one: rename it", r.target, upstream)
		} else {
			msg += "; if it is a local topic, rename it (or use IdentityReplicationPolicy, whose loops the provenance header stops)"
		}
		return false, skip{skipCycle, msg}
	}
	// A user topic whose remote name is one of MM2's internal topics on
	// the target ("checkpoints.internal" of source A becomes
	// "A.checkpoints.internal", the checkpoints topic of the flow A->B):
	// copied, its records would be mixed into that topic (translation
	// reads them as checkpoints) and config sync would overwrite its
	// configs.
	if remote := r.pol.FormatRemoteTopic(r.source, topic); r.pol.IsInternalTopic(remote) {
		return false, skip{skipMM2Internal, fmt.Sprintf("its remote topic %s on %s is named like an internal topic (mm2*.internal, *.checkpoints.internal, __*): never replicated; rename the topic on the source", remote, r.target)}
	}
	return true, skip{}
}

// cycle is MM2's isCycle (policy.IsCycle) judged with isTarget: it returns
// the alias that names the target and the upstream topic name at that hop.
func (r *topicRules) cycle(topic string) (alias, upstream string, ok bool) {
	for range 1 << 10 {
		source, ok := r.pol.TopicSource(topic)
		if !ok {
			return "", "", false
		}
		up, upOK := r.pol.UpstreamTopic(topic)
		if r.isTarget(source) {
			if !upOK {
				up = topic
			}
			return source, up, true
		}
		if !upOK || up == topic {
			return "", "", false
		}
		topic = up
	}
	return "", "", false
}

// staticSkips are the skips of the topics listed literally in the flow's
// topics: what -check can report without connecting.
func (r *topicRules) staticSkips() map[string]skip {
	out := map[string]skip{}
	for t := range r.listed {
		if _, sk := r.decide(t, nil); sk.kind != skipNone {
			out[t] = sk
		}
	}
	return out
}

// listedTopics returns the entries of a topics list that name one topic
// literally: no regex syntax except "." (which users write for a literal
// dot: "billing.internal") and `\.`. Each such entry matches the topic it
// names.
func listedTopics(entries []string) []string {
	var out []string
	for _, e := range entries {
		u := strings.ReplaceAll(strings.TrimSpace(e), `\.`, ".")
		if u == "" || strings.ReplaceAll(regexp.QuoteMeta(u), `\.`, ".") != u {
			continue
		}
		out = append(out, u)
	}
	return out
}

// skipSet is the per-flow record of skipped topics: it backs
// FlowStatus.Skipped and logs each topic once per reason (WARN, or INFO for
// expected skips). Safe for concurrent use.
type skipSet struct {
	log *slog.Logger

	mu     sync.Mutex
	topics map[string]SkippedTopic
	kinds  map[string]skipKind
}

func newSkipSet(log *slog.Logger) *skipSet {
	return &skipSet{log: log, topics: map[string]SkippedTopic{}, kinds: map[string]skipKind{}}
}

// note records that topic is skipped for sk, and logs it unless the same
// topic was already noted with the same reason. A zero sk is ignored
// (clear forgets a topic).
func (s *skipSet) note(topic string, sk skip, now time.Time) {
	if sk.kind == skipNone {
		return
	}
	s.mu.Lock()
	old, seen := s.topics[topic]
	if seen && old.Reason == sk.reason {
		s.mu.Unlock()
		return
	}
	s.topics[topic] = SkippedTopic{Topic: topic, Reason: sk.reason, Since: now, Replicated: sk.kind.replicated()}
	s.kinds[topic] = sk.kind
	s.mu.Unlock()
	msg := "topic not replicated"
	if sk.kind.replicated() {
		msg = "topic replicated without checkpoints"
	}
	s.log.Log(context.Background(), sk.kind.level(), msg, "topic", topic, "reason", sk.reason)
}

// clear forgets topic: it is replicated now, or gone from the source.
func (s *skipSet) clear(topic string) {
	s.mu.Lock()
	delete(s.topics, topic)
	delete(s.kinds, topic)
	s.mu.Unlock()
}

// clearKind forgets topic if it is skipped for kind k.
func (s *skipSet) clearKind(topic string, k skipKind) {
	s.mu.Lock()
	if s.kinds[topic] == k {
		delete(s.topics, topic)
		delete(s.kinds, topic)
	}
	s.mu.Unlock()
}

// clearWaiting forgets topic unless it is an allowed collision (which is
// replicated and stays listed): its remote topic exists now.
func (s *skipSet) clearWaiting(topic string) {
	s.mu.Lock()
	if k, ok := s.kinds[topic]; ok && !k.replicated() {
		delete(s.topics, topic)
		delete(s.kinds, topic)
	}
	s.mu.Unlock()
}

// retain forgets every topic for which keep returns false (discovery
// calls it with the topics that still exist on the source, and those
// listed by name that do not).
func (s *skipSet) retain(keep func(topic string) bool) {
	s.mu.Lock()
	for t := range s.topics {
		if !keep(t) {
			delete(s.topics, t)
			delete(s.kinds, t)
		}
	}
	s.mu.Unlock()
}

// ofKind returns the topics skipped for kind k, sorted.
func (s *skipSet) ofKind(k skipKind) []string {
	s.mu.Lock()
	var out []string
	for t, tk := range s.kinds {
		if tk == k {
			out = append(out, t)
		}
	}
	s.mu.Unlock()
	slices.Sort(out)
	return out
}

// skipped reports whether topic is skipped for any reason: not replicated,
// or replicated without checkpoints (an allowed collision).
func (s *skipSet) skipped(topic string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	_, ok := s.kinds[topic]
	return ok
}

// notReplicated reports whether topic is skipped for a reason that stops
// its records (anything but an allowed collision).
func (s *skipSet) notReplicated(topic string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	k, ok := s.kinds[topic]
	return ok && !k.replicated()
}

// gated reports whether topic is held back by the naming gate (origin.go:
// empty and named after an unknown alias, or its newest records all came
// from the target): discovery judges it again in every round that creates
// topics, with refresh.topics.enabled=false too.
func (s *skipSet) gated(topic string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := s.kinds[topic]
	return k == skipAwaitRecord || k == skipProvenance
}

// noCheckpoints reports whether checkpoints and group offset sync must skip
// topic: an allowed collision.
func (s *skipSet) noCheckpoints(topic string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.kinds[topic] == skipCollisionAllowed
}

// list returns the skipped topics sorted by topic (nil if none).
func (s *skipSet) list() []SkippedTopic {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.topics) == 0 {
		return nil
	}
	out := make([]SkippedTopic, 0, len(s.topics))
	for _, t := range s.topics {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Topic < out[j].Topic })
	return out
}
