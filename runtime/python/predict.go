//go:build cgo

package python

import (
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/volume"
)

// writer is one open prediction writer of the library, with the tiles it
// owns and the plan of its dataset, by id.
type writer struct {
	id      int64
	module  string
	p       *Prediction
	outputs []runtime.Key // the plan's targets, which Write takes in order
	// mu guards closed: Write and Loader read it, Close sets it; Writes
	// run in parallel (the writer is safe for concurrent use).
	mu     sync.RWMutex
	closed bool
}

// writers are the open prediction writers by id; ids come from handles'
// counter, so a writer's id is never a loader's.
var writers struct {
	mu sync.Mutex
	m  map[int64]*writer
}

// predictOptions are the Python Predictions' keywords: volume.PredictOptions
// in snake case.
type predictOptions struct {
	Format       int    `json:"format"`
	Codec        string `json:"codec"`
	ZstdLevel    int    `json:"zstd_level"`
	Chunks       []int  `json:"chunks"`
	Shards       []int  `json:"shards"`
	Overwrite    bool   `json:"overwrite"`
	Resume       bool   `json:"resume"`
	MaxPartialMB int    `json:"max_partial_mb"`
	Rank         int    `json:"rank"`
	WorldSize    int    `json:"world_size"`
}

// predict opens module's tiles of manifest and a writer of their
// predictions at root.
func predict(module, manifest, root string, opts []byte) (*writer, error) {
	d, err := dataset(module)
	if err != nil {
		return nil, err
	}
	if d.Predict == nil {
		return nil, fmt.Errorf("%s has no tiles: its schema says no tiles:, so nothing writes predictions", module)
	}
	var o predictOptions
	if err := decodeStrict(opts, &o); err != nil {
		return nil, fmt.Errorf("%s: predictions' options: %w", module, err)
	}
	p, err := d.Predict(manifest, root, volume.PredictOptions{
		Format: o.Format, Codec: o.Codec, ZstdLevel: o.ZstdLevel, Chunks: o.Chunks, Shards: o.Shards,
		Overwrite: o.Overwrite, Resume: o.Resume, MaxPartialMB: o.MaxPartialMB, Rank: o.Rank, WorldSize: o.WorldSize,
		Logger: logger(module),
	})
	if err != nil {
		return nil, err
	}
	w := &writer{module: module, p: p}
	handles.mu.Lock()
	handles.next++
	w.id = handles.next
	handles.mu.Unlock()
	writers.mu.Lock()
	defer writers.mu.Unlock()
	if writers.m == nil {
		writers.m = map[int64]*writer{}
	}
	writers.m[w.id] = w
	return w, nil
}

// writerOf returns the writer of id w.
func writerOf(w int64) (*writer, error) {
	writers.mu.Lock()
	defer writers.mu.Unlock()
	if wr := writers.m[w]; wr != nil {
		return wr, nil
	}
	return nil, fmt.Errorf("predictions %d: %w", w, runtime.ErrClosed)
}

// loader starts a loader over the writer's tiles, as a handle; the writer
// keeps the tiles until it closes.
func (w *writer) loader(opts []byte) (*handle, error) {
	w.mu.RLock()
	defer w.mu.RUnlock()
	if w.closed {
		return nil, fmt.Errorf("predictions: %w", runtime.ErrClosed)
	}
	h, err := start(w.module, opts, w.p.Loader)
	if err == nil && w.outputs == nil {
		for _, k := range h.plan.Keys {
			if k.Role == runtime.Target {
				w.outputs = append(w.outputs, k)
			}
		}
	}
	return h, err
}

// write takes the predictions of tiles indices: for each output in order,
// n bytes at data, the key's dtype in C order, [len(indices), (C,) S...].
func (w *writer) write(indices []int, data []unsafe.Pointer, n []int64) error {
	w.mu.RLock()
	defer w.mu.RUnlock()
	switch {
	case w.closed:
		return fmt.Errorf("predictions: %w", runtime.ErrClosed)
	case w.outputs == nil:
		return errors.New("predictions: write before the tiles' loader was made (loader())")
	case len(data) != len(w.outputs):
		return fmt.Errorf("predictions: %d arrays for %d outputs", len(data), len(w.outputs))
	}
	values := make([]runtime.Tensor, len(data))
	for i, k := range w.outputs {
		want := int64(len(indices)) * k.SampleBytes
		if n[i] != want {
			return fmt.Errorf("predictions: output %q: %d bytes for %d tiles of %v %s, want %d", k.Name, n[i], len(indices), k.Shape, k.DType, want)
		}
		values[i] = runtime.Tensor{DType: k.DType, Shape: append([]int{len(indices)}, k.Shape...), Data: unsafe.Slice((*byte)(data[i]), n[i])}
	}
	return w.p.Write(indices, values)
}

// close closes the writer and its tiles, once.
func (w *writer) close() error {
	w.mu.Lock()
	closed := w.closed
	w.closed = true
	w.mu.Unlock()
	writers.mu.Lock()
	delete(writers.m, w.id)
	writers.mu.Unlock()
	if closed {
		return nil
	}
	return w.p.Close()
}

// predictStats is the writer's PredictStats as Python's dict.
func predictStats(s volume.PredictStats) map[string]any {
	return map[string]any{"tiles": s.Tiles, "chunks": s.Chunks, "skipped_chunks": s.SkippedChunks,
		"partial_bound": s.PartialBound, "partial_peak": s.PartialPeak}
}
