package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kmirror/kmirror/mirror"
)

// statusDoc is the body of GET /status: every flow in the shape of Kafka
// Connect's GET /connectors/<name>/status (name, connector.state,
// tasks[].id/state/worker_id/trace, type), where a task is one replicated
// source partition, plus kmirror's progress fields.
type statusDoc struct {
	// State sums up the flows: FAILED if one failed, else RETRYING or
	// STARTING if one is, else RUNNING (DISABLED flows count as running),
	// STOPPED when every flow stopped.
	State    mirror.State `json:"state"`
	WorkerID string       `json:"worker_id"`
	Flows    []flowDoc    `json:"flows"`
}

// flowDoc is one flow, as Connect reports a connector.
type flowDoc struct {
	Name      string       `json:"name"` // "source->target"
	Connector connectorDoc `json:"connector"`
	Tasks     []taskDoc    `json:"tasks"`
	Type      string       `json:"type"` // "source", as MirrorSourceConnector

	Source        string               `json:"source"`
	Target        string               `json:"target"`
	Since         time.Time            `json:"since"`
	Topics        int                  `json:"topics"`
	Records       int64                `json:"records"`
	Bytes         int64                `json:"bytes"`
	Lag           int64                `json:"lag"`
	Gaps          []mirror.GapError    `json:"gaps,omitempty"`
	Groups        []mirror.GroupStatus `json:"groups,omitempty"`
	LastHeartbeat time.Time            `json:"last_heartbeat,omitzero"`
	// Member is this process among the flow's members (slots, singleton).
	Member mirror.MemberStatus `json:"member"`
	// Skipped are the topics the flow selects but does not replicate,
	// with the reason; ProvenanceSkipped counts records not copied
	// because they were already on the target's cluster.
	Skipped           []mirror.SkippedTopic `json:"skipped,omitempty"`
	ProvenanceSkipped int64                 `json:"provenance_skipped,omitempty"`
	// TopicErrors are the topics a per-topic operation fails for (the
	// target refuses to create the remote topic, add partitions or alter
	// configs), while the other topics replicate; connector.trace
	// summarises them.
	TopicErrors []mirror.TopicError `json:"topic_errors,omitempty"`
}

type connectorDoc struct {
	State    mirror.State `json:"state"`
	WorkerID string       `json:"worker_id"`
	Trace    string       `json:"trace,omitempty"`
}

// taskDoc is one source partition: Connect's task fields, then the
// partition's progress (topic, remote_topic, partition, source_end,
// replicated, committed, lag, records, bytes).
type taskDoc struct {
	ID       int          `json:"id"`
	State    mirror.State `json:"state"`
	WorkerID string       `json:"worker_id"`
	Trace    string       `json:"trace,omitempty"`
	mirror.PartitionStatus
}

func workerID() string {
	h, err := os.Hostname()
	if err != nil || h == "" {
		return "kmirror"
	}
	return h
}

func toFlowDoc(fs mirror.FlowStatus, worker string) flowDoc {
	d := flowDoc{Name: fs.Name, Type: "source", Connector: connectorDoc{State: fs.State, WorkerID: worker, Trace: fs.Error},
		Source: fs.Source, Target: fs.Target, Since: fs.Since, Topics: fs.Topics, Records: fs.Records, Bytes: fs.Bytes,
		Lag: fs.Lag, Gaps: fs.Gaps, Groups: fs.Groups, LastHeartbeat: fs.LastHeartbeat, Tasks: []taskDoc{},
		Member: fs.Member, Skipped: fs.Skipped, ProvenanceSkipped: fs.ProvenanceSkipped, TopicErrors: fs.TopicErrors}
	for i, p := range fs.Partitions {
		d.Tasks = append(d.Tasks, taskDoc{ID: i, State: p.State, WorkerID: worker, Trace: p.Error, PartitionStatus: p})
	}
	return d
}

// overall sums up the flow states (see statusDoc.State).
func overall(s mirror.Status) mirror.State {
	rank := map[mirror.State]int{mirror.StateFailed: 5, mirror.StateRetrying: 4, mirror.StateStarting: 3, mirror.StateUnassigned: 2}
	best, stopped := mirror.StateRunning, len(s.Flows) > 0
	for _, f := range s.Flows {
		if rank[f.State] > rank[best] {
			best = f.State
		}
		if f.State != mirror.StateStopped {
			stopped = false
		}
	}
	if stopped {
		return mirror.StateStopped
	}
	return best
}

// handler serves /metrics, /status, /connectors, /connectors/{name}/status,
// POST /connectors/{name}/restart, /healthz and /readyz.
type handler struct {
	m        *mirror.Mirror
	worker   string
	grace    time.Duration // -ready-grace
	probe    *statusProbe
	stopping atomic.Bool
	ended    atomic.Pointer[string] // set when Run returned: how
	mux      *http.ServeMux

	mu      sync.Mutex
	running map[string]bool // flows seen RUNNING
}

