// Package volume cuts samples out of zarr volumes for generated volume
// sources (Open<Name>Volumes): random crops at one physical place in every
// key, each key at its own resolution, augmented alike by mirrors,
// transposes and quarter turns applied while copying out of the decoded
// chunks, with optional foreground oversampling. Every choice is drawn from
// the sample's Rand, so a crop is a pure function of (seed, epoch, index).
package volume

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/storage"
	"github.com/loadergen/loadergen/runtime/volume/volumespec"
	"github.com/loadergen/loadergen/runtime/zarr"
)

// Spec is what a schema says of its volumes; generated code holds it as a
// literal.
type Spec struct {
	Keys       []Key
	Classes    []string // the class names runtime.ClassPlaceholder expands to
	PerEpoch   int      // samples in an epoch
	Pad        bool     // crops may reach past an array's edge
	Foreground *Foreground
	Mirror     []float64 // per spatial axis, the probability of a flip; nil for none
	Transpose  []int     // spatial axes that may be permuted; nil for none
	Rot90      []int     // the plane of quarter turns (two axes); nil for none
	Seed       uint64    // the schema's loader seed, for Crop
	Align      Align     // what to do with a key whose box cannot start on a whole voxel
	// Rotate turns crops by any angle, one turn after the other in this
	// order, each key's values sampled at the turned points (Key.Linear);
	// nil for none.
	Rotate []Rotation
	// Balance draws each sample's volume as cellmap-data's
	// ClassBalancedSampler draws crops: the class seen least so far in the
	// epoch, then a volume that annotates it (crops.balance: classes).
	// Volumes then have no weights.
	Balance bool
}

// Key is one key of a volume source.
type Key struct {
	Name      string
	Path      string // relative to a volume's root; may hold runtime.ClassPlaceholder
	DType     runtime.DType
	Shape     []int     // the crop's spatial shape, in voxels of the key's level
	Scale     []float64 // the voxel size that picks a multiscale level; nil for a plain array at its own (1 per voxel)
	Fill      float64   // of DType, not normalised: outside an array (with Pad) and for a missing class
	ClassAxis bool      // one array per class, stacked on a leading axis
	Missing   Missing   // what a chunk of the key's arrays that is not stored reads as
	// ArrayDType is the dtype of the key's arrays when it is not DType (0
	// means DType): their elements are converted to DType as crops are
	// copied out (zarr.NewConversion says which dtypes convert).
	ArrayDType runtime.DType
	// Normalize, when not nil, maps the arrays' values as they are
	// converted; DType is then a float dtype.
	Normalize *zarr.Affine
	// Linear interpolates the values of turned crops (Spec.Rotate):
	// trilinear in 3D, bilinear in 2D; false takes the nearest voxel.
	Linear bool
	// Values are the key's value augmentations, applied in order to each
	// sample once it is read, converted and normalised.
	Values []ValueOp
}

// The words of a Spec that a schema writes are declared in
// runtime/volume/volumespec, which does no I/O, so that the generator
// checks them without linking this package; these are their names here,
// which generated code spells.
type (
	Missing   = volumespec.Missing   // what a chunk that is not stored reads as
	Align     = volumespec.Align     // where a key off the common voxel grid is placed
	ValueKind = volumespec.ValueKind // a value augmentation's name
	ValueOp   = volumespec.ValueOp   // a value augmentation of a key
	Rotation  = volumespec.Rotation  // a turn of crops by an angle drawn in a range
	Blend     = volumespec.Blend     // what overlapping tiles make of a voxel
)

// The values of the words above, as volumespec declares them.
const (
	MissingFill  = volumespec.MissingFill
	MissingError = volumespec.MissingError
	AlignExact   = volumespec.AlignExact
	AlignNearest = volumespec.AlignNearest
	Noise        = volumespec.Noise
	Contrast     = volumespec.Contrast
	Gamma        = volumespec.Gamma
	Blur         = volumespec.Blur
	Binarize     = volumespec.Binarize
	BlendAverage = volumespec.BlendAverage
	BlendLast    = volumespec.BlendLast
)

// ErrMissingChunk is the error of a chunk that is not stored, read for a
// key whose Missing is MissingError; a *zarr.ChunkError naming the array
// and the chunk wraps it.
var ErrMissingChunk = errors.New("not stored (the key's missing: error refuses it; missing: fill reads the array's fill value)")

// arrayDType is the dtype the key's arrays hold.
func (k *Key) arrayDType() runtime.DType {
	if k.ArrayDType == 0 {
		return k.DType
	}
	return k.ArrayDType
}

