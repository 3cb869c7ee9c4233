package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/kmirror/kmirror/mirror"
	"github.com/kmirror/kmirror/policy"
)

// statusDoc is the body of GET /status: every flow in the shape of Kafka
// Connect's GET /connectors/<name>/status (name, connector.state and
// worker_id, tasks[].id/state/worker_id/trace, type), where a task is one
// slot of the flow (tasks.max of them, wherever they run), plus kmirror's
// fields. Any member answers for the whole flow: the other members' parts
// come from the flow's status topic (Mirror.ClusterStatus).
type statusDoc struct {
	// State sums up the flows: FAILED if one failed, else RETRYING or
	// STARTING if one is, else RUNNING (DISABLED, PAUSED and STOPPED
	// flows count as running), STOPPED when every flow stopped.
	State mirror.State `json:"state"`
	// WorkerID is this member's worker id (-listen's host:port).
	WorkerID string    `json:"worker_id"`
	Flows    []flowDoc `json:"flows"`
}

// flowDoc is one flow, as Connect reports a connector, across all its
// members.
type flowDoc struct {
	// Name is the connector name asked for: the flow's name
	// ("source->target"), or an MM2 connector name
	// (MirrorSourceConnector, ...) that selected it; Flow is the flow's
	// name.
	Name      string       `json:"name"`
	Flow      string       `json:"flow"`
	Connector connectorDoc `json:"connector"`
	// Tasks are the flow's slots, tasks.max of them, id = slot number.
	Tasks []taskDoc `json:"tasks"`
	Type  string    `json:"type"` // "source", as MirrorSourceConnector

	Source string `json:"source"`
	Target string `json:"target"`
	// TargetState is the state the flow was asked to be in (PUT
	// /connectors/{flow}/pause|resume|stop), with who asked, why and when.
	TargetState       mirror.TargetState `json:"target_state"`
	TargetStateBy     string             `json:"target_state_by,omitempty"`
	TargetStateReason string             `json:"target_state_reason,omitempty"`
	TargetStateAt     time.Time          `json:"target_state_at,omitzero"`
	// Since is when this member's flow entered its state; Topics the
	// number of source topics the flow selects.
	Since  time.Time `json:"since"`
	Topics int       `json:"topics"`
	// Records and Bytes add up the live members' cumulative counters.
	Records int64 `json:"records"`
	Bytes   int64 `json:"bytes"`
	// Lag is the flow's lag over every slot, owned or not; null with
	// lag_unknown true when part of it cannot be computed.
	Lag        *int64 `json:"lag"`
	LagUnknown bool   `json:"lag_unknown,omitempty"`
	// FailedPartitions counts the FAILED partitions of every slot (the
	// flow stays RUNNING while the others replicate; connector.trace names
	// the first).
	FailedPartitions int `json:"failed_partitions"`
	// Members are the flow's live members.
	Members []memberDoc `json:"members"`
	// Mismatches and Warnings: what the members disagree on.
	Mismatches []mirror.ConfigMismatch `json:"mismatches,omitempty"`
	Warnings   []string                `json:"warnings,omitempty"`

	// This member's own part: the gaps it detected, the groups (only the
	// member holding the singleton duties has them), its last heartbeat,
	// its place in the group, the topics skipped and the topic errors (the
	// singleton's).
	Gaps   []mirror.GapError    `json:"gaps,omitempty"`
	Groups []mirror.GroupStatus `json:"groups,omitempty"`
	// GroupsFrom, on a member without the singleton duties (no Groups, no
	// LastHeartbeat), names the member that has them: "worker
	// 10.0.0.7:9090 (ask its /status)", or says that no live member
	// holds them now.
	GroupsFrom    string    `json:"groups_from,omitempty"`
	LastHeartbeat time.Time `json:"last_heartbeat,omitzero"`
	// HeartbeatError is this member's last heartbeat failure since its
	// last heartbeat written (mirror.FlowStatus.HeartbeatError).
	HeartbeatError string `json:"heartbeat_error,omitempty"`
	// HeartbeatErrorSince is when those failures started
	// (mirror.FlowStatus.HeartbeatErrorSince).
	HeartbeatErrorSince time.Time `json:"heartbeat_error_since,omitzero"`
	// ACLSyncError is this member's last failure to describe the
	// source's ACLs for the topic ACL sync (mirror.FlowStatus.ACLSyncError).
	ACLSyncError string `json:"acl_sync_error,omitempty"`
	// OffsetSyncError is this member's last failure to write an offset
	// sync or run, and OffsetSyncErrorSince when those failures started
	// (mirror.FlowStatus.OffsetSyncError).
	OffsetSyncError      string              `json:"offset_sync_error,omitempty"`
	OffsetSyncErrorSince time.Time           `json:"offset_sync_error_since,omitzero"`
	Member               mirror.MemberStatus `json:"member"`
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

// taskDoc is one slot: Connect's task fields (id, state, worker_id,
// trace), then the slot's owner, since when it is in its state, its lag
// and counters, and its partitions.
type taskDoc struct {
	ID       int32        `json:"id"`
	State    mirror.State `json:"state"`
	WorkerID string       `json:"worker_id"`
	Trace    string       `json:"trace,omitempty"`
	MemberID string       `json:"member_id,omitempty"`
	// Since: for UNASSIGNED, since when no live member owns the slot.
	Since      time.Time `json:"since,omitzero"`
	Lag        *int64    `json:"lag"`
	LagUnknown bool      `json:"lag_unknown,omitempty"`
	Records    int64     `json:"records"`
	Bytes      int64     `json:"bytes"`
	Updated    time.Time `json:"updated,omitzero"`
	// FailedPartitions counts the slot's FAILED partitions: a slot stays
	// RUNNING while its other partitions replicate (Connect would report
	// the task FAILED), so alert on this, or on trace.
	FailedPartitions int            `json:"failed_partitions"`
	Partitions       []partitionDoc `json:"partitions"`
}

// partitionDoc is one source partition; its lag is null when unknown.
type partitionDoc struct {
	mirror.PartitionStatus
	Lag *int64 `json:"lag"`
}

// memberDoc is one live member of a flow; its lag is null when unknown,
// as the flow's (a new user read "lag": 0 beside lag_unknown true).
type memberDoc struct {
	mirror.ClusterMember
	Lag *int64 `json:"lag"`
}

func memberDocs(ms []mirror.ClusterMember) []memberDoc {
	out := make([]memberDoc, 0, len(ms))
	for _, m := range ms {
		out = append(out, memberDoc{ClusterMember: m, Lag: lagOf(m.Lag, m.LagUnknown)})
	}
	return out
}

// lagOf is n, or nil when unknown.
func lagOf(n int64, unknown bool) *int64 {
	if unknown {
		return nil
	}
	return &n
}

func partitionDocs(ps []mirror.PartitionStatus) []partitionDoc {
	out := make([]partitionDoc, 0, len(ps))
	for _, p := range ps {
		out = append(out, partitionDoc{PartitionStatus: p, Lag: lagOf(p.Lag, p.LagUnknown)})
	}
	return out
}

// slotTrace sums up a slot's FAILED partitions (Connect's task trace) and
// counts them.
func slotTrace(s mirror.SlotStatus) (string, int) {
	n, first := 0, ""
	for _, p := range s.Partitions {
		if p.State == mirror.StateFailed {
			if n++; n == 1 {
				first = fmt.Sprintf("%s[%d]: %s", p.Topic, p.Partition, p.Error)
			}
		}
	}
	if n == 0 {
		return "", 0
	}
	return fmt.Sprintf("%d partition(s) FAILED; first: %s", n, first), n
}

func toTaskDoc(s mirror.SlotStatus) taskDoc {
	trace, failed := slotTrace(s)
	return taskDoc{ID: s.Slot, State: s.State, WorkerID: s.WorkerID, Trace: trace, MemberID: s.MemberID, Since: s.Since,
		Lag: lagOf(s.Lag, s.LagUnknown), LagUnknown: s.LagUnknown, Records: s.Records, Bytes: s.Bytes, Updated: s.Updated,
		FailedPartitions: failed, Partitions: partitionDocs(s.Partitions)}
}

// toFlowDoc is the flow's document under connector name name: its
// cluster-wide status cf and this member's own status fs.
func toFlowDoc(name string, cf mirror.ClusterFlowStatus, fs mirror.FlowStatus, worker string) flowDoc {
	d := flowDoc{Name: name, Flow: cf.Name, Type: "source", Connector: connectorDoc{State: cf.State, WorkerID: worker},
		Source: cf.Source, Target: cf.Target, TargetState: cf.TargetState, TargetStateBy: cf.TargetStateBy,
		TargetStateReason: cf.TargetStateReason, TargetStateAt: cf.TargetStateAt, Since: fs.Since, Topics: fs.Topics,
		Records: cf.Records, Bytes: cf.Bytes, Lag: lagOf(cf.Lag, cf.LagUnknown), LagUnknown: cf.LagUnknown,
		Members: memberDocs(cf.Members), Mismatches: cf.Mismatches, Warnings: cf.Warnings, Tasks: []taskDoc{},
		Gaps: fs.Gaps, Groups: fs.Groups, LastHeartbeat: fs.LastHeartbeat, HeartbeatError: fs.HeartbeatError, HeartbeatErrorSince: fs.HeartbeatErrorSince, ACLSyncError: fs.ACLSyncError, OffsetSyncError: fs.OffsetSyncError, OffsetSyncErrorSince: fs.OffsetSyncErrorSince, Member: fs.Member, Skipped: fs.Skipped,
		ProvenanceSkipped: fs.ProvenanceSkipped, TopicErrors: fs.TopicErrors}
	if !fs.Member.Singleton && fs.State != mirror.StateDisabled {
		d.GroupsFrom = "no live member holds the singleton duties now (slot 0 unassigned, or its owner just left)"
		for _, m := range cf.Members {
			if m.Singleton {
				d.GroupsFrom = "worker " + m.WorkerID + " (ask its /status): it holds the singleton duties (checkpoints, group offset sync, heartbeats)"
			}
		}
	}
	// Connect names the worker running the connector: the member holding
	// the singleton duties; the trace is the error of the worst member.
	// When none holds them (the flow STOPPED, or their holder died and
	// its session has not expired), the owner of slot 0, else the first
	// live member by worker id: the same answer from every member, where
	// each used to name itself (TestStoppedConnectorWorkerIDSameOnEveryMember).
	singleton := false
	for _, m := range cf.Members {
		if m.Singleton {
			d.Connector.WorkerID, singleton = m.WorkerID, true
		}
	}
	if !singleton {
		switch {
		case len(cf.Slots) > 0 && cf.Slots[0].WorkerID != "":
			d.Connector.WorkerID = cf.Slots[0].WorkerID
		case len(cf.Members) > 0:
			d.Connector.WorkerID = cf.Members[0].WorkerID // sorted by worker id
		}
	}
	if fs.Error != "" && (fs.State == cf.State || cf.State == mirror.StateRunning) {
		d.Connector.Trace = fs.Error
	} else {
		for _, m := range cf.Members {
			if m.State == cf.State && m.Error != "" {
				d.Connector.Trace = m.WorkerID + ": " + m.Error
				break
			}
		}
	}
	for _, s := range cf.Slots {
		t := toTaskDoc(s)
		d.FailedPartitions += t.FailedPartitions
		d.Tasks = append(d.Tasks, t)
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

// handler serves /metrics, /status, /connectors and the per-connector
// endpoints, /healthz, /health (Connect's) and /readyz.
type handler struct {
	m        *mirror.Mirror
	worker   string
	flows    []mirror.FlowConfig          // the configured flows (MM2 connector names, /config)
	settings map[string]map[string]string // flow -> effective settings, secrets masked
	// elsewhere are the file's flows -clusters (onlyTargets) leaves to
	// other nodes: a 404 for one says so.
	elsewhere, onlyTargets []string
	grace                  time.Duration // -ready-grace
	probe                  *statusProbe
	// logLevel is the process's log level (-log-level; PUT
	// /admin/loggers/{logger} sets it), levelLog logs its changes at any
	// level.
	logLevel *slog.LevelVar
	levelLog *slog.Logger
	stopping atomic.Bool
	ended    atomic.Pointer[string] // set when Run returned: how
	mux      *http.ServeMux
}

func newHandler(m *mirror.Mirror, metrics http.Handler, grace time.Duration) *handler {
	h := &handler{m: m, worker: workerID(""), grace: grace, mux: http.NewServeMux(), logLevel: new(slog.LevelVar), levelLog: slog.New(slog.DiscardHandler),
		probe: &statusProbe{status: m.Status, timeout: statusTimeout}}
	h.mux.Handle("GET /metrics", metrics)
	h.mux.HandleFunc("GET /status", h.status)
	h.mux.HandleFunc("GET /connectors", h.connectors)
	h.mux.HandleFunc("GET /connectors/{name}", h.connectorInfo)
	h.mux.HandleFunc("GET /connectors/{name}/config", h.connectorConfig)
	h.mux.HandleFunc("GET /connectors/{name}/status", h.connectorStatus)
	h.mux.HandleFunc("GET /connectors/{name}/tasks", h.connectorTasks)
	h.mux.HandleFunc("GET /connectors/{name}/tasks/{id}/status", h.taskStatus)
	h.mux.HandleFunc("GET /connectors/{name}/offsets", h.connectorOffsets)
	h.mux.HandleFunc("GET /connectors/{name}/topics", h.connectorTopics)
	h.mux.HandleFunc("PUT /connectors/{name}/topics/reset", h.connectorTopicsReset)
	h.mux.HandleFunc("POST /connectors/{name}/restart", h.restart)
	h.mux.HandleFunc("POST /connectors/{name}/tasks/{id}/restart", h.taskRestart)
	h.mux.HandleFunc("PUT /connectors/{name}/pause", h.target(mirror.TargetPaused))
	h.mux.HandleFunc("PUT /connectors/{name}/resume", h.target(mirror.TargetRunning))
	h.mux.HandleFunc("PUT /connectors/{name}/stop", h.target(mirror.TargetStopped))
	h.mux.HandleFunc("GET /admin/loggers", h.loggers)
	h.mux.HandleFunc("GET /admin/loggers/{logger}", h.logger)
	h.mux.HandleFunc("PUT /admin/loggers/{logger}", h.setLogger)
	h.mux.HandleFunc("GET /{$}", h.root)
	h.mux.HandleFunc("GET /healthz", h.healthz)
	h.mux.HandleFunc("GET /health", h.health)
	h.mux.HandleFunc("GET /readyz", h.readyz)
	h.mux.HandleFunc("/", h.notFound)
	return h
}

// ServeHTTP serves a path with one trailing slash as the path without it,
// as Connect's REST API does (JAX-RS matches "/connectors/" as
// "/connectors"): a script's "curl $URL/connectors/" or
// ".../status/" answered 404 "no such endpoint" (TestBrkJTrailingSlash).
func (h *handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The escaped path's slash: an encoded one ("a%2F") is the name's.
	if p := r.URL.EscapedPath(); len(p) > 1 && strings.HasSuffix(p, "/") {
		r2, u := *r, *r.URL
		u.Path, u.RawPath = strings.TrimSuffix(u.Path, "/"), strings.TrimSuffix(u.RawPath, "/")
		r2.URL = &u
		r = &r2
	}
	h.mux.ServeHTTP(w, r)
}

// workerID is the worker id this member advertises, as Kafka Connect's
// worker_id (its REST listener's host:port): the -listen address as bound,
// with the host name when it names no host (":8083", "0.0.0.0:8083",
// "[::]:8083"); the host name alone without -listen.
func workerID(addr string) string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "kmirror"
	}
	if addr == "" {
		return host
	}
	h, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	if ip := net.ParseIP(h); h == "" || (ip != nil && ip.IsUnspecified()) {
		h = host
	}
	return net.JoinHostPort(h, port)
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false) // flow names contain "->"
	_ = enc.Encode(v)
}

