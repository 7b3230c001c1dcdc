//go:build cuda

package volumes

import (
	"bytes"
	"context"
	"testing"

	"github.com/loadergen/loadergen/runtime"
)

// TestCUDAStagesCrops: on the CUDA backend (the emulated driver in make
// test), every key of every batch of crops reaches the device as it was
// staged: the volume source is a source like any other.
func TestCUDAStagesCrops(t *testing.T) {
	src := openVolumes(t, writeVolumes(t, t.TempDir()))
	l, err := NewCellsLoader(src, runtime.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	batches := 0
	for b, err := range l.Epoch(context.Background(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		st := b.Staged()
		for k, host := range [][]byte{b.RawData(), runtime.Bytes(b.LabelsData())} {
			if st.Tensors[k].Device == 0 {
				t.Fatalf("batch %d key %d has no device buffer: not on the CUDA backend", batches, k)
			}
			dev := make([]byte, len(st.Tensors[k].Data))
			if err := st.DeviceToHost(k, dev); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(dev[:len(host)], host) {
				t.Fatalf("batch %d key %d: the device holds other bytes than the staged crops", batches, k)
			}
		}
		batches++
	}
	if batches != l.Len() {
		t.Errorf("%d batches, want %d", batches, l.Len())
	}
}
