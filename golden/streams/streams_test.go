package streams

import (
	"bytes"
	"context"
	"log/slog"
	"slices"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/pattern"
	"github.com/loadergen/loadergen/internal/testenv/goldentest"
	"github.com/loadergen/loadergen/runtime"
)

func TestMain(m *testing.M) { goldentest.Main(m) }

type source struct{ n int }

func (s source) Len() int { return s.n }
func (source) Read(s *EMSample) error {
	pattern.Fill(s.EmRaw, 0, s.Index)
	pattern.Fill(s.EmFine, 1, s.Index)
	pattern.Fill(s.Lm, 2, s.Index)
	pattern.Fill(s.Dist, 3, s.Index)
	return nil
}

// TestPlan checks the plan arithmetic (docs/SCHEMA.md, "The plan") by hand: 8 x (32768 + 8192 +
// 128 + 131072) bytes = 1.3 MiB >= 1 MiB and batch 8 >= 8, so streams are
// on, min(max_streams 2, 4 keys) = 2 of them, keys round robin.
func TestPlan(t *testing.T) {
	if EMBatchBytes != 8*(32768+8192+128+131072) || !EMUseStreams || EMNumStreams != 2 {
		t.Errorf("batch bytes %d, streams %v x %d; want 1377280, on, 2", EMBatchBytes, EMUseStreams, EMNumStreams)
	}
	for i, k := range emPlan.Keys {
		if k.Stream != i%2 {
			t.Errorf("key %q on stream %d, want %d", k.Name, k.Stream, i%2)
		}
	}
}

func TestEpochEndToEnd(t *testing.T) {
	var log bytes.Buffer
	l, err := NewEMLoader(source{n: 21}, runtime.Options{Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	batches := pattern.Epoch(t, l.Epoch(context.Background(), 0),
		pattern.Key(0, (*EMBatch).EmRawData, emEmRawElems),
		pattern.Key(1, (*EMBatch).EmFineData, emEmFineElems),
		pattern.Key(2, (*EMBatch).LmData, emLmElems),
		pattern.Key(3, (*EMBatch).DistData, emDistElems))
	if seen := len(slices.Concat(batches...)); seen != 21 {
		t.Errorf("saw %d samples, want 21", seen)
	}
	if !strings.Contains(log.String(), "EM loader: batch 8 (1.3 MiB), ") || !strings.Contains(log.String(), "2 CUDA streams") {
		t.Errorf("start log does not state the plan:\n%s", log.String())
	}
}
