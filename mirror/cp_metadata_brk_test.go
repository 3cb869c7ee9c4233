package mirror

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"

	"github.com/kmirror/kmirror/internal/testcluster"
)

// TestBrk1207CheckpointNotEncodableStatusSaysWhy: a source group committed
// with metadata longer than a checkpoint record can hold (32767 bytes; the
// source's offset.metadata.max.bytes allowed it). No checkpoint can be
// written for it, so TranslateOffsets on the target knows nothing of the
// group; its status must say why, not "writing checkpoints ...: failed"
// alone (the target accepted everything: nothing else explains it).
func TestBrk1207CheckpointNotEncodableStatusSaysWhy(t *testing.T) {
	t.Parallel()
	// On kfake also with real brokers configured: Kafka refuses such a
	// commit (it closes the connection; offset.metadata.max.bytes is 4096
	// by default), kfake keeps it.
	p := testcluster.NewFakePair(t, "src", "dst")
	topic := p.Topic("md")
	testcluster.CreateTopic(t, &p.Source, topic, 1, nil)
	produceN(t, &p.Source, topic, 0, 10)
	g := p.Group("g")
	var os kadm.Offsets
	os.Add(kadm.Offset{Topic: topic, Partition: 0, At: 5, LeaderEpoch: -1, Metadata: strings.Repeat("x", 40000)})
	if err := testcluster.Admin(t, &p.Source).CommitAllOffsets(context.Background(), g, os); err != nil {
		t.Fatal(err)
	}
	fc := trFlow(p)
	fc.SyncGroupOffsets = false
	m, _ := trStart(t, p, fc)
	testcluster.Eventually(t, 30*time.Second, "the group's status names the checkpoint write failure", func() (bool, string) {
		gs, _ := groupStatusOf(m, 0, g)
		return strings.Contains(gs.Reason, "writing checkpoints"), fmt.Sprintf("%+v", gs)
	})
	gs, _ := groupStatusOf(m, 0, g)
	if !strings.Contains(gs.Reason, "not encodable") || !strings.Contains(gs.Reason, "32767") {
		t.Errorf("reason %q does not say why the checkpoint was not written (metadata over 32767 bytes)", gs.Reason)
	}
	if gs.SafeToSwitch {
		t.Errorf("SafeToSwitch without a checkpoint: %+v", gs)
	}
}
