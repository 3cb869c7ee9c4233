package policy_test

import (
	"strings"
	"testing"

	"github.com/kmirror/kmirror/policy"
)

var fuzzSeparators = []string{".", "__", "-", "_", "ab", "..", "x-x"}

func fuzzSep(i uint8) string { return fuzzSeparators[int(i)%len(fuzzSeparators)] }

// javaSplitSource is an independent model of Java's
// topic.split(Pattern.quote(sep)) as used by DefaultReplicationPolicy:
// split on every non-overlapping occurrence, drop trailing empty pieces,
// need at least two pieces.
func javaSplitSource(topic, sep string) (source, upstream string, ok bool) {
	parts := strings.Split(topic, sep)
	for len(parts) > 0 && parts[len(parts)-1] == "" {
		parts = parts[:len(parts)-1]
	}
	if len(parts) < 2 {
		return "", "", false
	}
	return parts[0], topic[len(parts[0])+len(sep):], true
}

// FuzzDefaultParse checks TopicSource/UpstreamTopic against the Java split
// model for arbitrary topic strings, and that no method panics.
func FuzzDefaultParse(f *testing.F) {
	for _, s := range []string{"us-west.orders", "a..b", ".hidden", "a.", "", ".", "a____b", "___x", "a__", "é.ü", "\xff.\x00"} {
		f.Add(uint8(0), s)
		f.Add(uint8(1), s)
	}
	f.Fuzz(func(t *testing.T, sepIdx uint8, topic string) {
		sep := fuzzSep(sepIdx)
		p := mustDefault(t, policy.WithSeparator(sep))
		wantSrc, wantUp, wantOK := javaSplitSource(topic, sep)
		src, ok := p.TopicSource(topic)
		up, upOK := p.UpstreamTopic(topic)
		if ok != wantOK || upOK != wantOK || src != wantSrc || up != wantUp {
			t.Fatalf("sep %q topic %q: got (%q,%t) (%q,%t), Java model (%q,%q,%t)", sep, topic, src, ok, up, upOK, wantSrc, wantUp, wantOK)
		}
		exercise(p, topic)
		exercise(mustIdentity(t, "src", policy.WithSeparator(sep)), topic)
		exercise(mustIdentity(t, "", policy.WithSeparator(sep), policy.WithInternalTopicSeparator(false)), topic)
	})
}

// exercise calls every method and helper; the fuzzer fails on any panic.
// (The MirrorClient topic-list rules are fuzzed in remoteclusterutils.)
func exercise(p policy.ReplicationPolicy, topic string) {
	p.FormatRemoteTopic(topic, topic)
	p.OriginalTopic(topic)
	p.OffsetSyncsTopic(topic)
	p.CheckpointsTopic(topic)
	p.IsHeartbeatsTopic(topic)
	p.IsCheckpointsTopic(topic)
	p.IsMM2InternalTopic(topic)
	p.IsInternalTopic(topic)
	_ = policy.IsCycle(p, topic, topic)
	_ = policy.ValidateAlias(p, topic)
}

// validTopic reports whether topic is a legal Kafka topic name that a
// separator-based policy can carry after an alias: not empty, at most 249
// bytes, [a-zA-Z0-9._-] only, and not made only of separators (Java split
// would drop such a tail).
func validTopic(topic, sep string) bool {
	if topic == "" || len(topic) > policy.MaxTopicNameLength || topic == "." || topic == ".." {
		return false
	}
	for i := 0; i < len(topic); i++ {
		c := topic[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == '-') {
			return false
		}
	}
	onlySeps := len(topic)%len(sep) == 0 && strings.Repeat(sep, len(topic)/len(sep)) == topic
	return !onlySeps
}

// FuzzRoundTrip: for an alias accepted by ValidateAlias and a valid topic,
// TopicSource(FormatRemoteTopic(a, t)) == a and UpstreamTopic(...) == t, the
// remote name is a cycle for a flow targeting a, and the original topic is
// preserved.
func FuzzRoundTrip(f *testing.F) {
	f.Add(uint8(0), "us-west", "orders")
	f.Add(uint8(0), "A", ".hidden")
	f.Add(uint8(1), "a_", "b")
	f.Add(uint8(1), "a", "__b")
	f.Add(uint8(1), "a", "____")
	f.Add(uint8(2), "eu", "prod-heartbeats")
	f.Add(uint8(4), "xa", "bheartbeats")
	f.Fuzz(func(t *testing.T, sepIdx uint8, alias, topic string) {
		sep := fuzzSep(sepIdx)
		if !validTopic(topic, sep) {
			return
		}
		policies := []policy.ReplicationPolicy{
			mustDefault(t, policy.WithSeparator(sep)),
			mustIdentity(t, alias, policy.WithSeparator(sep)),
		}
		for _, p := range policies {
			if policy.ValidateAlias(p, alias) != nil {
				return
			}
			remote := p.FormatRemoteTopic(alias, topic)
			src, ok := p.TopicSource(remote)
			if !ok || src != alias {
				t.Fatalf("%T sep %q: TopicSource(%q) = (%q, %t), want %q", p, sep, remote, src, ok, alias)
			}
			up, ok := p.UpstreamTopic(remote)
			if !ok || up != topic {
				t.Fatalf("%T sep %q: UpstreamTopic(%q) = (%q, %t), want %q", p, sep, remote, up, ok, topic)
			}
			if got, want := p.OriginalTopic(remote), p.OriginalTopic(topic); got != want {
				t.Fatalf("%T sep %q: OriginalTopic(%q) = %q, OriginalTopic(%q) = %q", p, sep, remote, got, topic, want)
			}
			if !policy.IsCycle(p, alias, remote) {
				t.Fatalf("%T sep %q: IsCycle(target %q, %q) = false", p, sep, alias, remote)
			}
			if p.IsHeartbeatsTopic(remote) != p.IsHeartbeatsTopic(topic) {
				t.Fatalf("%T sep %q: IsHeartbeatsTopic differs for %q and %q", p, sep, remote, topic)
			}
		}
	})
}
