//go:build cuda

package ragged

import (
	"bytes"
	"context"
	"testing"

	"github.com/loadergen/loadergen/runtime"
)

// TestCUDALengths: on the CUDA backend (the emulated driver in make test),
// each ragged key's lengths reach the device with the key, on the key's
// stream, and hold what the host staged, as does every other key.
func TestCUDALengths(t *testing.T) {
	l, err := NewRaggedLoader(appender{200}, runtime.Options{Logger: quiet})
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
	batches := 0
	for b, err := range l.Epoch(context.Background(), 0) {
		if err != nil {
			t.Fatal(err)
		}
		check(t, b)
		st := b.Staged()
		host := [][]byte{b.ImageData(), runtime.Bytes(b.TokensData()), runtime.Bytes(b.TokensLengthsData()),
			runtime.Bytes(b.BoxesData()), runtime.Bytes(b.BoxesLengthsData()), runtime.Bytes(b.LabelData())}
		for k, h := range host {
			if st.Tensors[k].Device == 0 {
				t.Fatalf("batch %d key %s has no device buffer: not on the CUDA backend", batches, p.Keys[k].Name)
			}
			dev := make([]byte, len(st.Tensors[k].Data))
			if err := st.DeviceToHost(k, dev); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(dev, h) {
				t.Fatalf("batch %d key %s: the device holds other bytes than were staged", batches, p.Keys[k].Name)
			}
		}
		batches++
	}
	if batches != l.Len() {
		t.Errorf("%d batches, want %d", batches, l.Len())
	}
}
