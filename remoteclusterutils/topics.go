package remoteclusterutils

import (
	"slices"

	"github.com/kmirror/kmirror/policy"
)

// The topic-list rules of MirrorClient, applied by the Client methods to
// the topic names of the cluster: pure functions of a policy and a list of
// names. The policy is never nil here (cfg.finish builds one).

// maxHops bounds the walks over upstream names so that a misbehaving
// custom policy cannot loop forever.
const maxHops = 1 << 10

// replicationHops returns the smallest number of replication hops from
// the cluster alias to the cluster whose topic names are topics, or -1 if
// alias is not upstream (MirrorClient.replicationHops). Only heartbeats
// topics count: "A.heartbeats" is 1 hop from A, "B.A.heartbeats" 2 hops.
// A walk that reaches a non-remote name or a source it has already seen
// counts as unreachable.
func replicationHops(p policy.ReplicationPolicy, topics []string, alias string) int {
	best := -1
	for _, t := range topics {
		if !p.IsHeartbeatsTopic(t) {
			continue
		}
		if h := countHops(p, t, alias); h != -1 && (best == -1 || h < best) {
			best = h
		}
	}
	return best
}

// countHops walks topic's sources until alias: the number of hops, or -1.
func countHops(p policy.ReplicationPolicy, topic, alias string) int {
	seen := map[string]bool{}
	for hops := 1; hops <= maxHops; hops++ {
		source, ok := p.TopicSource(topic)
		if !ok {
			return -1
		}
		if source == alias {
			return hops
		}
		if seen[source] {
			return -1
		}
		seen[source] = true
		if topic, ok = p.UpstreamTopic(topic); !ok {
			return -1
		}
	}
	return -1
}

// upstreamClusters returns the sorted, de-duplicated aliases of every
// cluster upstream of the cluster whose topic names are topics, walking
// each heartbeats topic's sources (MirrorClient.upstreamClusters):
// "source3.source4.source5.heartbeats" contributes source3, source4 and
// source5; "heartbeats" nothing; ".heartbeats" the empty alias "" (as in
// Java). nil if none.
func upstreamClusters(p policy.ReplicationPolicy, topics []string) []string {
	set := map[string]bool{}
	for _, t := range topics {
		if !p.IsHeartbeatsTopic(t) {
			continue
		}
		// Per-topic walk; a source repeated within one chain stops it
		// (identity-style policies can produce such loops).
		seen := map[string]bool{}
		for range maxHops {
			source, ok := p.TopicSource(t)
			if !ok || seen[source] {
				break
			}
			seen[source] = true
			set[source] = true
			if t, ok = p.UpstreamTopic(t); !ok {
				break
			}
		}
	}
	return sortedKeys(set)
}

// heartbeatTopics returns the sorted, de-duplicated topics for which
// p.IsHeartbeatsTopic holds (MirrorClient.heartbeatTopics); nil if none.
func heartbeatTopics(p policy.ReplicationPolicy, topics []string) []string {
	return filterSorted(topics, p.IsHeartbeatsTopic)
}

// checkpointTopics returns the sorted, de-duplicated topics for which
// p.IsCheckpointsTopic holds (MirrorClient.checkpointTopics):
// "source1.checkpoints.internal" yes, "checkpoints.internal" no; nil if
// none.
func checkpointTopics(p policy.ReplicationPolicy, topics []string) []string {
	return filterSorted(topics, p.IsCheckpointsTopic)
}

// remoteTopics returns the sorted, de-duplicated topics that are not
// internal and have a source (MirrorClient.remoteTopics). Like Java it
// includes remote heartbeats topics such as "A.heartbeats"; under the
// identity policy with a source alias, every non-internal topic. nil if
// none.
func remoteTopics(p policy.ReplicationPolicy, topics []string) []string {
	return filterSorted(topics, func(t string) bool { return isRemote(p, t) })
}

// remoteTopicsFor returns the remote topics (as in remoteTopics) whose
// TopicSource is source (MirrorClient.remoteTopics(source)); nil if none.
func remoteTopicsFor(p policy.ReplicationPolicy, topics []string, source string) []string {
	return filterSorted(topics, func(t string) bool {
		if p.IsInternalTopic(t) {
			return false
		}
		s, ok := p.TopicSource(t)
		return ok && s == source
	})
}

func isRemote(p policy.ReplicationPolicy, t string) bool {
	if p.IsInternalTopic(t) {
		return false
	}
	_, ok := p.TopicSource(t)
	return ok
}

func filterSorted(topics []string, keep func(string) bool) []string {
	set := map[string]bool{}
	for _, t := range topics {
		if keep(t) {
			set[t] = true
		}
	}
	return sortedKeys(set)
}

func sortedKeys(set map[string]bool) []string {
	if len(set) == 0 {
		return nil
	}
	out := make([]string, 0, len(set))
	for k := range set {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
