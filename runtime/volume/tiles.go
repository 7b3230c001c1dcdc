package volume

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"slices"
	"sort"
	"strings"
	"sync/atomic"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/zarr"
)

// TileSpec is what a schema's tiles: says: a fixed grid of tiles over a
// region of every volume, for predicting over whole volumes
// (docs/VOLUMES.md, "Predicting over whole volumes"). Each tile is a box
// of every key, sharing a centre as a crop's do; the output keys' boxes
// tile the region, and inputs larger than them give context around each
// tile.
type TileSpec struct {
	// Outputs are the indices in Spec.Keys of the keys predictions are
	// written for (the schema's targets); the first is the output key,
	// whose boxes set the grid.
	Outputs []int
	// Bounds is the region per spatial axis, [lo, hi) in physical units:
	// the output key's voxels whose centres lie in it are predicted. nil
	// means each volume's own: the output key's array there, or, where the
	// volume has none, the first key's.
	Bounds [][2]float64
	// Step is the grid's step in the output key's voxels; nil means its
	// shape (tiles that abut). A smaller step overlaps them.
	Step  []int
	Blend Blend // how overlapping tiles make a voxel
}

// Tiles reads a fixed grid of tiles of a set of volumes, in order: volume
// by volume, each volume's tiles in z-order (a Morton order of their grid
// coordinates), so that neighbouring tiles, which fill the same output
// chunks, come close together. It is a source of a loader like Source:
// Read and Crop are safe for concurrent use.
type Tiles struct {
	// OpenTiles writes every field but only and missing, and nothing
	// writes them after, so the workers read them without a lock.
	spec   Spec
	ts     TileSpec
	keys   []keyLayout
	vols   []*tileVol
	first  []int64 // the global number of each volume's first tile, then the total
	log    *slog.Logger
	cache  *zarr.Cache
	stores []*zarr.Store // every store opened, which Close closes
	// only, when not nil, lists the tiles to read (Only sets it before
	// the first read): index i reads tile only[i]. read is set by the
	// first Len or Read, after which Only refuses.
	only    []int64
	read    atomic.Bool
	missing atomic.Int64 // chunks reads found not stored: every reader adds
}

// tileVol is one volume's arrays and grid of tiles.
type tileVol struct {
	roots   []string              // per key, as messages show them; "" for a target left out
	arrays  [][]*zarr.Array       // per key, per class; nil for what reads as the fill
	missing [][]func(int64) error // per array, its zarr.Layout.Missing
	// Key k's box of the tile at grid coordinates c starts at voxel
	// base[k][a] + (j0[a] + c[a]·jstep[a])·step[k][a] along axis a of its
	// level: j is a point of the lattice of box starts (grid).
	base, step [][]int
	j0, jstep  []int
	tiles      []int // tiles along each axis
	count      int64 // tiles in all
	outs       []TileOutput
}

// TileOutput is where an output key's predictions of a volume lie: the
// array they fill, at the key's level of the volume's voxel grid.
type TileOutput struct {
	First []int // the array's voxel 0, as a voxel of the key's level
	Shape []int
	// Scale and Translation place the array's voxels in physical space,
	// as OME-NGFF does (voxel i's centre at Translation + i·Scale); Units
	// are the axes' units, nil when the volume's arrays name none.
	Scale, Translation []float64
	Units              []string
	Tile               []int // the key's box, in voxels
	Step               []int // the grid's step, in the key's voxels
	// Tiles is the tile grid along each axis; the box of tile c starts at
	// voxel Origin[a] + c[a]·Step[a] of the array (Origin <= 0).
	Tiles  []int
	Origin []int
}

