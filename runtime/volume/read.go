package volume

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/loaderimpl"
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
	pcg    rand.PCG
	rng    *rand.Rand
	pos    []zarr.Positions // per key, the points of a turned crop
	values valueScratch     // the value augmentations' draws and scratch
}

func (s *Source) newState() *state {
	rank := len(s.spec.Keys[0].Shape)
	st := &state{crop: s.newCrop(), src: make([]int, rank), flip: make([]bool, rank), strides: make([][]int, len(s.spec.Keys)),
		prev: make([]int, rank), prevF: make([]bool, rank)}
	for k := range st.strides {
		st.strides[k] = make([]int, rank)
	}
	st.rng = rand.New(&st.pcg)
	st.pos = s.newPositions()
	st.values = s.newValueScratch()
	return st
}

func (s *Source) newCrop() runtime.Crop {
	rank := len(s.spec.Keys[0].Shape)
	c := runtime.Crop{Origin: make([][]int, len(s.spec.Keys)), Mirror: make([]bool, rank), Transpose: make([]int, rank)}
	for k := range c.Origin {
		c.Origin[k] = make([]int, rank)
	}
	if s.spec.Rotate != nil {
		c.Rotate = make([]float64, len(s.spec.Rotate))
		c.Rotation = make([][]float64, rank)
		for a := range c.Rotation {
			c.Rotation[a] = make([]float64, rank)
		}
	}
	return c
}

// Crop returns where sample index of epoch comes from, drawing what Read
// draws from the sample's Rand as the loader seeds it.
func (s *Source) Crop(epoch, index int) runtime.Crop {
	var pcg rand.PCG
	loaderimpl.SeedSample(&pcg, loaderimpl.EpochSeed(s.spec.Seed, epoch), index)
	c := s.newCrop()
	s.draw(rand.New(&pcg), &c, epoch, index)
	return c
}

// Read draws the crop of sample index of epoch from r, the sample's Rand,
// and reads every key's box into dst: one buffer per key, in spec order,
// holding the key's sample ([C, S...] for a key with a class axis), with
// its value augmentations applied. A failed chunk is a *runtime.KeyError
// naming the key, with the volume, the key's box origin (Crop's), the
// array and the chunk. Remote reads stop once ctx is done; a nil ctx is
// never done.
func (s *Source) Read(ctx context.Context, r *rand.Rand, epoch, index int, dst ...[]byte) error {
	if ctx == nil {
		ctx = context.Background() // a generated sample made by hand
	}
	st := s.states.Get().(*state)
	defer s.states.Put(st)
	s.draw(r, &st.crop, epoch, index)
	s.drawValues(r, &st.values)
	return s.read(ctx, &st.crop, st, dst)
}

// draw picks the volume, centre and augmentation of the crop of sample
// index of epoch from r, in a fixed order of draws: the foreground coin,
// the volume, the centre (place), the mirrors, the permutation, the
// quarter turns, the angles.
func (s *Source) draw(r *rand.Rand, c *runtime.Crop, epoch, index int) {
	s.place(r, c, epoch, index)
	s.augmentation(r, c)
}

// place draws the volume and centre of the crop of sample index of epoch
// from r, the first draws of draw: the foreground coin, the volume (none
// under Balance, which picks it for the epoch), the centre. It sets
// c.Volume, c.Origin and c.Foreground.
func (s *Source) place(r *rand.Rand, c *runtime.Crop, epoch, index int) {
	fg := s.spec.Foreground
	c.Foreground = fg != nil && s.fgCum != nil && r.Float64() < fg.Fraction
	switch {
	case s.balance != nil:
		c.Volume = s.balance.volume(s.spec.Seed, epoch, index)
	case c.Foreground:
		c.Volume = pick(s.fgCum, r.Float64())
	default:
		c.Volume = pick(s.cum, r.Float64())
	}
	v := s.vols[c.Volume]
	if c.Foreground && len(v.labelled) > 0 {
		v.grid.origins(int64(v.labelled[r.IntN(len(v.labelled))]), c.Origin)
		return
	}
	c.Foreground = false
	v.grid.origins(r.Int64N(v.grid.count), c.Origin)
}

// augmentation draws a crop's augmentation from r, the draws of draw after
// place's: the mirrors, the permutation, the quarter turns, the angles.
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
	s.drawRotation(r, c)
}

// read reads every key's box of crop c into dst, within ctx, with st as
// scratch.
func (s *Source) read(ctx context.Context, c *runtime.Crop, st *state, dst [][]byte) error {
	if len(dst) != len(s.spec.Keys) {
		return fmt.Errorf("%d buffers for %d keys", len(dst), len(s.spec.Keys))
	}
	s.orientation(c, st)
	v := s.vols[c.Volume]
	turn := turned(c)
	for k, key := range s.spec.Keys {
		start, kl := s.layout(k, st), s.keys[k]
		if want := len(v.arrays[k]) * kl.bytes; len(dst[k]) != want {
			return fmt.Errorf("key %q: a buffer of %d bytes for a sample of %d", key.Name, len(dst[k]), want)
		}
		if turn {
			s.positions(k, c, v, &st.pos[k])
		}
		for ci, a := range v.arrays[k] {
			buf := dst[k][ci*kl.bytes : (ci+1)*kl.bytes]
			if a == nil { // a class this volume lacks
				zarr.Repeat(buf, kl.fill)
				continue
			}
			l := zarr.Layout{Start: start, Strides: st.strides[k], Outside: kl.fill, Missing: v.missing[k][ci], Convert: kl.convert}
			var err error
			if turn {
				err = a.ReadSampled(ctx, buf, key.Shape, st.pos[k], l)
			} else {
				err = a.ReadLayout(ctx, buf, c.Origin[k], key.Shape, l)
			}
			if err != nil {
				return &runtime.KeyError{Key: key.Name, Err: fmt.Errorf("volume %d (%s), box origin %v: %w", c.Volume, v.roots[k], c.Origin[k], err)}
			}
		}
		s.applyValues(k, dst[k], kl.bytes, &st.values)
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
