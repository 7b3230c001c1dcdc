//go:build cuda

package runtime

import (
	"bytes"
	"context"
	"testing"
	"unsafe"

	"gorgonia.org/cu"
)

// spinPTX is a one-thread kernel that spins for a number of clock cycles,
// then copies n bytes from src to dst: a slow consumer that reads its batch
// late.
const spinPTX = `
.version 6.0
.target sm_50
.address_size 64

.visible .entry spin(
	.param .u64 cycles,
	.param .u64 src,
	.param .u64 dst,
	.param .u64 n
)
{
	.reg .pred %p<2>;
	.reg .b64 %rd<12>;
	.reg .b32 %r<2>;

	ld.param.u64 %rd1, [cycles];
	ld.param.u64 %rd2, [src];
	ld.param.u64 %rd3, [dst];
	ld.param.u64 %rd4, [n];
	mov.u64 %rd5, %clock64;
$L_spin:
	mov.u64 %rd6, %clock64;
	sub.s64 %rd7, %rd6, %rd5;
	setp.lt.s64 %p1, %rd7, %rd1;
	@%p1 bra $L_spin;
	mov.u64 %rd8, 0;
$L_copy:
	setp.ge.u64 %p1, %rd8, %rd4;
	@%p1 bra $L_done;
	add.s64 %rd9, %rd2, %rd8;
	add.s64 %rd10, %rd3, %rd8;
	ld.global.u8 %r1, [%rd9];
	st.global.u8 [%rd10], %r1;
	add.s64 %rd8, %rd8, 1;
	bra.uni $L_copy;
$L_done:
	ret;
}
`

// TestCUDASlowConsumer: a consumer kernel reads batch 0's device buffer
// only after spinning for about 0.1 s, while the loader runs on. With Done,
// the later batch that reuses the slot waits for the kernel, so the kernel
// still sees batch 0's bytes.
func TestCUDASlowConsumer(t *testing.T) {
	p := cudaPlan(8)
	p.Loader.Prefetch = 1 // two slots: batch 2 reuses batch 0's
	e := newTestEngine(t, p, 64, Options{}, nil)
	onDevice(t, func() {
		mod, err := cu.LoadData(spinPTX)
		if err != nil {
			t.Fatal(err)
		}
		defer mod.Unload()
		spin, err := mod.Function("spin")
		if err != nil {
			t.Fatal(err)
		}
		s, err := cu.MakeStream(cu.NonBlocking)
		if err != nil {
			t.Fatal(err)
		}
		defer s.Destroy()
		var want []byte
		var result cu.DevicePtr
		for b, err := range e.Epoch(context.Background(), 0, 0) {
			if err != nil {
				t.Fatal(err)
			}
			if b.Number != 0 {
				continue // advancing at once: the loader overwrites freely, except where Done says no
			}
			key := b.Tensors[1]
			want = append([]byte(nil), key.Data...)
			if result, err = cu.MemAlloc(int64(len(want))); err != nil {
				t.Fatal(err)
			}
			if err := b.Wait(s); err != nil {
				t.Fatal(err)
			}
			cycles, src, dst, n := uint64(200_000_000), uint64(key.Device), uint64(result), uint64(len(want))
			args := []unsafe.Pointer{unsafe.Pointer(&cycles), unsafe.Pointer(&src), unsafe.Pointer(&dst), unsafe.Pointer(&n)}
			if err := spin.Launch(1, 1, 1, 1, 1, 1, 0, s, args); err != nil {
				t.Fatal(err)
			}
			if err := b.Done(s); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Synchronize(); err != nil {
			t.Fatal(err)
		}
		defer cu.MemFree(result)
		got := make([]byte, len(want))
		if err := cu.MemcpyDtoH(unsafe.Pointer(&got[0]), result, int64(len(got))); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatal("the slow kernel saw a later batch's bytes: the slot was overwritten before Done")
		}
	})
}
