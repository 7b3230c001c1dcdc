//go:build cuda

package loaderimpl

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gorgonia.org/cu"

	"github.com/loadergen/loadergen/internal/testenv/gputest"
	"github.com/loadergen/loadergen/runtime"
)

// These tests run against whatever libcuda.so.1 the process loads: a real
// driver on a GPU machine, or the repository's emulated driver
// (internal/testenv/cudaemu) everywhere else. A few need the emulator's fault
// injection, settings or race reports and say so when skipped on a GPU.
// Those that need a device follow gputest.Need: without one they are
// skipped, or fail when LOADERGEN_REQUIRE_GPU=1 (TestCUDAWithoutDevice).

// cudaPlan is testPlan on CUDA with both keys' streams planned: a on
// stream 0 at high priority, b on stream 1 at low priority.
func cudaPlan(batch int) runtime.Plan {
	p := testPlan(batch, runtime.LoaderDefaults{Prefetch: 2})
	p.Device, p.UseStreams, p.NumStreams = "cuda", true, 2
	p.Keys[0].Stream, p.Keys[0].Priority = 0, runtime.High
	p.Keys[1].Stream, p.Keys[1].Priority = 1, runtime.Low
	return p
}

// onDevice runs f on a locked OS thread with device 0's primary context
// current, as consumer code must, and reports f's error on the test's
// goroutine.
func onDevice(t *testing.T, f func() error) {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		goruntime.LockOSThread()
		defer goruntime.UnlockOSThread()
		undo, err := usePrimaryContext()
		if err != nil {
			errc <- err
			return
		}
		errc <- errors.Join(f(), undo())
	}()
	if err := <-errc; err != nil {
		t.Fatal(err)
	}
}

// usePrimaryContext retains device 0's primary context and makes it
// current on the calling thread, which must be locked to its goroutine.
// undo leaves the thread with no context current, then releases it.
func usePrimaryContext() (undo func() error, err error) {
	dev, err := cu.GetDevice(0)
	if err != nil {
		return nil, err
	}
	ctx, err := dev.RetainPrimaryCtx()
	if err != nil {
		return nil, err
	}
	undo = func() error { return errors.Join(cu.SetCurrentContext(cu.CUContext{}), dev.ReleasePrimaryCtx()) }
	if err := cu.SetCurrentContext(ctx); err != nil {
		return nil, errors.Join(err, undo())
	}
	return undo, nil
}

// emulated reports whether the driver is the repository's emulator.
func emulated(t testing.TB) bool {
	t.Helper()
	dev, err := cu.GetDevice(0)
	if err != nil {
		t.Fatal(err)
	}
	name, err := dev.Name()
	if err != nil {
		t.Fatal(err)
	}
	return strings.HasPrefix(name, "cudaemu")
}

// needsEmulator skips a test that relies on the emulated driver's fault
// injection, settings or race reports when a real driver is loaded.
func needsEmulator(t *testing.T, why string) {
	t.Helper()
	gputest.Need(t, runtime.CUDAUsable())
	if !emulated(t) {
		t.Skipf("runs only on the emulated driver (internal/testenv/cudaemu): %s", why)
	}
}

// childEnv marks a process started by inChild.
const childEnv = "LOADERGEN_CUDA_CHILD"

// inChild runs the calling test again in a new process of this test binary
// with env added (the emulator reads most of its settings once, at cuInit),
// unless this process is that child: then it returns true and the caller
// runs the test's body. In the parent it returns false, having reported the
// child's outcome as the test's: a failure, a skip with its reason, or a
// pass only when the child ran the test and passed it.
func inChild(t *testing.T, env ...string) bool {
	t.Helper()
	if os.Getenv(childEnv) == t.Name() {
		return true
	}
	status, out := runChild(t, env...)
	switch {
	case status != 0:
		t.Fatalf("child process exited %d:\n%s", status, out)
	case strings.Contains(out, "--- SKIP: "+t.Name()):
		t.Skipf("skipped in the child process:\n%s", out)
	case !strings.Contains(out, "--- PASS: "+t.Name()):
		t.Fatalf("the child process did not run %s:\n%s", t.Name(), out)
	}
	return false
}

