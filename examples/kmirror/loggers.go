package main

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
)

// rootLogger is the one logger kmirror has, in Connect's naming: every
// line of the process goes through it, at -log-level or the level PUT
// /admin/loggers/{logger} set since.
const rootLogger = "root"

// loggerLevels maps Connect's (log4j's) level names to slog's: TRACE is
// DEBUG (slog has nothing finer), FATAL is ERROR.
var loggerLevels = map[string]slog.Level{"TRACE": slog.LevelDebug, "DEBUG": slog.LevelDebug, "INFO": slog.LevelInfo,
	"WARN": slog.LevelWarn, "ERROR": slog.LevelError, "FATAL": slog.LevelError}

// levelName is level in Connect's naming (DEBUG, INFO, WARN, ERROR).
func levelName(l slog.Level) string {
	switch {
	case l <= slog.LevelDebug:
		return "DEBUG"
	case l <= slog.LevelInfo:
		return "INFO"
	case l <= slog.LevelWarn:
		return "WARN"
	}
	return "ERROR"
}

// loggerDoc is one logger's entry in GET /admin/loggers, as Connect's.
type loggerDoc struct {
	Level string `json:"level"`
}

// loggers: GET /admin/loggers (Connect's, KIP-495): kmirror's one logger,
// {"root":{"level":"INFO"}}. The endpoint answered 404 "no such
// endpoint", and a script raising MM2's level to debug a flow got nothing
// (TestBrkJAdminLoggers).
func (h *handler) loggers(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]loggerDoc{rootLogger: {Level: levelName(h.logLevel.Level())}})
}

// logger: GET /admin/loggers/{logger}: root's level, the level of every
// logger; another name is 404, naming root.
func (h *handler) logger(w http.ResponseWriter, r *http.Request) {
	if name := r.PathValue("logger"); name != rootLogger {
		writeError(w, http.StatusNotFound, fmt.Sprintf("Logger %s not found: kmirror has one logger, %s, whose level (-log-level) is every line's: GET /admin/loggers/%s", name, rootLogger, rootLogger))
		return
	}
	writeJSON(w, http.StatusOK, loggerDoc{Level: levelName(h.logLevel.Level())})
}

// setLogger: PUT /admin/loggers/{logger} {"level":"DEBUG"} (Connect's,
// KIP-495): sets this process's level, until it stops (-log-level again at
// the next start), whatever logger is named (a script names MM2's,
// org.apache.kafka.connect.mirror): kmirror has one logger. It answers
// 200 with the loggers changed, ["root"], as Connect lists them. A level
// other than TRACE, DEBUG, INFO, WARN, ERROR or FATAL is 400, and so is
// ?scope=cluster (Connect's KIP-976: every worker): kmirror sets this
// member's only (PUT it on each member).
func (h *handler) setLogger(w http.ResponseWriter, r *http.Request) {
	if scope := r.URL.Query().Get("scope"); scope != "" && !strings.EqualFold(scope, "worker") {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("scope=%s: kmirror sets the level of the member asked only (scope=worker, the default): PUT /admin/loggers/%s on each member", scope, rootLogger))
		return
	}
	var body struct {
		Level *string `json:"level"`
	}
	if err := json.NewDecoder(http.MaxBytesReader(w, r.Body, 4<<10)).Decode(&body); err != nil || body.Level == nil {
		writeError(w, http.StatusBadRequest, `the body must be {"level": "<level>"}, the level one of TRACE, DEBUG, INFO, WARN, ERROR or FATAL`)
		return
	}
	level, ok := loggerLevels[strings.ToUpper(*body.Level)]
	if !ok {
		writeError(w, http.StatusBadRequest, fmt.Sprintf("level %q: want TRACE, DEBUG, INFO, WARN, ERROR or FATAL (TRACE is DEBUG, FATAL is ERROR in kmirror)", *body.Level))
		return
	}
	was := h.logLevel.Level()
	h.logLevel.Set(level)
	h.levelLog.Info("log level set", "level", levelName(level), "was", levelName(was), "logger", r.PathValue("logger"), "by", "PUT "+r.URL.Path+" on "+h.worker)
	writeJSON(w, http.StatusOK, []string{rootLogger})
}
