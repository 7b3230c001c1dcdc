//go:build cuda

package runtime

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
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gorgonia.org/cu"
)

// These tests run against whatever libcuda.so.1 the process loads: a real
// driver on a GPU machine, or the repository's emulated driver
// (internal/cudaemu) everywhere else. A few need the emulator's fault
// injection, settings or race reports and say so when skipped on a GPU.

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
func emulated(t *testing.T) bool {
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
	if !emulated(t) {
		t.Skipf("runs only on the emulated driver (internal/cudaemu): %s", why)
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
	cmd := exec.Command(os.Args[0], "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), append(env, childEnv+"="+t.Name(), "GORACE="+os.Getenv("GORACE")+" atexit_sleep_ms=0")...)
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
	var trace bytes.Buffer
	e := newTestEngine(t, cudaPlan(8), 50, Options{Trace: &trace}, nil)
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
	e := newTestEngine(t, cudaPlan(4), 8, Options{}, nil)
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
	keys := []Key{{Priority: Low}, {Priority: Normal}, {Priority: High}, {Priority: Normal}, {Priority: High}}
	if got, want := fmt.Sprint(issueOrder(keys)), "[2 4 1 3 0]"; got != want {
		t.Errorf("issue order %s, want %s", got, want)
	}
}

// TestCUDAConsumerStreams: two consumer streams wait on each batch (one for
// every key, one for key b only), both hand it back with Done, and the
// loader's next copies into the slot wait for both.
func TestCUDAConsumerStreams(t *testing.T) {
	e := newTestEngine(t, cudaPlan(4), 16, Options{}, nil)
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
	p := cudaPlan(4)
	p.SlotBytes = 1 << 45 // 32 TiB per slot
	_, err := NewEngine(p, 8, Options{Logger: quiet}, noFill)
	if err == nil || !strings.Contains(err.Error(), "staging needs 3 slots x 33554432.0 MiB") || !strings.Contains(err.Error(), "is free") {
		t.Fatalf("err = %v, want the memory check naming both numbers", err)
	}
}

// TestCUDAPlanStreamOutOfRange: a plan whose key is on a stream the plan
// does not have is an error, not an index panic.
func TestCUDAPlanStreamOutOfRange(t *testing.T) {
	p := cudaPlan(4)
	p.Keys[1].Stream = 2
	_, err := NewEngine(p, 8, Options{Logger: quiet}, noFill)
	if err == nil || !strings.Contains(err.Error(), `plan: key "b" is on stream 2 of 2`) {
		t.Fatalf("err = %v, want the plan's stream error", err)
	}
}

// TestCUDACloseReleases: while the loader is open its device buffers are
// allocations of a slot each; after Close none of them is.
func TestCUDACloseReleases(t *testing.T) {
	p := cudaPlan(1 << 16) // 1.2 MiB per slot, 3 slots
	e, err := NewEngine(p, 10, Options{Logger: quiet}, noFill)
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

// TestCUDACopyFailsPartWay: when a batch's second copy fails to queue, the
// epoch ends with that error, and later epochs run clean: the slot waits for
// the copy that did queue before it is refilled (the emulator would report
// the host buffer rewritten under it), and the copy times only grow.
func TestCUDACopyFailsPartWay(t *testing.T) {
	needsEmulator(t, "CUDAEMU_FAIL_COPY injects the failure")
	t.Setenv("CUDAEMU_FAIL_COPY", "2")
	e := newTestEngine(t, cudaPlan(4), 12, Options{}, nil)
	// The second copy queued is key b (low priority, issued after a) of
	// the batch whose workers finished first.
	errs := collectErr(e)
	// With graphs (the default) the copy fails inside stream 1's launch.
	if len(errs) != 1 || !regexp.MustCompile(`^batch \d+: copy key "b"( \(one graph launch on stream 1\))?: `).MatchString(errs[0].Error()) {
		t.Fatalf("first epoch: %v; want the failed copy of key b", errs)
	}
	before := e.Stats().Copy
	for epoch := range 3 {
		if errs := collectErr(e); len(errs) != 0 {
			t.Fatalf("epoch %d after the failure: %v", epoch+1, errs)
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
}

// TestCUDACopyTimesAreComplete: every batch's copies count, the last ones
// of an epoch too, even when an epoch is shorter than the staging ring. On
// the emulator, whose copies take a known time, the total is checked.
func TestCUDACopyTimesAreComplete(t *testing.T) {
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
	e := newTestEngine(t, p, 2<<14, Options{}, nil)
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
	if !inChild(t, "CUDAEMU_COPY_GBPS=0.5") {
		return
	}
	// A batch whose copy takes tens of ms: 19 MiB at the emulator's
	// 0.5 GB/s, 608 MiB at a GPU's tens of GB/s.
	batch := 1 << 20
	if !emulated(t) {
		batch = 32 << 20
	}
	p := testPlan(batch, LoaderDefaults{Prefetch: 1})
	p.Device = "cuda"
	e := newTestEngine(t, p, batch, Options{Workers: 1}, nil) // one batch an epoch
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
	e := newTestEngine(t, cudaPlan(1<<14), 16<<14, Options{}, nil) // 304 KiB batches, 6 ms copies
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
	if !inChild(t, "CUDAEMU_DEVICES=3", "RANK=5", "WORLD_SIZE=8", "LOCAL_RANK=2") {
		return
	}
	n, err := cu.NumDevices()
	if err != nil {
		t.Fatal(err)
	}
	p := cudaPlan(4)
	e := newTestEngine(t, p, 8, Options{}, nil)
	if got, want := e.backend.(*cudaBackend).ordinal, 2%n; got != want {
		t.Errorf("LOCAL_RANK=2 with %d devices: device %d, want %d", n, got, want)
	}
	p.Device = "cuda:0"
	e = newTestEngine(t, p, 8, Options{}, nil)
	if got := e.backend.(*cudaBackend).ordinal; got != 0 {
		t.Errorf("cuda:0 with LOCAL_RANK=2: device %d, want 0", got)
	}
}

// TestCUDAMissingDeviceSaysHowMany: a device ordinal past the machine's
// devices is an error that says how many there are.
func TestCUDAMissingDeviceSaysHowMany(t *testing.T) {
	if !inChild(t, "CUDAEMU_DEVICES=2") {
		return
	}
	p := cudaPlan(4)
	p.Device = "cuda:5"
	_, err := NewEngine(p, 8, Options{Logger: quiet}, func(*Run) error { return nil })
	if err == nil || !strings.Contains(err.Error(), "get device 5: ") || !strings.Contains(err.Error(), "this machine has 2 CUDA device(s), 0 to 1") {
		t.Fatalf("NewEngine on cuda:5 of 2 devices: %v", err)
	}
}

// TestCUDARaceReports: the emulator fails the process when a consumer
// reads a batch's device memory without waiting for its copies, and the
// same consumer with Wait, or with WaitKey for the key it reads, passes.
// This is what makes every other test on the emulator a check of the
// loader's ordering.
func TestCUDARaceReports(t *testing.T) {
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
			readWithSpin(t, os.Getenv("LOADERGEN_TEST_WAIT"), High, Low)
		})
	}
}

// TestCUDAPriorityOrdersCopies: a key's priority sets the order of its
// copy within the batch. A kernel waiting (WaitKey) for the high-priority
// key a runs while the low-priority key b is still on its way; with the
// priorities swapped, b's copy goes first and a arrives after it.
func TestCUDAPriorityOrdersCopies(t *testing.T) {
	for _, tt := range []struct {
		a, b    Priority
		pending bool
	}{{High, Low, true}, {Low, High, false}} {
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
func newTestBackend(t testing.TB, p Plan, graphs bool) *cudaBackend {
	t.Helper()
	st := &counters{copy: make([]atomic.Int64, p.NumStreams)}
	b, err := newBackend(p.Device, 0, p, 2, 2, true, graphs, quiet, st, nil)
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
// a short last batch, and every batch with graphs off, is a start and a
// ready record per stream and a copy and a key record per key.
func TestCUDAGraphCalls(t *testing.T) {
	for _, keys := range []int{1, 4, 8} {
		for _, graphs := range []bool{true, false} {
			t.Run(fmt.Sprintf("keys=%d/graphs=%v", keys, graphs), func(t *testing.T) {
				sizes := make([]int64, keys)
				for i := range sizes {
					sizes[i] = int64(64 * (i + 1))
				}
				streams := min(keys, 2)
				c := newTestBackend(t, benchPlan(sizes, streams), graphs)
				if c.graphs != graphs {
					t.Fatalf("graphs %v (%v), want %v", c.graphs, c.noGraphs, graphs)
				}
				perCall := 2*streams + 2*keys
				full := perCall
				if graphs {
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
// call, says so once at start, and the batches still arrive.
func TestCUDAGraphsFallBack(t *testing.T) {
	lib, err := filepath.Abs("../.cuda/emu-nographs/libcuda.so.1")
	if err != nil {
		t.Fatal(err)
	}
	if os.Getenv(childEnv) == "" {
		needsEmulator(t, "it loads the emulator built without graphs")
		if _, err := os.Stat(lib); err != nil {
			t.Fatalf("%v (make cudaemu builds it)", err)
		}
	}
	if !inChild(t, "LOADERGEN_CUDA_DRIVER="+lib) {
		return
	}
	var log bytes.Buffer
	p := benchPlan([]int64{64, 128}, 2)
	st := &counters{copy: make([]atomic.Int64, p.NumStreams)}
	b, err := newBackend(p.Device, 0, p, 2, 2, true, true, slog.New(slog.NewTextHandler(&log, nil)), st, nil)
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
