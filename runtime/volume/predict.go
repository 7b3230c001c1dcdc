package volume

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/loadergen/loadergen/internal/envlimit"
	"github.com/loadergen/loadergen/internal/sizes"
	lgruntime "github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/loaderimpl"
	"github.com/loadergen/loadergen/runtime/storage"
	"github.com/loadergen/loadergen/runtime/zarr"
)

// The bound of the memory a prediction writer holds in chunks not yet
// written (partly filled, or complete and waiting for their write), in
// MiB, and the environment variable that sets it; PredictOptions'
// MaxPartialMB sets it for one writer.
const (
	PartialEnv        = "LOADERGEN_PREDICT_PARTIAL_MB"
	DefaultPartialMiB = 1024
)

// partialMiB is the process's bound, from PartialEnv.
var partialMiB = envlimit.New(PartialEnv, "MiB", DefaultPartialMiB, 1<<30)

// PredictOptions configure a prediction writer (CreatePredictions). The
// zero value writes zarr v2, zstd level 6, chunks of the tile grid, to a
// root that holds no array at the outputs' paths.
type PredictOptions struct {
	Format    int    // zarr format: 2 (the default, with 0) or 3
	Codec     string // "zstd" (the default, with ""), "blosc-lz4" (numcodecs' default Blosc) or "none"
	ZstdLevel int    // 1 to 22; 0 means 6, CellMap's
	// Chunks is the chunk shape, in voxels of each output key; nil means
	// its tile grid's step. Shards (zarr v3 only) is the shard shape, a
	// whole number of chunks along each axis; nil means no sharding.
	Chunks, Shards []int
	// Overwrite removes output arrays already there; without it (or
	// Resume) one is an error.
	Overwrite bool
	// Resume keeps output arrays already there (they must be the arrays
	// this writer writes, chunking and codec included) and the chunks
	// they hold, and narrows the tiles to those with a chunk left to
	// write (Tiles.Only): create the loader after the writer.
	Resume bool
	// MaxPartialMB bounds, in MiB, the chunks held in memory, partly
	// filled or waiting for their write; 0 takes LOADERGEN_PREDICT_PARTIAL_MB,
	// else 1024. A write that would need more is an error.
	MaxPartialMB int
	// Rank and WorldSize place the process in a distributed run, as
	// runtime.Options do (0: the launcher's environment). Ranks write
	// apart, so with more than one every chunk must take one tile: the
	// default chunks without overlap. Resume and Overwrite need one rank.
	Rank, WorldSize int
	Logger          *slog.Logger // where Close logs what was written; nil: slog.Default()
}

// Predictions writes a model's predictions for tiles (OpenTiles) into zarr
// arrays: one per output key and volume (per class, for a key with a
// class axis), each an OME-NGFF multiscale group at the key's path (with
// {class} expanded) holding one level, s0, whose scale and translation put
// every voxel where its tile came from. Write takes the predictions of any
// tiles, in any order, from any goroutine; a chunk is assembled in memory
// and written once, whole, when every tile covering it has been written.
// Close writes what is left.
type Predictions struct {
	// CreatePredictions writes the fields above mu; nothing writes them
	// after.
	tiles   *Tiles
	outs    []Key           // the output keys, in TileSpec.Outputs order
	arrays  [][]*outArray   // per volume: per output, its classes' arrays, in order
	classes []int           // per output: its arrays per volume (classes, or 1)
	blended []bool          // per output: tiles overlap and are averaged into an accumulator
	where   string          // the root, for messages
	bound   int64           // bytes
	log     *slog.Logger    // Close's line
	queue   chan *partial   // complete chunks, for the flushers
	ctx     context.Context // the writes' context; never done

	mu sync.Mutex // guards the fields below, and each partial's place in partials
	// cond is broadcast when flushing bytes are freed and when a Write
	// ends.
	cond     *sync.Cond
	written  []uint64                // a bit per tile number: its predictions were taken
	partials map[partialKey]*partial // chunks partly filled
	held     int64                   // bytes of the partials' buffers
	flushing int64                   // bytes of complete chunks queued or being written
	peak     int64                   // the most held+flushing reached
	spare    map[int][][]byte        // freed buffers by size, for new partials; at most bound bytes with held and flushing
	spared   int64                   // their bytes
	active   int                     // Writes under way
	closed   bool
	err      error // the first failed chunk write; every later Write and Close return it
	stats    PredictStats
	flushers sync.WaitGroup
}