// Foreground centres a fraction of the crops on voxels where Keys[Key] is
// neither zero nor NaN.
type Foreground struct {
	Key      int
	Fraction float64
}

// Volume is one dataset: a root directory per key (the same root for all
// is common) and a relative sampling weight (0 means 1).
type Volume struct {
	Roots  []string
	Weight float64
}

// errWeight is checkWeight's complaint; it follows the weight as the
// caller shows it.
var errWeight = errors.New("is not a number >= 0 (a finite one; 0 means 1)")

// checkWeight checks a volume's sampling weight: a finite number >= 0,
// where 0 means 1.
func checkWeight(w float64) error {
	if w >= 0 && !math.IsInf(w, 1) { // NaN fails w >= 0
		return nil
	}
	return errWeight
}

// Source reads crops of a set of volumes. Read and Crop are safe for
// concurrent use.
type Source struct {
	// Open writes every field but states, and the vols they point to,
	// before it returns the Source; nothing writes them after, so the
	// workers that Read and Crop (started after Open returned) read them
	// without a lock.
	spec Spec
	keys []keyLayout // per key, in spec order
	vols []*vol
	// cum is the running sum of the volumes' weighted centre counts, which
	// pick draws a volume from.
	cum []float64
	// fgCum weighs the volumes by their labelled centres; nil when there is
	// no foreground, or no labelled voxel at all.
	fgCum []float64
	// chunkBits and volumeShift lay out the locality key (localityBits).
	chunkBits   []int
	volumeShift int
	// balance picks the samples' volumes under Spec.Balance; nil without.
	balance *balancer
	// states holds the scratch of Read (the crop and the layouts) and of
	// LocalityKeys (a Rand). A state belongs to one call between Get and
	// Put; Get and Put do not allocate in steady state.
	states sync.Pool
	log    *slog.Logger  // where the first missing chunk of each array is logged; nil for nowhere
	cache  *zarr.Cache   // the chunk cache of every store opened (zarr.SharedCache)
	stores []*zarr.Store // every store opened, which Close closes
	// missing counts the chunks that reads found not stored
	// (MissingChunks): every reader adds to it, any goroutine loads it.
	missing atomic.Int64
}

// keyLayout is what reading a key's box needs that depends on the spec
// alone.
type keyLayout struct {
	fill    []byte           // the key's fill value, one element
	strides []int            // the C-order strides of the key's box (Shape), in elements
	bytes   int              // the box's size in bytes: one class's, for a class axis
	convert *zarr.Conversion // from the arrays' dtype to the key's; nil for none
}

// prepare returns what opening vols for spec starts from: the chunk
// cache and each key's layout.
func prepare(spec Spec, vols []Volume) (*zarr.Cache, []keyLayout, error) {
	if len(vols) == 0 {
		return nil, nil, errors.New("no volumes")
	}
	cache, err := zarr.SharedCache()
	if err != nil {
		return nil, nil, err
	}
	keys := make([]keyLayout, len(spec.Keys))
	for k, key := range spec.Keys {
		bytes, _, ok := runtime.KeyBytes(key.DType, key.Shape, 1)
		if !ok {
			return nil, nil, fmt.Errorf("key %q: the byte size of a %v box of %v overflows int64", key.Name, key.Shape, key.DType)
		}
		conv, err := zarr.NewConversion(key.arrayDType(), key.DType, key.Normalize)
		if err != nil {
			return nil, nil, fmt.Errorf("key %q: %w", key.Name, err)
		}
		keys[k] = keyLayout{fill: key.DType.Encode(key.Fill), strides: zarr.CStrides(key.Shape), bytes: int(bytes), convert: conv}
	}
	return cache, keys, nil
}

// vol is an opened volume; Open writes it, Reads only read it. Its
// arrays share the decoded chunks of the cache their stores were opened
// with, which guards itself.
type vol struct {
	roots    []string              // per key, as messages show it (redacted)
	arrays   [][]*zarr.Array       // per key, per class (one for keys without a class axis); nil for a missing class
	missing  [][]func(int64) error // per array, its zarr.Layout.Missing (a missingChunks' chunk)
	grid     *grid
	scales   [][]float64 // per key, its level's voxel size
	weight   float64
	labelled []uint32  // centre numbers whose foreground voxel is labelled
	starts   chunkGrid // where crops start, for the locality key
}

