package main

import (
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/mirror"
)

// TestStoppedConnectorWorkerIDSameOnEveryMember: with the flow STOPPED no
// member holds the singleton duties, and each member named itself as the
// connector's worker_id (two members of one flow answered
// connector.worker_id 127.0.0.1:A and 127.0.0.1:B for the same flow), so
// the answer depended on which member a Kubernetes Service picked. Every
// member must name the same worker: the owner of slot 0 (the member that
// holds the singleton duties when the flow runs).
func TestStoppedConnectorWorkerIDSameOnEveryMember(t *testing.T) {
	t.Parallel()
	bases, _ := twoRunners(t)
	status := func(base string) flowDoc {
		var d flowDoc
		getJSON(t, base+"/connectors/src-%3Edst/status", &d)
		return d
	}
	for _, base := range bases {
		eventually(t, base+" sees both members", func() string {
			if d := status(base); len(d.Members) != 2 || d.Connector.State != mirror.StateRunning {
				return fmt.Sprintf("%d members, %s", len(d.Members), d.Connector.State)
			}
			return ""
		})
	}
	if code, body := put(t, bases[1]+"/connectors/src-%3Edst/stop"); code != http.StatusNoContent {
		t.Fatalf("PUT stop: HTTP %d %s", code, body)
	}
	for _, base := range bases {
		eventually(t, base+" shows the flow STOPPED", func() string {
			d := status(base)
			for _, m := range d.Members {
				if m.AppliedState != mirror.TargetStopped {
					return fmt.Sprintf("member %s applied %s", m.WorkerID, m.AppliedState)
				}
			}
			if d.Connector.State != mirror.StateStopped || len(d.Members) != 2 {
				return fmt.Sprintf("%s, %d members", d.Connector.State, len(d.Members))
			}
			return ""
		})
	}
	eventually(t, "every member names the same connector worker", func() string {
		a, b := status(bases[0]), status(bases[1])
		slot0 := a.Tasks[0].WorkerID
		if a.Connector.WorkerID != b.Connector.WorkerID || a.Connector.WorkerID != slot0 {
			return fmt.Sprintf("%s answers worker_id %q, %s answers %q; slot 0 is on %q", bases[0], a.Connector.WorkerID, bases[1], b.Connector.WorkerID, slot0)
		}
		return ""
	})
}

