//go:build cuda

package loaderimpl

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/internal/testenv/gputest"
	"github.com/loadergen/loadergen/runtime"
)

// TestCUDARingDeepens: an auto ring on the CUDA backend adds slots while it
// runs (pinned host memory, device buffers, events and, when on, graphs),
// and the batches of the added slots reach the device intact.
func TestCUDARingDeepens(t *testing.T) {
	gputest.Need(t, runtime.CUDAUsable())
	p := cudaPlan(8)
	p.Loader = stragglingLoader(runtime.PrefetchAuto)
	e, _ := newStraggling(t, p, 8*48, runtime.Options{})
	if e.backend.name() != "cuda" {
		t.Fatalf("backend %s, want cuda", e.backend.name())
	}
	start, added := e.Prefetch(), 0
	for b, err := range e.Epoch(context.Background(), 0, 0) {
		if err != nil {
			t.Fatal(err)
		}
		if b.Slot <= start {
			continue
		}
		added++
		for k, tensor := range b.Tensors {
			back := make([]byte, len(tensor.Data))
			if err := b.DeviceToHost(k, back); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back, tensor.Data) {
				t.Fatalf("batch %d in added slot %d, key %d: device bytes differ from the staged host bytes", b.Number, b.Slot, k)
			}
		}
	}
	if e.Prefetch() <= start || added == 0 {
		t.Errorf("prefetch %d from %d, %d batches in added slots; want a deeper ring used", e.Prefetch(), start, added)
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestCUDARingStopsAtDeviceMemory: an auto ring whose next slot does not
// fit in free device memory, beside the eighth of it kept free, stays as
// deep as it is, says why once, and the epoch goes on. Slots of 8 MiB on a
// device of 48 MiB (6 MiB kept free): the starting 5 fit, a sixth does
// not.
func TestCUDARingStopsAtDeviceMemory(t *testing.T) {
	needsEmulator(t, "sets the device's memory (CUDAEMU_MEM_MB)")
	if !inChild(t, "CUDAEMU_MEM_MB=48") {
		return
	}
	p := paddedPlan()
	var logs bytes.Buffer
	e, _ := newStraggling(t, p, 8*48, runtime.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	for _, err := range e.Epoch(context.Background(), 0, 0) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if e.Prefetch() != 4 {
		t.Errorf("prefetch %d, want 4: no sixth slot fits", e.Prefetch())
	}
	if n := strings.Count(logs.String(), "the ring stays at prefetch 4: staging slot 5: a staging slot needs 8.0 MiB of device memory"); n != 1 {
		t.Errorf("%d lines say the ring stops growing, want 1:\n%s", n, logs.String())
	}
}

// paddedPlan is cudaPlan(8) with prefetch auto, straggling samples and a
// third key of 1 MiB a sample: slots of 8 MiB.
func paddedPlan() runtime.Plan {
	p := cudaPlan(8)
	p.Loader = stragglingLoader(runtime.PrefetchAuto)
	pad := runtime.Key{Name: "pad", Role: runtime.Input, DType: runtime.Uint8, Shape: []int{1 << 20}, SampleBytes: 1 << 20, BatchBytes: 8 << 20}
	p.Keys = append(p.Keys, pad)
	p.BatchBytes += pad.BatchBytes
	p.SlotBytes = layout(p.Keys)
	return p
}

// TestCUDARingStartsWithinDeviceMemory: an auto ring whose starting depth
// does not fit in device memory starts as deep as fits, at least 2 slots,
// says so once, and runs. Slots of 8 MiB on a device of 24 MiB (3 MiB kept
// free): the first 2 fit, a third does not.
func TestCUDARingStartsWithinDeviceMemory(t *testing.T) {
	needsEmulator(t, "sets the device's memory (CUDAEMU_MEM_MB)")
	if !inChild(t, "CUDAEMU_MEM_MB=24") {
		return
	}
	var logs bytes.Buffer
	e, _ := newStraggling(t, paddedPlan(), 8*8, runtime.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if e.Prefetch() != 1 || e.MaxSlots() != 17 {
		t.Errorf("prefetch %d of at most %d slots, want 1 (2 slots fit) of 17", e.Prefetch(), e.MaxSlots())
	}
	if n := strings.Count(logs.String(), "prefetch auto starts at 1, not 4, and stays there: staging slot 2: a staging slot needs 8.0 MiB of device memory"); n != 1 {
		t.Errorf("%d lines say the ring starts shallower, want 1:\n%s", n, logs.String())
	}
	for _, err := range e.Epoch(context.Background(), 0, 0) {
		if err != nil {
			t.Fatal(err)
		}
	}
	if e.Prefetch() != 1 {
		t.Errorf("prefetch %d after an epoch, want 1: nothing more fits", e.Prefetch())
	}
}