// PredictStats are a prediction writer's running totals.
type PredictStats struct {
	Tiles         int64 // tiles taken by Write
	Chunks        int64 // chunks (or shards) written
	SkippedChunks int64 // chunks found stored by Resume and left as they were
	// PartialBound is the bound of the bytes of chunks held in memory
	// (MaxPartialMB), and PartialPeak the most they reached.
	PartialBound, PartialPeak int64
}

// partialKey names a chunk of an output array.
type partialKey struct {
	array int32
	chunk int64
}

// partial is a chunk being assembled. Write makes it when a tile first
// reaches it and hands it to the flushers when its last tile has.
type partial struct {
	arr   *outArray
	chunk int64
	idx   [lgruntime.MaxSpatialRank]int
	mu    sync.Mutex // orders the tiles' writes into buf and left
	buf   []byte     // the chunk (an accumulator of sums when blended)
	left  int        // tiles still to come
	bytes int        // len(buf), counted in held, then flushing
}

// outArray is one output array: an output key's (or one class's) in one
// volume.
type outArray struct {
	id     int32
	w      *zarr.ArrayWriter
	out    TileOutput
	key    Key
	output int  // the key's place in TileSpec.Outputs
	class  int  // the class's index in the key's tile, 0 without a class axis
	blend  bool // averaged into an accumulator of acc
	acc    lgruntime.DType
	chunk  []int // what is assembled: a chunk, or a shard when sharded
	grid   []int // chunks along each axis
	bytes  int   // a chunk's buffer: of acc when blended, else of the key's dtype
	// Per axis: ext[a][c] is the [lo, hi) of array voxels tile c writes
	// along a (its box, or with BlendLast its first Step voxels but for
	// the last tile), cover[a][m] how many tiles write into chunk m
	// along a, and inv[a][x] (blended) 1 over how many cover voxel x.
	ext   [][][2]int
	cover [][]int
	inv   [][]float64
	// stored marks the chunks found stored on resume; nil without.
	stored []bool
}

// CreatePredictions starts writing predictions for the tiles of t at root
// (a directory or s3://bucket/prefix) as opts say: it writes each output
// array's metadata (and its group's), so that a run stopped halfway
// leaves readable arrays of whole chunks. With one volume the arrays lie
// under root itself; with several, volume i's under root/volume<i>.
func CreatePredictions(root string, t *Tiles, opts PredictOptions) (*Predictions, error) {
	if err := checkPredictOptions(&opts); err != nil {
		return nil, fmt.Errorf("predictions %s: %w", storage.Redact(root), err)
	}
	w, err := storage.OpenWritable(root)
	if err != nil {
		return nil, fmt.Errorf("predictions: %w", err)
	}
	return createPredictions(w, t, opts)
}

