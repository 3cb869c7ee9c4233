package mirror

import (
	"fmt"
	"sort"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Keeping remote topics from chaining.
//
// Record provenance stops records, not the creation of topics: with two
// deployments that name the same clusters differently (a/b and
// local/remote), b holds "a.t1" (from a), the other deployment creates
// "remote.a.t1" on a for it (its records are all skipped: they came from a),
// the first creates "a.remote.a.t1" on b, and so on, one empty topic more
// per refresh. kmirror stops the chain in two ways:
//
//  1. Names are judged by cluster ID as well as by alias
//     (topicRules.withClusterIDs): a topic named after any alias of the
//     target's cluster is a cycle, so one cluster listed under two aliases
//     in one Mirror cannot grow "b.a.t1".
//  2. A topic whose name carries a cluster alias this Mirror does not know
//     (another deployment's name for some cluster) gets its remote topic
//     only once it holds a record that passes the provenance check: the
//     discovery samples the newest records of each partition and creates
//     the remote topic if one of them did not come from the target
//     (topicRules.gate). Empty such topics wait for their first record;
//     topics whose sampled records all came from the target are skipped as
//     a cycle by provenance and sampled again at the next refresh. Topics
//     with plain names, or named after aliases this Mirror knows, are
//     created as in MM2, also when empty.
//  3. The same gate holds a topic named after the flow's own source alias
//     ("remote.t1" on the cluster the flow calls "remote"; issue 20): two
//     deployments that give the same alias pair to the two clusters
//     crosswise (deployment 1: remote=X, local=Y; deployment 2: remote=Y,
//     local=X) both know both aliases, so rule 2 alone let deployment 2
//     create "remote.remote.t1" on X for Y's "remote.t1", whose records
//     all came from X and were skipped. A cluster rarely holds a topic
//     named after itself; one that does (a native "prod.orders" on
//     "prod") is created once it holds a record, like rule 2's.
//
// With provenance headers off (FlowConfig.DisableProvenanceHeader) neither
// applies beyond MM2's name rule, and inconsistent aliases chain as in MM2.

// unknownOrigin reports whether topic's name says it was replicated, at
// some hop, from a cluster alias that is not in known (the aliases of the
// Mirror's clusters) or that is the flow's own source alias, and returns
// the first such alias. Under
// IdentityReplicationPolicy only heartbeats-like names can; under the
// default policy every name containing the separator does ("my.topic"
// reads as topic "topic" from cluster "my").
func (r *topicRules) unknownOrigin(topic string, known map[string]bool) (alias string, ok bool) {
	for range 1 << 10 {
		source, ok := r.pol.TopicSource(topic)
		if !ok {
			return "", false
		}
		if source != "" && !known[source] {
			return source, true
		}
		up, ok := r.pol.UpstreamTopic(topic)
		if !ok || up == topic {
			// No prefix in the name (IdentityReplicationPolicy names the
			// source alias of every topic without writing it).
			return "", false
		}
		if source == r.source {
			return source, true
		}
		topic = up
	}
	return "", false
}

// gate decides whether the discovery may create the remote topic of the
// source topic now. known is the set of the Mirror's cluster aliases;
// sample returns the headers of the newest records of each of the topic's
// partitions, one entry per record (nil for a record without headers; a
// few records per partition; no entry for an empty topic); it is called at
// most once, and only when unknownOrigin holds. pv is the flow's
// provenance check (nil when off).
// create false comes with the skip to note.
func (r *topicRules) gate(topic string, known map[string]bool, pv *provenance, sample func() [][]kgo.RecordHeader) (create bool, sk skip) {
	alias, suspect := r.unknownOrigin(topic, known)
	if !suspect || pv == nil {
		return true, skip{}
	}
	what := fmt.Sprintf("cluster alias %q, which this Mirror does not know", alias)
	if alias == r.source {
		what = fmt.Sprintf("cluster alias %q, the flow's own source (another deployment may name the clusters the other way round)", alias)
	}
	sampled := sample()
	if len(sampled) == 0 {
		return false, skip{skipAwaitRecord, fmt.Sprintf("empty topic named like a remote topic of %s: "+
			"its remote topic is created once it holds a record that did not come from %s (provenance header)", what, r.target)}
	}
	var last provVerdict
	for _, h := range sampled {
		v, _ := pv.check(h)
		if !v.skipped() {
			return true, skip{}
		}
		last = v
	}
	return false, skip{skipProvenance, fmt.Sprintf("cycle by provenance: named like a remote topic of %s, "+
		"and the %d newest records sampled were not copied because %s; sampled again at the next refresh", what, len(sampled), last)}
}

// sharedClusters returns, for every cluster ID that more than one alias
// reports, the sorted aliases (sorted by ID). ids maps alias -> cluster ID;
// empty IDs are ignored. The discovery logs each at WARN once: such aliases
// are judged as one cluster (a flow between them copies within one
// cluster, and names carrying either alias are cycles for flows into it).
func sharedClusters(ids map[string]string) map[string][]string {
	by := map[string][]string{}
	for a, id := range ids {
		if id != "" {
			by[id] = append(by[id], a)
		}
	}
	out := map[string][]string{}
	for id, as := range by {
		if len(as) > 1 {
			sort.Strings(as)
			out[id] = as
		}
	}
	return out
}

// describeShared renders sharedClusters for a log line, e.g.
// `aliases a, a2 are cluster MkU3...`.
func describeShared(shared map[string][]string) string {
	ids := make([]string, 0, len(shared))
	for id := range shared {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var parts []string
	for _, id := range ids {
		parts = append(parts, fmt.Sprintf("aliases %s are cluster %s", strings.Join(shared[id], ", "), id))
	}
	return strings.Join(parts, "; ")
}
