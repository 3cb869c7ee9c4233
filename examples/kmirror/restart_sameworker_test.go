package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/mirror"
)

// TestNuRestartOtherMembersWithSameWorkerID: two members with the same
// worker id (the systemd unit's -listen 127.0.0.1:9090 on two hosts). A
// restart sent to one listed no other_members, though the other owned a
// FAILED partition: failedElsewhere told its own slots by worker id. It
// tells them by member id now.
func TestNuRestartOtherMembersWithSameWorkerID(t *testing.T) {
	src := fakeCluster(t, "src")
	dst := fakeCluster(t, "dst", kfake.GroupMinSessionTimeout(500*time.Millisecond))
	if err := src.CreateTopic("orders", 2, nil); err != nil {
		t.Fatal(err)
	}
	const worker = "127.0.0.1:9090"
	fc := mirror.FlowConfig{Source: "src", Target: "dst", Topics: []string{"orders"}, Tasks: 2, DisableHeartbeats: true, DisableCheckpoints: true}
	var ms [2]*mirror.Mirror
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{}, len(ms))
	defer func() {
		cancel()
		for range ms {
			<-done
		}
	}()
	for i := range ms {
		m, err := mirror.New(
			mirror.WithCluster(mirror.ClusterConfig{Alias: "src", Client: []kgo.Opt{kgo.SeedBrokers(src.ListenAddrs()...)}}),
			mirror.WithCluster(mirror.ClusterConfig{Alias: "dst", Client: []kgo.Opt{kgo.SeedBrokers(dst.ListenAddrs()...)}}),
			mirror.WithFlow(fc),
			mirror.WithWorkerID(worker), mirror.WithStatusInterval(200*time.Millisecond))
		if err != nil {
			t.Fatal(err)
		}
		ms[i] = m
		go func() { _ = m.Run(ctx); done <- struct{}{} }()
	}
	h := newHandler(ms[0], http.NotFoundHandler(), time.Minute)
	h.worker, h.flows = worker, []mirror.FlowConfig{fc}
	srv := httptest.NewServer(h)
	defer srv.Close()

	cl, err := kgo.NewClient(kgo.SeedBrokers(src.ListenAddrs()...), kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func() {
		for p := range int32(2) {
			if err := cl.ProduceSync(ctx, &kgo.Record{Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce()
	// The other member's partition, from the first member's view.
	var otherPart int32 = -1
	eventually(t, "each member owns one slot and replicated", func() string {
		for _, cf := range ms[0].ClusterStatus().Flows {
			self, owners := "", map[string]bool{}
			for _, m := range cf.Members {
				if m.Self {
					self = m.MemberID
				}
			}
			for _, ss := range cf.Slots {
				owners[ss.MemberID] = true
				if ss.MemberID != self && ss.MemberID != "" {
					for _, p := range ss.Partitions {
						otherPart = p.Partition
					}
				}
			}
			if len(cf.Members) != 2 || len(owners) != 2 || otherPart < 0 {
				return fmt.Sprintf("%d members, owners %v, other's partition %d", len(cf.Members), owners, otherPart)
			}
			return ""
		}
		return "no flow"
	})
	dst.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "src.orders", Partitions: []int32{otherPart}, Err: kerr.InvalidRecord, Count: 1})
	produce()
	eventually(t, "the other member's partition FAILED in the first member's view", func() string {
		for _, cf := range ms[0].ClusterStatus().Flows {
			for _, ss := range cf.Slots {
				for _, p := range ss.Partitions {
					if p.Partition == otherPart && p.State == mirror.StateFailed {
						return ""
					}
				}
			}
		}
		return "not yet"
	})
	resp, err := http.Post(srv.URL+"/connectors/src-%3Edst/restart?onlyFailed=true", "", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc restartDoc
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || resp.StatusCode != http.StatusAccepted {
		t.Fatalf("POST restart: HTTP %d %v", resp.StatusCode, err)
	}
	want := fmt.Sprintf("[{%s [orders[%d]]}]", worker, otherPart)
	if fmt.Sprint(doc.OtherMembers) != want || doc.Restarted != 0 {
		t.Errorf("POST restart to the member without the FAILED partition: restarted %d, other_members %v, hint %q; want 0 and %s",
			doc.Restarted, doc.OtherMembers, doc.Hint, want)
	}
}
