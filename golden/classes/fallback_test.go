//go:build !cuda

package classes

import (
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/runtime"
)

// TestCUDAFallbackIsLoggedOncePerProcess: the schema asks for CUDA; without
// -tags cuda the first loader of the process says so once, later ones do
// not repeat it, and each start line gives the stream decision. It runs in
// a fresh process of this test binary, where no loader has started yet.
func TestCUDAFallbackIsLoggedOncePerProcess(t *testing.T) {
	if os.Getenv("LOADERGEN_FALLBACK_CHILD") == "" {
		cmd := exec.Command(os.Args[0], "-test.run=^TestCUDAFallbackIsLoggedOncePerProcess$", "-test.v")
		cmd.Env = append(os.Environ(), "LOADERGEN_FALLBACK_CHILD=1", "GORACE="+os.Getenv("GORACE")+" atexit_sleep_ms=0")
		out, err := cmd.CombinedOutput()
		if err != nil || !strings.Contains(string(out), "--- PASS: "+t.Name()) {
			t.Fatalf("child process: %v\n%s", err, out)
		}
		return
	}
	root, _ := writeDataset(t, 2)
	files, err := OpenCellMapFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	defer files.Close()
	var log strings.Builder
	for range 3 {
		l, err := NewCellMapLoader(files, runtime.Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
		if err != nil {
			t.Fatal(err)
		}
		l.Close()
	}
	if n := strings.Count(log.String(), "CUDA backend not compiled in (build with -tags cuda); running on CPU"); n != 1 {
		t.Errorf("fallback logged %d times by 3 loaders, want once:\n%s", n, log.String())
	}
	if n := strings.Count(log.String(), "CellMap loader: batch 3 (0.0 MiB), streams off: batch size 3 < 8"); n != 3 {
		t.Errorf("%d start lines give the stream decision, want 3:\n%s", n, log.String())
	}
}
