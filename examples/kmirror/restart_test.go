package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/mirror"
)

func post(t *testing.T, url string) (int, []byte) {
	t.Helper()
	resp, err := http.Post(url, "application/json", nil)
	if err != nil {
		t.Fatalf("POST %s: %v", url, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("POST %s: reading body: %v", url, err)
	}
	return resp.StatusCode, body
}

// TestRestartFailedEndpoint (issue 15 case 5): a partition stopped by an
// error that is the record's own (INVALID_RECORD, injected once) stays
// FAILED; POST /connectors/{flow}/restart?onlyFailed=true&topic=&partition=
// (Connect's KIP-745 restart) answers 202 with the partition it restarted,
// and every record then arrives. Bad requests are 400 and an unknown flow
// 404.
func TestRestartFailedEndpoint(t *testing.T) {
	t.Parallel()
	src := fakeCluster(t, "src")
	dst := fakeCluster(t, "dst")
	if err := src.CreateTopic("orders", 2, nil); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "mm2.properties")
	props := fmt.Sprintf("clusters = src, dst\nsrc.bootstrap.servers = %s\ndst.bootstrap.servers = %s\nsrc->dst.enabled = true\nsrc->dst.topics = orders\n"+
		"tasks.max = 1\nemit.heartbeats.enabled = false\nsrc->dst.emit.checkpoints.enabled = false\n", src.ListenAddrs()[0], dst.ListenAddrs()[0])
	if err := os.WriteFile(cfg, []byte(props), 0o600); err != nil {
		t.Fatal(err)
	}
	produce := func(prefix string, partition int32, n int) {
		t.Helper()
		cl, err := kgo.NewClient(kgo.SeedBrokers(src.ListenAddrs()...), kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
		if err != nil {
			t.Fatal(err)
		}
		defer cl.Close()
		for i := range n {
			if err := cl.ProduceSync(t.Context(), &kgo.Record{Partition: partition, Value: fmt.Appendf(nil, "%s%d", prefix, i)}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	status := func(base string) flowDoc {
		var d flowDoc
		getJSON(t, base+"/connectors/src-%3Edst/status", &d)
		return d
	}
	task := func(d flowDoc, partition int32) partitionDoc {
		for _, tk := range d.Tasks {
			for _, p := range tk.Partitions {
				if p.Partition == partition {
					return p
				}
			}
		}
		return partitionDoc{}
	}
	produce("a", 0, 10)
	produce("b", 1, 10)
	base, logs, cancel, wait := started(t, "-config", cfg)
	eventually(t, "20 records replicated", func() string {
		if d := status(base); d.Records != 20 || d.Lag == nil || *d.Lag != 0 {
			return fmt.Sprintf("%+v", d.Tasks)
		}
		return ""
	})

	// A record error, which waits for an operator (a MESSAGE_TOO_LARGE
	// for records this small is a batch refused at a stale limit,
	// retried by itself).
	dst.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "src.orders", Partitions: []int32{0}, Err: kerr.InvalidRecord, Count: 1})
	produce("c", 0, 10)
	produce("d", 1, 10)
	eventually(t, "partition 0 FAILED, partition 1 replicated", func() string {
		d := status(base)
		if t0, t1 := task(d, 0), task(d, 1); t0.State != mirror.StateFailed || t1.Replicated != 20 {
			return fmt.Sprintf("%+v", d.Tasks)
		}
		return ""
	})

	for _, c := range []struct {
		url  string
		code int
	}{
		{"/connectors/nope/restart?onlyFailed=true", http.StatusNotFound},
		{"/connectors/src-%3Edst/restart?onlyFailed=true&partition=x", http.StatusBadRequest},
		{"/connectors/src-%3Edst/restart?onlyFailed=true&partition=0", http.StatusBadRequest}, // no topic
		{"/connectors/src-%3Edst/restart?includeTasks=true", http.StatusBadRequest},           // every task
		{"/connectors/src-%3Edst/restart", http.StatusNoContent},                              // the connector object alone: nothing restarted
	} {
		if code, body := post(t, base+c.url); code != c.code {
			t.Errorf("POST %s: HTTP %d, want %d: %s", c.url, code, c.code, body)
		}
	}
	if d := status(base); task(d, 0).State != mirror.StateFailed {
		t.Fatalf("a bare POST restart (Connect: the connector object alone) restarted partition 0: %+v", d.Tasks)
	}
	code, body := post(t, base+"/connectors/src-%3Edst/restart?onlyFailed=true&includeTasks=true&topic=orders&partition=0")
	var doc restartDoc
	if err := json.Unmarshal(body, &doc); err != nil || code != http.StatusAccepted {
		t.Fatalf("POST restart: HTTP %d, %v: %s", code, err, body)
	}
	if doc.Name != "src->dst" || doc.Topic != "orders" || doc.Partition != 0 || doc.Restarted != 1 || len(doc.Partitions) != 1 ||
		doc.Partitions[0].Partition != 0 || !strings.Contains(doc.Partitions[0].Error, "INVALID_RECORD") {
		t.Errorf("POST restart answered %s; want src->dst, orders[0] restarted, its INVALID_RECORD trace", body)
	}
	eventually(t, "partition 0 RUNNING with all 20 records", func() string {
		d := status(base)
		if t0 := task(d, 0); t0.State != mirror.StateRunning || t0.Replicated != 20 || d.Records != 40 {
			return fmt.Sprintf("%d records: %+v", d.Records, d.Tasks)
		}
		return ""
	})
	if code, body := post(t, base+"/connectors/src-%3Edst/restart?onlyFailed=true"); code != http.StatusAccepted || !strings.Contains(string(body), `"restarted": 0`) ||
		!strings.Contains(string(body), "none of the 2 matching partitions of this member is FAILED") {
		t.Errorf("POST restart with nothing failed: HTTP %d %s, want 202 with restarted 0 and a hint", code, body)
	}
	// TestRestartNothingMatchedHint: a filter matching none of the
	// member's partitions says so (it answered restarted 0 and nothing
	// else, as if the partition had been restarted elsewhere).
	for _, c := range []struct{ query, hint string }{
		{"&topic=orders&partition=7", `this member replicates partitions [0 1] of source topic \"orders\", not partition 7`},
		{"&topic=src.orders", `this member replicates no partition of source topic \"src.orders\" (topic= names a source topic, not its remote topic)`},
	} {
		code, body := post(t, base+"/connectors/src-%3Edst/restart?onlyFailed=true"+c.query)
		if code != http.StatusAccepted || !strings.Contains(string(body), `"restarted": 0`) || !strings.Contains(string(body), c.hint) ||
			!strings.Contains(string(body), "GET /connectors/src-%3Edst/status lists") {
			t.Errorf("POST restart%s: HTTP %d %s, want 202, restarted 0, hint %s", c.query, code, body, c.hint)
		}
	}
	cancel()
	if err := wait(); err != nil {
		t.Errorf("stop: %v\nlog:\n%s", err, logs)
	}
}

// TestRestartOnOtherMemberRestartsTheOwners: with two members, a partition
// FAILED on one of them and POST .../restart?onlyFailed=true sent to the
// other (behind a Service, whichever answers) restarted nothing and said
// only "none of the 1 matching partitions of this member is FAILED", as
// if nothing had failed; a later fix only named the owner. As in Connect,
// any member takes the request: it goes to the others through the status
// topic, the answer lists the owner's FAILED partition, and the owner
// restarts it (its record then arrives).
func TestRestartOnOtherMemberRestartsTheOwners(t *testing.T) {
	t.Parallel()
	bases, owner, other, status := twoMembersOneFailed(t)
	// The flow and its slot stay RUNNING; failed_partitions counts it
	// (the README promised it per flow; neither document had it).
	for _, base := range bases {
		d, failedTasks := status(base), 0
		for _, tk := range d.Tasks {
			failedTasks += tk.FailedPartitions
		}
		if d.FailedPartitions != 1 || failedTasks != 1 {
			t.Errorf("%s: failed_partitions %d, over the tasks %d; want 1 and 1", base, d.FailedPartitions, failedTasks)
		}
	}
	code, body := post(t, other+"/connectors/src-%3Edst/restart?onlyFailed=true&topic=orders")
	var doc restartDoc
	if err := json.Unmarshal(body, &doc); err != nil || code != http.StatusAccepted || doc.Restarted != 0 {
		t.Fatalf("POST restart to the member without the FAILED partition: HTTP %d %v %s", code, err, body)
	}
	if len(doc.OtherMembers) != 1 || doc.OtherMembers[0].WorkerID != owner || fmt.Sprint(doc.OtherMembers[0].Partitions) != "[orders[0]]" || doc.Hint != "" {
		t.Errorf("POST restart answered %s: want other_members [{%s [orders[0]]}] and no hint", body, owner)
	}
	for _, base := range bases {
		eventually(t, "partition 0 RUNNING again, all 4 records replicated, in the cluster view of "+base, func() string { return allRunning(status(base), 4) })
	}
}

// allRunning says what is not yet true of d: every partition RUNNING and
// records records replicated ("" when both are).
func allRunning(d flowDoc, records int64) string {
	for _, tk := range d.Tasks {
		for _, p := range tk.Partitions {
			if p.State != mirror.StateRunning {
				return fmt.Sprintf("%s[%d] %s", p.Topic, p.Partition, p.State)
			}
		}
	}
	if d.Records != records {
		return fmt.Sprintf("%d records", d.Records)
	}
	return ""
}

// twoMembersOneFailed runs two members of flow src->dst (orders, two
// partitions, one slot each) and fails orders[0] with a record error
// (INVALID_RECORD, once); it returns once both members' cluster views show
// it FAILED, with the base URLs, the owner's worker id and the base URL of
// the other member.
func twoMembersOneFailed(t *testing.T) (bases [2]string, owner, other string, status func(string) flowDoc) {
	t.Helper()
	src := fakeCluster(t, "src")
	dst := fakeCluster(t, "dst", kfake.GroupMinSessionTimeout(500*time.Millisecond))
	if err := src.CreateTopic("orders", 2, nil); err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(src.ListenAddrs()...), kgo.DefaultProduceTopic("orders"), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	produce := func() {
		for p := range int32(2) {
			if err := cl.ProduceSync(t.Context(), &kgo.Record{Partition: p, Value: []byte("v")}).FirstErr(); err != nil {
				t.Fatal(err)
			}
		}
	}
	produce()
	cfg := writeProps(t, fmt.Sprintf("clusters = src, dst\nsrc.bootstrap.servers = %s\ndst.bootstrap.servers = %s\nsrc->dst.enabled = true\nsrc->dst.topics = orders\n"+
		"tasks.max = 2\nemit.heartbeats.enabled = false\nsrc->dst.emit.checkpoints.enabled = false\n", src.ListenAddrs()[0], dst.ListenAddrs()[0]))
	for i := range bases {
		bases[i], _, _, _ = started(t, "-config", cfg, "-status-interval", "200ms", "-log-level", "warn")
	}
	status = func(base string) flowDoc {
		var d flowDoc
		getJSON(t, base+"/connectors/src-%3Edst/status", &d)
		return d
	}
	eventually(t, "each member owns one slot", func() string {
		d := status(bases[0])
		owners := map[string]bool{}
		for _, tk := range d.Tasks {
			owners[tk.WorkerID] = true
		}
		if len(d.Members) != 2 || len(owners) != 2 || d.Records != 2 {
			return fmt.Sprintf("%d members, owners %v, %d records", len(d.Members), owners, d.Records)
		}
		return ""
	})
	dst.Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "src.orders", Partitions: []int32{0}, Err: kerr.InvalidRecord, Count: 1})
	produce()
	for _, base := range bases {
		eventually(t, "partition 0 FAILED in "+base, func() string {
			for _, tk := range status(base).Tasks {
				for _, p := range tk.Partitions {
					if p.Partition == 0 && p.State == mirror.StateFailed {
						owner = tk.WorkerID
						return ""
					}
				}
			}
			return "not yet"
		})
	}
	other = bases[0]
	if "http://"+owner == other {
		other = bases[1]
	}
	return
}

