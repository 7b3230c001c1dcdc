//go:build cuda

package loaderimpl

import (
	"context"
	"errors"
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"testing"
	"time"
	"unsafe"

	"gorgonia.org/cu"

	"github.com/loadergen/loadergen/internal/testenv/gputest"
	"github.com/loadergen/loadergen/runtime"
)

// The GPU benchmark suite: host-to-device bandwidth of the loader against
// bare copies, one stream against the planned streams, and the load /
// transfer / compute pipeline with a kernel consumer. On the emulated driver
// they run in CI for correctness only: its figures are the emulator's
// settings, not a GPU's. Sizes come from the environment so that a GPU run
// can use batches large enough to measure (see .ci/gpu-suite).

// benchMiB reads a size in MiB from the environment variable name.
func benchMiB(b *testing.B, name string, def float64) int64 {
	v := def
	if s := os.Getenv(name); s != "" {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || f <= 0 {
			b.Fatalf("%s=%q: want a size in MiB > 0", name, s)
		}
		v = f
	}
	return int64(v * (1 << 20))
}

// fastSource fills each sample with one copy of a template, as a source
// that already holds its data in memory does.
type fastSource struct {
	e    *Engine
	tmpl [][]byte // per key: one sample
}

func (f *fastSource) fill(r *Run) error {
	for ; r.Done < len(r.Indices); r.Done++ {
		pos := r.Pos + r.Done
		for k, t := range f.tmpl {
			copy(f.e.Staging(r.Slot, k)[pos*len(t):][:len(t)], t)
		}
	}
	return nil
}

// benchPlan is a CUDA plan of keys of the given sample sizes (uint8), batch
// 16, with the keys round robin over streams.
func benchPlan(sampleBytes []int64, streams int) runtime.Plan {
	p := runtime.Plan{Name: "Bench", BatchSize: 16, Device: "cuda", NumStreams: streams, UseStreams: streams > 1,
		Loader: runtime.LoaderDefaults{Prefetch: 2}}
	for i, sb := range sampleBytes {
		p.Keys = append(p.Keys, runtime.Key{Name: "k" + strconv.Itoa(i), Role: runtime.Input, DType: runtime.Uint8, Shape: []int{int(sb)},
			SampleBytes: sb, BatchBytes: 16 * sb, Stream: i % streams})
		p.BatchBytes += 16 * sb
	}
	p.BatchMiB = float64(p.BatchBytes) / (1 << 20)
	p.SlotBytes = layout(p.Keys)
	return p
}

// onThisThread locks the benchmark's goroutine to its OS thread with
// device 0's primary context current until the benchmark ends, as a
// consumer that launches kernels must run.
func onThisThread(b *testing.B) {
	goruntime.LockOSThread()
	undo, err := usePrimaryContext()
	if err != nil {
		goruntime.UnlockOSThread()
		b.Fatal(err)
	}
	b.Cleanup(func() {
		check(b, undo())
		goruntime.UnlockOSThread()
	})
}

// check fails the benchmark on err.
func check(b *testing.B, err error) {
	if err != nil {
		b.Helper()
		b.Fatal(err)
	}
}

func newBenchEngine(b *testing.B, p runtime.Plan, n int) *Engine {
	src := &fastSource{}
	for _, k := range p.Keys {
		src.tmpl = append(src.tmpl, make([]byte, k.SampleBytes))
	}
	e, err := NewEngine(p, n, runtime.Options{Logger: quiet}, src.fill)
	if err != nil {
		b.Fatal(err)
	}
	src.e = e
	b.Cleanup(func() { e.Close() })
	return e
}

