package mirror

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/kclient"
)

// topology is what the flows of one Mirror share to judge topics across
// flows: the cluster ID of every alias (names are judged by cluster ID as
// well as by alias) and each flow's latest selection of source topics (two
// flows must never write one remote topic). Safe for concurrent use.
type topology struct {
	aliases map[string]bool // every cluster alias of the Mirror (read-only)

	mu       sync.Mutex
	ids      map[string]string  // alias -> cluster ID, as flows learn them
	shared   string             // last logged description of aliases sharing a cluster
	keys     map[string]flowKey // enabled flows by name
	selected map[string][]string
	flows    map[string]*flow
}

func newTopology(aliases []string) *topology {
	t := &topology{aliases: map[string]bool{}, ids: map[string]string{}, keys: map[string]flowKey{},
		selected: map[string][]string{}, flows: map[string]*flow{}}
	for _, a := range aliases {
		t.aliases[a] = true
	}
	return t
}

// register adds an enabled flow.
func (t *topology) register(f *flow) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.keys[f.name] = keyOf(f.cfg)
	t.flows[f.name] = f
}

// learn records cluster IDs and returns a snapshot of every ID known, and
// the description of aliases that share a cluster when it changed (to log
// once).
func (t *topology) learn(ids map[string]string) (map[string]string, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for a, id := range ids {
		if id != "" {
			t.ids[a] = id
		}
	}
	snap := make(map[string]string, len(t.ids))
	for a, id := range t.ids {
		snap[a] = id
	}
	desc := ""
	if s := sharedClusters(snap); len(s) > 0 {
		if d := describeShared(s); d != t.shared {
			t.shared, desc = d, d
		}
	}
	return snap, desc
}

// resolve publishes flow's selection and returns the skips collisions with
// the other flows' latest selections impose on it: a topic another flow
// already replicates (the incumbent) keeps going there and is refused here;
// a topic no flow replicates yet is refused by all (nothing is ever
// merged); an allowed collision is replicated without checkpoints.
func (t *topology) resolve(flow string, selected []string) map[string]skip {
	t.mu.Lock()
	t.selected[flow] = selected
	keys := make([]flowKey, 0, len(t.keys))
	names := make([]string, 0, len(t.keys))
	for n := range t.keys {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		keys = append(keys, t.keys[n])
	}
	sel := make(map[string][]string, len(t.selected))
	for n, s := range t.selected {
		sel[n] = s
	}
	flows := t.flows
	t.mu.Unlock()
	cs := collisions(keys, sel)
	if len(cs) == 0 {
		return nil
	}
	skips, _ := collisionSkips(cs, false, func(fl, topic string) bool {
		f := flows[fl]
		return f != nil && f.replicates(topic)
	})
	return skips[flow]
}

// mergedWriters returns, for each remote topic on target that several
// (flow, source topic) pairs write by an allowed collision
// (FlowConfig.AllowTopicCollisions), its writers sorted by flow, then
// source topic, from the flows' latest selections, with the flows by name.
func (t *topology) mergedWriters(target string) (map[string][]writer, map[string]*flow) {
	t.mu.Lock()
	keys := make([]flowKey, 0, len(t.keys))
	for _, k := range t.keys {
		keys = append(keys, k)
	}
	sel := make(map[string][]string, len(t.selected))
	for n, s := range t.selected {
		sel[n] = s
	}
	flows := make(map[string]*flow, len(t.flows))
	for n, f := range t.flows {
		flows[n] = f
	}
	t.mu.Unlock()
	out := map[string][]writer{}
	for _, c := range collisions(keys, sel) {
		if c.target == target && c.allowed {
			out[c.topic] = c.writers
		}
	}
	return out, flows
}

// writerOf returns the flow of the Mirror and its source topic whose
// remote topic on cluster target is named remote, from the flows' latest
// selections (resolve), or ok false when no flow selects such a topic.
func (t *topology) writerOf(target, remote string) (flow, topic string, ok bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	names := make([]string, 0, len(t.keys))
	for n := range t.keys {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		k := t.keys[n]
		if k.target != target {
			continue
		}
		for _, st := range t.selected[n] {
			if k.pol.FormatRemoteTopic(k.source, st) == remote {
				return n, st, true
			}
		}
	}
	return "", "", false
}

// checkCollisionsAtStart lists the source topics of every enabled flow once
// and refuses (a *ConfigError naming the topic, the target and the sources)
// a collision no flow opted into: two flows that would write one remote
// topic. A source that does not answer within a few seconds is left to the
// discovery, which refuses such topics one by one.
func (m *Mirror) checkCollisionsAtStart(ctx context.Context) error {
	var keys []flowKey
	selected := map[string][]string{}
	for _, f := range m.flows {
		if f.cfg.Disabled {
			continue
		}
		keys = append(keys, keyOf(f.cfg))
		names, err := f.listSourceTopics(ctx)
		if err != nil && ctx.Err() != nil {
			return nil // stopped while starting
		}
		if err != nil {
			m.log.Warn("collision check at start: source not reachable; its topics are checked when discovered", "flow", f.name, "err", err)
			continue
		}
		for _, n := range names {
			if ok, _ := f.rules.decide(n, nil); ok {
				selected[f.name] = append(selected[f.name], n)
			}
		}
	}
	_, err := collisionSkips(collisions(keys, selected), true, nil)
	return err
}

