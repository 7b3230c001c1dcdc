//go:build cuda

package runtime

import (
	"bytes"
	"context"
	goruntime "runtime"
	"strings"
	"testing"

	"gorgonia.org/cu"
)

// cudaPlan is testPlan on CUDA with both keys' streams planned: a on
// stream 0 at high priority, b on stream 1 at low priority.
func cudaPlan(batch int) Plan {
	p := testPlan(batch, LoaderDefaults{Prefetch: 2})
	p.Device, p.UseStreams, p.NumStreams = "cuda", true, 2
	p.Keys[0].Stream, p.Keys[0].Priority = 0, High
	p.Keys[1].Stream, p.Keys[1].Priority = 1, Low
	return p
}

// onDevice runs f on a locked OS thread with device 0's primary context
// current, as consumer code must.
func onDevice(t *testing.T, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		goruntime.LockOSThread()
		defer goruntime.UnlockOSThread()
		dev, err := cu.GetDevice(0)
		if err != nil {
			t.Error(err)
			return
		}
		ctx, err := dev.RetainPrimaryCtx()
		if err != nil {
			t.Error(err)
			return
		}
		defer dev.ReleasePrimaryCtx()
		if err := cu.SetCurrentContext(ctx); err != nil {
			t.Error(err)
			return
		}
		f()
	}()
	<-done
}

func freeMemory(t *testing.T) (free int64) {
	onDevice(t, func() {
		var err error
		if free, _, err = cu.MemInfo(); err != nil {
			t.Error(err)
		}
	})
	return free
}

// TestCUDARoundTrip copies several batches to the device and back: every
// key's device bytes equal the staged host bytes and the source pattern.
func TestCUDARoundTrip(t *testing.T) {
	e := newTestEngine(t, cudaPlan(8), 50, Options{}, nil)
	if e.backend.name() != "cuda" {
		t.Fatalf("backend %s, want cuda", e.backend.name())
	}
	batches := 0
	for b, err := range e.Epoch(context.Background(), 0, 0) {
		if err != nil {
			t.Fatal(err)
		}
		for k, tensor := range b.Tensors {
			if tensor.Device == 0 {
				t.Fatalf("key %d has no device pointer", k)
			}
			back := make([]byte, len(tensor.Data))
			if err := b.DeviceToHost(k, back); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(back, tensor.Data) {
				t.Fatalf("batch %d key %d: device bytes differ from the staged host bytes", b.Number, k)
			}
		}
		for pos, index := range b.Indices {
			if got, want := int(b.Tensors[0].Data[pos*3]), value(0, index, 0); got != want {
				t.Fatalf("batch %d sample %d: staged %d, want %d", b.Number, pos, got, want)
			}
		}
		batches++
	}
	if batches != 7 {
		t.Errorf("%d batches, want 7", batches)
	}
	for i, d := range e.Stats().Copy {
		if d <= 0 {
			t.Errorf("stream %d: copy time %v, want > 0 after 7 batches", i, d)
		}
	}
}

// TestCUDAStreams: the planned number of streams exists, each at the
// priority of its keys.
func TestCUDAStreams(t *testing.T) {
	e := newTestEngine(t, cudaPlan(4), 8, Options{}, nil)
	c := e.backend.(*cudaBackend)
	if len(c.streams) != 2 {
		t.Fatalf("%d streams, want 2", len(c.streams))
	}
	onDevice(t, func() {
		least, greatest, err := cu.StreamPriorityRange()
		if err != nil {
			t.Fatal(err)
		}
		for i, want := range []int{greatest, least} {
			if got, err := c.streams[i].Priority(); err != nil || got != want {
				t.Errorf("stream %d priority %d (%v), want %d", i, got, err, want)
			}
		}
	})
}

// TestCUDAConsumerStream: a consumer stream waits on a batch, hands it back
// with Done, and the next epoch still round-trips.
func TestCUDAConsumerStream(t *testing.T) {
	e := newTestEngine(t, cudaPlan(4), 16, Options{}, nil)
	onDevice(t, func() {
		s, err := cu.MakeStream(cu.NonBlocking)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Destroy()
		for b, err := range e.Epoch(context.Background(), 0, 0) {
			if err != nil {
				t.Fatal(err)
			}
			if err := b.Wait(s); err != nil {
				t.Fatal(err)
			}
			if err := b.Done(s); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
	})
	if errs := collectErr(e); len(errs) != 0 {
		t.Errorf("epoch after Done: %v", errs)
	}
}

func TestCUDAMemoryCheck(t *testing.T) {
	p := cudaPlan(4)
	p.SlotBytes = 1 << 45 // 32 TiB per slot
	_, err := NewEngine(p, 8, Options{Logger: quiet}, noFill)
	if err == nil || !strings.Contains(err.Error(), "staging needs 3 slots x 33554432.0 MiB") || !strings.Contains(err.Error(), "is free") {
		t.Fatalf("err = %v, want the memory check naming both numbers", err)
	}
}

// TestCUDACloseReleases: free device memory returns to where it was.
func TestCUDACloseReleases(t *testing.T) {
	p := cudaPlan(1 << 16) // 1.2 MiB per slot, 3 slots
	before := freeMemory(t)
	e, err := NewEngine(p, 10, Options{Logger: quiet}, noFill)
	if err != nil {
		t.Fatal(err)
	}
	during := freeMemory(t)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	after := freeMemory(t)
	if before-during < 3*p.SlotBytes {
		t.Errorf("the loader took %d bytes of device memory, want at least %d", before-during, 3*p.SlotBytes)
	}
	if d := before - after; d > 1<<20 {
		t.Errorf("%d bytes of device memory not returned by Close", d)
	}
}
