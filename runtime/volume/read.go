package volume

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/zarr"
)

// state is one Read's scratch: the crop it draws and each key's layout.
type state struct {
	crop    runtime.Crop
	src     []int   // output axis j shows input axis src[j]
	flip    []bool  // ... reversed when flip[j]
	strides [][]int // per key, the strides of its layout
	prev    []int   // orientation's copy of src
	prevF   []bool  // and of flip
	// LocalityKeys' draws: rng over pcg, seeded for each sample.
	pcg rand.PCG
	rng *rand.Rand
}

func (s *Source) newState() *state {
	rank := len(s.spec.Keys[0].Shape)
	st := &state{crop: s.newCrop(), src: make([]int, rank), flip: make([]bool, rank), strides: make([][]int, len(s.spec.Keys)),
		prev: make([]int, rank), prevF: make([]bool, rank)}
	for k := range st.strides {
		st.strides[k] = make([]int, rank)
	}
	st.rng = rand.New(&st.pcg)
	return st
}

func (s *Source) newCrop() runtime.Crop {
	rank := len(s.spec.Keys[0].Shape)
	c := runtime.Crop{Origin: make([][]int, len(s.spec.Keys)), Mirror: make([]bool, rank), Transpose: make([]int, rank)}
	for k := range c.Origin {
		c.Origin[k] = make([]int, rank)
	}
	return c
}

// Crop returns where sample index of epoch comes from, drawing what Read
// draws from the sample's Rand as the loader seeds it.
func (s *Source) Crop(epoch, index int) runtime.Crop {
	var pcg rand.PCG
	runtime.SeedSample(&pcg, runtime.EpochSeed(s.spec.Seed, epoch), index)
	c := s.newCrop()
	s.draw(rand.New(&pcg), &c)
	return c
}

// Read draws a crop from r, the sample's Rand, and reads every key's box
// into dst: one buffer per key, in spec order, holding the key's sample
// ([C, S...] for a key with a class axis). A failed chunk is a
// *runtime.KeyError naming the key, with the volume, the key's box origin
// (Crop's), the array and the chunk. Remote reads stop once ctx is done;
// a nil ctx is never done.
func (s *Source) Read(ctx context.Context, r *rand.Rand, dst ...[]byte) error {
	if ctx == nil {
		ctx = context.Background() // a generated sample made by hand
	}
	st := s.states.Get().(*state)
	defer s.states.Put(st)
	s.draw(r, &st.crop)
	return s.read(ctx, &st.crop, st, dst)
}

// draw picks a crop's volume, centre and augmentation from r, in a fixed
// order of draws: the foreground coin, the volume, the centre (place), the
// mirrors, the permutation, the quarter turns.
func (s *Source) draw(r *rand.Rand, c *runtime.Crop) {
	s.place(r, c)
	s.augmentation(r, c)
}

// place draws a crop's volume and centre from r, the first draws of draw:
// the foreground coin, the volume, the centre. It sets c.Volume,
// c.Origin and c.Foreground.
func (s *Source) place(r *rand.Rand, c *runtime.Crop) {
	c.Foreground = false
	if fg := s.spec.Foreground; fg != nil && s.fgCum != nil && r.Float64() < fg.Fraction {
		c.Volume = pick(s.fgCum, r.Float64())
		v := s.vols[c.Volume]
		v.grid.origins(int64(v.labelled[r.IntN(len(v.labelled))]), c.Origin)
		c.Foreground = true
	} else {
		c.Volume = pick(s.cum, r.Float64())
		v := s.vols[c.Volume]
		v.grid.origins(r.Int64N(v.grid.count), c.Origin)
	}
}