// writeError answers in Kafka Connect's error shape:
// {"error_code": code, "message": msg}.
func writeError(w http.ResponseWriter, code int, msg string) {
	writeJSON(w, code, map[string]any{"error_code": code, "message": msg})
}

// notFound answers every path no route serves, in Connect's error shape,
// and an OPTIONS of a path a route serves (204, its methods in Allow).
func (h *handler) notFound(w http.ResponseWriter, r *http.Request) {
	// A known endpoint asked with another method: 405 and the methods it
	// takes, as Connect's REST API answers (the catch-all route would
	// otherwise answer 404 for it).
	var allowed []string
	getPattern := "" // the GET route of the path, if any
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPut, http.MethodDelete} {
		if m == r.Method {
			continue
		}
		probe := r.Clone(r.Context())
		probe.Method = m
		if _, pat := h.mux.Handler(probe); pat != "" && pat != "/" {
			allowed = append(allowed, m)
			if m == http.MethodGet {
				getPattern = pat
			}
		}
	}
	if len(allowed) > 0 {
		// A GET route serves HEAD too (net/http's ServeMux), which the
		// Allow header lists (RFC 9110) and the message leaves out.
		header := allowed
		if slices.Contains(allowed, http.MethodGet) {
			header = append(slices.Clone(allowed), http.MethodHead)
		}
		if r.Method == http.MethodOptions {
			// The methods the path takes, as Connect's REST API (JAX-RS)
			// answers an OPTIONS: it answered 405, as to a wrong method
			// (TestBrkJOptionsListsMethods).
			w.Header().Set("Allow", strings.Join(append(slices.Clone(header), http.MethodOptions), ", "))
			w.WriteHeader(http.StatusNoContent)
			return
		}
		w.Header().Set("Allow", strings.Join(header, ", "))
		msg := fmt.Sprintf("%s %s: method not allowed; use %s", r.Method, r.URL.Path, strings.Join(allowed, " or "))
		if (r.Method == http.MethodPatch || r.Method == http.MethodDelete) && strings.HasSuffix(r.URL.Path, "/offsets") {
			// Connect's KIP-875 alter and reset: "use GET" alone read as a
			// typo in the method (TestAlterOffsetsRefusalSaysWhy).
			msg += " to list them: kmirror moves no resume point on request (Connect's KIP-875 alter and reset are not served, in any state of the flow)"
		}
		// Connect's create, reconfigure and delete: "use GET" alone read as
		// a typo in the method (TestBrk1207ConfigChangeRefusalSaysWhy).
		const file = "kmirror's connectors are the flows of its properties file (-config), which the REST API does not change: "
		switch {
		case r.Method == http.MethodPost && getPattern == "GET /connectors":
			msg += " to list them: " + file + "add a flow there (<source>-><target>.enabled = true; kmirror -check -config FILE validates the file) and restart the members"
		case (r.Method == http.MethodPut || r.Method == http.MethodPatch) && getPattern == "GET /connectors/{name}/config":
			msg += " to read it: " + file + "change the flow's keys there (kmirror -check -config FILE validates the file) and restart the members"
		case r.Method == http.MethodDelete && getPattern == "GET /connectors/{name}":
			msg += " to read it: " + file + "PUT /connectors/{flow}/stop stops the flow now (the state survives restarts); <source>-><target>.enabled = false in the file stops its replication at the members' next start"
		}
		writeError(w, http.StatusMethodNotAllowed, msg)
		return
	}
	writeError(w, http.StatusNotFound, fmt.Sprintf("%s %s: no such endpoint; kmirror serves GET /, /status, /connectors, /connectors/{flow}[/status|/config|/tasks|/tasks/{id}/status|/offsets|/topics], "+
		"POST /connectors/{flow}/restart, /connectors/{flow}/tasks/{id}/restart, PUT /connectors/{flow}/pause|resume|stop|topics/reset, GET /metrics, /healthz, /health, /readyz, GET and PUT /admin/loggers/root", r.Method, r.URL.Path))
}