// runChild runs the calling test in a child process of this test binary,
// with env added and childEnv naming the test, and returns its exit status
// and output.
func runChild(t *testing.T, env ...string) (status int, out string) {
	t.Helper()
	return runTests(t, []string{"-test.run=^" + t.Name() + "$", "-test.v", "-test.count=1"}, append(env, childEnv+"="+t.Name())...)
}

// runTests runs this test binary with args, and env added, and returns
// its exit status and output.
func runTests(t *testing.T, args []string, env ...string) (status int, out string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), append(env, "GORACE="+os.Getenv("GORACE")+" atexit_sleep_ms=0")...)
	b, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		status = exit.ExitCode()
	case err != nil:
		t.Fatal(err)
	}
	return status, string(b)
}

// TestCUDARoundTrip copies several batches to the device and back: every
// key's device bytes equal the staged host bytes and the source pattern,
// and every stream's copy time is counted.
func TestCUDARoundTrip(t *testing.T) {
	gputest.Need(t, runtime.CUDAUsable())
	var trace bytes.Buffer
	e := newTestEngine(t, cudaPlan(8), 50, runtime.Options{Trace: &trace}, nil)
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
	// The trace has each stream's copies, one slice per batch.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	var events []struct {
		Name string  `json:"name"`
		Tid  int     `json:"tid"`
		Ts   float64 `json:"ts"`
	}
	if err := json.Unmarshal(trace.Bytes(), &events); err != nil {
		t.Fatal(err)
	}
	copies := map[int]int{}
	for _, ev := range events {
		if ev.Name == "copy" && ev.Ts > 0 {
			copies[ev.Tid]++
		}
	}
	if copies[streamTrack] != 7 || copies[streamTrack+1] != 7 {
		t.Errorf("copy slices per stream track %v, want 7 on each of tracks %d and %d", copies, streamTrack, streamTrack+1)
	}
}

// TestCUDAStreams: the planned number of streams exists, each at the
// priority of its keys.
func TestCUDAStreams(t *testing.T) {
	gputest.Need(t, runtime.CUDAUsable())
	e := newTestEngine(t, cudaPlan(4), 8, runtime.Options{}, nil)
	c := e.backend.(*cudaBackend)
	if len(c.streams) != 2 {
		t.Fatalf("%d streams, want 2", len(c.streams))
	}
	onDevice(t, func() error {
		least, greatest, err := cu.StreamPriorityRange()
		if err != nil {
			return err
		}
		for i, want := range []int{greatest, least} {
			if got, err := c.streams[i].Priority(); err != nil || got != want {
				return fmt.Errorf("stream %d priority %d (%v), want %d", i, got, err, want)
			}
		}
		return nil
	})
}

// TestIssueOrder: copies go high priority first, then in plan order.
func TestIssueOrder(t *testing.T) {
	keys := []runtime.Key{{Priority: runtime.Low}, {Priority: runtime.Normal}, {Priority: runtime.High}, {Priority: runtime.Normal}, {Priority: runtime.High}}
	if got, want := fmt.Sprint(issueOrder(keys)), "[2 4 1 3 0]"; got != want {
		t.Errorf("issue order %s, want %s", got, want)
	}
}

// TestCUDAConsumerStreams: two consumer streams wait on each batch (one for
// every key, one for key b only), both hand it back with Done, and the
// loader's next copies into the slot wait for both.
func TestCUDAConsumerStreams(t *testing.T) {
	gputest.Need(t, runtime.CUDAUsable())
	e := newTestEngine(t, cudaPlan(4), 16, runtime.Options{}, nil)
	onDevice(t, func() error {
		s1, err := cu.MakeStream(cu.NonBlocking)
		if err != nil {
			return err
		}
		defer s1.Destroy()
		s2, err := cu.MakeStream(cu.NonBlocking)
		if err != nil {
			return err
		}
		defer s2.Destroy()
		for epoch := range 2 {
			for b, err := range e.Epoch(context.Background(), epoch, 0) {
				if err != nil {
					return err
				}
				if err := errors.Join(b.Wait(s1), b.WaitKey(s2, 1), b.Done(s1), b.Done(s2)); err != nil {
					return err
				}
			}
		}
		return errors.Join(s1.Synchronize(), s2.Synchronize())
	})
	c := e.backend.(*cudaBackend)
	if err := c.call(cudaReq{op: opSettle}); err != nil {
		t.Fatal(err)
	}
	for s, sl := range c.slots {
		if len(sl.done) != 2 {
			t.Errorf("slot %d keeps %d done events, want one per consumer stream", s, len(sl.done))
		}
	}
}