// augmentation draws a crop's augmentation from r, the draws of draw after
// place's: the mirrors, the permutation, the quarter turns.
func (s *Source) augmentation(r *rand.Rand, c *runtime.Crop) {
	for a := range c.Mirror {
		c.Mirror[a] = s.spec.Mirror != nil && s.spec.Mirror[a] > 0 && r.Float64() < s.spec.Mirror[a]
	}
	for a := range c.Transpose {
		c.Transpose[a] = a
	}
	// A Fisher-Yates shuffle of the listed axes among themselves.
	t := s.spec.Transpose
	for i := len(t) - 1; i > 0; i-- {
		j := r.IntN(i + 1)
		c.Transpose[t[i]], c.Transpose[t[j]] = c.Transpose[t[j]], c.Transpose[t[i]]
	}
	c.Rot90 = 0
	if s.spec.Rot90 != nil {
		c.Rot90 = r.IntN(4)
	}
}

// read reads every key's box of crop c into dst, within ctx, with st as
// scratch.
func (s *Source) read(ctx context.Context, c *runtime.Crop, st *state, dst [][]byte) error {
	if len(dst) != len(s.spec.Keys) {
		return fmt.Errorf("%d buffers for %d keys", len(dst), len(s.spec.Keys))
	}
	s.orientation(c, st)
	v := s.vols[c.Volume]
	for k, key := range s.spec.Keys {
		start, kl := s.layout(k, st), s.keys[k]
		if want := len(v.arrays[k]) * kl.bytes; len(dst[k]) != want {
			return fmt.Errorf("key %q: a buffer of %d bytes for a sample of %d", key.Name, len(dst[k]), want)
		}
		for ci, a := range v.arrays[k] {
			buf := dst[k][ci*kl.bytes : (ci+1)*kl.bytes]
			if a == nil { // a class this volume lacks
				zarr.Repeat(buf, kl.fill)
				continue
			}
			l := zarr.Layout{Start: start, Strides: st.strides[k], Outside: kl.fill, Missing: v.missing[k][ci], Convert: kl.convert}
			if err := a.ReadLayout(ctx, buf, c.Origin[k], key.Shape, l); err != nil {
				return &runtime.KeyError{Key: key.Name, Err: fmt.Errorf("volume %d (%s), box origin %v: %w", c.Volume, v.roots[k], c.Origin[k], err)}
			}
		}
	}
	return nil
}

// orientation composes a crop's augmentation into one signed axis
// permutation: output axis j shows input axis src[j], reversed when
// flip[j]. Each step turns the array it is given into a new one, as
// numpy's flip, transpose and rot90 do.
func (s *Source) orientation(c *runtime.Crop, st *state) {
	src, flip := st.src, st.flip
	for j := range src {
		src[j], flip[j] = j, c.Mirror[j]
	}
	copy(st.prev, src)
	copy(st.prevF, flip)
	for j, from := range c.Transpose { // numpy.transpose(m, Transpose)
		src[j], flip[j] = st.prev[from], st.prevF[from]
	}
	if s.spec.Rot90 == nil {
		return
	}
	a, b := s.spec.Rot90[0], s.spec.Rot90[1]
	swap := func() { // numpy.transpose with axes a and b exchanged
		src[a], src[b] = src[b], src[a]
		flip[a], flip[b] = flip[b], flip[a]
	}
	switch c.Rot90 { // numpy.rot90(m, k, axes=(a, b))
	case 1:
		flip[b] = !flip[b]
		swap()
	case 2:
		flip[a], flip[b] = !flip[a], !flip[b]
	case 3:
		swap()
		flip[b] = !flip[b]
	}
}

// layout writes key k's strides for reading its box (in the array's
// orientation) into the sample (in the crop's), from st.src and st.flip,
// and returns the element the box's first corner goes to.
func (s *Source) layout(k int, st *state) int {
	shape, out := s.spec.Keys[k].Shape, s.keys[k].strides
	start := 0
	for j, a := range st.src {
		if st.flip[j] {
			st.strides[k][a] = -out[j]
			start += (shape[j] - 1) * out[j]
		} else {
			st.strides[k][a] = out[j]
		}
	}
	return start
}
