package mirror

import (
	"strings"
	"testing"
)

// TestCaseSensitiveEnumsAsMM2: kmirror read use.defaults.from and
// offset-syncs.topic.location in any case, MM2 does not.
// DefaultConfigPropertyFilter compares use.defaults.from with "source"
// case-sensitively, so SOURCE means target in MM2, while kmirror took the
// source's defaults: topic configs differed silently. MM2 validates
// offset-syncs.topic.location with a case-sensitive ValidString, so TARGET
// stops its connectors, while kmirror ran without a word. Now SOURCE is
// target with a warning, and TARGET warns that MM2 refuses it.
func TestCaseSensitiveEnumsAsMM2(t *testing.T) {
	t.Parallel()
	const head = "clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\nA->B.enabled = true\n"
	p, err := ParseProperties(strings.NewReader(head+
		"A->B.use.defaults.from = SOURCE\nA->B.offset-syncs.topic.location = TARGET\n"), WithLookupEnv(lookupTestEnv))
	if err != nil {
		t.Fatal(err)
	}
	f := p.Flows()[0]
	if f.UseDefaultsFromSource {
		t.Errorf("use.defaults.from = SOURCE: kmirror uses the source's defaults; MM2 (equals(\"source\")) uses the target's")
	}
	if !f.OffsetSyncsTopicLocationTarget {
		t.Errorf("offset-syncs.topic.location = TARGET: kmirror still reads it as target (with a warning)")
	}
	want := map[string]string{
		"A->B.use.defaults.from":           "line 5: A->B.use.defaults.from: MM2 compares use.defaults.from with source case-sensitively, so SOURCE means target there (topic configs left at their default take the target's defaults); kmirror does the same: write source to use the source's defaults",
		"A->B.offset-syncs.topic.location": "line 6: A->B.offset-syncs.topic.location: MM2 refuses TARGET (its values are case-sensitive: source, target; ConfigException, the flow's connectors do not start); kmirror reads it as target: write target",
	}
	got := map[string]string{}
	for _, w := range p.Warnings() {
		if _, ok := want[w.Key]; ok {
			got[w.Key] = w.String()
		}
	}
	for k, msg := range want {
		if got[k] != msg {
			t.Errorf("%s: warning %q, want %q", k, got[k], msg)
		}
	}
	// Lower case (MM2's spelling) draws no warning and keeps its meaning.
	p, err = ParseProperties(strings.NewReader(head+
		"A->B.use.defaults.from = source\nA->B.offset-syncs.topic.location = target\n"), WithLookupEnv(lookupTestEnv))
	if err != nil {
		t.Fatal(err)
	}
	if f := p.Flows()[0]; !f.UseDefaultsFromSource || !f.OffsetSyncsTopicLocationTarget {
		t.Errorf("lower-case values: UseDefaultsFromSource=%v OffsetSyncsTopicLocationTarget=%v, want both true", f.UseDefaultsFromSource, f.OffsetSyncsTopicLocationTarget)
	}
	for _, w := range p.Warnings() {
		if strings.Contains(w.Message, "case-sensitive") {
			t.Errorf("unexpected warning %v", w)
		}
	}
}
