//go:build cuda

package ragged

import (
	"context"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/pattern"
	"github.com/loadergen/loadergen/internal/testenv/goldentest"
	"github.com/loadergen/loadergen/internal/testenv/gputest"
	"github.com/loadergen/loadergen/runtime"
)

// TestCUDALengths: on the CUDA backend (the emulated driver in make test),
// each ragged key's lengths reach the device with the key, on the key's
// stream, and hold what the host staged, as does every other key.
func TestCUDALengths(t *testing.T) {
	gputest.Need(t, runtime.CUDAUsable())
	l, err := NewRaggedLoader(appender{200}, runtime.Options{Logger: goldentest.Quiet})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	p := l.Plan()
	for _, ragged := range []string{"tokens", "boxes"} {
		var data, lengths runtime.Key
		for _, k := range p.Keys {
			switch k.Name {
			case ragged:
				data = k
			case runtime.LengthsKey(ragged):
				lengths = k
			}
		}
		if lengths.LengthsOf != ragged || lengths.Stream != data.Stream {
			t.Fatalf("key %q's lengths %+v are not planned on its stream %d", ragged, lengths, data.Stream)
		}
	}
	batches := pattern.Epoch(t, l.Epoch(context.Background(), 0), check,
		pattern.OnDevice(0, (*RaggedBatch).ImageData), pattern.OnDevice(1, (*RaggedBatch).TokensData),
		pattern.OnDevice(2, (*RaggedBatch).TokensLengthsData), pattern.OnDevice(3, (*RaggedBatch).BoxesData),
		pattern.OnDevice(4, (*RaggedBatch).BoxesLengthsData), pattern.OnDevice(5, (*RaggedBatch).LabelData))
	if len(batches) != l.Len() {
		t.Errorf("%d batches, want %d", len(batches), l.Len())
	}
}
