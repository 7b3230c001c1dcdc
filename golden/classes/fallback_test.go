//go:build !cuda

package classes

import (
	"log/slog"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/runtime"
)

// TestCUDAFallbackIsLogged: the schema asks for CUDA; without -tags cuda the
// loader says so once and runs on the CPU.
func TestCUDAFallbackIsLogged(t *testing.T) {
	root, _ := writeDataset(t, 2)
	files, err := OpenCellMapFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	defer files.Close()
	var log strings.Builder
	l, err := NewCellMapLoader(files, runtime.Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if n := strings.Count(log.String(), "CUDA backend not compiled in (build with -tags cuda); running on CPU"); n != 1 {
		t.Errorf("fallback logged %d times, want once:\n%s", n, log.String())
	}
	if !strings.Contains(log.String(), "streams off (batch size 3 < 8)") {
		t.Errorf("start line does not give the stream decision:\n%s", log.String())
	}
}
