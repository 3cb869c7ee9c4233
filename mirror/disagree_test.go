package mirror

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kmirror/kmirror/internal/kread"
	"github.com/kmirror/kmirror/internal/statustopic"
	"github.com/kmirror/kmirror/internal/testcluster"
)

// lockedBuffer is a log sink for several goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestMembersDisagreeReported (issue 20 part 3): two members whose
// effective settings differ on one key and whose secret differs report
// exactly that key, with each value's worker, in ClusterStatus
// (Mismatches, Warnings), in each one's Status (Warnings) and in the
// kmirror_config_mismatch_keys count, and log one WARN per change; the
// secret's value never reaches the status topic (masked before it leaves
// the process) and its change is not a mismatch.
func TestMembersDisagreeReported(t *testing.T) {
	t.Parallel()
	p := testcluster.New(t, "src", "dst", kfake.GroupMinSessionTimeout(500*time.Millisecond))
	orders := p.Topic("orders")
	testcluster.CreateTopic(t, &p.Source, orders, 2, nil)
	fc := fastFlow(p)
	fc.Tasks = 2
	fc.SessionTimeout, fc.HeartbeatInterval = 3*time.Second, 300*time.Millisecond
	settings := func(tasks, password string) map[string]string {
		return map[string]string{fc.Name() + ".tasks.max": "2", fc.Name() + ".sync.topic.configs.enabled": tasks,
			p.Target.Alias + ".sasl.jaas.config": `org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="` + password + `";`,
			// A new user's try (stop 38): a "user:password" credential
			// reached the status topic unmasked.
			p.Target.Alias + ".basic.auth.user.info": "u:" + password}
	}
	var logs [2]lockedBuffer
	start := func(i int, w, sync, password string) *Mirror {
		m, _ := runMirror(t, append(clusterOpts(p), WithFlow(fc), WithWorkerID(w), WithStatusInterval(200*time.Millisecond),
			WithFlowSettings(fc.Name(), settings(sync, password)), WithLogger(slog.New(slog.NewTextHandler(&logs[i], nil))))...)
		return m
	}
	m1 := start(0, "w1:8083", "true", "hunter2")
	m2 := start(1, "w2:8083", "false", "hunter3")
	key := fc.Name() + ".sync.topic.configs.enabled"
	wantMismatch := []ConfigMismatch{{Key: key, Values: map[string][]string{"true": {"w1:8083"}, "false": {"w2:8083"}}}}
	wantWarning := fmt.Sprintf("flow %s: members disagree on 1 configuration key(s): %s: false on w2:8083; true on w1:8083; give every member the same configuration", fc.Name(), key)
	testcluster.Eventually(t, 30*time.Second, "both members report the one key that differs", func() (bool, string) {
		for _, m := range []*Mirror{m1, m2} {
			cf := m.ClusterStatus().Flows[0]
			if len(cf.Members) != 2 || cmp.Diff(wantMismatch, cf.Mismatches) != "" || cmp.Diff([]string{wantWarning}, cf.Warnings) != "" {
				return false, fmt.Sprintf("%d members, mismatches %+v, warnings %q", len(cf.Members), cf.Mismatches, cf.Warnings)
			}
			if fs := m.Status().Flows[0]; cmp.Diff([]string{wantWarning}, fs.Warnings) != "" {
				return false, fmt.Sprintf("Status warnings %q", fs.Warnings)
			}
		}
		return true, ""
	})
	time.Sleep(time.Second) // several publication ticks: still one WARN each
	for i := range logs {
		if n := strings.Count(logs[i].String(), `msg="members disagree"`); n != 1 {
			t.Errorf("member %d logged %d WARN lines about the disagreement, want 1:\n%s", i+1, n, logs[i].String())
		}
	}
	recs, err := kread.ReadToEnd(context.Background(), p.Target.Opts(), statustopic.Topic(p.Source.Alias), kread.Options{})
	if err != nil {
		t.Fatal(err)
	}
	hidden := 0
	for _, r := range recs {
		if bytes.Contains(r.Value, []byte("hunter")) {
			t.Fatalf("the status topic holds a password: %s = %s", r.Key, r.Value)
		}
		if bytes.Contains(r.Value, []byte(`"`+p.Target.Alias+`.sasl.jaas.config":"[hidden]"`)) {
			hidden++
		}
	}
	if hidden == 0 {
		t.Fatalf("no member record shows the JAAS config as [hidden] among %d records", len(recs))
	}
}