func TestCUDAMemoryCheck(t *testing.T) {
	gputest.Need(t, runtime.CUDAUsable())
	p := cudaPlan(4)
	p.SlotBytes = 1 << 45 // 32 TiB per slot
	_, err := NewEngine(p, 8, runtime.Options{Logger: quiet}, noFill)
	if err == nil || !strings.Contains(err.Error(), "staging needs 3 slots x 33554432.0 MiB") || !strings.Contains(err.Error(), "is free") {
		t.Fatalf("err = %v, want the memory check naming both numbers", err)
	}
}

// TestCUDAPlanStreamOutOfRange: a plan whose key is on a stream the plan
// does not have is an error, not an index panic.
func TestCUDAPlanStreamOutOfRange(t *testing.T) {
	gputest.Need(t, runtime.CUDAUsable())
	p := cudaPlan(4)
	p.Keys[1].Stream = 2
	_, err := NewEngine(p, 8, runtime.Options{Logger: quiet}, noFill)
	if err == nil || !strings.Contains(err.Error(), `plan: key "b" is on stream 2 of 2`) {
		t.Fatalf("err = %v, want the plan's stream error", err)
	}
}

// TestCUDACloseReleases: while the loader is open its device buffers are
// allocations of a slot each; after Close none of them is.
func TestCUDACloseReleases(t *testing.T) {
	gputest.Need(t, runtime.CUDAUsable())
	p := cudaPlan(1 << 16) // 1.2 MiB per slot, 3 slots
	e, err := NewEngine(p, 10, runtime.Options{Logger: quiet}, noFill)
	if err != nil {
		t.Fatal(err)
	}
	var ptrs []cu.DevicePtr
	for s := range e.Slots() {
		ptrs = append(ptrs, cu.DevicePtr(e.backend.devicePtr(s, 0)))
	}
	onDevice(t, func() error {
		for s, d := range ptrs {
			if size, _, err := d.AddressRange(); err != nil || size != p.SlotBytes {
				return fmt.Errorf("slot %d: device buffer of %d bytes (%v), want %d", s, size, err, p.SlotBytes)
			}
		}
		return nil
	})
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	onDevice(t, func() error {
		for s, d := range ptrs {
			if _, _, err := d.AddressRange(); err == nil {
				return fmt.Errorf("slot %d: the device buffer is still allocated after Close", s)
			}
		}
		return nil
	})
}