// Open opens every array of every volume and checks it against spec: it
// exists (a missing class is filled), holds the key's array dtype (which
// must convert to its dtype, through its Normalize), has the level
// the key's scale names, and lies so that the keys' boxes can share a
// centre on each key's voxel grid; a volume must hold a whole crop unless
// spec.Pad. Unless log is nil, it logs there what it opened and the size
// of the chunk cache (an Info line), a Warn when no volume has a labelled
// voxel for foreground crops, and, as reads find them, a Warn for the
// first chunk of each array that is not stored and reads as the fill
// value (MissingFill).
func Open(spec Spec, vols []Volume, log *slog.Logger) (*Source, error) {
	cache, keys, err := prepare(spec, vols)
	if err != nil {
		return nil, err
	}
	s := &Source{spec: spec, keys: keys, log: log, cache: cache}
	stores := map[string]*zarr.Store{}
	missing := map[string]int{} // "key/class" -> volumes without it
	var total, fgTotal float64
	for i, v := range vols {
		ov, err := s.openVolume(i, v, stores, missing)
		if err != nil {
			s.Close()
			return nil, fmt.Errorf("volume %d (%s): %w", i, strings.Join(uniq(redacted(v.Roots)), ", "), err)
		}
		s.vols = append(s.vols, ov)
		total += float64(ov.grid.count) * ov.weight
		s.cum = append(s.cum, total)
		fgTotal += float64(len(ov.labelled)) * ov.weight
	}
	if spec.Foreground != nil && fgTotal > 0 {
		var c float64
		for _, v := range s.vols {
			c += float64(len(v.labelled)) * v.weight
			s.fgCum = append(s.fgCum, c)
		}
	}
	if spec.Balance {
		if s.balance, err = newBalancer(&s.spec, s.vols); err != nil {
			s.Close()
			return nil, err
		}
	}
	s.chunkBits, s.volumeShift = localityBits(s.vols)
	s.states.New = func() any { return s.newState() }
	s.logOpened(log, missing)
	return s, nil
}

// openVolume opens volume number i's arrays and computes its crop centres.
func (s *Source) openVolume(i int, v Volume, stores map[string]*zarr.Store, missing map[string]int) (*vol, error) {
	keys := s.spec.Keys
	if len(v.Roots) != len(keys) {
		return nil, fmt.Errorf("%d roots for %d keys", len(v.Roots), len(keys))
	}
	if err := checkWeight(v.Weight); err != nil {
		return nil, fmt.Errorf("weight %v %w", v.Weight, err)
	}
	if s.spec.Balance && v.Weight != 0 && v.Weight != 1 {
		return nil, fmt.Errorf("weight %v: %w", v.Weight, errBalanceWeight)
	}
	ov := &vol{roots: redacted(v.Roots), arrays: make([][]*zarr.Array, len(keys)), missing: make([][]func(int64) error, len(keys)), weight: v.Weight}
	if ov.weight == 0 {
		ov.weight = 1
	}
	levels := make([]level, len(keys))
	for k, key := range keys {
		store, ok := stores[v.Roots[k]]
		if !ok {
			var err error
			if store, err = zarr.OpenStore(v.Roots[k], s.cache); err != nil {
				return nil, fmt.Errorf("key %q: %w", key.Name, err)
			}
			stores[v.Roots[k]] = store
			s.stores = append(s.stores, store)
		}
		classes := []string{""}
		if key.ClassAxis {
			classes = s.spec.Classes
		}
		ov.arrays[k] = make([]*zarr.Array, len(classes))
		ov.missing[k] = make([]func(int64) error, len(classes))
		found := -1
		for c, class := range classes {
			path := strings.ReplaceAll(key.Path, runtime.ClassPlaceholder, class)
			a, lvl, err := openLevel(store, path, key)
			if errors.Is(err, fs.ErrNotExist) && key.ClassAxis {
				missing[key.Name+"/"+class]++
				continue
			}
			if err == nil && s.spec.Rotate != nil {
				err = a.CanSample()
			}
			if err != nil {
				return nil, fmt.Errorf("key %q: %w", key.Name, err)
			}
			if found >= 0 && !sameLevel(lvl, levels[k]) {
				return nil, fmt.Errorf("key %q: class %q's array (shape %v, voxel size %v, offset %v) differs from class %q's (%v, %v, %v)",
					key.Name, class, lvl.shape, lvl.scale, lvl.translation, classes[found], levels[k].shape, levels[k].scale, levels[k].translation)
			}
			ov.arrays[k][c], levels[k], found = a, lvl, c
			ov.missing[k][c] = (&missingChunks{count: &s.missing, log: s.log, key: key, volume: i, array: a}).chunk
			if k == 0 && ov.starts.chunk == nil {
				ov.starts = chunkGrid{shape: a.Shape(), chunk: a.ChunkShape()}
			}
		}
		if found < 0 {
			return nil, fmt.Errorf("key %q: no class has an array at %s under %s", key.Name, key.Path, ov.roots[k])
		}
	}
	var err error
	if ov.grid, err = newGrid(keys, levels, s.spec.Pad, s.spec.Align); err != nil {
		return nil, err
	}
	for k := range keys {
		ov.scales = append(ov.scales, levels[k].scale)
	}
	if fg := s.spec.Foreground; fg != nil {
		if ov.labelled, err = s.labelled(ov, fg.Key); err != nil {
			return nil, err
		}
	}
	return ov, nil
}

