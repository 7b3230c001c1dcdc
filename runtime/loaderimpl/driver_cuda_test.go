//go:build cuda

package loaderimpl

import (
	"bufio"
	"debug/elf"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/internal/testenv/gputest"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/internal/cudadriver"
)

// TestCUDABinaryNeedsNoDriver: the cuda build links the driver stub, so its
// binaries name no libcuda in their dynamic section, import no driver
// symbol (the stub defines them all), and start anywhere.
func TestCUDABinaryNeedsNoDriver(t *testing.T) {
	f, err := elf.Open(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	libs, err := f.ImportedLibraries()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range libs {
		if strings.HasPrefix(l, "libcuda") {
			t.Errorf("the test binary needs %s (all: %v)", l, libs)
		}
	}
	syms, err := f.ImportedSymbols()
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range syms {
		if strings.HasPrefix(s.Name, "cu") {
			t.Errorf("the test binary imports %s (library %q)", s.Name, s.Library)
		}
	}
}

// fallbackLog starts a loader of a CUDA plan in this process and returns
// its log and the engine's backend name.
func fallbackLog(t *testing.T, o runtime.Options) (string, string, error) {
	t.Helper()
	var log strings.Builder
	o.Logger = slog.New(slog.NewTextHandler(&log, nil))
	e, err := NewEngine(cudaPlan(4), 8, o, noFill)
	if err != nil {
		return log.String(), "", err
	}
	defer e.Close()
	if errs := collectEpochErr(e, 0, 0); len(errs) > 0 {
		t.Fatal(errs)
	}
	return log.String(), e.backend.name(), nil
}

// TestCUDAUnusable: each way a machine cannot run CUDA gives the CPU
// backend, one log line with the reason, and, with the GPU required (by
// option or environment), an error naming it. Each case runs in a child
// process whose environment sets it up: no driver, the emulated driver with
// no device or a failing cuInit, a driver too old for the backend, and no
// driver with LD_BIND_NOW=1 (the binary still starts: it imports no driver
// symbol to bind).
func TestCUDAUnusable(t *testing.T) {
	old, err := filepath.Abs("../../.cuda/emu-old/libcuda.so.1")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		env    []string
		reason string
		emu    bool // needs the repository's emulated driver
	}{
		{"no driver", []string{"LOADERGEN_CUDA_DRIVER=/nonexistent/libcuda.so.1"}, "no CUDA driver: /nonexistent/libcuda.so.1: cannot open shared object file", false},
		{"no device", []string{"CUDAEMU_DEVICES=0"}, "no CUDA device (cuInit: CUDA_ERROR_NO_DEVICE)", true},
		{"init fails", []string{"CUDAEMU_FAIL_INIT=999"}, "the CUDA driver failed to initialize: cuInit returned CUDA_ERROR_UNKNOWN (999)", true},
		{"old driver", []string{"LOADERGEN_CUDA_DRIVER=" + old}, "the CUDA driver lacks cuMemHostAlloc, which the loader needs", true},
		{"bind now", []string{"LOADERGEN_CUDA_DRIVER=/nonexistent/libcuda.so.1", "LD_BIND_NOW=1"}, "no CUDA driver", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.emu && os.Getenv(childEnv) == "" {
				needsEmulator(t, "it sets the driver up through the emulator")
				if strings.Contains(tt.env[0], old) {
					if _, err := os.Stat(old); err != nil {
						t.Fatalf("%v (make cudaemu builds it)", err)
					}
				}
			}
			if !inChild(t, tt.env...) {
				return
			}
			// Each case sets the GPU requirement itself, whatever the run's.
			t.Setenv(runtime.RequireGPUEnv, "")
			err := runtime.CUDAUsable()
			if err == nil || !strings.Contains(err.Error(), tt.reason) {
				t.Fatalf("CUDAUsable = %v, want %q", err, tt.reason)
			}
			log, backend, err := fallbackLog(t, runtime.Options{})
			if err != nil || backend != "cpu" {
				t.Fatalf("a CUDA plan: backend %q, %v; want the CPU", backend, err)
			}
			if n := strings.Count(log, "CUDA cannot be used, running on CPU: "+tt.reason); n != 1 {
				t.Errorf("the reason is logged %d times, want once:\n%s", n, log)
			}
			_, _, err = fallbackLog(t, runtime.Options{RequireGPU: true})
			if err == nil || !strings.Contains(err.Error(), "the GPU is required") || !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("RequireGPU: %v, want an error naming %q", err, tt.reason)
			}
			t.Setenv(runtime.RequireGPUEnv, "1")
			if _, _, err = fallbackLog(t, runtime.Options{}); err == nil || !strings.Contains(err.Error(), tt.reason) {
				t.Errorf("%s=1: %v, want an error naming %q", runtime.RequireGPUEnv, err, tt.reason)
			}
		})
	}
}

// TestCUDABindNowWithDriver: with LD_BIND_NOW=1 in its environment the
// binary starts and a loader runs on the GPU (the emulated one in make
// test) as usual. It checks only that: the setting binds no driver symbol,
// as the binary imports none (TestCUDABinaryNeedsNoDriver) and the stub
// opens the driver with RTLD_NOW either way.
func TestCUDABindNowWithDriver(t *testing.T) {
	gputest.Need(t, runtime.CUDAUsable())
	if !inChild(t, "LD_BIND_NOW=1") {
		return
	}
	if err := runtime.CUDAUsable(); err != nil {
		t.Fatal(err)
	}
	_, backend, err := fallbackLog(t, runtime.Options{})
	if err != nil || backend != "cuda" {
		t.Fatalf("backend %q, %v; want cuda", backend, err)
	}
}

// TestBackendCallsAreListed: every driver function the backend needs is
// one the stub forwards and the emulator implements.
func TestBackendCallsAreListed(t *testing.T) {
	f, err := os.Open("../../internal/cudastub/symbols.txt")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	impl := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if fs := strings.Fields(sc.Text()); len(fs) == 2 && fs[1] == "impl" {
			impl[fs[0]] = true
		}
	}
	for _, name := range cudadriver.BackendCalls {
		if !impl[name] {
			t.Errorf("%s is not an impl line of internal/cudastub/symbols.txt", name)
		}
	}
}