// rootDoc is the body of GET /, Kafka Connect's server information: the
// kmirror version and VCS revision of the binary (Connect has no
// kafka_cluster_id to give here: a member serves flows on several
// clusters).
type rootDoc struct {
	Version string `json:"version"`
	Commit  string `json:"commit"`
}

// root: GET /, as Connect's (a client's "server info" call answered 404).
func (h *handler) root(w http.ResponseWriter, r *http.Request) {
	v := readVersion()
	writeJSON(w, http.StatusOK, rootDoc{Version: v.Version, Commit: v.Revision})
}

// The MM2 connector names, which select the flow they run for.
const (
	mm2Source     = "MirrorSourceConnector"
	mm2Checkpoint = "MirrorCheckpointConnector"
	mm2Heartbeat  = "MirrorHeartbeatConnector"
)

// resolve maps the connector name of a request to a flow: a flow name
// ("source->target"), or an MM2 connector name when exactly one flow runs
// that connector (Source and Checkpoint: the replicating flows; Heartbeat:
// the flows that emit heartbeats), else the flow named by ?flow=. It
// answers the error itself and returns "" when it cannot: 404 naming the
// flows, or 409 Conflict for an MM2 name several flows run without ?flow=.
func (h *handler) resolve(w http.ResponseWriter, r *http.Request) string {
	name, flowParam := r.PathValue("name"), r.URL.Query().Get("flow")
	names := make([]string, 0, len(h.flows))
	for _, f := range h.flows {
		if f.Name() == name {
			return name
		}
		names = append(names, f.Name())
	}
	list := strings.Join(names, ", ")
	switch name {
	case mm2Source, mm2Checkpoint, mm2Heartbeat:
		var runs []string
		for _, f := range h.flows {
			if (name == mm2Heartbeat && !f.DisableHeartbeats) || (name != mm2Heartbeat && !f.Disabled) {
				runs = append(runs, f.Name())
			}
		}
		if flowParam != "" {
			if slices.Contains(runs, flowParam) {
				return flowParam
			}
			if slices.Contains(h.elsewhere, flowParam) {
				writeError(w, http.StatusNotFound, h.elsewhereMessage(name+" of flow "+strconv.Quote(flowParam), flowParam, list))
				return ""
			}
			writeError(w, http.StatusNotFound, fmt.Sprintf("Connector %s of flow %q not found: the flows running %s are: %s", name, flowParam, name, strings.Join(runs, ", ")))
			return ""
		}
		if len(runs) == 1 {
			return runs[0]
		}
		if len(runs) == 0 {
			writeError(w, http.StatusNotFound, fmt.Sprintf("Connector %s not found: no flow runs it (the flows are: %s)", name, list))
			return ""
		}
		// 409, not 404: the connector exists, several times; a script
		// that treats 404 as "not deployed" must not take this for it.
		writeError(w, http.StatusConflict, fmt.Sprintf("Connector %s runs for %d flows (%s): select one with ?flow=<source->target> (URL-encoded: ?flow=%s)", name, len(runs), strings.Join(runs, ", "), url.PathEscape(runs[0])))
		return ""
	}
	if slices.Contains(h.elsewhere, name) {
		writeError(w, http.StatusNotFound, h.elsewhereMessage(name, name, list))
		return ""
	}
	for _, n := range names {
		if strings.EqualFold(n, name) { // a new user's try: a->b for A->B
			writeError(w, http.StatusNotFound, fmt.Sprintf("Connector %s not found: flow names are case-sensitive, as the file's aliases: did you mean %s?", name, n))
			return ""
		}
	}
	// The arrow's encoding shown on one of the flows, not on "a->b": a
	// new user read "A->B (URL-encode the arrow: a-%3Eb)" as flow names
	// written in lower case.
	example := "a-%3Eb"
	if len(names) > 0 {
		example = url.PathEscape(names[0])
	}
	writeError(w, http.StatusNotFound, fmt.Sprintf("Connector %s not found. kmirror's connectors are its flows: %s (URL-encode the arrow: %s); "+
		"MM2's names %s, %s and %s answer for the flow that runs them, with ?flow= when several do", name, list, example, mm2Source, mm2Checkpoint, mm2Heartbeat))
	return ""
}