// TestTasksMaxRollingViewSameOnEveryMember: during a rolling change of
// tasks.max (4 -> 6), the member started last with 6 owns the 6 slots and
// the two older members (4) own nothing and wait. Their answers listed
// only 4 tasks, so the partitions of slots 4 and 5 vanished from their
// GET /connectors/{flow}/status, /tasks and /offsets (with 8 partitions:
// offsets of partitions [0 1 2 3 6 7] from the old members, all 8 from
// the new one), and their lag left those slots out. Every member must
// list the slots of the newest configuration, as the group's leader
// assigns them.
func TestTasksMaxRollingViewSameOnEveryMember(t *testing.T) {
	t.Parallel()
	src := fakeCluster(t, "src")
	dst := fakeCluster(t, "dst", kfake.GroupMinSessionTimeout(500*time.Millisecond))
	const parts = 8
	if err := src.CreateTopic("orders", parts, nil); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(src.ListenAddrs()...), kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	for p := range int32(parts) {
		if err := cl.ProduceSync(t.Context(), &kgo.Record{Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	props := func(tasks int) string {
		return writeProps(t, fmt.Sprintf("clusters = src, dst\nsrc.bootstrap.servers = %s\ndst.bootstrap.servers = %s\nsrc->dst.enabled = true\nsrc->dst.topics = orders\n"+
			"tasks.max = %d\nemit.heartbeats.enabled = false\nsrc->dst.emit.checkpoints.enabled = false\n", src.ListenAddrs()[0], dst.ListenAddrs()[0], tasks))
	}
	old := props(4)
	var bases []string
	for range 2 {
		b, _, _, _ := started(t, "-config", old, "-status-interval", "200ms", "-log-level", "warn")
		bases = append(bases, b)
	}
	for _, base := range bases {
		eventually(t, base+" sees both old members with every offset", func() string {
			var d flowDoc
			getJSON(t, base+"/connectors/src-%3Edst/status", &d)
			var o offsetsDoc
			getJSON(t, base+"/connectors/src-%3Edst/offsets", &o)
			if len(d.Members) != 2 || len(o.Offsets) != parts {
				return fmt.Sprintf("%d members, %d offsets", len(d.Members), len(o.Offsets))
			}
			return ""
		})
	}
	time.Sleep(10 * time.Millisecond) // the new member starts last
	newBase, _, _, _ := started(t, "-config", props(6), "-status-interval", "200ms", "-log-level", "warn")
	eventually(t, "the new member owns the 6 slots", func() string {
		var d flowDoc
		getJSON(t, newBase+"/connectors/src-%3Edst/status", &d)
		if len(d.Tasks) != 6 || len(d.Members) != 3 {
			return fmt.Sprintf("%d tasks, %d members", len(d.Tasks), len(d.Members))
		}
		for _, tk := range d.Tasks {
			if tk.WorkerID != strings.TrimPrefix(newBase, "http://") || tk.State != mirror.StateRunning {
				return fmt.Sprintf("task %d %s on %q", tk.ID, tk.State, tk.WorkerID)
			}
		}
		return ""
	})
	for _, base := range append(bases, newBase) {
		eventually(t, base+" lists the newest configuration's 6 tasks and every partition", func() string {
			var d flowDoc
			getJSON(t, base+"/connectors/src-%3Edst/status", &d)
			var o offsetsDoc
			getJSON(t, base+"/connectors/src-%3Edst/offsets", &o)
			var got []int32
			for _, e := range o.Offsets {
				got = append(got, e.Partition.Partition)
			}
			slices.Sort(got)
			var tasks []taskConfigDoc
			getJSON(t, base+"/connectors/src-%3Edst/tasks", &tasks)
			if len(d.Tasks) != 6 || len(tasks) != 6 || len(got) != parts {
				return fmt.Sprintf("status lists %d tasks, /tasks %d, /offsets partitions %v", len(d.Tasks), len(tasks), got)
			}
			return ""
		})
	}
}

// TestStoppedHandOverNeverShowsLagZero: with the flow STOPPED and records
// produced since, every partition has a lag; when a member leaves, the
// member taking its slots over showed them with lag 0 (not null, not
// unknown) until it had listed the source's end offsets: "lag never
// hides" says never 0.
func TestStoppedHandOverNeverShowsLagZero(t *testing.T) {
	t.Parallel()
	src := fakeCluster(t, "src")
	dst := fakeCluster(t, "dst", kfake.GroupMinSessionTimeout(500*time.Millisecond))
	if err := src.CreateTopic("orders", 8, nil); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(src.ListenAddrs()...), kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produce := func() {
		for p := range int32(8) {
			if err := cl.ProduceSync(t.Context(), &kgo.Record{Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce()
	cfg := writeProps(t, fmt.Sprintf("clusters = src, dst\nsrc.bootstrap.servers = %s\ndst.bootstrap.servers = %s\nsrc->dst.enabled = true\nsrc->dst.topics = orders\n"+
		"tasks.max = 4\nemit.heartbeats.enabled = false\nsrc->dst.emit.checkpoints.enabled = false\n", src.ListenAddrs()[0], dst.ListenAddrs()[0]))
	stay, _, _, _ := started(t, "-config", cfg, "-status-interval", "200ms", "-log-level", "warn")
	_, _, cancel, wait := started(t, "-config", cfg, "-status-interval", "200ms", "-log-level", "warn")
	status := func(base string) flowDoc {
		var d flowDoc
		getJSON(t, base+"/connectors/src-%3Edst/status", &d)
		return d
	}
	eventually(t, "both members replicate every record", func() string {
		d := status(stay)
		if len(d.Members) != 2 || d.Records != 8 || d.Lag == nil || *d.Lag != 0 {
			return fmt.Sprintf("%d members, %d records, lag %v", len(d.Members), d.Records, d.Lag)
		}
		return ""
	})
	if code, body := put(t, stay+"/connectors/src-%3Edst/stop"); code != http.StatusNoContent {
		t.Fatalf("PUT stop: HTTP %d %s", code, body)
	}
	eventually(t, "both members STOPPED", func() string {
		d := status(stay)
		for _, m := range d.Members {
			if m.AppliedState != mirror.TargetStopped {
				return fmt.Sprintf("member %s applied %s", m.WorkerID, m.AppliedState)
			}
		}
		if len(d.Members) != 2 {
			return fmt.Sprintf("%d members", len(d.Members))
		}
		return ""
	})
	produce() // every partition now lags by one record
	eventually(t, "every partition lags by 1", func() string {
		d := status(stay)
		if d.Lag == nil || *d.Lag != 8 {
			return fmt.Sprintf("lag %v", d.Lag)
		}
		return ""
	})
	self := strings.TrimPrefix(stay, "http://")
	cancel()
	done := make(chan error, 1)
	go func() { done <- wait() }()
	var bad []string
	deadline := time.Now().Add(liveness)
	for {
		d := status(stay)
		owned := 0
		for _, tk := range d.Tasks {
			if tk.WorkerID != self {
				continue
			}
			owned++
			if len(tk.Partitions) == 0 && tk.Lag != nil && *tk.Lag == 0 {
				bad = append(bad, fmt.Sprintf("task %d owned, no partition, lag 0", tk.ID))
			}
			for _, p := range tk.Partitions {
				if p.Lag != nil && *p.Lag == 0 {
					bad = append(bad, fmt.Sprintf("task %d partition %d lag 0", tk.ID, p.Partition))
				}
			}
		}
		if owned == 4 && len(d.Members) == 1 && d.Lag != nil && *d.Lag == 8 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the staying member did not take every slot over with lag 8 within %s: %d owned, lag %v", liveness, owned, d.Lag)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		t.Errorf("while taking the slots over, the STOPPED flow showed %d lag-0 samples, e.g. %v", len(bad), slices.Compact(bad))
	}
}