// TestCUDACopyFailsPartWay: when one of a batch's copies fails to queue,
// the epoch ends with that error, and later epochs run clean: the slot
// waits for the copies that did queue before it is refilled, it goes idle
// although the failed batch's times cannot all be measured, and the copy
// times only grow. Epochs of one batch refill the failed slot first thing
// (no wait for another slot's copies can cover for it), each copy takes
// 10 ms, and each epoch has its own shuffle, so that a slot refilled under
// a copy still running changes the bytes the copy reads, which the
// emulator reports. With graphs (the default), the copy fails inside its
// stream's launch, and neither that stream's time nor those of the streams
// launched after it are counted.
func TestCUDACopyFailsPartWay(t *testing.T) {
	gputest.Need(t, runtime.CUDAUsable())
	tests := []struct {
		streams  int    // 1: keys a and b on stream 0; 2: a on 0, b on 1
		failCopy string // CUDAEMU_FAIL_COPY: which copy call fails
		key      string // the key whose copy that is
		stream   int    // its stream
		launched string // the keys of that stream's graph, which a failed launch names
		lost     int    // copy times lost with graphs: its stream's and those launched after it
	}{
		// The first two copies are those of the first epoch's batch: key
		// a (high priority), then key b. On one stream, a's copy is
		// queued when b's fails: the slot must wait for it.
		{1, "2", "b", 0, `keys "a", "b"`, 1},
		// With a failing, stream 1's graph is never launched.
		{2, "1", "a", 0, `key "a"`, 2},
		{2, "2", "b", 1, `key "b"`, 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("streams=%d,copy=%s", tt.streams, tt.failCopy), func(t *testing.T) {
			needsEmulator(t, "CUDAEMU_FAIL_COPY injects the failure")
			if !inChild(t, "CUDAEMU_FAIL_COPY="+tt.failCopy, "CUDAEMU_COPY_LATENCY_US=10000") {
				return
			}
			p := cudaPlan(8)
			p.Loader.Shuffle = true
			if tt.streams == 1 {
				p.NumStreams, p.UseStreams, p.Keys[1].Stream = 1, false, 0
			}
			e := newTestEngine(t, p, 8, runtime.Options{}, nil)
			c := e.backend.(*cudaBackend)
			first, err := e.sampler.Order(0, nil)
			if err != nil {
				t.Fatal(err)
			}
			if second, err := e.sampler.Order(1, nil); err != nil || slices.Equal(first, second) {
				t.Fatalf("epoch 1's order %v (%v), epoch 0's %v: a refill would not change the bytes", second, err, first)
			}
			errs := collectErr(e)
			want := fmt.Sprintf(`^batch \d+: copy (key "%s"|%s \(one graph launch on stream %d\)): `, tt.key, regexp.QuoteMeta(tt.launched), tt.stream)
			if len(errs) != 1 || !regexp.MustCompile(want).MatchString(errs[0].Error()) {
				t.Fatalf("first epoch: %v; want the failed copy of key %s", errs, tt.key)
			}
			before := e.Stats().Copy
			for epoch := 1; epoch <= 3; epoch++ {
				if errs := collectEpochErr(e, epoch, 0); len(errs) != 0 {
					t.Fatalf("epoch %d after the failure: %v", epoch, errs)
				}
			}
			if err := e.Close(); err != nil {
				t.Fatal(err)
			}
			for i, d := range e.Stats().Copy {
				if d < before[i] || d <= 0 {
					t.Errorf("stream %d: copy time went from %v to %v", i, before[i], d)
				}
			}
			lost := 0
			if c.graphs {
				lost = tt.lost
			}
			if got := e.Stats().CopyTimesLost; got != int64(lost) {
				t.Errorf("Stats.CopyTimesLost %d, want %d (graphs %v)", got, lost, c.graphs)
			}
		})
	}
}

// TestCUDATimingErrorLosesOnlyTimes: when the driver cannot time a slot's
// copies on a stream (here the stream's start event was made without
// timing), the slot still goes idle once its copies are complete and is
// filled again, every time: that stream's time is lost, and counted as
// lost, and the other stream's is counted as usual.
func TestCUDATimingErrorLosesOnlyTimes(t *testing.T) {
	gputest.Need(t, runtime.CUDAUsable())
	for _, graphs := range []bool{true, false} {
		t.Run(fmt.Sprintf("graphs=%v", graphs), func(t *testing.T) {
			c := newTestBackend(t, benchPlan([]int64{64, 128}, 2), graphs)
			var untimed cu.Event
			onDevice(t, func() (err error) {
				untimed, err = cu.MakeEvent(cu.DisableTiming)
				return err
			})
			// Between requests the CUDA goroutine touches no slot; the next
			// request orders these writes before its reads.
			sl := &c.slots[0]
			start := sl.start[1]
			sl.start[1] = untimed
			for batch := range 3 {
				issueCalls(t, c, 16) // fails the test if the slot's reuse does
				if got := c.stats.lost.Load(); got != int64(batch+1) {
					t.Fatalf("after batch %d: %d copy times lost, want %d", batch, got, batch+1)
				}
			}
			sl.start[1] = start
			onDevice(t, func() error { return cu.DestroyEvent(&untimed) })
			if d := c.stats.copy[0].Load(); d <= 0 {
				t.Errorf("stream 0: copy time %v, want > 0", time.Duration(d))
			}
			if d := c.stats.copy[1].Load(); d != 0 {
				t.Errorf("stream 1: copy time %v counted, which its events cannot measure", time.Duration(d))
			}
		})
	}
}