// elsewhereMessage is the 404 for connector what, of flow, a flow of the
// file -clusters leaves to other nodes; list names this member's flows.
func (h *handler) elsewhereMessage(what, flow, list string) string {
	return fmt.Sprintf("Connector %s not found on this member: -clusters %s runs only the flows into %s (%s); %s runs on the members started with its target in -clusters",
		what, strings.Join(h.onlyTargets, ","), strings.Join(h.onlyTargets, ", "), list, flow)
}

// flowDocs returns the documents of the flows (all when only is ""),
// each named by its flow name.
func (h *handler) flowDocs(only string) []flowDoc {
	cs, st := h.m.ClusterStatus(), h.m.Status()
	self := map[string]mirror.FlowStatus{}
	for _, f := range st.Flows {
		self[f.Name] = f
	}
	out := []flowDoc{}
	for _, cf := range cs.Flows {
		if only == "" || cf.Name == only {
			out = append(out, toFlowDoc(cf.Name, cf, self[cf.Name], h.worker))
		}
	}
	return out
}

// status: GET /status (?groups=false: see flowDocsOf).
func (h *handler) status(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, statusDoc{State: overall(h.m.Status()), WorkerID: h.worker, Flows: h.flowDocsOf(r, "")})
}

// flowDocsOf is flowDocs(only) for request r: with ?groups=false, the
// per-group detail is left out (large with thousands of groups), on
// /status, /connectors?expand=status and /connectors/{flow}/status alike
// (it was honoured on /status only).
func (h *handler) flowDocsOf(r *http.Request, only string) []flowDoc {
	docs := h.flowDocs(only)
	if r.URL.Query().Get("groups") == "false" {
		for i := range docs {
			docs[i].Groups = nil
		}
	}
	return docs
}

// infoDoc is Connect's GET /connectors/{name}: the connector's name, its
// configuration, its tasks and its type.
type infoDoc struct {
	Name   string            `json:"name"`
	Config map[string]string `json:"config"`
	Tasks  []taskRef         `json:"tasks"`
	Type   string            `json:"type"`
}

// taskRef is Connect's task id: the connector and the task number (slot).
type taskRef struct {
	Connector string `json:"connector"`
	Task      int32  `json:"task"`
}

// info returns the info document of flow under connector name name.
func (h *handler) info(name, flow string) infoDoc {
	d := infoDoc{Name: name, Config: asConnector(name, h.config(flow)), Tasks: []taskRef{}, Type: "source"}
	for _, cf := range h.m.ClusterStatus().Flows {
		if cf.Name == flow {
			for k := range cf.Tasks {
				d.Tasks = append(d.Tasks, taskRef{Connector: name, Task: int32(k)})
			}
		}
	}
	return d
}

// config returns flow's effective settings (secrets masked), or its
// FlowConfig's basic keys when the runner has none.
func (h *handler) config(flow string) map[string]string {
	f, ok := h.flowConfig(flow)
	if !ok {
		return map[string]string{"name": flow}
	}
	if c, ok := h.settings[flow]; ok {
		return connectConfig(flow, f.Source, f.Target, c)
	}
	return map[string]string{"name": flow, "connector.class": mm2SourceClass,
		"source.cluster.alias": f.Source, "target.cluster.alias": f.Target, "tasks.max": strconv.Itoa(f.Tasks)}
}

// flowConfig returns the configured flow named flow ("A->B").
func (h *handler) flowConfig(flow string) (mirror.FlowConfig, bool) {
	for _, f := range h.flows {
		if f.Name() == flow {
			return f, true
		}
	}
	return mirror.FlowConfig{}, false
}

// mm2SourceClass is MirrorSourceConnector's class, the connector.class of
// a flow's configuration.
const mm2SourceClass = "org.apache.kafka.connect.mirror.MirrorSourceConnector"

