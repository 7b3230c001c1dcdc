package classes

import (
	"bytes"
	"context"
	"math/rand/v2"
	"sync/atomic"
	"testing"
)

// augmented is the natural way to augment the file source: embed it and
// write a Read. It adds 1 + a draw of the sample's Rand to every raw byte.
type augmented struct {
	*CellMapFiles
	reads *atomic.Int64
}

func (a augmented) Read(s *CellMapSample) error {
	a.reads.Add(1)
	if err := a.CellMapFiles.Read(s); err != nil {
		return err
	}
	shift(s.Raw, s.Rand)
	return nil
}

// shift is the augmentation: one draw per sample, added to every byte.
func shift(raw []uint8, r *rand.Rand) {
	d := uint8(1 + r.IntN(7))
	for i := range raw {
		raw[i] += d
	}
}

// gathered keeps the gather loop: it also defines ReadSamples, gathering
// and then augmenting each sample with its own Rand.
type gathered struct{ augmented }

func (g gathered) ReadSamples(s *CellMapSamples) (int, error) {
	n, err := g.Gather(s)
	for i := range n {
		shift(s.Raw[i*cellMapRawElems:(i+1)*cellMapRawElems], s.Rand(i))
	}
	return n, err
}

// TestEmbeddingFileSourceRunsItsRead: a type embedding the file source has
// its own Read called for every sample (not the embedded Gather behind its
// back), and one that also defines ReadSamples gets the gather loop with
// the same samples.
func TestEmbeddingFileSourceRunsItsRead(t *testing.T) {
	root, want := writeDataset(t, 20)
	files, err := OpenCellMapFiles(root)
	if err != nil {
		t.Fatal(err)
	}
	defer files.Close()
	epochRaw := func(src CellMapSource) map[int][]byte {
		l, err := NewCellMapLoader(src, quiet)
		if err != nil {
			t.Fatal(err)
		}
		defer l.Close()
		out := map[int][]byte{}
		for b, err := range l.Epoch(context.Background(), 0) {
			if err != nil {
				t.Fatal(err)
			}
			for i, index := range b.Indices {
				out[index] = bytes.Clone(b.RawData()[i*cellMapRawElems : (i+1)*cellMapRawElems])
			}
		}
		return out
	}
	var reads, gatherReads atomic.Int64
	viaRead := epochRaw(augmented{files, &reads})
	if reads.Load() != 20 {
		t.Fatalf("the wrapper's Read ran %d times for 20 samples", reads.Load())
	}
	viaGather := epochRaw(gathered{augmented{files, &gatherReads}})
	if gatherReads.Load() != 0 {
		t.Errorf("with ReadSamples defined, Read still ran %d times", gatherReads.Load())
	}
	for index, raw := range viaRead {
		file := want.bytes[0][index*cellMapRawElems : (index+1)*cellMapRawElems]
		if bytes.Equal(raw, file) {
			t.Fatalf("sample %d is the file's bytes: not augmented", index)
		}
		if !bytes.Equal(raw, viaGather[index]) {
			t.Fatalf("sample %d differs between Read and the gather path", index)
		}
	}
}