// openLevel opens the array at path for key: a plain array, or the level
// of a multiscale group whose voxel size is the key's scale.
func openLevel(store *zarr.Store, path string, key Key) (*zarr.Array, level, error) {
	rank := len(key.Shape)
	isArray, err := store.IsArray(path)
	if err != nil {
		return nil, level{}, err
	}
	var a *zarr.Array
	where := path // the array's path, for errors
	lvl := level{scale: key.Scale, translation: make([]float64, rank)}
	if isArray {
		if a, err = store.Array(path); err != nil {
			return nil, level{}, err
		}
		if lvl.scale == nil {
			lvl.scale = slices.Repeat([]float64{1}, rank)
		}
	} else {
		ms, err := store.Multiscale(path)
		if err != nil {
			return nil, level{}, err
		}
		if len(ms.Axes) != rank {
			return nil, level{}, fmt.Errorf("the multiscale at %s has %d axes, the key %d spatial axes", path, len(ms.Axes), rank)
		}
		i := slices.IndexFunc(ms.Levels, func(l zarr.Level) bool { return key.Scale != nil && sameScale(l.Scale, key.Scale) })
		if i < 0 {
			what := fmt.Sprintf("no level with voxel size %v", key.Scale)
			if key.Scale == nil {
				what = "the key has no scale: to pick a level"
			}
			return nil, level{}, fmt.Errorf("%s is a multiscale group, and %s; its levels: %s", path, what, levelList(ms))
		}
		if a, err = ms.Open(i); err != nil {
			return nil, level{}, err
		}
		lvl.scale, lvl.translation = ms.Levels[i].Scale, ms.Levels[i].Translation
		for _, ax := range ms.Axes {
			lvl.units = append(lvl.units, ax.Unit)
		}
		where = path + "/" + ms.Levels[i].Path
	}
	switch d := a.DType(); {
	case d == key.arrayDType():
	case key.ArrayDType == 0:
		return nil, level{}, fmt.Errorf("the array at %s holds %v, the key is %v", where, d, key.DType)
	default:
		return nil, level{}, fmt.Errorf("the array at %s holds %v, the key reads %v arrays (into %v)", where, d, key.ArrayDType, key.DType)
	}
	if lvl.shape = a.Shape(); len(lvl.shape) != rank {
		return nil, level{}, fmt.Errorf("the array at %s has %d axes, the key %d spatial axes", where, len(lvl.shape), rank)
	}
	return a, lvl, nil
}

func levelList(ms *zarr.Multiscale) string {
	parts := make([]string, len(ms.Levels))
	for i, l := range ms.Levels {
		parts[i] = fmt.Sprintf("%s %v", l.Path, l.Scale)
	}
	return strings.Join(parts, ", ")
}

func sameScale(a, b []float64) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(a[i]-b[i]) > relTol*math.Max(math.Abs(a[i]), math.Abs(b[i])) {
			return false
		}
	}
	return true
}

func sameLevel(a, b level) bool {
	return slices.Equal(a.shape, b.shape) && sameScale(a.scale, b.scale) && sameScale(a.translation, b.translation)
}

func uniq(s []string) []string { return slices.Compact(slices.Sorted(slices.Values(s))) }

// redacted returns roots as messages show them (storage.Redact).
func redacted(roots []string) []string {
	out := make([]string, len(roots))
	for i, r := range roots {
		out[i] = storage.Redact(r)
	}
	return out
}