// TestRestartWhilePausedSaysSo: a flow PAUSED keeps its FAILED partitions
// FAILED in its status, but no unit runs, so a restart restarts nothing
// (they restart when it resumes). POST .../restart?onlyFailed=true sent
// to the owner answered restarted 0, listed orders[0] FAILED and said
// "none of the 1 matching partitions of this member is FAILED"; sent to
// the other member it listed orders[0] under other_members, whose members
// "restart them", and no hint. Both now say the flow is PAUSED and that
// resuming restarts them.
func TestRestartWhilePausedSaysSo(t *testing.T) {
	t.Parallel()
	bases, owner, other, status := twoMembersOneFailed(t)
	if code, body := put(t, other+"/connectors/src-%3Edst/pause"); code != http.StatusAccepted {
		t.Fatalf("pause: HTTP %d %s", code, body)
	}
	for _, base := range bases {
		eventually(t, "PAUSED applied on "+base, func() string {
			if d := status(base); d.Connector.State != "PAUSED" {
				return fmt.Sprintf("%+v", d.Connector)
			}
			return ""
		})
	}
	for _, base := range []string{"http://" + owner, other} {
		code, body := post(t, base+"/connectors/src-%3Edst/restart?onlyFailed=true")
		var doc restartDoc
		if err := json.Unmarshal(body, &doc); err != nil || code != http.StatusAccepted || doc.Restarted != 0 {
			t.Fatalf("POST restart to %s: HTTP %d %v %s", base, code, err, body)
		}
		if !strings.Contains(doc.Hint, "PAUSED") || !strings.Contains(doc.Hint, "/resume") || strings.Contains(doc.Hint, "is FAILED") {
			t.Errorf("POST restart to %s while PAUSED: hint %q: want it to say the flow is PAUSED and resuming restarts them", base, doc.Hint)
		}
	}
	if code, body := put(t, other+"/connectors/src-%3Edst/resume"); code != http.StatusAccepted {
		t.Fatalf("resume: HTTP %d %s", code, body)
	}
	eventually(t, "every partition RUNNING after the resume, all 4 records replicated", func() string { return allRunning(status(other), 4) })
}