// asConnector returns cfg, a flow's configuration, as MM2 hands it to the
// connector name names: under MirrorCheckpointConnector or
// MirrorHeartbeatConnector (or MirrorSourceConnector) its name and
// connector.class are that connector's, as MirrorMakerConfig's
// connectorBaseConfig sets them (they were the flow's name and
// MirrorSourceConnector's class whatever the name asked, and info's name
// differed from its config's); under a flow name, cfg is unchanged.
func asConnector(name string, cfg map[string]string) map[string]string {
	switch name {
	case mm2Source, mm2Checkpoint, mm2Heartbeat:
		cfg["name"], cfg["connector.class"] = name, "org.apache.kafka.connect.mirror."+name
	}
	return cfg
}

// connectConfig returns a flow's effective settings (mirror's
// FlowSettings: "<flow>.<key>", "<alias>.<key>", secrets masked) keyed as
// MM2 hands them to its MirrorSourceConnector (MirrorMakerConfig's
// connectorBaseConfig), which Connect's GET /connectors/{name}/config
// shows: the flow's keys without the "<flow>." prefix; the source
// cluster's client keys as "source.consumer.*", "source.producer.*",
// "source.admin.*" and its other keys as "source.cluster.*", the target's
// as "target.*" and "target.cluster.*"; and name, connector.class and
// the two aliases. Scripts reading config["topics"] or config["tasks.max"]
// read it as from Connect (the keys were the file's own, "A->B.topics").
func connectConfig(flow, source, target string, settings map[string]string) map[string]string {
	out := make(map[string]string, len(settings)+4)
	cluster := func(prefix, rest, v string) {
		switch {
		case strings.HasPrefix(rest, "consumer.") || strings.HasPrefix(rest, "producer.") || strings.HasPrefix(rest, "admin."):
			out[prefix+"."+rest] = v
		default:
			out[prefix+".cluster."+rest] = v
		}
	}
	// The longer alias is tried first: with aliases "a" and "a.b", a key
	// "a.b.x" is the second's.
	sides := [][2]string{{"source", source}, {"target", target}}
	if len(target) > len(source) {
		sides[0], sides[1] = sides[1], sides[0]
	}
	for k, v := range settings {
		if rest, ok := strings.CutPrefix(k, flow+"."); ok {
			out[rest] = v
			continue
		}
		for _, sd := range sides {
			if rest, ok := strings.CutPrefix(k, sd[1]+"."); ok {
				cluster(sd[0], rest, v)
				break
			}
		}
	}
	out["name"], out["connector.class"] = flow, mm2SourceClass
	out["source.cluster.alias"], out["target.cluster.alias"] = source, target
	return out
}

// connectors: GET /connectors, the flow names (Connect lists connector
// names); ?expand=status and ?expand=info (either or both) answer
// Connect's map of name to {"status": ..., "info": ...}. Another expand
// value is ignored, as Connect ignores it (a client asking for an
// expansion of a newer Connect still gets the list).
func (h *handler) connectors(w http.ResponseWriter, r *http.Request) {
	expand := r.URL.Query()["expand"]
	if len(expand) == 0 {
		names := []string{}
		for _, f := range h.m.Status().Flows {
			names = append(names, f.Name)
		}
		writeJSON(w, http.StatusOK, names)
		return
	}
	out := map[string]map[string]any{}
	for _, d := range h.flowDocsOf(r, "") {
		e := map[string]any{}
		for _, x := range expand {
			switch x {
			case "status":
				e["status"] = d
			case "info":
				e["info"] = h.info(d.Name, d.Flow)
			}
		}
		out[d.Name] = e
	}
	writeJSON(w, http.StatusOK, out)
}

// connectorInfo: GET /connectors/{name}.
func (h *handler) connectorInfo(w http.ResponseWriter, r *http.Request) {
	if flow := h.resolve(w, r); flow != "" {
		writeJSON(w, http.StatusOK, h.info(r.PathValue("name"), flow))
	}
}

// connectorConfig: GET /connectors/{name}/config.
func (h *handler) connectorConfig(w http.ResponseWriter, r *http.Request) {
	if flow := h.resolve(w, r); flow != "" {
		writeJSON(w, http.StatusOK, asConnector(r.PathValue("name"), h.config(flow)))
	}
}

// connectorStatus: GET /connectors/{name}/status with name a flow name
// ("primary->secondary", URL-encoded as primary-%3Esecondary or not) or an
// MM2 connector name (see resolve).
func (h *handler) connectorStatus(w http.ResponseWriter, r *http.Request) {
	flow := h.resolve(w, r)
	if flow == "" {
		return
	}
	for _, d := range h.flowDocsOf(r, flow) {
		d.Name = r.PathValue("name")
		writeJSON(w, http.StatusOK, d)
		return
	}
	writeError(w, http.StatusNotFound, "No status found for connector "+flow)
}

// taskConfigDoc is one entry of GET /connectors/{name}/tasks.
type taskConfigDoc struct {
	ID     taskRef           `json:"id"`
	Config map[string]string `json:"config"`
}

// connectorTasks: GET /connectors/{name}/tasks, one entry per slot with
// its partitions (as "topic-partition", comma-separated) as its config.
func (h *handler) connectorTasks(w http.ResponseWriter, r *http.Request) {
	flow := h.resolve(w, r)
	if flow == "" {
		return
	}
	out := []taskConfigDoc{}
	for _, d := range h.flowDocs(flow) {
		for _, tk := range d.Tasks {
			var parts []string
			for _, p := range tk.Partitions {
				parts = append(parts, fmt.Sprintf("%s-%d", p.Topic, p.Partition))
			}
			out = append(out, taskConfigDoc{ID: taskRef{Connector: r.PathValue("name"), Task: tk.ID},
				Config: map[string]string{"slot": strconv.Itoa(int(tk.ID)), "task.assigned.partitions": strings.Join(parts, ",")}})
		}
	}
	writeJSON(w, http.StatusOK, out)
}

// offsetsDoc is Connect's GET /connectors/{name}/offsets (KIP-875).
type offsetsDoc struct {
	Offsets []offsetDoc `json:"offsets"`
}

// offsetDoc is one source partition and its offset, in the shape
// MirrorSourceConnector's are stored and listed: the partition map's keys
// in the order MM2 writes them, the offset the last replicated source
// record's.
type offsetDoc struct {
	Partition struct {
		Cluster   string `json:"cluster"`
		Partition int32  `json:"partition"`
		Topic     string `json:"topic"`
	} `json:"partition"`
	Offset struct {
		Offset int64 `json:"offset"`
	} `json:"offset"`
}