// BenchmarkCUDAH2D: host-to-device GB/s of bare cuMemcpyHtoDAsync from
// pinned and from pageable memory, and of the loader, for batches of
// LOADERGEN_BENCH_BATCH_MB (default 64). wall-GB/s is bytes over the
// benchmark's wall clock (each bare copy waited for; the loader's epochs,
// fills included, to the end of the last copy); the loader also reports
// device-GB/s, bytes over the copies' device time (CUDA events).
func BenchmarkCUDAH2D(b *testing.B) {
	gputest.Need(b, runtime.CUDAUsable())
	size := benchMiB(b, "LOADERGEN_BENCH_BATCH_MB", 64)
	for _, kind := range []string{"pinned", "pageable"} {
		b.Run(kind, func(b *testing.B) {
			onThisThread(b)
			host := make([]byte, size)
			if kind == "pinned" {
				h, err := pinnedAlloc(size)
				check(b, err)
				defer pinnedFree(h)
				host = h
			}
			dev, err := cu.MemAlloc(size)
			check(b, err)
			defer cu.MemFree(dev)
			s, err := cu.MakeStream(cu.NonBlocking)
			check(b, err)
			defer s.Destroy()
			for b.Loop() {
				check(b, cu.MemcpyHtoDAsync(dev, unsafe.Pointer(&host[0]), size, s))
				check(b, s.Synchronize())
			}
			b.ReportMetric(float64(size)*float64(b.N)/b.Elapsed().Seconds()/1e9, rateUnit(b, "wall-GB/s"))
		})
	}
	b.Run("loader", func(b *testing.B) {
		e := newBenchEngine(b, benchPlan([]int64{size / 16}, 1), 16*8)
		t0 := time.Now()
		for i := 0; b.Loop(); i++ {
			for _, err := range e.Epoch(context.Background(), i, 0) {
				if err != nil {
					b.Fatal(err)
				}
			}
		}
		check(b, e.Close()) // waits for, and counts, the copies still running
		wall := time.Since(t0)
		s := e.Stats()
		b.ReportMetric(float64(s.Bytes)/wall.Seconds()/1e9, rateUnit(b, "wall-GB/s"))
		b.ReportMetric(float64(s.Bytes)/s.Copy[0].Seconds()/1e9, rateUnit(b, "device-GB/s"))
	})
}

// BenchmarkCUDAStreams: batches of four keys (LOADERGEN_BENCH_BATCH_MB in
// all) copied on one stream or on four, with a consumer that makes its
// stream wait for each batch and synchronises: GB/s end to end.
func BenchmarkCUDAStreams(b *testing.B) {
	gputest.Need(b, runtime.CUDAUsable())
	size := benchMiB(b, "LOADERGEN_BENCH_BATCH_MB", 64)
	keys := []int64{size / 16 / 2, size / 16 / 4, size / 16 / 8, size / 16 / 8}
	for _, streams := range []int{1, 4} {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) {
			e := newBenchEngine(b, benchPlan(keys, streams), 16*16)
			onThisThread(b)
			s, err := cu.MakeStream(cu.NonBlocking)
			check(b, err)
			defer s.Destroy()
			for i := 0; b.Loop(); i++ {
				for batch, err := range e.Epoch(context.Background(), i, 0) {
					check(b, err)
					check(b, errors.Join(batch.Wait(s), batch.Done(s), s.Synchronize()))
				}
			}
			b.ReportMetric(float64(e.plan.BatchBytes)*16*float64(b.N)/b.Elapsed().Seconds()/1e9, rateUnit(b, "GB/s"))
		})
	}
}

