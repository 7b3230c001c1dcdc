//go:build !cuda

package streams

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/runtime"
)

// TestPlannedStreamsUnusedOnCPU: the plan has 2 streams, but this build
// runs on the CPU backend, and the start line says the streams are unused.
func TestPlannedStreamsUnusedOnCPU(t *testing.T) {
	var log bytes.Buffer
	l, err := NewEMLoader(source{n: 1}, runtime.Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	if want := "EM loader: batch 8 (1.3 MiB), the plan's 2 CUDA streams are not in use on the cpu backend"; !strings.Contains(log.String(), want) {
		t.Errorf("start line does not say %q:\n%s", want, log.String())
	}
}