// connectorOffsets: GET /connectors/{name}/offsets (Connect's, KIP-875) for
// a flow or MirrorSourceConnector: every source partition of the flow with
// a stored resume point, whichever member replicates it, as MM2 lists them:
// {"offsets":[{"partition":{"cluster":S,"partition":p,"topic":t},
// "offset":{"offset":o}}]}, o the last source offset replicated (MM2
// resumes at o+1), sorted by topic and partition. The figures are the
// cluster view's (ClusterStatus: each slot's as its owner last published
// it, at most a status interval old; those of slots no member owns read
// from the stored resume points), as Connect's are as of the last offset
// flush. MirrorCheckpointConnector and MirrorHeartbeatConnector are
// refused (400): MM2 stores only {"offset":0} placeholders for them and
// kmirror none. Altering offsets (PATCH, DELETE) is not served: 405.
func (h *handler) connectorOffsets(w http.ResponseWriter, r *http.Request) {
	flow := h.resolve(w, r)
	if flow == "" {
		return
	}
	if n := r.PathValue("name"); n == mm2Checkpoint || n == mm2Heartbeat {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("GET /connectors/%s/offsets: kmirror keeps no Connect offsets for %s (MM2 stores only {\"offset\":0} placeholders for it); "+
			"the flow's resume points are GET /connectors/%s/offsets (URL-encode the arrow: %s) or GET /connectors/%s/offsets", n, n, flow, strings.ReplaceAll(flow, ">", "%3E"), mm2Source))
		return
	}
	doc := offsetsDoc{Offsets: []offsetDoc{}}
	source, parts := h.clusterPartitions(flow)
	for _, p := range parts {
		if p.Committed < 0 {
			continue
		}
		var o offsetDoc
		o.Partition.Cluster, o.Partition.Partition, o.Partition.Topic = source, p.Partition, p.Topic
		o.Offset.Offset = p.Committed
		doc.Offsets = append(doc.Offsets, o)
	}
	slices.SortFunc(doc.Offsets, func(a, b offsetDoc) int {
		if c := strings.Compare(a.Partition.Topic, b.Partition.Topic); c != 0 {
			return c
		}
		return int(a.Partition.Partition) - int(b.Partition.Partition)
	})
	writeJSON(w, http.StatusOK, doc)
}

// connectorTopics: GET /connectors/{name}/topics (Connect's active topics,
// KIP-558): {"<name>":{"topics":[...]}}, for a flow or
// MirrorSourceConnector the remote topics the flow replicates into on the
// target, sorted, from the cluster view (every slot's partitions,
// whichever member owns them); for MirrorCheckpointConnector the flow's
// checkpoints topic (none when it emits no checkpoints), for
// MirrorHeartbeatConnector its heartbeats topic: the topics each writes.
// Connect lists the topics a connector produced to since its topics were
// last reset; kmirror lists those it writes now, so a topic deleted on the
// source leaves the list.
func (h *handler) connectorTopics(w http.ResponseWriter, r *http.Request) {
	flow := h.resolve(w, r)
	if flow == "" {
		return
	}
	name := r.PathValue("name")
	if name == mm2Checkpoint || name == mm2Heartbeat {
		topics := []string{}
		if f, ok := h.flowConfig(flow); ok {
			pol := f.Policy
			if pol == nil {
				pol, _ = policy.NewDefault()
			}
			switch {
			case name == mm2Heartbeat:
				topics = append(topics, pol.HeartbeatsTopic())
			case !f.DisableCheckpoints:
				topics = append(topics, pol.CheckpointsTopic(f.Source))
			}
		}
		writeJSON(w, http.StatusOK, map[string]map[string][]string{name: {"topics": topics}})
		return
	}
	topics := []string{}
	_, parts := h.clusterPartitions(flow)
	for _, p := range parts {
		if p.RemoteTopic != "" {
			topics = append(topics, p.RemoteTopic)
		}
	}
	slices.Sort(topics)
	writeJSON(w, http.StatusOK, map[string]map[string][]string{name: {"topics": slices.Compact(topics)}})
}

// connectorTopicsReset: PUT /connectors/{name}/topics/reset (Connect's,
// KIP-558), which empties a connector's active topics so that the list
// starts again from the topics it writes next. kmirror's list (GET
// .../topics) is always the topics the flow writes now, so there is
// nothing to reset: 202 Accepted with no body, as Connect answers (it
// answered 404 "no such endpoint", which a script reads as an unknown
// connector: TestBrkJTopicsReset); an unknown connector is 404.
func (h *handler) connectorTopicsReset(w http.ResponseWriter, r *http.Request) {
	if h.resolve(w, r) != "" {
		w.WriteHeader(http.StatusAccepted)
	}
}

// clusterPartitions returns flow's source alias and the partitions of
// every slot of the cluster view (Mirror.ClusterStatus), whichever member
// owns them.
func (h *handler) clusterPartitions(flow string) (source string, parts []mirror.PartitionStatus) {
	for _, cf := range h.m.ClusterStatus().Flows {
		if cf.Name != flow {
			continue
		}
		for _, ss := range cf.Slots {
			parts = append(parts, ss.Partitions...)
		}
		return cf.Source, parts
	}
	return "", nil
}

// taskStatus: GET /connectors/{name}/tasks/{id}/status, one slot.
func (h *handler) taskStatus(w http.ResponseWriter, r *http.Request) {
	flow := h.resolve(w, r)
	if flow == "" {
		return
	}
	if d, id, ok := h.task(w, r, flow); ok {
		writeJSON(w, http.StatusOK, d.Tasks[id])
	}
}

// task returns the flow's document and the task {id} of the request
// names, or answers 404 (Connect's "Task ... not found", with the tasks
// there are) and returns false.
func (h *handler) task(w http.ResponseWriter, r *http.Request, flow string) (flowDoc, int32, bool) {
	id, err := strconv.ParseInt(r.PathValue("id"), 10, 32)
	for _, d := range h.flowDocs(flow) {
		if err == nil && id >= 0 && int(id) < len(d.Tasks) {
			return d, int32(id), true
		}
		writeError(w, http.StatusNotFound, fmt.Sprintf("Task %s of connector %s not found: its tasks are the slots 0 to %d (tasks.max %d)", r.PathValue("id"), r.PathValue("name"), len(d.Tasks)-1, len(d.Tasks)))
		return flowDoc{}, 0, false
	}
	writeError(w, http.StatusNotFound, "No status found for connector "+flow)
	return flowDoc{}, 0, false
}

