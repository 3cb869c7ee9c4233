package mirrorprom_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/testcluster"
	"github.com/kmirror/kmirror/mirror"
	"github.com/kmirror/kmirror/mirror/mirrorprom"
)

// TestHeartbeatAgeWhenNoneWritten: kmirror_heartbeat_age_seconds was
// absent until the flow's first heartbeat, so a flow whose target refused
// every heartbeat from the start (a missing WRITE ACL, a heartbeats topic
// it may not create) had no series, and KmirrorHeartbeatStale
// (kmirror_heartbeat_age_seconds > 300) never fired; a restart while the
// heartbeats kept failing resolved the alert. With no heartbeat written
// and heartbeats failing, the gauge is the seconds since the first
// failure (Status: HeartbeatErrorSince); once one is written, the seconds
// since it.
func TestHeartbeatAgeWhenNoneWritten(t *testing.T) {
	p := testcluster.New(t, "src", "dst")
	if p.Target.Fake == nil {
		t.Skip("needs kfake's fault injection")
	}
	fault := p.Target.Fake.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "heartbeats", Err: kerr.TopicAuthorizationFailed, Count: -1})
	reg := prometheus.NewRegistry()
	m, err := mirror.New(mirror.WithCluster(mirror.ClusterConfig{Alias: p.Source.Alias, Client: p.Source.Opts()}),
		mirror.WithCluster(mirror.ClusterConfig{Alias: p.Target.Alias, Client: p.Target.Opts()}),
		mirror.WithFlow(mirror.FlowConfig{Source: p.Source.Alias, Target: p.Target.Alias, Disabled: true,
			EmitHeartbeatsInterval: 100 * time.Millisecond, AdminTimeout: 10 * time.Second}),
		mirrorprom.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- m.Run(context.Background()) }()
	defer func() {
		m.Close()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}()
	age := "kmirror_heartbeat_age_seconds{source=" + p.Source.Alias + ",target=" + p.Target.Alias + "}"
	testcluster.Eventually(t, 30*time.Second, "the refused heartbeats in the status and the age gauge", func() (bool, string) {
		fs := m.Status().Flows[0]
		v, ok := samples(t, reg)[age]
		return fs.HeartbeatError != "" && !fs.HeartbeatErrorSince.IsZero() && ok,
			fmt.Sprintf("last %v error %q since %v; gauge %v (present %t)", fs.LastHeartbeat, fs.HeartbeatError, fs.HeartbeatErrorSince, v, ok)
	})
	fs := m.Status().Flows[0]
	if !fs.LastHeartbeat.IsZero() || fs.HeartbeatErrorSince.After(time.Now()) {
		t.Errorf("last heartbeat %v, failing since %v: want none written, a failure time in the past", fs.LastHeartbeat, fs.HeartbeatErrorSince)
	}
	if v := samples(t, reg)[age]; v < 0 {
		t.Errorf("%s = %v, want the seconds since the first failure", age, v)
	}
	fault.Remove()
	testcluster.Eventually(t, 30*time.Second, "a heartbeat written clears the error", func() (bool, string) {
		fs := m.Status().Flows[0]
		_, ok := samples(t, reg)[age]
		return !fs.LastHeartbeat.IsZero() && fs.HeartbeatError == "" && fs.HeartbeatErrorSince.IsZero() && ok,
			fmt.Sprintf("last %v error %q since %v; gauge present %t", fs.LastHeartbeat, fs.HeartbeatError, fs.HeartbeatErrorSince, ok)
	})
}