// OpenTiles opens every array of every volume for the tiles ts describes
// over the keys of spec (their Pad, PerEpoch, Foreground and augmentation
// do not apply), as Open opens them for crops, but that an output key's
// arrays may be absent (its root empty, or no class there): it then reads
// as its fill. Unless log is nil it logs what it opened.
func OpenTiles(spec Spec, ts TileSpec, vols []Volume, log *slog.Logger) (*Tiles, error) {
	if err := ts.check(spec); err != nil {
		return nil, err
	}
	cache, keys, err := prepare(spec, vols)
	if err != nil {
		return nil, err
	}
	t := &Tiles{spec: spec, ts: ts, keys: keys, log: log, cache: cache}
	stores := map[string]*zarr.Store{}
	var total int64
	for i, v := range vols {
		tv, err := t.openVolume(i, v, stores)
		if err != nil {
			t.Close()
			return nil, fmt.Errorf("volume %d (%s): %w", i, strings.Join(uniq(redacted(nonEmpty(v.Roots))), ", "), err)
		}
		t.vols = append(t.vols, tv)
		t.first = append(t.first, total)
		if total += tv.count; total > math.MaxInt32*int64(math.MaxInt32) {
			t.Close()
			return nil, errors.New("more than 2^62 tiles")
		}
	}
	t.first = append(t.first, total)
	if log != nil {
		grids := make([]string, len(t.vols))
		for i, v := range t.vols {
			grids[i] = fmt.Sprint(v.tiles)
		}
		log.Info("volume tiles", "volumes", len(t.vols), "tiles", total, "grids", strings.Join(grids, " "),
			"step", t.vols[0].outs[0].Step, "blend", ts.Blend.String(), "chunk_cache", cache.Describe())
	}
	return t, nil
}

// nonEmpty returns the roots that are not "".
func nonEmpty(roots []string) []string {
	return slices.DeleteFunc(slices.Clone(roots), func(r string) bool { return r == "" })
}

// check refuses a TileSpec that does not fit spec's keys.
func (ts *TileSpec) check(spec Spec) error {
	if len(ts.Outputs) == 0 {
		return errors.New("tiles: no output key")
	}
	rank := len(spec.Keys[0].Shape)
	for _, k := range ts.Outputs {
		if k < 0 || k >= len(spec.Keys) {
			return fmt.Errorf("tiles: output key %d of %d keys", k, len(spec.Keys))
		}
	}
	out := spec.Keys[ts.Outputs[0]]
	if ts.Step != nil && len(ts.Step) != rank {
		return fmt.Errorf("tiles: step %v for %d axes", ts.Step, rank)
	}
	for a := range ts.Step {
		if ts.Step[a] < 1 || ts.Step[a] > out.Shape[a] {
			return fmt.Errorf("tiles: step %v: each is from 1 to key %q's shape %v", ts.Step, out.Name, out.Shape)
		}
	}
	if ts.Bounds != nil && len(ts.Bounds) != rank {
		return fmt.Errorf("tiles: bounds for %d axes, the keys have %d", len(ts.Bounds), rank)
	}
	for _, b := range ts.Bounds {
		if !(b[0] < b[1]) || math.IsInf(b[0], 0) || math.IsInf(b[1], 0) {
			return fmt.Errorf("tiles: bounds %v: each is [lo, hi) with lo < hi, finite", ts.Bounds)
		}
	}
	return nil
}

// step returns the grid's step in the output key's voxels.
func (ts *TileSpec) step(spec Spec) []int {
	if ts.Step != nil {
		return ts.Step
	}
	return spec.Keys[ts.Outputs[0]].Shape
}

// isOutput reports whether key k is an output key.
func (ts *TileSpec) isOutput(k int) bool { return slices.Contains(ts.Outputs, k) }