// TestCUDACopyTimesAreComplete: every batch's copies count, the last ones
// of an epoch too, even when an epoch is shorter than the staging ring. On
// the emulator, whose copies take a known time, the total is checked.
func TestCUDACopyTimesAreComplete(t *testing.T) {
	gputest.Need(t, runtime.CUDAUsable())
	if !inChild(t, "CUDAEMU_COPY_GBPS=0.016", "CUDAEMU_COPY_LATENCY_US=0") {
		return
	}
	// One stream, so that its copies never queue behind another stream's
	// for the copy engine and their time is exactly theirs. Copies of about
	// 20 ms each: a busy machine delays an emulated copy by far less, so
	// the lower bound below tells 4 counted batches from the 2 that reuse
	// alone would count.
	p := cudaPlan(1 << 14) // key a: 48 KiB, key b: 256 KiB per batch
	p.NumStreams, p.UseStreams, p.Keys[1].Stream = 1, false, 0
	e := newTestEngine(t, p, 2<<14, runtime.Options{}, nil)
	for range 2 { // epochs of 2 batches, 3 slots
		if errs := collectErr(e); len(errs) != 0 {
			t.Fatal(errs)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	got := e.Stats().Copy[0]
	if got <= 0 {
		t.Fatal("no copy time counted for 4 batches")
	}
	if emulated(t) {
		// 4 batches at 0.016 GB/s, no latency: 62.5 ns a byte at least (a
		// busy machine makes the emulated copies slower, never faster).
		want := time.Duration(4 * p.BatchBytes * 625 / 10)
		if got < want*9/10 {
			t.Errorf("copy time %v for 4 batches of %d bytes at 0.016 GB/s, want at least %v", got, p.BatchBytes, want)
		}
	}
}

// TestCUDASyncBlocks: waiting for a batch's copies (Sync, and the reuse
// before a refill) sleeps instead of spinning a core: the process burns
// little CPU while the host waits for a long copy.
func TestCUDASyncBlocks(t *testing.T) {
	gputest.Need(t, runtime.CUDAUsable())
	if !inChild(t, "CUDAEMU_COPY_GBPS=0.5") {
		return
	}
	// A batch whose copy takes tens of ms: 19 MiB at the emulator's
	// 0.5 GB/s, 608 MiB at a GPU's tens of GB/s.
	batch := 1 << 20
	if !emulated(t) {
		batch = 32 << 20
	}
	p := testPlan(batch, runtime.LoaderDefaults{Prefetch: 1})
	p.Device = "cuda"
	e := newTestEngine(t, p, batch, runtime.Options{Workers: 1}, nil) // one batch an epoch
	for b, err := range e.Epoch(context.Background(), 0, 0) {
		if err != nil {
			t.Fatal(err)
		}
		t0, cpu0 := time.Now(), cpuTime(t)
		if err := b.Sync(); err != nil {
			t.Fatal(err)
		}
		wall, cpu := time.Since(t0), cpuTime(t)-cpu0
		if wall < 5*time.Millisecond {
			t.Skipf("the copy of %d MiB took %v after the batch was handed out: too short to tell a spin from a sleep", p.BatchBytes>>20, wall)
		}
		t.Logf("Sync waited %v and the process used %v of CPU", wall, cpu)
		// A spinning wait burns the whole wait and more (the emulator's
		// own copy and hashing use CPU too: about a third of the wait).
		if cpu > wall*2/3 {
			t.Errorf("Sync waited %v and the process used %v of CPU: the wait spins", wall, cpu)
		}
	}
}

// cpuTime is the CPU time this process has used.
func cpuTime(t *testing.T) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestCUDAHostStall: when copies are slower than filling, the loader
// blocks on them before refilling slots, and Stats.HostStall says how long.
func TestCUDAHostStall(t *testing.T) {
	needsEmulator(t, "the copies must be slower than the fill")
	if !inChild(t, "CUDAEMU_COPY_GBPS=0.05") {
		return
	}
	e := newTestEngine(t, cudaPlan(1<<14), 16<<14, runtime.Options{}, nil) // 304 KiB batches, 6 ms copies
	if errs := collectErr(e); len(errs) != 0 {
		t.Fatal(errs)
	}
	if s := e.Stats(); s.HostStall < 20*time.Millisecond {
		t.Errorf("host stall %v for 16 batches of 6 ms copies, want tens of ms", s.HostStall)
	}
}

// TestCUDALocalRankDevice: device "cuda" is the GPU of the local rank,
// modulo the GPUs the process sees.
func TestCUDALocalRankDevice(t *testing.T) {
	gputest.Need(t, runtime.CUDAUsable())
	if !inChild(t, "CUDAEMU_DEVICES=3", "RANK=5", "WORLD_SIZE=8", "LOCAL_RANK=2") {
		return
	}
	n, err := cu.NumDevices()
	if err != nil {
		t.Fatal(err)
	}
	p := cudaPlan(4)
	e := newTestEngine(t, p, 8, runtime.Options{}, nil)
	if got, want := e.backend.(*cudaBackend).ordinal, 2%n; got != want {
		t.Errorf("LOCAL_RANK=2 with %d devices: device %d, want %d", n, got, want)
	}
	p.Device = "cuda:0"
	e = newTestEngine(t, p, 8, runtime.Options{}, nil)
	if got := e.backend.(*cudaBackend).ordinal; got != 0 {
		t.Errorf("cuda:0 with LOCAL_RANK=2: device %d, want 0", got)
	}
}

// TestCUDAMissingDeviceSaysHowMany: a device ordinal past the machine's
// devices, the first one missing, is an error that says how many there
// are, however many that is: on the emulator 1 and then 2, on a GPU
// machine its own count (CUDAEMU_DEVICES changes nothing there).
func TestCUDAMissingDeviceSaysHowMany(t *testing.T) {
	gputest.Need(t, runtime.CUDAUsable())
	for _, devices := range []int{1, 2} {
		t.Run(fmt.Sprintf("devices=%d", devices), func(t *testing.T) {
			if !inChild(t, fmt.Sprintf("CUDAEMU_DEVICES=%d", devices)) {
				return
			}
			n, err := cu.NumDevices()
			if err != nil {
				t.Fatal(err)
			}
			if emulated(t) && n != devices {
				t.Fatalf("CUDAEMU_DEVICES=%d, and the emulator has %d devices", devices, n)
			}
			p := cudaPlan(4)
			p.Device = fmt.Sprintf("cuda:%d", n)
			_, err = NewEngine(p, 8, runtime.Options{Logger: quiet}, noFill)
			want := fmt.Sprintf("get device %d: ", n)
			if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), ": this machine has "+howManyDevices(n)) {
				t.Fatalf("NewEngine on cuda:%d: %v; want %q and %q", n, err, want, "this machine has "+howManyDevices(n))
			}
		})
	}
}

