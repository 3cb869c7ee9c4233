package mirror

import (
	"fmt"
	"sort"
	"strings"

	"github.com/kmirror/kmirror/policy"
)

// flowKey is what collision detection needs to know about one flow.
type flowKey struct {
	name, source, target string
	pol                  policy.ReplicationPolicy
	allow                bool // FlowConfig.AllowTopicCollisions
}

func keyOf(fc FlowConfig) flowKey {
	p := fc.Policy
	if p == nil {
		p, _ = policy.NewDefault()
	}
	return flowKey{name: fc.Name(), source: fc.Source, target: fc.Target, pol: p, allow: fc.AllowTopicCollisions}
}

// writer is one (flow, source topic) that writes a remote topic.
type writer struct {
	flow, source, topic string
	allow               bool
}

// collision is a remote topic on one target that two or more (flow, source
// topic) pairs would write: two flows whose policies map different sources
// to one name (IdentityReplicationPolicy many-to-one), or one flow whose
// custom policy maps two topics to one name.
type collision struct {
	target, topic string   // the remote topic on target
	writers       []writer // sorted by flow, then source topic; at least two
	allowed       bool     // every writer's flow set AllowTopicCollisions
}

// collisions returns every remote topic that two or more writers would
// write, sorted by target and topic. selected maps a flow name to the
// source topics it replicates (after its filter, internal and cycle rules);
// flows not in flows are ignored. Pure: the static check in New calls it
// with the topics listed literally, the discovery with the topics that
// exist on each source.
func collisions(flows []flowKey, selected map[string][]string) []collision {
	type key struct{ target, topic string }
	by := map[key][]writer{}
	for _, f := range flows {
		seen := map[string]bool{}
		for _, t := range selected[f.name] {
			if seen[t] {
				continue
			}
			seen[t] = true
			k := key{f.target, f.pol.FormatRemoteTopic(f.source, t)}
			by[k] = append(by[k], writer{flow: f.name, source: f.source, topic: t, allow: f.allow})
		}
	}
	var out []collision
	for k, ws := range by {
		if len(ws) < 2 {
			continue
		}
		sort.Slice(ws, func(i, j int) bool {
			if ws[i].flow != ws[j].flow {
				return ws[i].flow < ws[j].flow
			}
			return ws[i].topic < ws[j].topic
		})
		c := collision{target: k.target, topic: k.topic, writers: ws, allowed: true}
		for _, w := range ws {
			c.allowed = c.allowed && w.allow
		}
		out = append(out, c)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].target != out[j].target {
			return out[i].target < out[j].target
		}
		return out[i].topic < out[j].topic
	})
	return out
}

// flows returns the distinct flow names of c's writers, in order.
func (c collision) flows() []string {
	var out []string
	for _, w := range c.writers {
		if len(out) == 0 || out[len(out)-1] != w.flow {
			out = append(out, w.flow)
		}
	}
	return out
}

// describe says which flows write which topic from where, e.g.
// `flows a->t and b->t would both write topic "orders" on cluster t (topic
// orders of a, topic orders of b)`.
func (c collision) describe() string {
	fl := c.flows()
	var from []string
	for _, w := range c.writers {
		from = append(from, fmt.Sprintf("topic %s of %s", w.topic, w.source))
	}
	who := "flow " + fl[0]
	if len(fl) > 1 {
		who = "flows " + strings.Join(fl[:len(fl)-1], ", ") + " and " + fl[len(fl)-1] + " would both"
	} else {
		who += " would"
	}
	return fmt.Sprintf("%s write topic %q on cluster %s (%s)", who, c.topic, c.target, strings.Join(from, ", "))
}

// err is the refusal of a collision that is not allowed: a *ConfigError
// naming the topic, the target, every source and how to resolve it.
func (c collision) err() *ConfigError {
	var missing []string
	for _, f := range c.flows() {
		for _, w := range c.writers {
			if w.flow == f && !w.allow {
				missing = append(missing, f)
				break
			}
		}
	}
	last := c.writers[len(c.writers)-1]
	return &ConfigError{Key: last.flow + ".topics", Value: last.topic, Reason: c.describe() +
		": their records would be merged into one topic whose offsets translate for neither source. " +
		"Select disjoint topics, give the sources different remote names (DefaultReplicationPolicy prefixes the source alias), " +
		"or merge on purpose with allow.topic.collisions=true (FlowConfig.AllowTopicCollisions) on " + strings.Join(missing, " and ") +
		" (checkpoints and group offset sync are then off for this topic)"}
}

// collisionSkips turns collisions into per-flow skips, keyed by flow name
// and source topic. An allowed collision gives every writer a
// skipCollisionAllowed (replicated, no checkpoints). One that is not
// allowed is refused: at start (start true) with the error of the first
// such collision and no skips; later (a topic appeared on a source while
// running) the writers that are not already replicating the remote topic
// skip it (incumbent reports whether a flow replicates a source topic
// already; nil means none does), and when none is, all of them skip it, so
// nothing is ever merged.
func collisionSkips(cs []collision, start bool, incumbent func(flow, topic string) bool) (map[string]map[string]skip, error) {
	out := map[string]map[string]skip{}
	add := func(flow, topic string, sk skip) {
		if out[flow] == nil {
			out[flow] = map[string]skip{}
		}
		out[flow][topic] = sk
	}
	for _, c := range cs {
		if c.allowed {
			for _, w := range c.writers {
				add(w.flow, w.topic, skip{skipCollisionAllowed, "collision allowed (allow.topic.collisions): " + c.describe() +
					"; records are merged, checkpoints and group offset sync are off for this topic"})
			}
			continue
		}
		if start {
			return nil, c.err()
		}
		var keep []writer
		for _, w := range c.writers {
			if incumbent != nil && incumbent(w.flow, w.topic) {
				keep = append(keep, w)
			}
		}
		for _, w := range c.writers {
			if len(keep) > 0 && containsWriter(keep, w) {
				continue
			}
			why := "collision: " + c.describe() + "; not replicated"
			if len(keep) > 0 {
				why += fmt.Sprintf(" because flow %s writes it already", keep[0].flow)
			}
			why += " (set allow.topic.collisions=true on every flow involved to merge them)"
			add(w.flow, w.topic, skip{skipCollision, why})
		}
	}
	return out, nil
}

func containsWriter(ws []writer, w writer) bool {
	for _, x := range ws {
		if x.flow == w.flow && x.topic == w.topic {
			return true
		}
	}
	return false
}
