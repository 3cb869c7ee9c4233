package main

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/kmirror/kmirror/mirror"
)

// defaultReadyGrace is how long a flow may be RETRYING or FAILED before
// the member is not ready (-ready-grace). A broker rolling restart, a
// leader election or a short network blip resolve well within it, so
// readiness does not flap; a real outage shows within a minute, plus the
// probe's own failure threshold.
const defaultReadyGrace = 60 * time.Second

// statusTimeout bounds one Mirror.Status call made by /healthz and
// /readyz (the watchdog): Status only reads in-memory state, so a call
// that takes longer means the engine is wedged.
const statusTimeout = 3 * time.Second

// statusProbe calls Status with a deadline. Concurrent probes share one
// call in flight, so a wedged engine costs one goroutine, not one per
// probe; that goroutine ends when Status returns (a wedged engine gets the
// process restarted by the liveness probe).
type statusProbe struct {
	status  func() mirror.Status
	timeout time.Duration

	mu  sync.Mutex
	cur *statusCall // the call in flight, nil when none
}

type statusCall struct {
	done  chan struct{} // closed when st is set
	st    mirror.Status
	start time.Time
}

// get returns a fresh Status, or an error when the call in flight has not
// returned within the timeout of its start.
func (p *statusProbe) get() (mirror.Status, error) {
	p.mu.Lock()
	c := p.cur
	if c == nil {
		c = &statusCall{done: make(chan struct{}), start: time.Now()}
		p.cur = c
		go func() {
			c.st = p.status()
			p.mu.Lock()
			if p.cur == c {
				p.cur = nil
			}
			p.mu.Unlock()
			close(c.done)
		}()
	}
	p.mu.Unlock()
	t := time.NewTimer(max(p.timeout-time.Since(c.start), 0))
	defer t.Stop()
	select {
	case <-c.done:
		return c.st, nil
	case <-t.C:
		return mirror.Status{}, fmt.Errorf("watchdog: Mirror.Status has not returned for %s (engine wedged)", time.Since(c.start).Round(time.Millisecond))
	}
}

// livenessDoc is the body of GET /healthz.
type livenessDoc struct {
	// Healthy is true when the process works: the engine runs (or is
	// stopping gracefully) and answers Status. HTTP 200 when true, 503
	// when not.
	Healthy  bool                    `json:"healthy"`
	Stopping bool                    `json:"stopping"`
	Reasons  []string                `json:"reasons"`
	Flows    map[string]mirror.State `json:"flows"`
}

// readinessDoc is the body of GET /readyz.
type readinessDoc struct {
	// Ready is true when this member can do its work. HTTP 200 when true,
	// 503 when not.
	Ready bool `json:"ready"`
	// Reasons says why not (empty when ready).
	Reasons []string `json:"reasons"`
	// Warnings lists what a ready member does not replicate as configured
	// but what does not make it unready (the flow's other topics
	// replicate): what the flow's members disagree on (configuration keys,
	// a member holding slot 0 with the flow disabled), each topic error ("flow a->b: topic orders: create
	// failing for 5m0s: creating a.orders on b: POLICY_VIOLATION: ...")
	// and each FAILED partition ("flow a->b: partition orders[3] FAILED:
	// ..."), at most maxWarnings per flow, then how many more. Empty when
	// none.
	Warnings []string `json:"warnings"`
	// GracePeriod is -ready-grace, e.g. "1m0s".
	GracePeriod string          `json:"grace_period"`
	Flows       []flowReadiness `json:"flows"`
}

// flowReadiness is one flow's part of readiness.
type flowReadiness struct {
	Name   string       `json:"name"`
	State  mirror.State `json:"state"`
	Since  time.Time    `json:"since"`
	Ready  bool         `json:"ready"`
	Reason string       `json:"reason,omitempty"`
}