// TestHowManyDevices: the count of devices in errors reads well for any
// number of them.
func TestHowManyDevices(t *testing.T) {
	tests := []struct {
		n    int
		want string
	}{
		{0, "no CUDA device"},
		{1, "1 CUDA device (0)"},
		{2, "2 CUDA devices (0 to 1)"},
		{8, "8 CUDA devices (0 to 7)"},
	}
	for _, tt := range tests {
		if got := howManyDevices(tt.n); got != tt.want {
			t.Errorf("howManyDevices(%d) = %q, want %q", tt.n, got, tt.want)
		}
	}
}

// TestCUDARaceReports: the emulator fails the process when a consumer
// reads a batch's device memory without waiting for its copies, and the
// same consumer with Wait, or with WaitKey for the key it reads, passes.
// This is what makes every other test on the emulator a check of the
// loader's ordering.
func TestCUDARaceReports(t *testing.T) {
	gputest.Need(t, runtime.CUDAUsable())
	for _, wait := range []string{"none", "all", "key"} {
		t.Run(wait, func(t *testing.T) {
			if os.Getenv(childEnv) != t.Name() {
				needsEmulator(t, "the race report comes from the emulator")
				status, out := runChild(t, "CUDAEMU_COPY_GBPS=0.05", "LOADERGEN_TEST_WAIT="+wait)
				// Either order is a race: the kernel read before the copy
				// wrote, or the copy wrote after the kernel read.
				race := strings.Contains(out, "cudaemu: race: device ") && strings.Contains(out, "kernel spin on stream")
				switch {
				case wait == "none" && (status != 66 || !race):
					t.Errorf("reading without Wait: exit %d; want 66 and a race report:\n%s", status, out)
				case wait != "none" && (status != 0 || race || !strings.Contains(out, "--- PASS: "+t.Name())):
					t.Errorf("reading after waiting (%s): exit %d:\n%s", wait, status, out)
				}
				return
			}
			readWithSpin(t, os.Getenv("LOADERGEN_TEST_WAIT"), runtime.High, runtime.Low)
		})
	}
}

