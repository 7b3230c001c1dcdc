package python

import (
	"context"
	"encoding/json"
	"errors"
	"time"

	"github.com/loadergen/loadergen/runtime"
)

// pyError is an error as Python raises it: Kind picks the exception class
// (docs/PYTHON.md), Message is the Go error's whole text, and a read error
// names the batch, the sample and the key.
type pyError struct {
	Kind    string `json:"kind"` // "read", "closed", "busy", "cancelled" or "error"
	Message string `json:"message"`
	Batch   *int   `json:"batch,omitempty"`
	Index   *int   `json:"index,omitempty"`
	Key     string `json:"key,omitempty"`
}

// describeError is err's JSON for Python.
func describeError(err error) []byte {
	e := pyError{Kind: "error", Message: err.Error()}
	var re *runtime.ReadError
	switch {
	case errors.As(err, &re):
		e.Kind, e.Batch, e.Index, e.Key = "read", &re.Batch, &re.Index, re.Key
	case errors.Is(err, runtime.ErrClosed):
		e.Kind = "closed"
	case errors.Is(err, runtime.ErrBusy):
		e.Kind = "busy"
	case errors.Is(err, context.Canceled):
		e.Kind = "cancelled"
	}
	js, _ := json.Marshal(e)
	return js
}

// statsJSON is Stats as Python's dict: snake case, times in seconds.
func statsJSON(s runtime.Stats) map[string]any {
	sec := func(d time.Duration) float64 { return d.Seconds() }
	copies := make([]float64, len(s.Copy))
	for i, d := range s.Copy {
		copies[i] = sec(d)
	}
	return map[string]any{
		"batches": s.Batches, "samples": s.Samples, "bytes": s.Bytes,
		"in_loader": sec(s.InLoader), "self_fill": sec(s.SelfFill), "worker_busy": sec(s.WorkerBusy),
		"copy": copies, "host_stall": sec(s.HostStall), "copy_times_lost": s.CopyTimesLost,
		"rows": s.Rows, "spanned": s.Spanned, "padding": s.Padding(), "truncated": s.Truncated,
		"prefetch": s.Prefetch, "missing_chunks": s.MissingChunks, "kept": s.Kept, "skipped": s.Skipped,
	}
}
