//go:build cuda

package loaderimpl

import (
	"testing"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/loadergen/loadergen/internal/testenv/gputest"
	"github.com/loadergen/loadergen/runtime"
)

// TestPinnedHostStaging: the CPU backend of a cuda build that hands its
// staging to another runtime allocates its slots as pinned host memory in
// the primary context, from any goroutine, and frees them all at close;
// a pinned slot is a copy's host buffer the driver takes asynchronously.
func TestPinnedHostStaging(t *testing.T) {
	gputest.Need(t, runtime.CUDAUsable())
	p, err := newPinnedCPUBackend(cu.Device(0))
	if err != nil {
		t.Fatal(err)
	}
	var slots [][]byte
	for s, n := range []int64{1 << 10, 3 << 20} {
		b, err := p.slot(s, n)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(b)) != n {
			t.Fatalf("slot %d: %d bytes, want %d", s, len(b), n)
		}
		for i := range b {
			b[i] = byte(i)
		}
		slots = append(slots, b)
	}
	onDevice(t, func() error {
		dev, err := cu.MemAlloc(int64(len(slots[1])))
		if err != nil {
			return err
		}
		defer cu.MemFree(dev)
		s, err := cu.MakeStream(cu.NonBlocking)
		if err != nil {
			return err
		}
		defer s.Destroy()
		back := make([]byte, len(slots[1]))
		if err := cu.MemcpyHtoDAsync(dev, unsafe.Pointer(&slots[1][0]), int64(len(slots[1])), s); err != nil {
			return err
		}
		if err := syncBlocking(s); err != nil {
			return err
		}
		if err := cu.MemcpyDtoH(unsafe.Pointer(&back[0]), dev, int64(len(back))); err != nil {
			return err
		}
		for i := range back {
			if back[i] != byte(i) {
				t.Fatalf("byte %d came back %d from the device", i, back[i])
			}
		}
		return nil
	})
	if err := p.close(); err != nil {
		t.Fatal(err)
	}
	if p.slots != nil {
		t.Fatal("close left slots to free")
	}
}