// TestCUDAPriorityOrdersCopies: a key's priority sets the order of its
// copy within the batch. A kernel waiting (WaitKey) for the high-priority
// key a runs while the low-priority key b is still on its way; with the
// priorities swapped, b's copy goes first and a arrives after it.
func TestCUDAPriorityOrdersCopies(t *testing.T) {
	gputest.Need(t, runtime.CUDAUsable())
	for _, tt := range []struct {
		a, b    runtime.Priority
		pending bool
	}{{runtime.High, runtime.Low, true}, {runtime.Low, runtime.High, false}} {
		t.Run(fmt.Sprintf("a=%v,b=%v", tt.a, tt.b), func(t *testing.T) {
			// 0.01 GB/s: key b (256 KiB) copies for 26 ms, a window no
			// busy machine closes before the kernel on key a is done.
			needsEmulator(t, "on a GPU the copies are too fast to catch one still running")
			if !inChild(t, "CUDAEMU_COPY_GBPS=0.01") {
				return
			}
			if got := readWithSpin(t, "key", tt.a, tt.b); got != tt.pending {
				t.Errorf("key b still copying when the kernel on key a was done: %v, want %v", got, tt.pending)
			}
		})
	}
}

// newTestBackend starts the CUDA backend of p with 2 slots directly, for
// tests that count its driver calls.
func newTestBackend(t testing.TB, p runtime.Plan, graphs bool) *cudaBackend {
	t.Helper()
	gputest.Need(t, runtime.CUDAUsable())
	st := &counters{copy: make([]atomic.Int64, p.NumStreams)}
	b, err := newBackend(backendConfig{device: p.Device, plan: p, slots: 2, maxSlots: 2, require: true, graphs: graphs, log: quiet, stats: st})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.close() })
	return b.(*cudaBackend)
}

// issueCalls fills slot 0 with a batch of n samples and returns the driver
// calls its copies took, then waits for them.
func issueCalls(t testing.TB, c *cudaBackend, n int) int {
	t.Helper()
	if err := c.filled(0, 0, n); err != nil {
		t.Fatal(err)
	}
	calls := c.calls // the call's reply orders this read after the CUDA goroutine's write
	if err := c.reuse(0); err != nil {
		t.Fatal(err)
	}
	return calls
}

// TestCUDAGraphCalls: with graphs, a full batch is one launch per stream;
// a short last batch, and every batch with graphs off (asked for, or for
// want of a driver with graphs), is a start and a ready record per stream
// and a copy and a key record per key.
func TestCUDAGraphCalls(t *testing.T) {
	gputest.Need(t, runtime.CUDAUsable())
	for _, keys := range []int{1, 4, 8} {
		for _, graphs := range []bool{true, false} {
			t.Run(fmt.Sprintf("keys=%d/graphs=%v", keys, graphs), func(t *testing.T) {
				sizes := make([]int64, keys)
				for i := range sizes {
					sizes[i] = int64(64 * (i + 1))
				}
				streams := min(keys, 2)
				c := newTestBackend(t, benchPlan(sizes, streams), graphs)
				switch {
				case graphs && errors.Is(c.noGraphs, errNoGraphs):
					// A driver without graphs: the backend issues calls
					// instead (TestCUDAGraphsFallBack), and the counts
					// below are those of calls.
					t.Logf("graphs asked for, but off: %v", c.noGraphs)
				case c.graphs != graphs:
					t.Fatalf("graphs %v (%v), want %v", c.graphs, c.noGraphs, graphs)
				}
				perCall := 2*streams + 2*keys
				full := perCall
				if c.graphs {
					full = streams
				}
				if got := issueCalls(t, c, 16); got != full {
					t.Errorf("full batch: %d driver calls, want %d", got, full)
				}
				if got := issueCalls(t, c, 5); got != perCall {
					t.Errorf("short batch: %d driver calls, want %d", got, perCall)
				}
			})
		}
	}
}