// taskRestart: POST /connectors/{name}/tasks/{id}/restart, Kafka
// Connect's restart of one task: the FAILED partitions of slot {id}
// restart on whichever member owns it (Mirror.RestartTaskInCluster; a
// RUNNING partition never restarts). It answers as Connect does, 204 No
// Content with no body (GET .../tasks/{id}/status shows the partitions
// RUNNING again); an unknown task or flow is 404, a restart request that
// could not be written 500.
func (h *handler) taskRestart(w http.ResponseWriter, r *http.Request) {
	flow := h.resolve(w, r)
	if flow == "" {
		return
	}
	_, id, ok := h.task(w, r, flow)
	if !ok {
		return
	}
	wctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), restartWriteTimeout)
	defer cancel()
	if _, err := h.m.RestartTaskInCluster(wctx, flow, id, "POST "+r.URL.Path+" on "+h.worker); err != nil {
		writeError(w, http.StatusInternalServerError, err.Error()+"; "+h.writeRetryHint(flow, "the restart request", http.MethodPost))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// restartDoc is the body of POST /connectors/{name}/restart: the FAILED
// partitions of this process the request restarted, and those of the
// other members it asked to restart through the status topic.
type restartDoc struct {
	Name string `json:"name"` // the flow, "source->target"
	// Topic and Partition echo the request's filter ("" and -1: all).
	Topic     string `json:"topic,omitempty"`
	Partition int32  `json:"partition"`
	// Restarted counts this member's partitions asked to restart
	// (Mirror.RestartFailedInCluster); Partitions lists the matching
	// partitions of this member that were FAILED just before the request,
	// in state FAILED as they were (Connect reports them RESTARTING): GET
	// the status to see them RUNNING again. A partition that failed
	// between the two makes Restarted differ from len(Partitions).
	Restarted  int            `json:"restarted"`
	Partitions []partitionDoc `json:"partitions"`
	WorkerID   string         `json:"worker_id"`
	// OtherMembers lists the matching FAILED partitions of the other
	// members, by worker id, as the cluster view showed them just before
	// the request: each member restarts its own on reading the request in
	// the status topic (within a second; a partition that failed after
	// their last status publication is restarted too, and not listed).
	OtherMembers []otherRestart `json:"other_members"`
	// Hint says, when nothing matched on any member, why: no partition of
	// this member matched the filter (the topic is not one it replicates,
	// or the partition is not one of the topic's here), or none that
	// matched was FAILED; and, when the flow is PAUSED or STOPPED, that
	// nothing restarts before it resumes. Empty otherwise.
	Hint string `json:"hint,omitempty"`
}

// restartHint explains a restart that restarted nothing, from the member's
// partitions of the flow (ps) and the request's filter (topic "" and
// partition -1 match all).
func restartHint(ps []mirror.PartitionStatus, topic string, partition int32, flowPath string) string {
	var ofTopic []int32
	matched := 0
	for _, p := range ps {
		if topic != "" && p.Topic != topic {
			continue
		}
		ofTopic = append(ofTopic, p.Partition)
		if partition < 0 || p.Partition == partition {
			matched++
		}
	}
	status := "GET " + flowPath + "/status lists every member's partitions and their states"
	switch {
	case len(ps) == 0:
		return "this member replicates no partition of the flow now; " + status
	case topic != "" && len(ofTopic) == 0:
		return fmt.Sprintf("this member replicates no partition of source topic %q (topic= names a source topic, not its remote topic); %s", topic, status)
	case matched == 0:
		slices.Sort(ofTopic)
		return fmt.Sprintf("this member replicates partitions %v of source topic %q, not partition %d; %s", ofTopic, topic, partition, status)
	default:
		return fmt.Sprintf("none of the %d matching partitions of this member is FAILED; %s", matched, status)
	}
}

// restart: POST /connectors/{name}/restart[?onlyFailed=true[&includeTasks=true]][&topic=T[&partition=P]],
// Kafka Connect's restart (KIP-745), its two flags read as Connect does
// (default false), a task being the flow's source partitions:
//
//   - onlyFailed=true (includeTasks true or false): the failed tasks,
//     per source partition: it restarts the flow's FAILED partitions
//     that this process replicates (all, those of source topic T, or
//     partition P of it) with Mirror.RestartFailedInCluster, which asks
//     the other members to restart theirs through the status topic, and
//     answers 202 Accepted with what it restarted and what the others'
//     statuses showed FAILED (restartDoc); 500 when the request could
//     not be written (this member's partitions were restarted);
//   - neither (a bare POST): Connect restarts the connector object alone,
//     never a task, and answers 204 No Content. A kmirror flow has no
//     connector object apart from its partitions: nothing is restarted,
//     204 (it restarted the FAILED partitions, unlike Connect and unlike
//     an explicit onlyFailed=false, which it refused);
//   - includeTasks=true alone (restart every task): refused, 400: kmirror
//     never restarts a RUNNING partition.
//
// Also 400: a flag neither true nor false, topic or partition without
// onlyFailed=true, a bad partition, a partition without a topic; an
// unknown flow is 404 in Connect's shape. With several members, send it to
// any one: as in Connect, every member restarts its own.
func (h *handler) restart(w http.ResponseWriter, r *http.Request) {
	// An unknown connector is 404 whatever the query, as in Connect.
	name := h.resolve(w, r)
	if name == "" {
		return
	}
	q := r.URL.Query()
	bad := func(msg string) { writeError(w, http.StatusBadRequest, msg) }
	flag := func(name string) (bool, bool) {
		switch v := q.Get(name); strings.ToLower(v) {
		case "", "false":
			return false, true
		case "true":
			return true, true
		default:
			bad(fmt.Sprintf("%s=%s: want true or false", name, v))
			return false, false
		}
	}
	onlyFailed, ok := flag("onlyFailed")
	if !ok {
		return
	}
	includeTasks, ok := flag("includeTasks")
	if !ok {
		return
	}
	if !onlyFailed {
		switch {
		case includeTasks:
			bad("includeTasks=true without onlyFailed=true restarts every task: kmirror never restarts a RUNNING partition; add onlyFailed=true to restart the FAILED ones")
			return
		case q.Has("topic") || q.Has("partition"):
			bad("topic= and partition= select FAILED partitions to restart: add onlyFailed=true")
			return
		}
		// Connect's restart of the connector object alone: kmirror's
		// flow has none apart from its partitions.
		w.WriteHeader(http.StatusNoContent)
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
	if partition >= 0 && topic == "" {
		bad(fmt.Sprintf("partition=%d without topic=: name the source topic of the partition (&topic=<source topic>&partition=%d), or leave partition= out to restart every FAILED partition", partition, partition))
		return
	}
	var fs mirror.FlowStatus
	for _, f := range h.m.Status().Flows {
		if f.Name == name {
			fs = f
		}
	}
	// The other members' matching FAILED partitions, as the cluster view
	// shows them before the request.
	others := h.failedElsewhere(name, topic, partition)
	// The request is written even when the caller hangs up: this
	// member's partitions restart at once, and the others' must too.
	wctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), restartWriteTimeout)
	defer cancel()
	n, err := h.m.RestartFailedInCluster(wctx, name, topic, partition, "POST "+r.URL.Path+" on "+h.worker)
	if err != nil {
		// The request was checked above and the flow resolved: the error
		// is the restart request's write (this member's partitions were
		// restarted, the others' not; the message says so, and what to
		// do: TestBrkJRestartWriteFailureSaysWhatToDo).
		writeError(w, http.StatusInternalServerError, err.Error()+"; "+h.writeRetryHint(name, "the restart request", http.MethodPost))
		return
	}
	doc := restartDoc{Name: name, Topic: topic, Partition: partition, Restarted: n, Partitions: []partitionDoc{}, WorkerID: h.worker, OtherMembers: others}
	for _, p := range fs.Partitions {
		if p.State == mirror.StateFailed && (topic == "" || p.Topic == topic) && (partition < 0 || p.Partition == partition) {
			doc.Partitions = append(doc.Partitions, partitionDocs([]mirror.PartitionStatus{p})...)
		}
	}
	// The flow's own endpoint, also when an MM2 name asked (with ?flow=
	// when several flows run it, which a path alone would not carry:
	// TestBrkJRestartHintNamesTheFlow).
	flowPath := "/connectors/" + url.PathEscape(name)
	switch {
	case n == 0 && (fs.AppliedState == mirror.TargetPaused || fs.AppliedState == mirror.TargetStopped):
		// Its FAILED partitions keep their state in the status, but no
		// unit runs: none restarts (nor do the other members'), and
		// the resume restarts them all (TestRestartWhilePausedSaysSo).
		doc.Hint = fmt.Sprintf("the flow is %s: none of its partitions runs, so none restarts now, on this member or another; its FAILED partitions restart when it resumes (PUT %s/resume)",
			fs.AppliedState, flowPath)
	case n == 0 && len(others) == 0:
		doc.Hint = restartHint(fs.Partitions, topic, partition, flowPath)
	}
	writeJSON(w, http.StatusAccepted, doc)
}