// TestEnabledWhileSingletonDisabled (issue 20 parts 3 and 5): members
// whose files disagree on <flow>.enabled. `enabled` is an epoch key: the
// member started last decides. With the enabled member newer, it takes
// every slot and replicates, and the disabled one says it waits. With the
// disabled member newer, it holds slot 0 (heartbeats only) and the enabled
// one does not look healthy and idle with nothing said: it says it waits
// for the member holding slot 0, and every member's ClusterStatus (and
// Status, /readyz) warns naming that member.
func TestEnabledWhileSingletonDisabled(t *testing.T) {
	t.Parallel()
	for _, disabledFirst := range []bool{true, false} {
		t.Run(fmt.Sprintf("disabled_first=%t", disabledFirst), func(t *testing.T) {
			t.Parallel()
			p := testcluster.New(t, "src", "dst", kfake.GroupMinSessionTimeout(500*time.Millisecond))
			orders := p.Topic("orders")
			testcluster.CreateTopic(t, &p.Source, orders, 2, nil)
			produceN(t, &p.Source, orders, 0, 10)
			fc := fastFlow(p)
			fc.Tasks = 2
			fc.SessionTimeout, fc.HeartbeatInterval = 3*time.Second, 300*time.Millisecond
			off := fc
			off.Disabled = true
			first, second := off, fc
			if !disabledFirst {
				first, second = fc, off
			}
			m1, _ := runMirror(t, append(clusterOpts(p), WithFlow(first), WithWorkerID("w1:8083"), WithStatusInterval(200*time.Millisecond))...)
			testcluster.Eventually(t, 30*time.Second, "w1 holds slot 0", func() (bool, string) {
				return m1.Status().Flows[0].Member.Singleton, ""
			})
			m2, _ := runMirror(t, append(clusterOpts(p), WithFlow(second), WithWorkerID("w2:8083"), WithStatusInterval(200*time.Millisecond))...)
			if disabledFirst {
				testcluster.Eventually(t, 60*time.Second, "the newer, enabled member replicates; the disabled one waits", func() (bool, string) {
					a, b := m1.Status().Flows[0], m2.Status().Flows[0]
					ok := len(a.Member.Slots) == 0 && strings.HasPrefix(a.Member.Waiting, "the newest member(s) (w2:8083) replicate the flow and hold its slots") &&
						slices.Equal(b.Member.Slots, []int32{0, 1}) && b.Member.Waiting == "" && b.Records == 10
					return ok, fmt.Sprintf("w1 %v %q; w2 %v %q %d records", a.Member.Slots, a.Member.Waiting, b.Member.Slots, b.Member.Waiting, b.Records)
				})
				return
			}
			wantSingleton := fmt.Sprintf("flow %s: the member holding slot 0 (w2:8083) has the flow disabled (%s.enabled=false, heartbeats only): "+
				"it creates no remote topic, syncs no topic config and emits no checkpoint, so the members that replicate (w1:8083) copy nothing of topics whose remote topic does not exist; "+
				"set %s.enabled the same on every member", fc.Name(), fc.Name(), fc.Name())
			testcluster.Eventually(t, 60*time.Second, "the enabled member says why it replicates nothing", func() (bool, string) {
				a, b := m1.Status().Flows[0], m2.Status().Flows[0]
				if len(a.Member.Slots) != 0 || !strings.HasPrefix(a.Member.Waiting, "the newest member(s) (w2:8083) have the flow disabled (heartbeats only) and hold its slots") ||
					!slices.Equal(b.Member.Slots, []int32{0}) {
					return false, fmt.Sprintf("w1 %v %q; w2 %v %q", a.Member.Slots, a.Member.Waiting, b.Member.Slots, b.Member.Waiting)
				}
				for _, m := range []*Mirror{m1, m2} {
					if !slices.Contains(m.ClusterStatus().Flows[0].Warnings, wantSingleton) || !slices.Contains(m.Status().Flows[0].Warnings, wantSingleton) {
						return false, fmt.Sprintf("warnings %q", m.ClusterStatus().Flows[0].Warnings)
					}
				}
				return true, ""
			})
		})
	}
}
