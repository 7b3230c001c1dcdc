package loaderimpl

import (
	"bufio"
	"io"
	"strconv"
	"sync"
	"time"
)

// Track ids of a trace: the consumer, one per worker, one per CUDA stream.
const (
	consumerTrack = 0
	workerTrack   = 1    // worker w is workerTrack + w
	streamTrack   = 1000 // stream s is streamTrack + s
)

// tracer writes Chrome trace-event JSON (the JSON array format, which
// Perfetto and chrome://tracing open): a track for the consumer's waits, one
// per worker with each run of samples it fills a slice, and under CUDA one
// per stream with each batch's copies a slice.
type tracer struct {
	mu     sync.Mutex
	w      *bufio.Writer
	start  time.Time
	err    error // first write error; reported by Close
	closed bool  // events after close are dropped
}

func newTracer(w io.Writer, loader string, workers int) *tracer {
	t := &tracer{w: bufio.NewWriterSize(w, 1<<16), start: time.Now()}
	t.w.WriteString("[\n")
	t.meta("process_name", 0, "loadergen "+loader)
	t.meta("thread_name", consumerTrack, "consumer (waiting for batches, filling what no worker has claimed)")
	for w := range workers {
		t.meta("thread_name", workerTrack+w, "worker "+strconv.Itoa(w))
	}
	return t
}

func (t *tracer) meta(kind string, tid int, name string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := append(t.w.AvailableBuffer(), `{"ph":"M","pid":1,"tid":`...)
	b = strconv.AppendInt(b, int64(tid), 10)
	b = append(b, `,"name":"`...)
	b = append(b, kind...)
	b = append(b, `","args":{"name":`...)
	b = strconv.AppendQuote(b, name)
	b = append(b, "}},\n"...)
	t.write(b)
}

// slice records one complete event ("X") on track tid, for batch and, when
// samples > 0, a run of samples starting at dataset index.
func (t *tracer) slice(tid int, name string, start time.Time, dur time.Duration, batch, index, samples int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := append(t.w.AvailableBuffer(), `{"ph":"X","pid":1,"tid":`...)
	b = strconv.AppendInt(b, int64(tid), 10)
	b = append(b, `,"name":"`...)
	b = append(b, name...)
	b = append(b, `","ts":`...)
	b = strconv.AppendFloat(b, float64(start.Sub(t.start).Nanoseconds())/1e3, 'f', 3, 64)
	b = append(b, `,"dur":`...)
	b = strconv.AppendFloat(b, float64(dur.Nanoseconds())/1e3, 'f', 3, 64)
	b = append(b, `,"args":{"batch":`...)
	b = strconv.AppendInt(b, int64(batch), 10)
	if samples > 0 {
		b = append(b, `,"index":`...)
		b = strconv.AppendInt(b, int64(index), 10)
		b = append(b, `,"samples":`...)
		b = strconv.AppendInt(b, int64(samples), 10)
	}
	b = append(b, "}},\n"...)
	t.write(b)
}

// counter records the value of counter name from time at on ("C"): the
// ring's depth, which Perfetto draws as a track of its own.
func (t *tracer) counter(name string, at time.Time, value int) {
	t.mu.Lock()
	defer t.mu.Unlock()
	b := append(t.w.AvailableBuffer(), `{"ph":"C","pid":1,"name":"`...)
	b = append(b, name...)
	b = append(b, `","ts":`...)
	b = strconv.AppendFloat(b, float64(at.Sub(t.start).Nanoseconds())/1e3, 'f', 3, 64)
	b = append(b, `,"args":{"`...)
	b = append(b, name...)
	b = append(b, `":`...)
	b = strconv.AppendInt(b, int64(value), 10)
	b = append(b, "}},\n"...)
	t.write(b)
}

// write writes an event built in t.w.AvailableBuffer(); t.mu is held.
func (t *tracer) write(b []byte) {
	if t.closed {
		return
	}
	if _, err := t.w.Write(b); err != nil && t.err == nil {
		t.err = err
	}
}

// close ends the JSON array and flushes.
func (t *tracer) close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.closed = true
	// A final empty object keeps the array valid JSON after the last comma.
	t.w.WriteString("{}\n]\n")
	if err := t.w.Flush(); err != nil && t.err == nil {
		t.err = err
	}
	return t.err
}