// openVolume opens volume number i's arrays and lays out its tiles.
func (t *Tiles) openVolume(i int, v Volume, stores map[string]*zarr.Store) (*tileVol, error) {
	keys := t.spec.Keys
	if len(v.Roots) != len(keys) {
		return nil, fmt.Errorf("%d roots for %d keys", len(v.Roots), len(keys))
	}
	tv := &tileVol{roots: redacted(v.Roots), arrays: make([][]*zarr.Array, len(keys)), missing: make([][]func(int64) error, len(keys))}
	levels := make([]level, len(keys))
	found := make([]bool, len(keys))
	for k, key := range keys {
		classes := []string{""}
		if key.ClassAxis {
			classes = t.spec.Classes
		}
		tv.arrays[k] = make([]*zarr.Array, len(classes))
		tv.missing[k] = make([]func(int64) error, len(classes))
		if v.Roots[k] == "" {
			if !t.ts.isOutput(k) {
				return nil, fmt.Errorf("key %q: no root (only an output key's may be left out)", key.Name)
			}
			continue
		}
		store, err := t.store(v.Roots[k], stores)
		if err != nil {
			return nil, fmt.Errorf("key %q: %w", key.Name, err)
		}
		for c, class := range classes {
			path := strings.ReplaceAll(key.Path, runtime.ClassPlaceholder, class)
			a, lvl, err := openLevel(store, path, key)
			if errors.Is(err, fs.ErrNotExist) && (key.ClassAxis || t.ts.isOutput(k)) {
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("key %q: %w", key.Name, err)
			}
			if found[k] && !sameLevel(lvl, levels[k]) {
				return nil, fmt.Errorf("key %q: class %q's array (shape %v, voxel size %v, offset %v) differs from the other classes' (%v, %v, %v)",
					key.Name, class, lvl.shape, lvl.scale, lvl.translation, levels[k].shape, levels[k].scale, levels[k].translation)
			}
			tv.arrays[k][c], levels[k], found[k] = a, lvl, true
			tv.missing[k][c] = (&missingChunks{count: &t.missing, log: t.log, key: key, volume: i, array: a}).chunk
		}
		if !found[k] && !t.ts.isOutput(k) {
			return nil, fmt.Errorf("key %q: no class has an array at %s under %s", key.Name, key.Path, tv.roots[k])
		}
	}
	if !found[0] {
		return nil, fmt.Errorf("key %q: no array (the first key is the one tiles are read of where no output array says where they lie)", keys[0].Name)
	}
	for k := range keys {
		if !found[k] {
			levels[k] = placedLike(keys[k], levels[0], keys[0])
		}
	}
	g, err := newGrid(keys, levels, true, t.spec.Align)
	if err != nil {
		return nil, err
	}
	tv.base, tv.step = g.base, g.step
	bounds := t.ts.Bounds
	if bounds == nil {
		from := 0
		if o := t.ts.Outputs[0]; found[o] {
			from = o
		}
		bounds = extent(levels[from])
	}
	if err := tv.layout(keys, levels, t.ts, t.ts.step(t.spec), bounds); err != nil {
		return nil, err
	}
	return tv, nil
}

// store returns the store at root, opening it the first time.
func (t *Tiles) store(root string, stores map[string]*zarr.Store) (*zarr.Store, error) {
	if s, ok := stores[root]; ok {
		return s, nil
	}
	s, err := zarr.OpenStore(root, t.cache)
	if err != nil {
		return nil, err
	}
	stores[root] = s
	t.stores = append(t.stores, s)
	return s, nil
}

// placedLike returns the level of a key whose volume has no array: its
// voxel size (the key's scale, 1 without one), placed so that its box at
// voxel 0 shares its centre with ref's box at voxel 0, and covering ref's
// array, in ref's units.
func placedLike(key Key, ref level, refKey Key) level {
	rank := len(key.Shape)
	l := level{scale: key.Scale, translation: make([]float64, rank), shape: make([]int, rank), units: ref.units}
	if l.scale == nil {
		l.scale = slices.Repeat([]float64{1}, rank)
	}
	for a := range rank {
		l.translation[a] = boxCentre(ref, refKey, a, 0) - float64(key.Shape[a]-1)/2*l.scale[a]
		l.shape[a] = max(1, int(math.Ceil(float64(ref.shape[a])*ref.scale[a]/l.scale[a])))
	}
	return l
}

