package volume

import (
	"path/filepath"
	"slices"
	"testing"
)

// TestLocalityKeys: a sample's key is its volume and the chunk of the
// first key's array that its box starts in (clamped into the array), as
// Crop draws them, with the chunk coordinates in z-order: an aligned
// 2 x 2 x 2 block of chunks shares the bits above the lowest three. The
// keys are a pure function of (epoch, index), however they are asked for,
// and cost no allocation.
func TestLocalityKeys(t *testing.T) {
	dir := t.TempDir()
	a, b := filepath.Join(dir, "a.zarr"), filepath.Join(dir, "b.zarr")
	testVolume(t, a, true) // raw 24 x 40 x 40 in chunks of 8 x 16 x 16: 3 x 3 x 3 chunks
	testVolume(t, b, false)
	spec := cellSpec()
	spec.Keys = spec.Keys[:1] // raw alone: the labels would keep the centres in their crop
	spec.Classes, spec.Pad, spec.PerEpoch = nil, true, 600
	s, err := Open(spec, []Volume{{Roots: []string{a}}, {Roots: []string{b}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	const epoch = 2
	indices := make([]int, spec.PerEpoch)
	for i := range indices {
		indices[i] = i
	}
	keys := make([]uint64, len(indices))
	s.LocalityKeys(epoch, indices, keys)

	// Asked one at a time, backwards: the same keys.
	for _, i := range slices.Backward(indices) {
		one := []uint64{0}
		s.LocalityKeys(epoch, []int{i}, one)
		if one[0] != keys[i] {
			t.Fatalf("sample %d: key %#x alone, %#x among all", i, one[0], keys[i])
		}
	}

	type place struct {
		volume int
		chunk  [3]int
	}
	chunk, extent := []int{8, 16, 16}, []int{24, 40, 40}
	places := make([]place, len(indices))
	clamped := false
	for i := range indices {
		c := s.Crop(epoch, i)
		places[i].volume = c.Volume
		for ax, o := range c.Origin[0] {
			clamped = clamped || o < 0
			places[i].chunk[ax] = min(max(o, 0), extent[ax]-1) / chunk[ax]
		}
	}
	if !clamped {
		t.Fatal("no crop starts before the array: the test needs some")
	}
	block := func(p place) place {
		for ax := range p.chunk {
			p.chunk[ax] /= 2
		}
		return p
	}
	distinct := map[place]bool{}
	for i := range indices {
		distinct[places[i]] = true
		for j := range indices {
			pi, pj := places[i], places[j]
			if (keys[i] == keys[j]) != (pi == pj) {
				t.Fatalf("samples %d (%+v) and %d (%+v): keys %#x and %#x", i, pi, j, pj, keys[i], keys[j])
			}
			if (keys[i]>>3 == keys[j]>>3) != (block(pi) == block(pj)) {
				t.Fatalf("samples %d (%+v) and %d (%+v): keys %#x and %#x do not share their high bits as z-order does", i, pi, j, pj, keys[i], keys[j])
			}
			if pi.volume < pj.volume && keys[i] >= keys[j] {
				t.Fatalf("sample %d of volume 0 has key %#x, sample %d of volume 1 %#x: not sorted by volume first", i, keys[i], j, keys[j])
			}
		}
	}
	if len(distinct) < 40 {
		t.Fatalf("the crops start in %d chunks: the test needs more", len(distinct))
	}

	if raceEnabled {
		return // the race detector makes sync.Pool drop states
	}
	if n := testing.AllocsPerRun(20, func() { s.LocalityKeys(epoch+1, indices, keys) }); n != 0 {
		t.Errorf("LocalityKeys allocates %v times per call", n)
	}
}

// BenchmarkLocalityKeys asks the keys of 1000 samples, as a loader does
// for an epoch's, over testVolume with CellMap's two keys and foreground
// crops: ns/op over 1000 is a sample's cost.
func BenchmarkLocalityKeys(b *testing.B) {
	root := filepath.Join(b.TempDir(), "a.zarr")
	testVolume(b, root, true)
	spec := cellSpec()
	spec.Pad, spec.Foreground = true, &Foreground{Key: 1, Fraction: 0.33}
	s, err := Open(spec, []Volume{{Roots: []string{root, root}}}, nil)
	if err != nil {
		b.Fatal(err)
	}
	indices, keys := make([]int, 1000), make([]uint64, 1000)
	for i := range indices {
		indices[i] = i
	}
	b.ReportAllocs()
	for e := 0; b.Loop(); e++ {
		s.LocalityKeys(e, indices, keys)
	}
}

// TestReadAheadAnnouncesLocalCrops: a local source's ReadAhead announces
// its crops' reads to the chunk cache, at least one chunk a box, so that
// eviction keeps their chunks for them.
func TestReadAheadAnnouncesLocalCrops(t *testing.T) {
	a := filepath.Join(t.TempDir(), "a.zarr")
	testVolume(t, a, true)
	spec := cellSpec()
	spec.Keys, spec.Classes = spec.Keys[:1], nil // raw alone
	s, err := Open(spec, []Volume{{Roots: []string{a}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	indices := []int{0, 1, 2, 3}
	before := s.cache.Stats().Announced
	s.ReadAhead(0, indices)
	if got := s.cache.Stats().Announced - before; got < int64(len(indices)*len(spec.Keys)) {
		t.Errorf("ReadAhead of %d crops of %d keys announced %d chunk reads", len(indices), len(spec.Keys), got)
	}
}