// restartWriteTimeout bounds the write of a restart request to the status
// topic (the target unreachable: 500).
const restartWriteTimeout = 30 * time.Second

// otherRestart is one other member's matching FAILED partitions in
// restartDoc: its worker id and the partitions ("topic[partition]").
type otherRestart struct {
	WorkerID   string   `json:"worker_id"`
	Partitions []string `json:"partitions"`
}

// failedElsewhere returns, from the cluster view, the other members owning
// FAILED partitions of flow that match the restart's filter (topic "" and
// partition -1 match all), sorted by worker id. A member restarts only its
// own partitions, so the request reaches them through the status topic
// (Mirror.RestartFailedInCluster); before it did, a request sent to
// another member (behind a Service, whichever answers) answered only
// "none of the matching partitions of this member is FAILED"
// (TestRestartOnOtherMemberRestartsTheOwners).
func (h *handler) failedElsewhere(flow, topic string, partition int32) []otherRestart {
	byWorker := map[string][]string{}
	for _, cf := range h.m.ClusterStatus().Flows {
		if cf.Name != flow {
			continue
		}
		// This member's slots, by its member id: worker ids can be the
		// same on several hosts (the systemd unit's -listen
		// 127.0.0.1:9090), and the other hosts' FAILED partitions were
		// taken for this one's and left out.
		self := ""
		for _, m := range cf.Members {
			if m.Self {
				self = m.MemberID
			}
		}
		for _, ss := range cf.Slots {
			if ss.WorkerID == "" || (self != "" && ss.MemberID == self) || (self == "" && ss.WorkerID == h.worker) {
				continue
			}
			for _, p := range ss.Partitions {
				if p.State != mirror.StateFailed || (topic != "" && p.Topic != topic) || (partition >= 0 && p.Partition != partition) {
					continue
				}
				byWorker[ss.WorkerID] = append(byWorker[ss.WorkerID], fmt.Sprintf("%s[%d]", p.Topic, p.Partition))
			}
		}
	}
	out := make([]otherRestart, 0, len(byWorker))
	for wk, ps := range byWorker {
		out = append(out, otherRestart{WorkerID: wk, Partitions: ps})
	}
	slices.SortFunc(out, func(a, b otherRestart) int { return strings.Compare(a.WorkerID, b.WorkerID) })
	return out
}

// writeRetryHint tells what to do when a request to flow (sent with
// method) could not be written to the flow's status topic: what is stored
// there, on the flow's target, which must answer before a retry.
func (h *handler) writeRetryHint(flow, what, method string) string {
	target := flow
	if f, ok := h.flowConfig(flow); ok {
		target = "cluster " + f.Target
	}
	return fmt.Sprintf("%s is stored in the flow's status topic on its target (%s), which must answer: retry the %s once it does (GET /connectors/%s/status shows the flow's state)",
		what, target, method, url.PathEscape(flow))
}

// maxReason bounds the ?reason= of a pause, resume or stop: it is written
// into the target-state record, which the status topic's records must
// hold.
const maxReason = 4 << 10

// target returns the handler of PUT /connectors/{name}/pause, /resume and
// /stop (Kafka Connect's; KIP-875 for stop): it persists state as the
// flow's target state in its status topic (Mirror.SetTargetState), which
// every member of the flow applies within 5 s, and answers as Connect does,
// with no body: 202 Accepted to pause and resume, 204 No Content to stop;
// GET the status to see it applied. name is the flow or
// MirrorSourceConnector: the target state is the whole flow's, so
// MirrorCheckpointConnector and MirrorHeartbeatConnector, which MM2 pauses
// alone, are refused (400, naming the flow's endpoint) rather than pause
// replication. The optional ?reason= (at most maxReason bytes, else 400) is
// kept in the record. An unknown flow is 404, a request SetTargetState
// refuses (a flow that runs nothing to pause or stop) 409, a failed write
// 500, in Connect's error shape.
func (h *handler) target(state mirror.TargetState) http.HandlerFunc {
	verb := map[mirror.TargetState]string{mirror.TargetPaused: "pause", mirror.TargetRunning: "resume", mirror.TargetStopped: "stop"}[state]
	return func(w http.ResponseWriter, r *http.Request) {
		name := h.resolve(w, r) // an unknown connector or flow is 404, as in Connect
		if name == "" {
			return
		}
		if n := r.PathValue("name"); n == mm2Checkpoint || n == mm2Heartbeat {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("PUT /connectors/%s/%s: kmirror cannot %s %s alone: a flow's target state is the whole flow's "+
				"(PAUSED stops replication while checkpoints, heartbeats and group offset sync go on; STOPPED stops them too). "+
				"Use PUT /connectors/%s/%s (URL-encode the arrow: %s) or PUT /connectors/%s/%s",
				n, verb, verb, n, name, verb, strings.ReplaceAll(name, ">", "%3E"), mm2Source, verb))
			return
		}
		by := "PUT " + r.URL.Path + " on " + h.worker
		reason := r.URL.Query().Get("reason")
		if len(reason) > maxReason {
			writeError(w, http.StatusBadRequest, fmt.Sprintf("?reason= is %d bytes: at most %d (it is stored in the flow's status topic)", len(reason), maxReason))
			return
		}
		if err := h.m.SetTargetState(r.Context(), name, state, by, reason); err != nil {
			if errors.Is(err, mirror.ErrTargetStateRefused) {
				writeError(w, http.StatusConflict, err.Error())
				return
			}
			// The write failed: say what that leaves and what to do (it
			// answered the client's error alone, e.g. "dial tcp ...:
			// connection refused": TestBrkJTargetStateWriteFailureSaysWhatToDo).
			writeError(w, http.StatusInternalServerError, fmt.Sprintf("%v; the flow's target state was not stored (or its write not acknowledged), so no member %ss yet: %s",
				err, verb, h.writeRetryHint(name, "it", http.MethodPut)))
			return
		}
		if state == mirror.TargetStopped {
			w.WriteHeader(http.StatusNoContent) // Connect's stop is a void method
			return
		}
		w.WriteHeader(http.StatusAccepted)
	}
}