// logOpened logs what Open found: volumes, centres, missing classes, the
// largest offset AlignNearest snapped, the foreground index's size, and
// the chunk cache's size and why.
func (s *Source) logOpened(log *slog.Logger, missing map[string]int) {
	if log == nil {
		return
	}
	var centres, labelled int64
	for _, v := range s.vols {
		centres += v.grid.count
		labelled += int64(len(v.labelled))
	}
	attrs := []any{"volumes", len(s.vols), "crop_centres", centres, "per_epoch", s.spec.PerEpoch, "chunk_cache", s.cache.Describe()}
	if len(missing) > 0 {
		var parts []string
		for _, n := range slices.Sorted(maps.Keys(missing)) {
			parts = append(parts, fmt.Sprintf("%s in %d", n, missing[n]))
		}
		attrs = append(attrs, "missing_classes_filled", strings.Join(parts, ", "))
	}
	if s.balance != nil {
		attrs = append(attrs, "class_balance", s.balance.describe())
	}
	if s.spec.Align == AlignNearest {
		attrs = append(attrs, "align", AlignNearest.String(), "largest_offset", s.largestOffset())
	}
	if s.spec.Foreground != nil {
		attrs = append(attrs, "foreground_centres", labelled, "foreground_index_bytes", 4*labelled)
		if labelled == 0 {
			log.Warn("volume source: no labelled voxel in any volume; foreground crops are drawn uniformly", "key", s.spec.Keys[s.spec.Foreground.Key].Name)
		}
	}
	log.Info("volume source", attrs...)
}

// largestOffset describes the largest offset AlignNearest snapped over the
// volumes: `0.3 voxels (1.2 nanometer) along x of key "labels" in volume
// 0`, or that there was none.
func (s *Source) largestOffset() string {
	v := -1
	for i, ov := range s.vols {
		if ov.grid.snapped.voxels > 0 && (v < 0 || ov.grid.snapped.voxels > s.vols[v].grid.snapped.voxels) {
			v = i
		}
	}
	if v < 0 {
		return "none: every key's box starts on a whole voxel"
	}
	o := s.vols[v].grid.snapped
	unit := o.unit
	if unit == "" {
		unit = "physical units"
	}
	return fmt.Sprintf("%.3g voxels (%.3g %s) along %s of key %q in volume %d",
		o.voxels, o.physical, unit, runtime.SpatialAxes(len(s.spec.Keys[0].Shape))[o.axis], s.spec.Keys[o.key].Name, v)
}

// missingChunks answers for the chunks of one array of a volume that reads
// find not stored (zarr.Layout.Missing), as its key's Missing says.
type missingChunks struct {
	count  *atomic.Int64 // the source's count of chunks found not stored
	log    *slog.Logger  // where the first is logged; nil for nowhere
	key    Key
	volume int
	array  *zarr.Array
	// logged is set by the first read to find a chunk of the array not
	// stored, which then logs it; every later such read loads it.
	logged atomic.Bool
}

// chunk counts chunk number chunk of the array, found not stored, in
// MissingChunks; under MissingError it refuses it, under MissingFill it
// logs it if it is the array's first and lets it read as the fill value.
func (m *missingChunks) chunk(chunk int64) error {
	m.count.Add(1)
	key := m.key
	if key.Missing == MissingError {
		return ErrMissingChunk
	}
	if m.log != nil && !m.logged.Load() && m.logged.CompareAndSwap(false, true) {
		m.log.Warn("volume source: a chunk is not stored and reads as the array's fill value (missing: fill); further missing chunks of this array are counted in Stats().MissingChunks, not logged",
			"key", key.Name, "volume", m.volume, "array", m.array.Dir(), "chunk", m.array.ChunkName(chunk))
	}
	return nil
}

// MissingChunks returns how many chunks the source's reads have found not
// stored (MissingFill read them as the fill value; MissingError refused
// them), counting a chunk again for each read whose box it lies in. A
// generated loader reports it in Stats.MissingChunks.
func (s *Source) MissingChunks() int64 { return s.missing.Load() }

// Len returns the number of samples in an epoch.
func (s *Source) Len() int { return s.spec.PerEpoch }

// Close closes the source's stores: it stops what they fetch in the
// background for remote volumes and drops what they hold (see
// zarr.Store.Close), and returns once none of it runs. Arrays hold no
// open files; their decoded chunks stay in the shared cache until
// evicted.
func (s *Source) Close() error {
	var errs []error
	for _, st := range s.stores {
		errs = append(errs, st.Close())
	}
	s.stores = nil
	return errors.Join(errs...)
}

// pick returns the index of the first cumulative weight above u·total
// (the last one should rounding put u·total at the total).
func pick(cum []float64, u float64) int {
	x := u * cum[len(cum)-1]
	return min(sort.Search(len(cum), func(i int) bool { return cum[i] > x }), len(cum)-1)
}
