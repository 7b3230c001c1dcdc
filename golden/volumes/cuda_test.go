//go:build cuda

package volumes

import (
	"context"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/pattern"
	"github.com/loadergen/loadergen/internal/testenv/gputest"
	"github.com/loadergen/loadergen/runtime"
)

// TestCUDAStagesCrops: on the CUDA backend (the emulated driver in make
// test), every key of every batch of crops reaches the device as it was
// staged: the volume source is a source like any other.
func TestCUDAStagesCrops(t *testing.T) {
	gputest.Need(t, runtime.CUDAUsable())
	src := openVolumes(t, writeVolumes(t, t.TempDir()))
	l, err := NewCellsLoader(src, runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	batches := pattern.Epoch(t, l.Epoch(context.Background(), 0),
		pattern.OnDevice(0, (*CellsBatch).RawData), pattern.OnDevice(1, (*CellsBatch).LabelsData))
	if len(batches) != l.Len() {
		t.Errorf("%d batches, want %d", len(batches), l.Len())
	}
}