func newHandler(m *mirror.Mirror, metrics http.Handler, grace time.Duration) *handler {
	h := &handler{m: m, worker: workerID(), grace: grace, mux: http.NewServeMux(), running: map[string]bool{},
		probe: &statusProbe{status: m.Status, timeout: statusTimeout}}
	h.mux.Handle("GET /metrics", metrics)
	h.mux.HandleFunc("GET /status", h.status)
	h.mux.HandleFunc("GET /connectors", h.connectors)
	h.mux.HandleFunc("GET /connectors/{name}/status", h.connectorStatus)
	h.mux.HandleFunc("POST /connectors/{name}/restart", h.restart)
	h.mux.HandleFunc("GET /healthz", h.healthz)
	h.mux.HandleFunc("GET /readyz", h.readyz)
	return h
}

func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.mux.ServeHTTP(w, r) }

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // flow names contain "->"
	_ = enc.Encode(v)
}

// status: GET /status. ?groups=false leaves out the per-group detail
// (large with thousands of groups).
func (h *handler) status(w http.ResponseWriter, r *http.Request) {
	s := h.m.Status()
	doc := statusDoc{State: overall(s), WorkerID: h.worker, Flows: []flowDoc{}}
	for _, f := range s.Flows {
		fd := toFlowDoc(f, h.worker)
		if r.URL.Query().Get("groups") == "false" {
			fd.Groups = nil
		}
		doc.Flows = append(doc.Flows, fd)
	}
	writeJSON(w, http.StatusOK, doc)
}

// connectors: GET /connectors, the flow names (Connect lists connector names).
func (h *handler) connectors(w http.ResponseWriter, _ *http.Request) {
	names := []string{}
	for _, f := range h.m.Status().Flows {
		names = append(names, f.Name)
	}
	writeJSON(w, http.StatusOK, names)
}

// connectorStatus: GET /connectors/{name}/status with name a flow name
// ("primary->secondary", URL-encoded as primary-%3Esecondary or not).
func (h *handler) connectorStatus(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	for _, f := range h.m.Status().Flows {
		if f.Name == name {
			writeJSON(w, http.StatusOK, toFlowDoc(f, h.worker))
			return
		}
	}
	// Connect's 404 body shape.
	writeJSON(w, http.StatusNotFound, map[string]any{"error_code": 404, "message": "No status found for connector " + name})
}

// restartDoc is the body of POST /connectors/{name}/restart: the FAILED
// partitions of this process the request restarted.
type restartDoc struct {
	Name string `json:"name"` // the flow, "source->target"
	// Topic and Partition echo the request's filter ("" and -1: all).
	Topic     string `json:"topic,omitempty"`
	Partition int32  `json:"partition"`
	// Restarted counts the partitions asked to restart (Mirror.RestartFailed);
	// Tasks lists the matching partitions that were FAILED just before
	// the request, as GET /connectors/{name}/status does (the same task id,
	// the index there), in state FAILED as they were (Connect reports them
	// RESTARTING): GET the status to see them RUNNING again. A partition
	// that failed between the two makes Restarted differ from len(Tasks).
	Restarted int       `json:"restarted"`
	Tasks     []taskDoc `json:"tasks"`
	WorkerID  string    `json:"worker_id"`
}

// restart: POST /connectors/{name}/restart[?onlyFailed=true][&topic=T[&partition=P]],
// Kafka Connect's restart of a connector's failed tasks (KIP-745), where a
// task is one source partition: it restarts the flow's FAILED partitions
// that this process replicates (all, those of source topic T, or partition
// P of it) with Mirror.RestartFailed and answers 202 Accepted with what it
// restarted (restartDoc). kmirror never restarts a RUNNING partition, so
// onlyFailed=false is refused (400), as are a bad partition and a partition
// without a topic; an unknown flow is 404 in Connect's shape. With several
// members, send it to each (a member restarts only its own partitions).
func (h *handler) restart(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	q := r.URL.Query()
	bad := func(msg string) {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error_code": 400, "message": msg})
	}
	if v := q.Get("onlyFailed"); v != "" && v != "true" {
		bad(fmt.Sprintf("onlyFailed=%s: kmirror restarts only FAILED partitions; use onlyFailed=true or leave it out", v))
		return
	}
	topic, partition := q.Get("topic"), int32(-1)
	if v := q.Get("partition"); v != "" {
		n, err := strconv.ParseInt(v, 10, 32)
		if err != nil || n < -1 {
			bad(fmt.Sprintf("partition=%s: want a partition number, or -1 for every partition of the topic", v))
			return
		}
		partition = int32(n)
	}
	var fs *mirror.FlowStatus
	for _, f := range h.m.Status().Flows {
		if f.Name == name {
			fs = &f
			break
		}
	}
	if fs == nil {
		writeJSON(w, http.StatusNotFound, map[string]any{"error_code": 404, "message": "Unknown connector " + name})
		return
	}
	n, err := h.m.RestartFailed(name, topic, partition)
	if err != nil {
		bad(err.Error())
		return
	}
	doc := restartDoc{Name: name, Topic: topic, Partition: partition, Restarted: n, Tasks: []taskDoc{}, WorkerID: h.worker}
	for i, p := range fs.Partitions {
		if p.State == mirror.StateFailed && (topic == "" || p.Topic == topic) && (partition < 0 || p.Partition == partition) {
			doc.Tasks = append(doc.Tasks, taskDoc{ID: i, State: p.State, WorkerID: h.worker, Trace: p.Error, PartitionStatus: p})
		}
	}
	writeJSON(w, http.StatusAccepted, doc)
}
