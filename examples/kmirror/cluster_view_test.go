package main

import (
	"fmt"
	"net/http"
	"testing"

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