// TestTaskRestartOnAnyMember: Kafka Connect's POST
// /connectors/{flow}/tasks/{id}/restart was 404 ("no such endpoint"). A
// task is a slot: sent to a member that does not own the slot, it
// restarts the slot's FAILED partitions on the owner (through the status
// topic) and answers 204 as Connect; the other slot's restart leaves them
// FAILED; an unknown task is 404.
func TestTaskRestartOnAnyMember(t *testing.T) {
	t.Parallel()
	bases, _, notOwner, status := twoMembersOneFailed(t)
	task := int32(-1)
	for _, tk := range status(bases[0]).Tasks {
		for _, p := range tk.Partitions {
			if p.Partition == 0 {
				task = tk.ID
			}
		}
	}
	taskURL := func(id int32) string { return fmt.Sprintf("%s/connectors/src-%%3Edst/tasks/%d/restart", notOwner, id) }
	if code, body := post(t, taskURL(7)); code != http.StatusNotFound || !strings.Contains(string(body), "slots 0 to 1") {
		t.Errorf("POST tasks/7/restart: HTTP %d %s, want 404 naming the slots 0 to 1", code, body)
	}
	if code, body := post(t, taskURL(1-task)); code != http.StatusNoContent {
		t.Fatalf("POST tasks/%d/restart (the other slot): HTTP %d %s, want 204", 1-task, code, body)
	}
	time.Sleep(time.Second) // the request read and applied (or not) by the owner
	for _, tk := range status(bases[0]).Tasks {
		for _, p := range tk.Partitions {
			if p.Partition == 0 && p.State != mirror.StateFailed {
				t.Fatalf("the restart of task %d (not orders[0]'s) left orders[0] %s, want FAILED", 1-task, p.State)
			}
		}
	}
	if code, body := post(t, taskURL(task)); code != http.StatusNoContent || len(body) != 0 {
		t.Fatalf("POST tasks/%d/restart to the member not owning it: HTTP %d %q, want 204 and no body", task, code, body)
	}
	eventually(t, "partition 0 RUNNING again, all 4 records replicated", func() string { return allRunning(status(bases[0]), 4) })
}

// TestGroupsFromNamesTheSingleton (a new user's finding): behind a
// Service, two of three /status answers had no groups[] and no
// last_heartbeat, with nothing saying where they are: only the member
// holding the singleton duties has them. The others now name it
// (groups_from), and it names none.
func TestGroupsFromNamesTheSingleton(t *testing.T) {
	t.Parallel()
	bases, _, _, status := twoMembersOneFailed(t)
	var single string
	for _, m := range status(bases[0]).Members {
		if m.Singleton {
			single = m.WorkerID
		}
	}
	if single == "" {
		t.Fatalf("no member holds the singleton duties: %+v", status(bases[0]).Members)
	}
	for _, base := range bases {
		d := status(base)
		want := ""
		if base != "http://"+single {
			want = "worker " + single + " (ask its /status): it holds the singleton duties (checkpoints, group offset sync, heartbeats)"
		}
		if d.GroupsFrom != want {
			t.Errorf("%s: groups_from %q, want %q", base, d.GroupsFrom, want)
		}
	}
}
