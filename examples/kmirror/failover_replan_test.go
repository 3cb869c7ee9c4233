package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/ensuretopic"
	"github.com/kmirror/kmirror/internal/statustopic"
)

// TestFailoverReplanRefusesAll: failover plans, writes STOPPED, waits for
// the members, then plans again from the final checkpoints. Here the
// second plan finds what the first did not: g2 became active on B while
// the flow stopped (a consumer joined it before the only member reported
// STOPPED). README: exit 1 means nothing was committed. failover
// committed g1 (5 on A.orders[0]) and exited 1 "refused"; it must now
// commit neither group, exit 1, name g2's member and say nothing was
// committed, with the flow left STOPPED.
func TestFailoverReplanRefusesAll(t *testing.T) {
	b, err := kfake.NewCluster(kfake.ClusterID("B"), kfake.NumBrokers(1), kfake.GroupMinSessionTimeout(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(b.Close)
	props := filepath.Join(t.TempDir(), "mm2.properties")
	body := fmt.Sprintf("clusters = A, B\nA.bootstrap.servers = 127.0.0.1:%d\nB.bootstrap.servers = %s\nA->B.enabled = true\n",
		freeLoopbackPort(t), b.ListenAddrs()[0]) // A: nothing listens there (unplanned)
	if err := os.WriteFile(props, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, topic := range []string{"A.orders", "A.checkpoints.internal"} {
		if err := b.CreateTopic(topic, 1, nil); err != nil {
			t.Fatal(err)
		}
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(b.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	adm := kadm.NewClient(cl)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for _, g := range []string{"g1", "g2"} {
		cp := checkpoint.Checkpoint{Group: g, Topic: "A.orders", Partition: 0, UpstreamOffset: 5, DownstreamOffset: 5}
		k, _ := cp.Key()
		v, _ := cp.Value()
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "A.checkpoints.internal", Key: k, Value: v,
			Headers: []kgo.RecordHeader{{Key: checkpoint.TranslationHeader, Value: []byte("exact")}}}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ensuretopic.Ensure(ctx, adm, statustopic.Spec("A", "B", -1)); err != nil {
		t.Fatal(err)
	}
	// On STOPPED, before reporting it applied: a consumer of g2 joins on B.
	followMemberThen(t, b.ListenAddrs(), "m1", func() {
		c, err := kgo.NewClient(kgo.SeedBrokers(b.ListenAddrs()...), kgo.ConsumerGroup("g2"), kgo.ConsumeTopics("A.orders"),
			kgo.DisableAutoCommit(), kgo.SessionTimeout(3*time.Second), kgo.HeartbeatInterval(300*time.Millisecond))
		if err != nil {
			t.Error(err)
			return
		}
		t.Cleanup(c.Close)
		pctx, pcancel := context.WithCancel(ctx)
		t.Cleanup(pcancel)
		go func() {
			for pctx.Err() == nil {
				c.PollFetches(pctx)
			}
		}()
		for ctx.Err() == nil {
			if ds, err := adm.DescribeGroups(ctx, "g2"); err == nil && len(ds["g2"].Members) > 0 {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
		t.Error("g2's consumer never joined on B")
	})
	code, out, errOut, _ := runDR(t, failoverMain, "-config", props, "-groups", "g1|g2", "-source-timeout", "500ms", "-wait", "20s", "-json")
	rep := decodeFailover(t, out)
	for _, g := range []string{"g1", "g2"} {
		offs, err := adm.FetchOffsets(ctx, g)
		if err == nil && len(offs) > 0 {
			got := map[string]map[int32]int64{}
			offs.Each(func(o kadm.OffsetResponse) {
				if got[o.Topic] == nil {
					got[o.Topic] = map[int32]int64{}
				}
				got[o.Topic][o.Partition] = o.At
			})
			t.Errorf("failover (exit %d) committed %s on B at %v: exit 1 must mean nothing was committed\n%s\n%s", code, g, got, out, errOut)
		}
	}
	if code != drRefused || rep.TargetState != "RUNNING" || rep.Members == nil || rep.Members.Stopped != 1 {
		t.Errorf("failover: exit %d, target state %q, members %+v; want %d, RUNNING (written back), 1 stopped\n%s\n%s", code, rep.TargetState, rep.Members, drRefused, out, errOut)
	}
	if st, found, err := statustopic.ReadTargetState(ctx, []kgo.Opt{kgo.SeedBrokers(b.ListenAddrs()...)}, "A"); err != nil || !found || st.State != statustopic.Running {
		t.Errorf("after the refusal the flow's target state is %+v (found %t, %v), want RUNNING written back", st, found, err)
	}
	problems := strings.Join(rep.Problems, "\n")
	for _, want := range []string{"group g2: 1 member(s) on the target", "nothing committed; the flow's target state is RUNNING again, as before this run"} {
		if !strings.Contains(problems, want) {
			t.Errorf("failover problems %q: want %q", rep.Problems, want)
		}
	}
	for _, g := range rep.Groups {
		if g.Action == actionCommitted {
			t.Errorf("group %s reported %s", g.Group, g.Action)
		}
	}
}