// TestCUDAGraphsFallBack: on a driver without the graph calls (the
// emulator built without them), the backend issues every batch call by
// call, says so once at start, and the batches still arrive; and
// TestCUDAGraphCalls, which asks for graphs, passes there too.
func TestCUDAGraphsFallBack(t *testing.T) {
	lib, err := filepath.Abs("../../.cuda/emu-nographs/libcuda.so.1")
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv(childEnv) == "" {
		needsEmulator(t, "it loads the emulator built without graphs")
		if _, err := os.Stat(lib); err != nil {
			t.Fatalf("%v (make cudaemu builds it)", err)
		}
		status, out := runTests(t, []string{"-test.run=^TestCUDAGraphCalls$", "-test.v", "-test.count=1"}, "LOADERGEN_CUDA_DRIVER="+lib)
		if status != 0 || !strings.Contains(out, "--- PASS: TestCUDAGraphCalls ") {
			t.Errorf("TestCUDAGraphCalls on a driver without graphs: exit %d:\n%s", status, out)
		}
	}
	if !inChild(t, "LOADERGEN_CUDA_DRIVER="+lib) {
		return
	}
	var log bytes.Buffer
	p := benchPlan([]int64{64, 128}, 2)
	st := &counters{copy: make([]atomic.Int64, p.NumStreams)}
	b, err := newBackend(backendConfig{device: p.Device, plan: p, slots: 2, maxSlots: 2, require: true, graphs: true, log: slog.New(slog.NewTextHandler(&log, nil)), stats: st})
	if err != nil {
		t.Fatal(err)
	}
	c := b.(*cudaBackend)
	defer c.close()
	if c.graphs || !errors.Is(c.noGraphs, errNoGraphs) {
		t.Fatalf("graphs %v, reason %v; want off for want of graphs", c.graphs, c.noGraphs)
	}
	if n := strings.Count(log.String(), "CUDA graphs off, copies issued one call each"); n != 1 {
		t.Errorf("the fallback is logged %d times, want once:\n%s", n, log.String())
	}
	if got := issueCalls(t, c, 16); got != 2*2+2*2 {
		t.Errorf("a full batch took %d driver calls, want 8, call by call", got)
	}
}

// deviceFreeTests are the tests named TestCUDA... that need no CUDA device.
// Every other one needs one, and follows gputest.Need before it touches
// the device: TestCUDAWithoutDevice checks that it does.
var deviceFreeTests = []string{"TestCUDABinaryNeedsNoDriver", "TestCUDAUnusable", "TestCUDAWithoutDevice"}

// TestCUDAWithoutDevice: in a process without a CUDA driver, and on the
// emulator with no device, every TestCUDA test that needs a device is
// skipped with the reason, and fails with it when LOADERGEN_REQUIRE_GPU=1.
func TestCUDAWithoutDevice(t *testing.T) {
	status, out := runTests(t, []string{"-test.list=^TestCUDA"})
	if status != 0 {
		t.Fatalf("listing the tests: exit %d:\n%s", status, out)
	}
	var need []string
	for _, name := range strings.Fields(out) {
		if !slices.Contains(deviceFreeTests, name) {
			need = append(need, name)
		}
	}
	run := "-test.run=^(" + strings.Join(need, "|") + ")$"
	tests := []struct {
		name   string
		env    string
		reason string // what CUDAUsable says
		emu    bool   // needs the repository's emulated driver
	}{
		{"no driver", "LOADERGEN_CUDA_DRIVER=/nonexistent/libcuda.so.1", "no CUDA driver: /nonexistent/libcuda.so.1", false},
		{"no device", "CUDAEMU_DEVICES=0", "no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE)", true},
	}
	for _, tt := range tests {
		for _, require := range []string{"0", "1"} {
			t.Run(tt.name+"/"+runtime.RequireGPUEnv+"="+require, func(t *testing.T) {
				if tt.emu {
					needsEmulator(t, "it sets the emulator's device count")
				}
				outcome, exit := "SKIP", 0
				if require == "1" {
					outcome, exit = "FAIL", 1
				}
				status, out := runTests(t, []string{run, "-test.v", "-test.count=1"}, tt.env, runtime.RequireGPUEnv+"="+require)
				if status != exit {
					t.Errorf("exit %d, want %d", status, exit)
				}
				for _, name := range need {
					if !strings.Contains(out, "--- "+outcome+": "+name+" ") {
						t.Errorf("%s: no --- %s line", name, outcome)
					}
				}
				if n := strings.Count(out, tt.reason); n < len(need) {
					t.Errorf("the reason %q is given %d times for %d tests", tt.reason, n, len(need))
				}
				if t.Failed() {
					t.Logf("the tests' output:\n%s", out)
				}
			})
		}
	}
}
