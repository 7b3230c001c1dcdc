// Package python serves generated loaders to Python: the C ABI (abi.h)
// that the Python modules `loadergen python` writes call through ctypes,
// from a shared library built with -buildmode=c-shared, and the DLPack
// tensors through which torch, numpy and JAX take a batch's keys without
// a copy. It is written once, for every dataset: the library's main
// package, which `loadergen python` generates, registers each dataset's
// opener (Register), and Python asks for them by module name.
//
// A tensor points into its batch's staging slot. The slot is kept
// (runtime.Batch.Keep) while the Python batch or any tensor taken from it
// lives, and returns to the ring when the last of them is released (the
// DLPack deleter): never when the loop moves on. docs/PYTHON.md is the
// user's guide.
package python

import (
	"context"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/internal/hostmem"
	"github.com/loadergen/loadergen/runtime/volume"
)

// Dataset is one generated loader as the library serves it.
type Dataset struct {
	// Module is the Python module's name: the Go package's.
	Module string
	// Fingerprint identifies the plan the module was generated for: the
	// module checks, when it is imported, that the library holds the same.
	Fingerprint string
	// Sources are the source keywords the Python class takes ("files",
	// "volumes", "records"), each with its opener: the loader over the
	// source at location loc (a path or URL), with options o.
	Sources map[string]func(loc string, o runtime.Options) (Loader, error)
	// Predict, for a dataset with tiles, opens the tiles of manifest and a
	// writer of their predictions at root (a path or URL); nil otherwise.
	Predict func(manifest, root string, o volume.PredictOptions) (*Prediction, error)
}

// Loader is a generated loader over its source, as the bridge drives it.
// Wrap makes one of a generated loader.
type Loader interface {
	// Start begins epoch at batch start: Python takes its batches from the
	// cursor, waiting in slices.
	Start(ctx context.Context, epoch, start int) (*runtime.Cursor, error)
	Len() int
	Plan() runtime.Plan
	Stats() runtime.Stats
	// Crop describes where sample index of epoch comes from, as JSON can
	// hold it; an error for a source that cannot say.
	Crop(epoch, index int) (any, error)
	// Close closes the loader, then its source.
	Close() error
}

// Generated is the API of a generated loader that the bridge uses.
type Generated interface {
	Start(ctx context.Context, epoch, startBatch int) (*runtime.Cursor, error)
	Len() int
	Plan() runtime.Plan
	Stats() runtime.Stats
	Close() error
}

// Wrap makes the Loader of generated loader l over source src, which it
// closes after l (nil: one the loader does not own, such as a Prediction's
// tiles); crop is the source's Crop, or nil when it has none.
func Wrap(l Generated, src io.Closer, crop func(epoch, index int) (any, error)) Loader {
	return &wrapped{Generated: l, src: src, crop: crop}
}

type wrapped struct {
	Generated
	src  io.Closer
	crop func(epoch, index int) (any, error)
}

func (w *wrapped) Crop(epoch, index int) (any, error) {
	if w.crop == nil {
		return nil, fmt.Errorf("this dataset's source has no crops (a volume or image record source has)")
	}
	return w.crop(epoch, index)
}

func (w *wrapped) Close() error {
	err := w.Generated.Close()
	if w.src == nil {
		return err
	}
	if cerr := w.src.Close(); err == nil {
		err = cerr
	}
	return err
}

// datasets are the library's datasets by module name: Register writes
// them from the main package's init, before Python calls anything.
var datasets struct {
	mu sync.Mutex
	m  map[string]Dataset
}

// Register adds d to the library. The generated main package calls it
// once per dataset, from init.
func Register(d Dataset) {
	datasets.mu.Lock()
	defer datasets.mu.Unlock()
	if datasets.m == nil {
		datasets.m = map[string]Dataset{}
	}
	if _, dup := datasets.m[d.Module]; dup {
		panic("loadergen: python: dataset module " + d.Module + " registered twice")
	}
	datasets.m[d.Module] = d
}

// dataset returns the dataset of module name.
func dataset(name string) (Dataset, error) {
	datasets.mu.Lock()
	defer datasets.mu.Unlock()
	d, ok := datasets.m[name]
	if !ok {
		return d, fmt.Errorf("module %s is not in this library, which holds %v: a process holds one loadergen library, so build every dataset it uses into one (loadergen python -o DIR PKG...)", name, moduleNames())
	}
	return d, nil
}

// moduleNames lists the registered modules, sorted; datasets.mu is held.
func moduleNames() []string {
	names := make([]string, 0, len(datasets.m))
	for n := range datasets.m {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func init() {
	// Python keeps pointers into the staging slots (DLPack): they must lie
	// outside the Go heap.
	hostmem.OutsideGoHeap()
}

// fingerprints lists the library's modules and their plans' fingerprints,
// for lg_datasets.
func fingerprints() map[string]string {
	datasets.mu.Lock()
	defer datasets.mu.Unlock()
	m := make(map[string]string, len(datasets.m))
	for name, d := range datasets.m {
		m[name] = d.Fingerprint
	}
	return m
}

// Prediction is a writer of a model's predictions for the tiles of a
// dataset with tiles: (Create<Name>Predictions over its own tile source,
// Open<Name>Tiles), and the loader over those tiles that Python reads.
type Prediction struct {
	// Write takes the predictions of tiles indices: one tensor per output
	// (the dataset's targets, in plan order).
	Write  func(indices []int, values []runtime.Tensor) error
	Stats  func() volume.PredictStats
	Loader func(o runtime.Options) (Loader, error) // a loader over the tiles, which the writer owns
	Close  func() error                            // the writer, then the tiles: close the loader first
}
