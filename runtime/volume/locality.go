package volume

import (
	"math/bits"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/loaderimpl"
)

// The locality key of a crop (LocalityKeys) says where it reads: the
// volume, then the chunk of the first key's array that holds the box's
// first corner (clamped into the array, so with pad the first chunk the
// box touches), as the chunk coordinates' bits interleaved, z first (a
// Morton, or z-order, code). Crops whose keys are close read the same
// chunks or neighbouring ones: sorting by the key puts those that share
// chunks next to each other, and the z-order keeps neighbours along every
// axis close, where C order would split them along z and y. (Measured on
// the peer store: docs/PERFORMANCE-LOG.md, "Crop locality".)

// chunkGrid is where a volume's crops start, for the locality key: the
// first key's array shape and chunk shape (its first class's).
type chunkGrid struct {
	shape, chunk []int
}

// localityBits fixes the key's layout for vols: the bits a chunk
// coordinate takes along each axis, the most any volume needs, and the
// bits below the volume's index (their sum). Keys of volumes that differ
// only above the 64th bit (more volumes than the rest leaves room for)
// share their high bits; they still sort, less well.
func localityBits(vols []*vol) (axis []int, shift int) {
	axis = make([]int, len(vols[0].starts.shape))
	for _, v := range vols {
		for a := range axis {
			n := (v.starts.shape[a] + v.starts.chunk[a] - 1) / v.starts.chunk[a]
			axis[a] = max(axis[a], bits.Len(uint(max(n-1, 0))))
		}
	}
	for _, b := range axis {
		shift += b
	}
	return axis, min(shift, 63)
}

// LocalityKeys writes into keys[k] the locality key of sample indices[k]
// of epoch: its volume and the chunk its box starts in (see chunkGrid; for
// a turned crop, the box around its points). It draws each crop's place
// as Read and Crop do, so the key is a pure function of (seed, epoch,
// index), and it does not allocate in steady state. A loader groups its
// crops by these keys (crops.locality).
func (s *Source) LocalityKeys(epoch int, indices []int, keys []uint64) {
	s.places(epoch, indices, func(k int, c *runtime.Crop, st *state) { keys[k] = s.localityKey(c, st) })
}

// places draws the place (volume and box origins) of the crop of each
// sample indices[k] of epoch, as Read and Crop draw it, and its
// augmentation when crops are turned, and hands it to f with k and the
// state it was drawn in. The crop and the state are scratch: f must not
// keep them.
func (s *Source) places(epoch int, indices []int, f func(k int, c *runtime.Crop, st *state)) {
	st := s.states.Get().(*state)
	defer s.states.Put(st)
	seed := loaderimpl.EpochSeed(s.spec.Seed, epoch)
	for k, index := range indices {
		loaderimpl.SeedSample(&st.pcg, seed, index)
		if s.spec.Rotate != nil {
			s.draw(st.rng, &st.crop, epoch, index)
		} else {
			s.place(st.rng, &st.crop, epoch, index)
		}
		f(k, &st.crop, st)
	}
}

// localityKey is crop c's locality key, with st as scratch.
func (s *Source) localityKey(c *runtime.Crop, st *state) uint64 {
	v := s.vols[c.Volume]
	g := &v.starts
	var first [runtime.MaxSpatialRank]int
	copy(first[:], c.Origin[0])
	if s.spec.Rotate != nil && turned(c) {
		s.positions(0, c, v, &st.pos[0])
		firstCorner(&st.pos[0], s.spec.Keys[0].Shape, &first)
	}
	var at [runtime.MaxSpatialRank]uint64
	most := 0
	for a := range c.Origin[0] {
		at[a] = uint64(min(max(first[a], 0), g.shape[a]-1) / g.chunk[a])
		most = max(most, s.chunkBits[a])
	}
	var key uint64
	for b := most - 1; b >= 0; b-- {
		for a, n := range s.chunkBits {
			if b < n {
				key = key<<1 | at[a]>>b&1
			}
		}
	}
	return uint64(c.Volume)<<s.volumeShift | key
}

// ReadAhead announces to the arrays the reads of the crops of samples
// indices of epoch (a loader calls it through runtime.ReadAheader,
// batches ahead): their chunk cache keeps the chunks those crops will
// read, and remote arrays start reading them. It draws each crop's place
// as Read does and hints each key's box (zarr.Array.ReadAhead), or the
// chunks a turned crop's points read (zarr.Array.ReadAheadSampled).
func (s *Source) ReadAhead(epoch int, indices []int) {
	s.places(epoch, indices, func(_ int, c *runtime.Crop, st *state) {
		v := s.vols[c.Volume]
		turn := turned(c)
		for k, key := range s.spec.Keys {
			if turn {
				s.positions(k, c, v, &st.pos[k])
			}
			for _, a := range v.arrays[k] {
				switch {
				case a == nil:
				case turn:
					a.ReadAheadSampled(key.Shape, st.pos[k])
				default:
					a.ReadAhead(c.Origin[k], key.Shape)
				}
			}
		}
	})
}
