package mirror

import (
	"strings"
	"testing"
)

// TestBufferMemoryDumpNamesWorkingKey: the effective dump listed the
// replication producer's buffer as A->B.target.producer.buffer.memory
// (and README told users to set that key), but in MM2, and so in
// kmirror's loader, that per-flow key configures the offset-syncs producer
// only: written in the file it is ignored with a warning. The dump must
// name the keys that do set it.
func TestBufferMemoryDumpNamesWorkingKey(t *testing.T) {
	t.Parallel()
	p, err := ParseProperties(strings.NewReader("clusters = A, B\nA.bootstrap.servers = a:9092\nB.bootstrap.servers = b:9092\nA->B.enabled = true\n"+
		"A->B.target.producer.buffer.memory = 67108864\n"), WithLookupEnv(lookupTestEnv))
	if err != nil {
		t.Fatal(err)
	}
	ignored := false
	for _, w := range p.Warnings() {
		if w.Key == "A->B.target.producer.buffer.memory" {
			ignored = true
		}
	}
	if !ignored {
		t.Fatalf("A->B.target.producer.buffer.memory is expected to be ignored with a warning (MM2: offset-syncs producer); warnings %v", p.Warnings())
	}
	var line string
	for _, l := range strings.Split(p.Effective(), "\n") {
		if strings.HasPrefix(l, "A->B.") && strings.Contains(l, "buffer.memory") {
			line = l
		}
	}
	if !strings.Contains(line, "B.producer.buffer.memory") || !strings.Contains(line, "A->B.producer.override.buffer.memory") {
		t.Errorf("the dump's buffer.memory line does not name the keys that set it (B.producer.buffer.memory, A->B.producer.override.buffer.memory): %q", line)
	}
}