// readiness decides whether the member can do its work, from Status only
// (fields it does not know are ignored, so it tolerates additions):
//
//   - RUNNING and DISABLED (heartbeats only) flows are ready, whatever
//     their partitions and topics: one FAILED partition or refused topic
//     (a topic error: the target refuses to create it, add partitions or
//     alter its configs), or a member that owns no partitions, never
//     blocks a rollout, since a restart does not change the target's
//     answer. Topic errors and FAILED partitions are listed in Warnings.
//   - UNASSIGNED and STARTING flows are not ready yet: they have not
//     connected and loaded their resume points.
//   - RETRYING (a cluster does not answer, storing resume points fails)
//     and FAILED flows are ready during grace after they entered the
//     state, then not ready; but a flow that has not started yet
//     (FlowStatus.Started false: it is retrying its start-up) is not
//     ready at once. A flow that started is in an outage (a broker
//     restart). The runner used to know that only from a /readyz asked
//     while the flow was RUNNING (a new user's finding: 503 "never
//     RUNNING yet" 1 s into a broker restart).
//   - PAUSED flows, and STOPPED flows whose target state STOPPED this
//     member applied (PUT /connectors/{flow}/pause or /stop), are ready:
//     the member does what it was asked; restarting it would not resume
//     the flow, and the persisted state survives restarts anyway.
//   - A STOPPED flow that was not asked to stop (the engine stopped), or a
//     state this code does not know, is not ready.
func readiness(s mirror.Status, now time.Time, grace time.Duration) readinessDoc {
	d := readinessDoc{Ready: true, Reasons: []string{}, Warnings: []string{}, GracePeriod: grace.String(), Flows: []flowReadiness{}}
	for _, f := range s.Flows {
		d.Warnings = append(d.Warnings, flowWarnings(f, now)...)
		fr := flowReadiness{Name: f.Name, State: f.State, Since: f.Since, Ready: true}
		in := now.Sub(f.Since).Round(time.Second)
		switch f.State {
		case mirror.StateRunning, mirror.StateDisabled, mirror.StatePaused:
		case mirror.StateUnassigned, mirror.StateStarting:
			fr.Ready, fr.Reason = false, fmt.Sprintf("%s for %s: not replicating yet", f.State, in)
		case mirror.StateRetrying, mirror.StateFailed:
			if !f.Started {
				fr.Ready, fr.Reason = false, fmt.Sprintf("%s for %s, never RUNNING yet", f.State, in)
				if f.Error != "" {
					fr.Reason += ": " + f.Error
				}
			} else if now.Sub(f.Since) > grace {
				fr.Ready, fr.Reason = false, fmt.Sprintf("%s for %s (grace period %s)", f.State, in, grace)
				if f.Error != "" {
					fr.Reason += ": " + f.Error
				}
			}
		case mirror.StateStopped:
			if f.AppliedState != mirror.TargetStopped {
				fr.Ready, fr.Reason = false, fmt.Sprintf("%s for %s", f.State, in)
			}
		default:
			fr.Ready, fr.Reason = false, fmt.Sprintf("%s for %s", f.State, in)
		}
		if !fr.Ready {
			d.Ready = false
			d.Reasons = append(d.Reasons, "flow "+f.Name+": "+fr.Reason)
		}
		d.Flows = append(d.Flows, fr)
	}
	return d
}

// maxWarnings bounds the readiness warnings of one flow: a policy that
// refuses a whole family of topics must not make /readyz megabytes long.
const maxWarnings = 10

// flowWarnings returns the readiness warnings of one flow (see
// readinessDoc.Warnings): what its members disagree on, the ACL sync's
// failure to describe the source's ACLs, the offset syncs' failure to be
// written, its topic errors, then its FAILED partitions.
func flowWarnings(f mirror.FlowStatus, now time.Time) []string {
	// What the flow's members disagree on comes first (issue 20): a member
	// that replicates nothing because another one's file disables the
	// flow must not look healthy and idle with nothing said.
	ws := append([]string(nil), f.Warnings...)
	if f.ACLSyncError != "" {
		// The source refuses to describe its ACLs: no topic's ACLs are
		// copied, while every topic replicates.
		ws = append(ws, fmt.Sprintf("flow %s: topic ACL sync failing: %s", f.Name, f.ACLSyncError))
	}
	if f.OffsetSyncError != "" {
		// Replication goes on, but no group offset is translated.
		ws = append(ws, fmt.Sprintf("flow %s: offset syncs failing: %s", f.Name, f.OffsetSyncError))
	}
	n := 0
	for _, te := range f.TopicErrors {
		if n++; n <= maxWarnings {
			ws = append(ws, fmt.Sprintf("flow %s: topic %s: %s failing for %s: %s", f.Name, te.Topic, te.Op, now.Sub(te.Since).Round(time.Second), te.Error))
		}
	}
	for _, p := range f.Partitions {
		if p.State != mirror.StateFailed {
			continue
		}
		if n++; n <= maxWarnings {
			ws = append(ws, fmt.Sprintf("flow %s: partition %s[%d] FAILED: %s", f.Name, p.Topic, p.Partition, p.Error))
		}
	}
	if n > maxWarnings {
		ws = append(ws, fmt.Sprintf("flow %s: and %d more topic errors or FAILED partitions (GET /status)", f.Name, n-maxWarnings))
	}
	return ws
}

