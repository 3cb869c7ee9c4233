package mirror

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// valueForBatch returns a value of incompressible bytes whose keyless,
// headerless record is exactly size bytes as a one-record batch.
func valueForBatch(t *testing.T, size int64, seed byte) []byte {
	t.Helper()
	for n := int(size) - 80; n < int(size); n++ {
		if recordBatchSize(&kgo.Record{Value: make([]byte, n)}) == size {
			return randomBytes(n, seed)
		}
	}
	t.Fatalf("no value length gives a %d-byte batch", size)
	return nil
}

// TestProvenanceHeaderOverCopiedLimitAdvice (regression): a source topic
// with max.message.bytes=4000 holds a record of exactly 4000 bytes as a
// batch; config sync copies 4000 to the remote topic, and the provenance
// header (26 bytes) makes the copy 4026. The error told the operator to
// "raise that setting", the remote topic's: config sync set it back to
// 4000 within one sync interval (the remote topic's override read 4000
// again), so the next such record failed the same way. The error now says
// the header pushed it over, and to raise the source topic's limit (or
// exclude the key from config sync); doing so copies every record.
func TestProvenanceHeaderOverCopiedLimitAdvice(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst")
	topic := p.Topic("atlimit")
	remote := p.Source.Alias + "." + topic
	limit := "4000"
	testcluster.CreateTopic(t, &p.Source, topic, 1, map[string]*string{"max.message.bytes": &limit})
	a, big, c := []byte("a"), valueForBatch(t, 4000, 7), []byte("c")
	cl := testcluster.Client(t, &p.Source, kgo.ProducerBatchCompression(kgo.NoCompression()))
	for _, v := range [][]byte{a, big, c} {
		if err := cl.ProduceSync(t.Context(), &kgo.Record{Topic: topic, Value: v}).FirstErr(); err != nil {
			t.Fatalf("producing %d bytes: %v", len(v), err)
		}
	}
	m, _ := runMirror(t, recoveryOpts(p, recoveryFlow(p, topic))...)
	testcluster.Eventually(t, 30*time.Second, "partition 0 FAILED at offset 1", func() (bool, string) {
		ps := partStatus(m, 0)
		return ps.State == StateFailed && ps.Replicated == 1, fmt.Sprintf("%+v", ps)
	})
	ps := partStatus(m, 0)
	for _, want := range []string{
		"the record at offset 1 is 4026 bytes as a record batch, above max.message.bytes of " + remote + " on dst (4000 bytes)",
		"it fits without the 26 bytes of the kmirror-provenance header",
		"raise the source topic's max.message.bytes",
		"exclude max.message.bytes from config sync",
	} {
		if !strings.Contains(ps.Error, want) {
			t.Fatalf("partition 0 error = %q, want it to say %q", ps.Error, want)
		}
	}
	if got, want := targetContents(t, p, remote), wantContents(a); !equalStrings(got, want) {
		t.Fatalf("target holds %v, want exactly %v while FAILED", got, want)
	}
	// The advice followed: the source topic's limit raised. Config sync
	// copies it, the unit reads it and restarts the partition.
	setTopicConfig(t, &p.Source, topic, "max.message.bytes", "8000")
	testcluster.Eventually(t, 30*time.Second, "every record replicated", func() (bool, string) {
		ps := partStatus(m, 0)
		if ps.State == StateFailed {
			m.RestartFailed(p.Source.Alias+"->"+p.Target.Alias, topic, 0)
		}
		return ps.State == StateRunning && ps.Replicated == 3, fmt.Sprintf("%+v", ps)
	})
	if got, want := targetContents(t, p, remote), wantContents(a, big, c); !equalStrings(got, want) {
		t.Fatalf("target holds %v, want exactly %v", got, want)
	}
	if got := describeOverrides(t, testcluster.Admin(t, &p.Target), remote)["max.message.bytes"]; got != "8000" {
		t.Fatalf("remote topic's max.message.bytes = %q, want the source's 8000", got)
	}
}