// extent returns the region level's array covers in physical space, its
// voxels' edges: [t - s/2, t + (n - 1/2)·s) along each axis.
func extent(l level) [][2]float64 {
	out := make([][2]float64, len(l.shape))
	for a := range out {
		s, t := l.scale[a], l.translation[a]
		out[a] = [2]float64{t - s/2, t + (float64(l.shape[a])-0.5)*s}
	}
	return out
}

// maxVoxel bounds the voxel indices bounds may reach: far past any
// array, well within an int and a float64's whole numbers.
const maxVoxel = 1 << 40

// voxelRange returns the voxels of level l along axis a whose centres lie
// in [lo, hi): first and last, last < first when none. ok is false when
// either lies past maxVoxel voxels from voxel 0.
func voxelRange(l level, a int, lo, hi float64) (first, last int, ok bool) {
	s, t := l.scale[a], l.translation[a]
	x, y := (lo-t)/s, (hi-t)/s
	if math.Abs(x) > maxVoxel || math.Abs(y) > maxVoxel {
		return 0, 0, false
	}
	if n, ok := near(x); ok {
		first = n
	} else {
		first = int(math.Ceil(x))
	}
	if n, ok := near(y); ok {
		last = n - 1
	} else {
		last = int(math.Floor(y))
	}
	return first, last, true
}

// layout places the volume's grid of tiles of step (in the output key's
// voxels) over bounds, and each output key's array.
func (tv *tileVol) layout(keys []Key, levels []level, ts TileSpec, step []int, bounds [][2]float64) error {
	rank := len(step)
	o := ts.Outputs[0]
	tv.j0, tv.jstep, tv.tiles, tv.count = make([]int, rank), make([]int, rank), make([]int, rank), 1
	axes := runtime.SpatialAxes(rank)
	for a := range rank {
		if step[a]%tv.step[o][a] != 0 {
			return fmt.Errorf("along %s the tiles' step, %d voxels of key %q, is not a whole number of voxels of every key (it must be a multiple of %d)",
				axes[a], step[a], keys[o].Name, tv.step[o][a])
		}
		first, last, ok := voxelRange(levels[o], a, bounds[a][0], bounds[a][1])
		if !ok {
			return fmt.Errorf("along %s the bounds [%g, %g) lie more than %d voxels of key %q from its voxel 0", axes[a], bounds[a][0], bounds[a][1], maxVoxel, keys[o].Name)
		}
		if last < first {
			return fmt.Errorf("along %s the bounds [%g, %g) hold no voxel centre of key %q (voxel size %g, offset %g)",
				axes[a], bounds[a][0], bounds[a][1], keys[o].Name, levels[o].scale[a], levels[o].translation[a])
		}
		tv.j0[a] = floorDiv(first-tv.base[o][a], tv.step[o][a])
		tv.jstep[a] = step[a] / tv.step[o][a]
		start := tv.base[o][a] + tv.j0[a]*tv.step[o][a]
		tv.tiles[a] = max(1, ceilDiv(last+1-start-keys[o].Shape[a], step[a])+1)
		tv.count *= int64(tv.tiles[a])
		if tv.count > math.MaxInt32*int64(math.MaxInt32) {
			return errors.New("more than 2^62 tiles")
		}
	}
	for _, k := range ts.Outputs {
		out := TileOutput{First: make([]int, rank), Shape: make([]int, rank), Scale: levels[k].scale, Translation: make([]float64, rank),
			Units: levels[k].units, Tile: keys[k].Shape, Step: make([]int, rank), Tiles: tv.tiles, Origin: make([]int, rank)}
		for a := range rank {
			start := tv.base[k][a] + tv.j0[a]*tv.step[k][a]
			out.Step[a] = tv.jstep[a] * tv.step[k][a]
			end := start + (tv.tiles[a]-1)*out.Step[a] + keys[k].Shape[a] // past the last tile
			first, last, ok := voxelRange(levels[k], a, bounds[a][0], bounds[a][1])
			if !ok {
				return fmt.Errorf("along %s the bounds [%g, %g) lie more than %d voxels of key %q from its voxel 0", axes[a], bounds[a][0], bounds[a][1], maxVoxel, keys[k].Name)
			}
			first, last = max(first, start), min(last, end-1)
			if last < first {
				return fmt.Errorf("along %s the bounds [%g, %g) hold no voxel centre of key %q that its tiles cover",
					axes[a], bounds[a][0], bounds[a][1], keys[k].Name)
			}
			out.First[a], out.Shape[a], out.Origin[a] = first, last-first+1, start-first
			out.Translation[a] = levels[k].translation[a] + float64(first)*levels[k].scale[a]
		}
		tv.outs = append(tv.outs, out)
	}
	return nil
}