// healthz: GET /healthz, liveness. 503 when the engine's Run returned
// (crashed, or stopped without the runner asking) or when Status does not
// answer within the watchdog's timeout; 200 otherwise, also while flows
// retry or fail (a restart does not bring back a cluster) and during a
// graceful stop.
func (h *handler) healthz(w http.ResponseWriter, _ *http.Request) {
	doc := h.liveness()
	code := http.StatusOK
	if !doc.Healthy {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, doc)
}

// connectHealthDoc is the body of GET /health, Kafka Connect's health
// check (KIP-1017, Kafka 3.9): status "healthy" or "unhealthy", and a
// message.
type connectHealthDoc struct {
	Status  string `json:"status"`
	Message string `json:"message"`
}

// health: GET /health, Kafka Connect's health check, for the probes and
// scripts written against it (it answered 404, which a probe takes for a
// dead worker: TestBrkJConnectHealthEndpoint). It is /healthz's liveness
// in Connect's shape: 200 "healthy", or 500 "unhealthy" with /healthz's
// reasons (Connect's codes). Connect also answers 503 "starting" until its
// worker joined its cluster; kmirror has no such step (its flows start and
// retry on their own, which /readyz reports), so never.
func (h *handler) health(w http.ResponseWriter, _ *http.Request) {
	doc := h.liveness()
	if !doc.Healthy {
		writeJSON(w, http.StatusInternalServerError, connectHealthDoc{Status: "unhealthy", Message: strings.Join(doc.Reasons, "; ")})
		return
	}
	msg := "kmirror is running its flows (GET /readyz says whether they replicate)"
	if doc.Stopping {
		msg = "kmirror is stopping gracefully"
	}
	writeJSON(w, http.StatusOK, connectHealthDoc{Status: "healthy", Message: msg})
}

// liveness is /healthz's document (see healthz).
func (h *handler) liveness() livenessDoc {
	doc := livenessDoc{Healthy: true, Stopping: h.stopping.Load(), Reasons: []string{}, Flows: map[string]mirror.State{}}
	if msg, ok := h.runEnded(); ok && !doc.Stopping {
		doc.Healthy = false
		doc.Reasons = append(doc.Reasons, "engine stopped: "+msg)
	}
	s, err := h.probe.get()
	if err != nil {
		doc.Healthy = false
		doc.Reasons = append(doc.Reasons, err.Error())
	}
	for _, f := range s.Flows {
		doc.Flows[f.Name] = f.State
	}
	return doc
}

// readyz: GET /readyz, readiness (see readiness). Also 503 during a stop,
// after Run returned, and when Status does not answer.
func (h *handler) readyz(w http.ResponseWriter, _ *http.Request) {
	s, err := h.probe.get()
	doc := readiness(s, time.Now(), h.grace)
	if err != nil {
		doc.Ready = false
		doc.Reasons = append(doc.Reasons, err.Error())
	}
	if msg, ok := h.runEnded(); ok {
		doc.Ready = false
		doc.Reasons = append(doc.Reasons, "engine stopped: "+msg)
	} else if h.stopping.Load() {
		doc.Ready = false
		doc.Reasons = append(doc.Reasons, "stopping")
	}
	code := http.StatusOK
	if !doc.Ready {
		code = http.StatusServiceUnavailable
	}
	writeJSON(w, code, doc)
}

// runEnded reports whether the engine's Run returned, and how.
func (h *handler) runEnded() (string, bool) {
	p := h.ended.Load()
	if p == nil {
		return "", false
	}
	return *p, true
}

// runReturned records that Run returned with err.
func (h *handler) runReturned(err error) {
	msg := "Run returned without error"
	if err != nil {
		msg = "Run returned: " + err.Error()
	}
	h.ended.Store(&msg)
}
