package python

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
)

// The Go side's log records wait in a queue until Python takes them
// (lg_logs) and hands them to its logging module: nothing in Go calls into
// Python, so no Go thread ever needs the GIL.
var logs logQueue

// logQueue is the queue of log records for Python.
type logQueue struct {
	mu      sync.Mutex // guards the queue: every logging goroutine appends, lg_logs takes
	queue   []logRecord
	dropped int // records left out since the last take, the queue being full
	// told, when not nil, is told how many records wait after each change,
	// with mu held: ready.go's, so that lg_next reports it without
	// entering Go.
	told func(waiting int)
}

// maxLogs bounds the queue: a Python that never takes them costs no more.
const maxLogs = 1000

// level is the least level handed to Python: its "loadergen" logger's.
var level slog.LevelVar

// logRecord is one record as Python's logging takes it.
type logRecord struct {
	Logger  string `json:"logger"`  // "loadergen", or "loadergen.<module>" for a loader's own lines
	Level   int    `json:"level"`   // Python's level: 10 DEBUG, 20 INFO, 30 WARNING, 40 ERROR
	Message string `json:"message"` // the message, then its attributes as key=value
}

// queueHandler is the slog.Handler of the library's loggers.
type queueHandler struct {
	logger string
	attrs  string // attributes given by With, already formatted
}

func (h queueHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= level.Level() }

func (h queueHandler) Handle(_ context.Context, r slog.Record) error {
	var b strings.Builder
	b.WriteString(r.Message)
	b.WriteString(h.attrs)
	r.Attrs(func(a slog.Attr) bool {
		b.WriteString(" " + a.String())
		return true
	})
	rec := logRecord{Logger: h.logger, Level: pythonLevel(r.Level), Message: b.String()}
	logs.mu.Lock()
	defer logs.mu.Unlock()
	if len(logs.queue) >= maxLogs {
		logs.dropped++
	} else {
		logs.queue = append(logs.queue, rec)
	}
	logs.tell()
	return nil
}

func (h queueHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	for _, a := range attrs {
		h.attrs += " " + a.String()
	}
	return h
}

func (h queueHandler) WithGroup(string) slog.Handler { return h }

// pythonLevel maps slog's levels (-4 debug, 0 info, 4 warn, 8 error) onto
// Python's (10, 20, 30, 40).
func pythonLevel(l slog.Level) int { return 20 + int(l)*10/4 }

// setLogLevel sets the least level handed over from Python's level py.
func setLogLevel(py int) { level.Set(slog.Level((py - 20) * 4 / 10)) }

// logger is the logger of module's loaders.
func logger(module string) *slog.Logger {
	return slog.New(queueHandler{logger: "loadergen." + module})
}

// pendingLogs is the number of records waiting.
func pendingLogs() int {
	logs.mu.Lock()
	defer logs.mu.Unlock()
	return len(logs.queue) + logs.dropped
}

// tell tells logs.told how many records wait; logs.mu is held.
func (l *logQueue) tell() {
	if l.told != nil {
		l.told(len(l.queue) + l.dropped)
	}
}

// takeLogs empties the queue into a JSON array, with a record that counts
// those dropped.
func takeLogs() []byte {
	logs.mu.Lock()
	q := logs.queue
	if logs.dropped > 0 {
		q = append(q, logRecord{Logger: "loadergen", Level: 30, Message: fmt.Sprintf("%d log records dropped: the queue holds %d until Python takes them", logs.dropped, maxLogs)})
	}
	logs.queue, logs.dropped = nil, 0
	logs.tell()
	logs.mu.Unlock()
	if q == nil {
		return []byte("[]")
	}
	js, _ := json.Marshal(q)
	return js
}

func init() {
	// What the library logs outside a loader (a source's open, storage)
	// goes through slog's default logger: to Python too.
	slog.SetDefault(slog.New(queueHandler{logger: "loadergen"}))
}