// Len returns the number of tiles read: every tile of every volume, or
// those Only kept.
func (t *Tiles) Len() int {
	t.read.Store(true)
	if t.only != nil {
		return len(t.only)
	}
	return int(t.first[len(t.first)-1])
}

// Count returns the number of tiles of every volume, whatever Only kept.
func (t *Tiles) Count() int64 { return t.first[len(t.first)-1] }

// Only makes the source read only the tiles listed (numbers from 0 to
// Count()-1, ascending): index i then reads tile tiles[i]. Call it before
// the first Len or Read (before a loader is made over the source); a
// resumed prediction keeps the tiles left to write.
func (t *Tiles) Only(tiles []int64) error {
	if t.read.Load() {
		return errors.New("volume tiles: Only after the source was read: call it before a loader is made over the source")
	}
	for i, n := range tiles {
		if n < 0 || n >= t.Count() || i > 0 && n <= tiles[i-1] {
			return fmt.Errorf("volume tiles: Only: tile %d at %d is not a tile number in ascending order (0 to %d)", n, i, t.Count()-1)
		}
	}
	t.only = tiles
	return nil
}

// Tile returns the number of the tile that index reads (index itself but
// under Only), or -1 for an index out of range.
func (t *Tiles) Tile(index int) int64 {
	switch {
	case index < 0:
		return -1
	case t.only != nil && index < len(t.only):
		return t.only[index]
	case t.only == nil && int64(index) < t.Count():
		return int64(index)
	}
	return -1
}

// locate returns the volume of tile number n and the tile's grid
// coordinates there, written into c.
func (t *Tiles) locate(n int64, c []int) int {
	v := sort.Search(len(t.vols), func(i int) bool { return t.first[i+1] > n })
	mortonSelect(n-t.first[v], t.vols[v].tiles, c)
	return v
}

// origin writes key k's box origin, at its level, of the tile at grid
// coordinates c of volume tv into out.
func (tv *tileVol) origin(k int, c, out []int) {
	for a := range c {
		out[a] = tv.base[k][a] + (tv.j0[a]+c[a]*tv.jstep[a])*tv.step[k][a]
	}
}

// Crop returns where sample index comes from: its volume and each key's
// box origin at its level; tiles are not augmented, and do not depend on
// the epoch. An index out of range gives volume -1.
func (t *Tiles) Crop(_, index int) runtime.Crop {
	rank := len(t.spec.Keys[0].Shape)
	c := runtime.Crop{Volume: -1, Origin: make([][]int, len(t.spec.Keys)), Mirror: make([]bool, rank), Transpose: make([]int, rank)}
	for k := range c.Origin {
		c.Origin[k] = make([]int, rank)
	}
	for a := range c.Transpose {
		c.Transpose[a] = a
	}
	n := t.Tile(index)
	if n < 0 {
		return c
	}
	var at [runtime.MaxSpatialRank]int
	c.Volume = t.locate(n, at[:rank])
	for k := range c.Origin {
		t.vols[c.Volume].origin(k, at[:rank], c.Origin[k])
	}
	return c
}