// createPredictions is CreatePredictions at root w, with opts checked.
func createPredictions(w storage.Writable, t *Tiles, opts PredictOptions) (*Predictions, error) {
	bound := int64(opts.MaxPartialMB) << 20
	if bound == 0 {
		mib, err := partialMiB.Get()
		if err != nil {
			return nil, err
		}
		bound = mib << 20
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	p := &Predictions{tiles: t, where: w.URL(""), bound: bound, log: log, ctx: context.Background(),
		partials: map[partialKey]*partial{}, spare: map[int][][]byte{}}
	p.cond = sync.NewCond(&p.mu)
	p.stats.PartialBound = bound
	spec, ts := t.Spec()
	for _, k := range ts.Outputs {
		key := spec.Keys[k]
		p.outs = append(p.outs, key)
		n := 1
		if key.ClassAxis {
			n = len(spec.Classes)
		}
		p.classes = append(p.classes, n)
		overlap := !slices.Equal(ts.step(spec), spec.Keys[ts.Outputs[0]].Shape)
		p.blended = append(p.blended, overlap && ts.Blend == BlendAverage)
	}
	for i, key := range p.outs {
		if p.blended[i] && (key.DType == lgruntime.Bool) {
			return nil, fmt.Errorf("predictions: key %q: blend average of overlapping tiles needs a numeric dtype, not %v (use blend: last)", key.Name, key.DType)
		}
	}
	if need, ok := p.bookkeeping(opts); !ok || need > bound {
		return nil, fmt.Errorf("predictions: keeping account of %d tiles and of their arrays' chunks takes %s, more than the bound of %d bytes (MaxPartialMB or %s): check the units of tiles.bounds, or raise the bound",
			t.Count(), bytesText(need, ok), bound, PartialEnv)
	}
	p.written = make([]uint64, (t.Count()+63)/64)
	mode := zarr.CreateNew
	switch {
	case opts.Overwrite:
		mode = zarr.Overwrite
	case opts.Resume || opts.WorldSize > 1:
		mode = zarr.Resume // other ranks create the same arrays
	}
	for v := range t.Volumes() {
		arrays, err := p.createVolume(w, v, spec, opts, mode)
		if err != nil {
			return nil, err
		}
		p.arrays = append(p.arrays, arrays)
	}
	if opts.WorldSize > 1 {
		if err := p.checkRanks(opts.WorldSize); err != nil {
			return nil, err
		}
	}
	if opts.Resume {
		if err := p.resume(); err != nil {
			return nil, err
		}
	}
	p.queue = make(chan *partial, runtime.GOMAXPROCS(0))
	for range runtime.GOMAXPROCS(0) {
		p.flushers.Add(1)
		go p.flush()
	}
	return p, nil
}

// bookkeeping returns the bytes the writer's accounts take (they grow
// with the tiles and the arrays, not with the chunks held): a bit per
// tile written, with Resume the tiles left and a flag per chunk stored,
// and per array and axis each tile's extent, each chunk's count of tiles
// and (blended) each voxel's weight. ok is false when they overflow.
func (p *Predictions) bookkeeping(opts PredictOptions) (int64, bool) {
	t := p.tiles
	n, ok := (t.Count()+63)/64*8, true
	if opts.Resume {
		left, lok := sizes.Mul(t.Count(), 8, true)
		n, ok = sizes.Add(n, left)
		ok = ok && lok
	}
	for v := range t.Volumes() {
		for o := range p.outs {
			out := t.Output(v, o)
			object := opts.Chunks
			if opts.Shards != nil {
				object = opts.Shards
			}
			if object == nil || len(object) != len(out.Shape) {
				object = out.Step
			}
			arrays := int64(p.classes[o])
			chunks := int64(1)
			var axes int64
			for a, size := range out.Shape {
				grid := int64((size + object[a] - 1) / object[a])
				chunks, ok = sizes.Mul(chunks, grid, ok)
				axes += 16*int64(out.Tiles[a]) + 8*grid
				if p.blended[o] {
					axes += 8 * int64(size)
				}
			}
			if opts.Resume {
				axes, ok = sizes.Add(axes, chunks)
			}
			per, pok := sizes.Mul(axes, arrays, ok)
			n, ok = sizes.Add(n, per)
			ok = ok && pok
		}
	}
	return n, ok
}

// bytesText says n bytes, or more than an int64 holds when !ok.
func bytesText(n int64, ok bool) string {
	if !ok {
		return "more bytes than an int64 counts"
	}
	return fmt.Sprintf("%d bytes", n)
}

// checkPredictOptions checks opts and fills in the defaults, the
// placement included.
func checkPredictOptions(o *PredictOptions) error {
	switch {
	case o.Format == 0:
		o.Format = 2
	case o.Format != 2 && o.Format != 3:
		return fmt.Errorf("zarr format %d (want 2 or 3)", o.Format)
	}
	switch {
	case o.Shards != nil && o.Format != 3:
		return errors.New("shards need zarr format 3")
	case o.Overwrite && o.Resume:
		return errors.New("overwrite and resume: choose one")
	case o.MaxPartialMB < 0:
		return fmt.Errorf("MaxPartialMB %d", o.MaxPartialMB)
	}
	if o.ZstdLevel == 0 {
		o.ZstdLevel = 6
	}
	rank, world, err := loaderimpl.Place(lgruntime.Options{Rank: o.Rank, WorldSize: o.WorldSize})
	if err != nil {
		return err
	}
	o.Rank, o.WorldSize = rank, world
	if world > 1 && (o.Overwrite || o.Resume) {
		return fmt.Errorf("rank %d of %d: overwrite and resume need one process (ranks would remove or list each other's chunks as they write them)", rank, world)
	}
	return nil
}

// compressor returns the codec opts name.
func (o *PredictOptions) compressor() (zarr.Compressor, error) {
	switch o.Codec {
	case "", "zstd":
		return zarr.Zstd(o.ZstdLevel), nil
	case "blosc-lz4":
		return zarr.BloscLZ4(), nil
	case "none":
		return zarr.Compressor{}, nil
	}
	return zarr.Compressor{}, fmt.Errorf("codec %q (want zstd, blosc-lz4 or none)", o.Codec)
}

// createVolume creates the output arrays of volume v.
func (p *Predictions) createVolume(w storage.Writable, v int, spec Spec, opts PredictOptions, mode zarr.CreateMode) ([]*outArray, error) {
	comp, err := opts.compressor()
	if err != nil {
		return nil, err
	}
	dir := ""
	if p.tiles.Volumes() > 1 {
		dir = fmt.Sprintf("volume%d", v)
	}
	var arrays []*outArray
	ctx := p.ctx
	for o, key := range p.outs {
		out := p.tiles.Output(v, o)
		rank := len(out.Shape)
		chunks := opts.Chunks
		if chunks == nil {
			chunks = out.Step
		}
		if len(chunks) != rank || opts.Shards != nil && len(opts.Shards) != rank {
			return nil, fmt.Errorf("predictions: chunks %v and shards %v for %d axes", chunks, opts.Shards, rank)
		}
		axes := make([]zarr.Axis, rank)
		for a, name := range lgruntime.SpatialAxes(rank) {
			axes[a] = zarr.Axis{Name: name, Type: "space"}
			if out.Units != nil {
				axes[a].Unit = out.Units[a]
			}
		}
		classes := []string{""}
		if key.ClassAxis {
			classes = spec.Classes
		}
		for c, class := range classes {
			group := path.Join(dir, strings.ReplaceAll(key.Path, lgruntime.ClassPlaceholder, class))
			ms := zarr.Multiscale{Name: path.Base(group), Axes: axes, Levels: []zarr.Level{{Path: "s0", Scale: out.Scale, Translation: out.Translation}}}
			if err := zarr.CreateMultiscale(ctx, w, group, ms, opts.Format); err != nil {
				return nil, fmt.Errorf("predictions: %w", err)
			}
			as := zarr.ArraySpec{Shape: out.Shape, Chunks: chunks, Shards: opts.Shards, DType: key.DType, Compressor: comp,
				Fill: key.Fill, Format: opts.Format}
			if opts.Format == 3 {
				as.DimensionNames = lgruntime.SpatialAxes(rank)
			}
			aw, err := zarr.CreateArray(ctx, w, path.Join(group, "s0"), as, mode)
			if err != nil {
				return nil, fmt.Errorf("predictions: key %q: %w", key.Name, err)
			}
			arr := &outArray{w: aw, out: out, key: key, output: o, class: c,
				blend: p.blended[o], chunk: aw.ObjectShape(), grid: aw.Grid()}
			arr.layout(p.tiles.ts.Blend)
			arrays = append(arrays, arr)
		}
	}
	for i, a := range arrays {
		a.id = int32(v)<<16 | int32(i)
	}
	return arrays, nil
}

// layout computes the array's per-axis extents of the tiles, the tiles
// per chunk and (blended) the weights of the voxels.
func (a *outArray) layout(blend Blend) {
	rank := len(a.out.Shape)
	a.acc = a.key.DType
	if a.blend {
		a.acc = lgruntime.Float32
		if a.key.DType.Size() > 2 && a.key.DType != lgruntime.Float32 {
			a.acc = lgruntime.Float64
		}
	}
	n, _, _ := lgruntime.KeyBytes(a.acc, a.chunk, 1)
	a.bytes = int(n)
	a.ext, a.cover, a.inv = make([][][2]int, rank), make([][]int, rank), make([][]float64, rank)
	for ax := range rank {
		o := a.out
		a.ext[ax] = make([][2]int, o.Tiles[ax])
		a.cover[ax] = make([]int, a.grid[ax])
		var cov []int
		if a.blend {
			cov = make([]int, o.Shape[ax])
		}
		for c := range o.Tiles[ax] {
			lo := o.Origin[ax] + c*o.Step[ax]
			n := o.Tile[ax]
			if blend == BlendLast && c < o.Tiles[ax]-1 {
				n = min(n, o.Step[ax])
			}
			e := [2]int{max(lo, 0), min(lo+n, o.Shape[ax])}
			a.ext[ax][c] = e
			if e[0] >= e[1] {
				continue
			}
			for m := e[0] / a.chunk[ax]; m <= (e[1]-1)/a.chunk[ax]; m++ {
				a.cover[ax][m]++
			}
			for x := e[0]; x < e[1] && cov != nil; x++ {
				cov[x]++
			}
		}
		if a.blend {
			a.inv[ax] = make([]float64, len(cov))
			for x, n := range cov {
				a.inv[ax][x] = 1 / float64(n)
			}
		}
	}
}

// tilesIn returns how many tiles write into chunk idx.
func (a *outArray) tilesIn(idx []int) int {
	n := 1
	for ax, m := range idx {
		n *= a.cover[ax][m]
	}
	return n
}

// checkRanks refuses a distributed run whose chunks take more than one
// tile: ranks write apart, and such a chunk's tiles may be another's.
func (p *Predictions) checkRanks(world int) error {
	for _, arrays := range p.arrays {
		for _, a := range arrays {
			for ax, cover := range a.cover {
				if m := slices.IndexFunc(cover, func(n int) bool { return n > 1 }); m >= 0 {
					return fmt.Errorf("predictions: key %q: with %d ranks every chunk must take one tile, but along %s chunk %d takes %d (chunks %v, tile step %v, tile %v): keep the default chunks and no overlap, or predict on one rank",
						a.key.Name, world, lgruntime.SpatialAxes(len(a.cover))[ax], m, cover[m], a.chunk, a.out.Step, a.out.Tile)
				}
			}
		}
	}
	return nil
}

// resume marks the chunks the arrays hold already, and narrows the tiles
// to those that write into a chunk still missing.
func (p *Predictions) resume() error {
	for _, arrays := range p.arrays {
		for _, a := range arrays {
			stored, err := a.w.Stored(p.ctx)
			if err != nil {
				return fmt.Errorf("predictions: resume: %w", err)
			}
			a.stored = make([]bool, product(a.grid))
			for _, c := range stored {
				a.stored[c] = true
			}
			p.stats.SkippedChunks += int64(len(stored))
		}
	}
	var left []int64
	rank := len(p.outs[0].Shape)
	var c, lo, hi [lgruntime.MaxSpatialRank]int
	for n := range p.tiles.Count() {
		v := p.tiles.TileAt(n, c[:rank])
		missing := false
		for _, a := range p.arrays[v] {
			if !a.chunks(c[:rank], lo[:rank], hi[:rank]) {
				continue
			}
			eachIndex(lo[:rank], hi[:rank], func(idx []int) bool {
				missing = !a.stored[ravelInt(idx, a.grid)]
				return !missing
			})
			if missing {
				break
			}
		}
		if missing {
			left = append(left, n)
		}
	}
	return p.tiles.Only(left)
}

// chunks writes the range of chunks (lo to hi, inclusive) that tile c
// writes into, and reports whether there is any.
func (a *outArray) chunks(c, lo, hi []int) bool {
	for ax := range c {
		e := a.ext[ax][c[ax]]
		if e[0] >= e[1] {
			return false
		}
		lo[ax], hi[ax] = e[0]/a.chunk[ax], (e[1]-1)/a.chunk[ax]
	}
	return true
}

// eachIndex calls f with every index from lo to hi (inclusive) in C
// order, until f returns false.
func eachIndex(lo, hi []int, f func(idx []int) bool) {
	var at [lgruntime.MaxSpatialRank]int
	idx := at[:len(lo)]
	copy(idx, lo)
	for {
		if !f(idx) {
			return
		}
		k := len(idx) - 1
		for ; k >= 0; k-- {
			if idx[k]++; idx[k] <= hi[k] {
				break
			}
			idx[k] = lo[k]
		}
		if k < 0 {
			return
		}
	}
}

// ravelInt is the C-order number of idx in a grid of shape.
func ravelInt(idx, shape []int) int64 {
	var n int64
	for k, i := range idx {
		n = n*int64(shape[k]) + int64(i)
	}
	return n
}

// product is the product of shape.
func product(shape []int) int {
	n := 1
	for _, s := range shape {
		n *= s
	}
	return n
}
