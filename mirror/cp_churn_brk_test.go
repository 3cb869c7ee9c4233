package mirror

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/checkpoint"
	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/policy"
)

// cpTopicChurn: the flow checkpoints an idle group (gIdle) and a moving
// one (gMove); the target's checkpoints topic is deleted (and re-created
// when recreate is set) while it runs. Both groups' checkpoints must be in
// the topic again within a few emission intervals: gMove's new commit and
// gIdle's unchanged one (the topic lost it).
func cpTopicChurn(t *testing.T, recreate bool) { cpTopicChurnRefused(t, recreate, false) }

// cpTopicChurnRefused is cpTopicChurn; with refuse the target refuses
// creating the checkpoints topic for a few seconds after the deletion,
// during which gMove's status must say why its checkpoints are not
// written.
func cpTopicChurnRefused(t *testing.T, recreate, refuse bool) {
	p := testcluster.New(t, "src", "dst")
	// The checkpoints topic is this test's own (named after its source
	// alias): it runs on real brokers too, except the refused creation,
	// which needs kfake's control hooks.
	if refuse && p.Target.Fake == nil {
		t.Skip("refuses CreateTopics with kfake's control hooks, absent on real brokers")
	}
	orders := p.Topic("orders")
	gIdle, gMove := p.Group("idle"), p.Group("move")
	testcluster.CreateTopic(t, &p.Source, orders, 1, nil)
	produceN(t, &p.Source, orders, 0, 100)
	trCommit(t, &p.Source, gIdle, orders, map[int32]int64{0: 40})
	trCommit(t, &p.Source, gMove, orders, map[int32]int64{0: 50})
	remote := p.Source.Alias + "." + orders
	fc := trFlow(p)
	fc.SyncGroupOffsets = false
	m, _ := trStart(t, p, fc)
	kIdle, kMove := gIdle+"/"+remote+"/0", gMove+"/"+remote+"/0"
	testcluster.Eventually(t, 30*time.Second, "first checkpoints", func() (bool, string) {
		cps := tryCheckpoints(p)
		return cps[kIdle].DownstreamOffset == 40 && cps[kMove].DownstreamOffset == 50, fmt.Sprintf("%+v", cps)
	})
	pol, _ := policy.NewDefault()
	cpTopic := pol.CheckpointsTopic(p.Source.Alias)
	adm := testcluster.Admin(t, &p.Target)
	var refusing atomic.Bool
	if refuse {
		refusing.Store(true)
		p.Target.Fake.ControlKey(int16(kmsg.CreateTopics), func(kreq kmsg.Request) (kmsg.Response, error, bool) {
			p.Target.Fake.KeepControl()
			req := kreq.(*kmsg.CreateTopicsRequest)
			if !refusing.Load() || len(req.Topics) != 1 || req.Topics[0].Topic != cpTopic {
				return nil, nil, false
			}
			resp := req.ResponseKind().(*kmsg.CreateTopicsResponse)
			rt := kmsg.NewCreateTopicsResponseTopic()
			rt.Topic, rt.ErrorCode = cpTopic, kerr.PolicyViolation.Code
			resp.Topics = append(resp.Topics, rt)
			return resp, nil, true
		})
	}
	if _, err := adm.DeleteTopics(context.Background(), cpTopic); err != nil {
		t.Fatal(err)
	}
	if recreate {
		compact := "compact"
		testcluster.CreateTopic(t, &p.Target, cpTopic, 1, map[string]*string{"cleanup.policy": &compact})
	}
	t0 := time.Now()
	trCommit(t, &p.Source, gMove, orders, map[int32]int64{0: 70})
	if refuse {
		testcluster.Eventually(t, 30*time.Second, "the status says why no checkpoint is written", func() (bool, string) {
			gs, _ := groupStatusOf(m, 0, gMove)
			return strings.Contains(gs.Reason, cpTopic) && strings.Contains(gs.Reason, "POLICY_VIOLATION"), fmt.Sprintf("%+v", gs)
		})
		gs, _ := groupStatusOf(m, 0, gMove)
		t.Logf("status while refused: %q", gs.Reason)
		refusing.Store(false)
	}
	testcluster.Eventually(t, 60*time.Second, "checkpoints written again", func() (bool, string) {
		tds, err := adm.ListTopics(context.Background(), cpTopic)
		if err != nil || tds[cpTopic].Err != nil {
			gs, _ := groupStatusOf(m, 0, gMove)
			return false, fmt.Sprintf("topic: %v %v; %s: %+v; flow error %q", err, tds[cpTopic].Err, gMove, gs, m.Status().Flows[0].Error)
		}
		cps := tryCheckpoints(p)
		gs, _ := groupStatusOf(m, 0, gMove)
		return cps[kIdle].DownstreamOffset == 40 && cps[kMove].DownstreamOffset == 70,
			fmt.Sprintf("%+v; %s: %+v", cps, gMove, gs)
	})
	t.Logf("checkpoints resumed %v after the deletion", time.Since(t0))
}

// tryCheckpoints is readCheckpoints that returns nothing when the topic
// cannot be read (deleted).
func tryCheckpoints(p *testcluster.Pair) map[string]checkpoint.Checkpoint {
	pol, _ := policy.NewDefault()
	out := map[string]checkpoint.Checkpoint{}
	recs, err := testcluster.ReadTopic(context.Background(), p.Target.Opts(), pol.CheckpointsTopic(p.Source.Alias), false)
	if err != nil {
		return out
	}
	for _, r := range recs[0] {
		if cp, err := checkpoint.DecodeCheckpoint(r.Key, r.Value); err == nil {
			out[fmt.Sprintf("%s/%s/%d", cp.Group, cp.Topic, cp.Partition)] = cp
		}
	}
	return out
}

func TestCheckpointsTopicDeletedCreatedAgain(t *testing.T) {
	t.Parallel()
	cpTopicChurn(t, false)
}

func TestCheckpointsTopicRecreated(t *testing.T) {
	t.Parallel()
	cpTopicChurn(t, true)
}

func TestCheckpointsTopicDeletedStatusSaysWhy(t *testing.T) {
	t.Parallel()
	cpTopicChurnRefused(t, false, true)
}