// listSourceTopics lists the source's topics with a short-lived admin
// client, bounded by 10 s.
func (f *flow) listSourceTopics(ctx context.Context) ([]string, error) {
	cl, err := kclient.New(f.clientOpts(f.src, f.src.Admin)...)
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	td, err := kadm.NewClient(cl).ListTopics(ctx)
	if err != nil {
		return nil, err
	}
	return td.Names(), nil
}

// replicates reports whether this member's discovery found topic ready to
// replicate (the incumbent writer of its remote topic).
func (f *flow) replicates(topic string) bool {
	c := f.catalog.Load()
	if c == nil {
		return false
	}
	i := sort.SearchStrings(c.topics, topic)
	return i < len(c.topics) && c.topics[i] == topic
}

// learnClusterIDs reads both clusters' IDs, shares them with the Mirror's
// other flows, and builds the flow's provenance check (unless
// DisableProvenanceHeader). Unreachable clusters are an error (retried by
// start).
func (f *flow) learnClusterIDs(ctx context.Context) error {
	sm, err := f.srcAdm.BrokerMetadata(ctx)
	if err != nil {
		return kclient.Unreachable("cluster", f.src.Alias, err)
	}
	dm, err := f.dstAdm.BrokerMetadata(ctx)
	if err != nil {
		return kclient.Unreachable("cluster", f.dst.Alias, err)
	}
	f.srcID, f.dstID = sm.Cluster, dm.Cluster
	f.refreshRules()
	if f.cfg.DisableProvenanceHeader || f.cfg.Disabled {
		return nil
	}
	pv, err := newProvenance(f.srcID, f.dstID)
	if err != nil {
		args := []any{"err", err}
		if f.srcID == "kfake" && f.dstID == "kfake" {
			// The same hint as refreshRules' warning, which the one above
			// contradicted (a new user's try, stop 38).
			args = append(args, "hint", kfakeIDHint)
		}
		f.log.Warn("provenance header off for this flow", args...)
		return nil
	}
	f.prov = pv
	return nil
}

// kfakeIDHint is logged with warnings about clusters sharing an ID when
// the ID is kfake's default.
const kfakeIDHint = "in-process kfake clusters are all named kfake: give each its own ID with kfake.ClusterID(alias)"

// refreshRules rebuilds the flow's live topic rules with every cluster ID
// the Mirror's flows learned so far.
func (f *flow) refreshRules() *topicRules {
	ids, shared := f.topo.learn(map[string]string{f.src.Alias: f.srcID, f.dst.Alias: f.dstID})
	if shared != "" {
		args := []any{"clusters", shared}
		if f.srcID == "kfake" || f.dstID == "kfake" {
			args = append(args, "hint", kfakeIDHint)
		}
		f.log.Warn("several cluster aliases name the same cluster: they are judged as one cluster", args...)
	}
	r := f.rules.withClusterIDs(ids, f.dstID)
	f.live.Store(&r)
	return &r
}

// currentRules returns the flow's topic rules: with cluster IDs once known.
func (f *flow) currentRules() *topicRules {
	if r := f.live.Load(); r != nil {
		return r
	}
	return &f.rules
}

// sampleNewest returns the headers of the newest few records of each
// partition of a source topic (one entry per record; nothing for an empty
// topic), read with a short-lived consumer bounded by 5 s: the evidence
// the chain gate needs for a topic named after an unknown cluster alias.
func (f *flow) sampleNewest(ctx context.Context, topic string) [][]kgo.RecordHeader {
	const perPartition = 3
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	starts, err := f.srcAdm.ListStartOffsets(ctx, topic)
	if err != nil {
		return nil
	}
	ends, err := f.srcAdm.ListEndOffsets(ctx, topic)
	if err != nil {
		return nil
	}
	from := map[int32]kgo.Offset{}
	want := map[int32]int64{}
	ends.Each(func(e kadm.ListedOffset) {
		s, ok := starts.Lookup(topic, e.Partition)
		if e.Err != nil || !ok || s.Err != nil || e.Offset <= s.Offset {
			return
		}
		from[e.Partition] = kgo.NewOffset().At(max(s.Offset, e.Offset-perPartition))
		want[e.Partition] = e.Offset - 1
	})
	if len(from) == 0 {
		return nil
	}
	cl, err := kclient.New(f.clientOpts(f.src, f.src.Consumer, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: from}),
		kgo.FetchMaxWait(200*time.Millisecond))...)
	if err != nil {
		return nil
	}
	defer cl.Close()
	var out [][]kgo.RecordHeader
	for len(want) > 0 && ctx.Err() == nil {
		fs := cl.PollFetches(ctx)
		fs.EachRecord(func(r *kgo.Record) {
			out = append(out, r.Headers)
			if end, ok := want[r.Partition]; ok && r.Offset >= end {
				delete(want, r.Partition)
			}
		})
	}
	return out
}
