//go:build cuda

package loaderimpl

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"testing"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/loadergen/loadergen/internal/testenv/gputest"
	"github.com/loadergen/loadergen/runtime"
)

// spinPTX is a one-thread kernel that spins for a number of clock cycles,
// then copies n bytes from src to dst: a slow consumer that reads its batch
// late. The Python bridge's CUDA test (runtime/python/cudatest) launches it
// too.
//
//go:embed testdata/spin.ptx
var spinPTX string

// spinKernel loads spinPTX and returns its kernel and a function that
// unloads it.
func spinKernel() (cu.Function, func() error, error) {
	mod, err := cu.LoadData(spinPTX)
	if err != nil {
		return cu.Function{}, nil, err
	}
	fn, err := mod.Function("spin")
	if err != nil {
		return cu.Function{}, nil, errors.Join(err, mod.Unload())
	}
	return fn, mod.Unload, nil
}

// spinStream loads spinPTX and makes a stream to launch it on: the setup
// of a consumer. done unloads and destroys them.
func spinStream() (cu.Function, cu.Stream, func() error, error) {
	spin, unload, err := spinKernel()
	if err != nil {
		return cu.Function{}, cu.Stream{}, nil, err
	}
	s, err := cu.MakeStream(cu.NonBlocking)
	if err != nil {
		return cu.Function{}, cu.Stream{}, nil, errors.Join(err, unload())
	}
	return spin, s, func() error { return errors.Join(s.Destroy(), unload()) }, nil
}

// syncBlocking waits for the work queued on s with a blocking-sync event:
// a default stream synchronisation spins a host core, which on a small
// machine can starve the emulated driver's threads and delay the very
// work it waits for.
func syncBlocking(s cu.Stream) error {
	ev, err := cu.MakeEvent(cu.BlockingSyncEvent | cu.DisableTiming)
	if err != nil {
		return err
	}
	defer cu.DestroyEvent(&ev)
	if err := ev.Record(s); err != nil {
		return err
	}
	return ev.Synchronize()
}

// launchSpin queues spin on stream s: wait cycles, then copy n bytes from
// src to dst.
func launchSpin(fn cu.Function, s cu.Stream, cycles uint64, src, dst cu.DevicePtr, n int) error {
	srcp, dstp, nb := uint64(src), uint64(dst), uint64(n)
	args := []unsafe.Pointer{unsafe.Pointer(&cycles), unsafe.Pointer(&srcp), unsafe.Pointer(&dstp), unsafe.Pointer(&nb)}
	return fn.Launch(1, 1, 1, 1, 1, 1, 0, s, args)
}

// readWithSpin has a kernel copy one key of the first batch into a buffer
// of its own, and checks the bytes it read. Both keys share one stream, a
// at priority first and b at second. wait says what the kernel's stream
// waits for: "none", "all" (Wait: key b is read) or "key" (WaitKey for
// key a, which is read). It returns whether key b's copy was still running
// when the kernel was done.
func readWithSpin(t *testing.T, wait string, first, second runtime.Priority) (restPending bool) {
	p := cudaPlan(1 << 14) // key a: 48 KiB, key b: 256 KiB a batch
	p.NumStreams, p.UseStreams = 1, false
	p.Keys[0].Stream, p.Keys[0].Priority = 0, first
	p.Keys[1].Stream, p.Keys[1].Priority = 0, second
	e := newTestEngine(t, p, 1<<15, runtime.Options{}, nil)
	onDevice(t, func() error {
		spin, s, done, err := spinStream()
		if err != nil {
			return err
		}
		defer done()
		// Allocated before the batch arrives: an allocation may wait for
		// the device, and would hide how early the kernel can run.
		dst, err := cu.MemAlloc(p.Keys[1].BatchBytes)
		if err != nil {
			return err
		}
		defer cu.MemFree(dst)
		for b, err := range e.Epoch(context.Background(), 0, 0) {
			if err != nil {
				return err
			}
			k := 1
			switch wait {
			case "all":
				err = b.Wait(s)
			case "key":
				k = 0
				err = b.WaitKey(s, 0)
			}
			if err != nil {
				return err
			}
			key := b.Tensors[k]
			if err := launchSpin(spin, s, 0, cu.DevicePtr(key.Device), dst, len(key.Data)); err != nil {
				return err
			}
			if err := syncBlocking(s); err != nil {
				return err
			}
			restPending = errors.Is(e.backend.(*cudaBackend).slots[b.Slot].key[1].Query(), cu.NotReady)
			if err := b.Done(s); err != nil {
				return err
			}
			got := make([]byte, len(key.Data))
			if err := cu.MemcpyDtoH(unsafe.Pointer(&got[0]), dst, int64(len(got))); err != nil {
				return err
			}
			if !bytes.Equal(got, key.Data) {
				return errors.New("the kernel read other bytes than the batch's")
			}
			break
		}
		return nil
	})
	return restPending
}

// TestCUDASlowConsumer: a consumer kernel reads batch 0's device buffer
// only after spinning for about 0.1 s, while the loader runs on. With Done
// on its stream, and on a second, idle consumer stream after it, the later
// batch that reuses the slot waits for the kernel (not only for the last
// Done), so the kernel still sees batch 0's bytes.
func TestCUDASlowConsumer(t *testing.T) {
	gputest.Need(t, runtime.CUDAUsable())
	p := cudaPlan(8)
	p.Loader.Prefetch = 1 // two slots: batch 2 reuses batch 0's
	e := newTestEngine(t, p, 64, runtime.Options{}, nil)
	onDevice(t, func() error {
		spin, s, done, err := spinStream()
		if err != nil {
			return err
		}
		defer done()
		idle, err := cu.MakeStream(cu.NonBlocking)
		if err != nil {
			return err
		}
		defer idle.Destroy()
		var want []byte
		var result cu.DevicePtr
		for b, err := range e.Epoch(context.Background(), 0, 0) {
			if err != nil {
				return err
			}
			if b.Number != 0 {
				continue // advancing at once: the loader overwrites freely, except where Done says no
			}
			key := b.Tensors[1]
			want = append([]byte(nil), key.Data...)
			if result, err = cu.MemAlloc(int64(len(want))); err != nil {
				return err
			}
			if err := b.Wait(s); err != nil {
				return err
			}
			if err := launchSpin(spin, s, 200_000_000, cu.DevicePtr(key.Device), result, len(want)); err != nil {
				return err
			}
			if err := errors.Join(b.Done(s), b.Done(idle)); err != nil {
				return err
			}
		}
		if err := s.Synchronize(); err != nil {
			return err
		}
		defer cu.MemFree(result)
		got := make([]byte, len(want))
		if err := cu.MemcpyDtoH(unsafe.Pointer(&got[0]), result, int64(len(got))); err != nil {
			return err
		}
		if !bytes.Equal(got, want) {
			return errors.New("the slow kernel saw a later batch's bytes: the slot was overwritten before Done")
		}
		return nil
	})
}