// BenchmarkCUDAOverlap: the load / transfer / compute pipeline. The
// consumer makes its stream wait for each batch, runs a kernel of
// LOADERGEN_BENCH_KERNEL_MS (default 5) reading the batch, calls Done, and
// either synchronises every step (a training loop reading its loss) or
// never (async). x-max is the time per step over max(copy, kernel, fill):
// 1 when the three stages overlap fully, copy + kernel (2 at copy = kernel)
// when the copies wait for the consumer. The batch is
// LOADERGEN_BENCH_OVERLAP_MB (default 2.1: 5 ms at the emulator's 0.42 GB/s
// of make cuda-emu-bench).
func BenchmarkCUDAOverlap(b *testing.B) {
	gputest.Need(b, runtime.CUDAUsable())
	size := benchMiB(b, "LOADERGEN_BENCH_OVERLAP_MB", 2.1)
	kernelMS := 5.0
	if s := os.Getenv("LOADERGEN_BENCH_KERNEL_MS"); s != "" {
		var err error
		if kernelMS, err = strconv.ParseFloat(s, 64); err != nil || kernelMS < 0 {
			b.Fatalf("LOADERGEN_BENCH_KERNEL_MS=%q: want milliseconds >= 0", s)
		}
	}
	const steps = 32
	for _, mode := range []string{"sync", "async"} {
		b.Run(mode, func(b *testing.B) {
			e := newBenchEngine(b, benchPlan([]int64{size / 16}, 1), 16*steps)
			onThisThread(b)
			dev, err := cu.GetDevice(0)
			check(b, err)
			khz, err := dev.Attribute(cu.ClockRate)
			check(b, err)
			cycles := uint64(kernelMS * float64(khz))
			kernel := time.Duration(kernelMS * float64(time.Millisecond))
			spin, s, done, err := spinStream()
			check(b, err)
			defer done()
			scratch, err := cu.MemAlloc(256)
			check(b, err)
			defer cu.MemFree(scratch)
			for i := 0; b.Loop(); i++ {
				for batch, err := range e.Epoch(context.Background(), i, 0) {
					check(b, err)
					check(b, batch.Wait(s))
					check(b, launchSpin(spin, s, cycles, cu.DevicePtr(batch.Tensors[0].Device), scratch, 256))
					check(b, batch.Done(s))
					if mode == "sync" {
						check(b, s.Synchronize())
					}
				}
				check(b, s.Synchronize())
			}
			check(b, e.Close()) // counts the copies still running
			st := e.Stats()
			n := float64(st.Batches)
			step := b.Elapsed().Seconds() / float64(b.N*steps)
			copyT := st.Copy[0].Seconds() / n
			fill := st.WorkerBusy.Seconds() / n / float64(e.Fillers())
			b.ReportMetric(step*1e3, "ms/step")
			b.ReportMetric(copyT*1e3, "copy-ms")
			b.ReportMetric(fill*1e3, "fill-ms")
			b.ReportMetric(step/max(copyT, kernel.Seconds(), fill), "x-max")
			b.ReportMetric(float64(st.HostStall.Microseconds())/n, "stall-us/batch")
		})
	}
}

// BenchmarkCUDAIssue: the host's cost of issuing one full batch's copies,
// with one graph launch per stream and call by call, for 1, 4 and 8 keys
// of 64 KiB on 2 streams (1 for one key): driver calls and host
// microseconds per batch (the request to the CUDA goroutine included),
// then a wait for the copies outside the timing.
func BenchmarkCUDAIssue(b *testing.B) {
	for _, keys := range []int{1, 4, 8} {
		for _, graphs := range []bool{false, true} {
			b.Run(fmt.Sprintf("keys=%d/graphs=%v", keys, graphs), func(b *testing.B) {
				sizes := make([]int64, keys)
				for i := range sizes {
					sizes[i] = 4 << 10 // a batch of 16 is 64 KiB a key
				}
				c := newTestBackend(b, benchPlan(sizes, min(keys, 2)), graphs)
				if c.graphs != graphs {
					b.Skipf("graphs unavailable: %v", c.noGraphs)
				}
				var host time.Duration
				calls := 0
				for b.Loop() {
					t0 := time.Now()
					check(b, c.filled(0, 0, 16))
					host += time.Since(t0)
					calls = c.calls
					check(b, c.reuse(0))
				}
				b.ReportMetric(float64(calls), "calls/batch")
				b.ReportMetric(float64(host.Microseconds())/float64(b.N), "host-us/batch")
			})
		}
	}
}

// rateUnit is a benchmark's unit for a transfer rate: unit itself on a real
// driver, and "emu-"+unit on the emulated one (internal/testenv/cudaemu), whose
// copies are host memcpys, so that its figures cannot pass for a GPU's.
func rateUnit(b *testing.B, unit string) string {
	if emulated(b) {
		return "emu-" + unit
	}
	return unit
}