// Read reads every key's box of the tile that sample index reads into dst
// (one buffer per key, in spec order, holding the key's sample: [C, S...]
// with a class axis), outside an array and for an array absent as the
// key's fill. Its errors are Source.Read's.
func (t *Tiles) Read(ctx context.Context, index int, dst ...[]byte) error {
	t.read.Store(true)
	if ctx == nil {
		ctx = context.Background()
	}
	if len(dst) != len(t.spec.Keys) {
		return fmt.Errorf("%d buffers for %d keys", len(dst), len(t.spec.Keys))
	}
	n := t.Tile(index)
	if n < 0 {
		return fmt.Errorf("tile index %d of %d", index, t.Len())
	}
	rank := len(t.spec.Keys[0].Shape)
	var at, box [runtime.MaxSpatialRank]int
	vi := t.locate(n, at[:rank])
	tv := t.vols[vi]
	origin := box[:rank]
	for k, key := range t.spec.Keys {
		kl := t.keys[k]
		tv.origin(k, at[:rank], origin)
		if want := len(tv.arrays[k]) * kl.bytes; len(dst[k]) != want {
			return fmt.Errorf("key %q: a buffer of %d bytes for a sample of %d", key.Name, len(dst[k]), want)
		}
		for ci, a := range tv.arrays[k] {
			buf := dst[k][ci*kl.bytes : (ci+1)*kl.bytes]
			if a == nil {
				zarr.Repeat(buf, kl.fill)
				continue
			}
			l := zarr.Layout{Strides: kl.strides, Outside: kl.fill, Missing: tv.missing[k][ci], Convert: kl.convert}
			if err := a.ReadLayout(ctx, buf, origin, key.Shape, l); err != nil {
				return &runtime.KeyError{Key: key.Name, Err: fmt.Errorf("volume %d (%s), tile %d, box origin %v: %w", vi, tv.roots[k], n, origin, err)}
			}
		}
	}
	return nil
}

// ReadAhead announces the boxes of the tiles that samples indices will
// read (as Source.ReadAhead does for crops).
func (t *Tiles) ReadAhead(_ int, indices []int) {
	rank := len(t.spec.Keys[0].Shape)
	var at [runtime.MaxSpatialRank]int
	origin := make([]int, rank)
	for _, index := range indices {
		n := t.Tile(index)
		if n < 0 {
			continue
		}
		tv := t.vols[t.locate(n, at[:rank])]
		for k, key := range t.spec.Keys {
			tv.origin(k, at[:rank], origin)
			for _, arr := range tv.arrays[k] {
				if arr != nil {
					arr.ReadAhead(origin, key.Shape)
				}
			}
		}
	}
}

// MissingChunks returns how many chunks reads found not stored, as
// Source.MissingChunks does.
func (t *Tiles) MissingChunks() int64 { return t.missing.Load() }

// Sequential marks the source as read in its own order
// (runtime.Sequential): a loader neither shuffles nor regroups its
// tiles, and splits them across ranks into contiguous runs.
func (t *Tiles) Sequential() {}

// Volumes returns the number of volumes.
func (t *Tiles) Volumes() int { return len(t.vols) }

// Output returns where output key number out (in TileSpec.Outputs) of
// volume v lies.
func (t *Tiles) Output(v, out int) TileOutput { return t.vols[v].outs[out] }

// TileAt returns the volume of tile number n and its grid coordinates
// there, written into c (one per spatial axis).
func (t *Tiles) TileAt(n int64, c []int) int { return t.locate(n, c) }

// TileNumber returns the number of the tile at grid coordinates c of
// volume v.
func (t *Tiles) TileNumber(v int, c []int) int64 { return t.first[v] + mortonRank(c, t.vols[v].tiles) }

// Spec returns the spec and the tile spec the source was opened with.
func (t *Tiles) Spec() (Spec, TileSpec) { return t.spec, t.ts }

// Close closes the source's stores (as Source.Close does).
func (t *Tiles) Close() error {
	var errs []error
	for _, st := range t.stores {
		errs = append(errs, st.Close())
	}
	t.stores = nil
	return errors.Join(errs...)
}
