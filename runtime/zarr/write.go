package zarr

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	lgruntime "github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/internal/strided"
	"github.com/loadergen/loadergen/runtime/storage"
)

// Compressor says how WriteArray compresses chunks. The zero value stores
// them uncompressed.
type Compressor struct {
	id    string // numcodecs' id; "" for none
	level int
}

// Zstd compresses chunks with zstd at level (1 to 22; CellMap's published
// volumes use 6). Levels map to the encoder's nearest speed setting.
func Zstd(level int) Compressor { return Compressor{id: "zstd", level: level} }

// BloscLZ4 compresses chunks as numcodecs' default Blosc codec does: LZ4
// over byte-shuffled blocks.
func BloscLZ4() Compressor { return Compressor{id: "blosc"} }

// metadata returns the compressor's .zarray entry.
func (c Compressor) metadata() any {
	switch c.id {
	case "zstd", "gzip":
		return map[string]any{"id": c.id, "level": c.level}
	case "blosc":
		return map[string]any{"id": "blosc", "cname": "lz4", "clevel": 5, "shuffle": 1, "blocksize": 0}
	}
	return nil
}

// ArraySpec describes a zarr array for WriteArray or CreateArray to
// write.
type ArraySpec struct {
	Shape      []int
	Chunks     []int // the chunks' shape; a sharded array's inner chunks
	DType      lgruntime.DType
	Compressor Compressor
	Fill       float64 // the fill value (NaN for a float dtype is allowed)
	// Separator is the chunk key separator: "." (v2's default) or "/"
	// (v3's default, whose keys are "c/0/1/2").
	Separator  string
	Attributes map[string]any // written to .zattrs (v2) or the attributes (v3) when not empty
	// Format is 2 (the default, with 0) or 3.
	Format int
	// Shards is the shape of a v3 array's shards, each a whole number of
	// Chunks along every axis, stored as one object (sharding_indexed);
	// nil for none.
	Shards []int
	// DimensionNames are a v3 array's axis names (dimension_names); nil
	// for none.
	DimensionNames []string
}

// specSizes are what check derives from a spec: the bytes of a chunk and
// of the whole array, and the fill value's bytes.
type specSizes struct {
	chunk, array int
	fill         []byte
}

// check refuses specs that would not make a readable array, and sets the
// default separator.
func (s *ArraySpec) check() (specSizes, error) {
	var z specSizes
	switch {
	case s.Format == 0:
		s.Format = 2
	case s.Format != 2 && s.Format != 3:
		return z, fmt.Errorf("zarr format %d (want 2 or 3)", s.Format)
	}
	switch {
	case !s.DType.Valid():
		return z, fmt.Errorf("dtype %v", s.DType)
	case s.Format == 2 && v2DType(s.DType) == "":
		return z, fmt.Errorf("dtype %v has no zarr v2 type string", s.DType)
	}
	if len(s.Chunks) != len(s.Shape) || len(s.Shape) > maxRank {
		return z, fmt.Errorf("shape %v and chunks %v: want the same number of axes, at most %d", s.Shape, s.Chunks, maxRank)
	}
	for k := range s.Shape {
		if s.Shape[k] < 0 || s.Chunks[k] < 1 {
			return z, fmt.Errorf("shape %v and chunks %v: lengths must be >= 0 and chunks >= 1", s.Shape, s.Chunks)
		}
	}
	chunk, _, ok := lgruntime.KeyBytes(s.DType, s.Chunks, 1)
	if !ok || chunk > maxChunkBytes {
		return z, fmt.Errorf("chunks %v: more than the %d bytes a chunk may hold", s.Chunks, maxChunkBytes)
	}
	array, _, ok := lgruntime.KeyBytes(s.DType, s.Shape, 1)
	if !ok || array > math.MaxInt {
		return z, fmt.Errorf("shape %v: too many bytes", s.Shape)
	}
	if err := s.checkV3(); err != nil {
		return z, err
	}
	if s.Separator == "" {
		s.Separator = map[int]string{2: ".", 3: "/"}[s.Format]
	}
	if err := checkSeparator(s.Separator); err != nil {
		return z, fmt.Errorf("separator %w", err)
	}
	if math.IsNaN(s.Fill) && !s.DType.IsFloat() {
		return z, fmt.Errorf("fill NaN for %v", s.DType)
	}
	if s.Compressor.id == "zstd" && (s.Compressor.level < 1 || s.Compressor.level > 22) {
		return z, fmt.Errorf("zstd level %d (want 1 to 22)", s.Compressor.level)
	}
	if s.Compressor.id == "gzip" && (s.Compressor.level < 1 || s.Compressor.level > 9) {
		return z, fmt.Errorf("gzip level %d (want 1 to 9)", s.Compressor.level)
	}
	fill, err := parseFill(s.fillJSON(), s.DType)
	if err != nil {
		return z, err
	}
	return specSizes{chunk: int(chunk), array: int(array), fill: fill}, nil
}

// fillJSON returns the .zarray spelling of the fill value.
func (s *ArraySpec) fillJSON() json.RawMessage {
	switch {
	case math.IsNaN(s.Fill):
		return json.RawMessage(`"NaN"`)
	case math.IsInf(s.Fill, 1):
		return json.RawMessage(`"Infinity"`)
	case math.IsInf(s.Fill, -1):
		return json.RawMessage(`"-Infinity"`)
	case s.DType == lgruntime.Bool:
		return json.RawMessage(fmt.Sprint(s.Fill != 0))
	}
	b, _ := json.Marshal(s.Fill)
	return b
}

// checkV3 checks the fields only a v3 array has: shards that hold whole
// chunks and take at most what a chunk may, and one name per axis.
func (s *ArraySpec) checkV3() error {
	if s.Format != 3 && (s.Shards != nil || s.DimensionNames != nil) {
		return fmt.Errorf("shards and dimension names need zarr format 3")
	}
	if s.DimensionNames != nil && len(s.DimensionNames) != len(s.Shape) {
		return fmt.Errorf("%d dimension names for %d axes", len(s.DimensionNames), len(s.Shape))
	}
	if s.Shards == nil {
		return nil
	}
	if len(s.Shards) != len(s.Shape) {
		return fmt.Errorf("shards %v for %d axes", s.Shards, len(s.Shape))
	}
	for k, n := range s.Shards {
		if n < 1 || n%s.Chunks[k] != 0 {
			return fmt.Errorf("shards %v do not hold whole chunks %v", s.Shards, s.Chunks)
		}
	}
	if n, _, ok := lgruntime.KeyBytes(s.DType, s.Shards, 1); !ok || n > maxChunkBytes {
		return fmt.Errorf("shards %v: more than the %d bytes a shard may hold in memory", s.Shards, maxChunkBytes)
	}
	return nil
}

// WriteArray writes data, the whole array in C order, at directory dir as
// the array spec describes, chunking it on all processors: a store this
// package reads, as the examples make theirs (docs/VOLUMES.md, "Writing").
// The metadata is written last, so that a write that fails leaves no
// array behind; dir must not hold a zarr node already.
func WriteArray(dir string, spec ArraySpec, data []byte) error {
	w, err := newArrayWriter(storage.Local(dir), "", spec)
	if err != nil {
		return err
	}
	if len(data) != w.sizes.array {
		return fmt.Errorf("zarr: write %s: %d bytes of data for shape %v of %v (%d bytes)", dir, len(data), spec.Shape, spec.DType, w.sizes.array)
	}
	ctx := context.Background()
	if name, found, err := w.node(ctx); err != nil || found {
		if err == nil {
			err = fmt.Errorf("it holds a %s already (remove it first)", name)
		}
		return fmt.Errorf("zarr: create %s: %w", dir, err)
	}
	meta, err := w.metadata()
	if err != nil {
		return err
	}
	chunks := int64(1)
	for _, g := range w.grid {
		chunks *= int64(g)
	}
	// Workers take chunk numbers from next until they run out or one fails.
	var next atomic.Int64
	errs := make([]error, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, w.objectBytes)
			for c := next.Add(1) - 1; c < chunks; c = next.Add(1) - 1 {
				if errs[i] = w.writeFrom(ctx, data, c, buf); errs[i] != nil {
					next.Store(chunks)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return w.putMetadata(ctx, meta)
}

// writeFrom writes object number c (in C order of the grid) of the whole
// array data, padding an edge object with the fill value, using buf.
func (w *ArrayWriter) writeFrom(ctx context.Context, data []byte, c int64, buf []byte) error {
	rank := len(w.grid)
	var idx, part, corner, arrayStrides, objectStrides [maxRank]int
	unravel(c, w.grid, idx[:rank])
	cStrides(w.spec.Shape, arrayStrides[:rank])
	cStrides(w.object, objectStrides[:rank])
	elem := w.spec.DType.Size()
	chunk, err := strided.New(buf, elem, 0, w.object, objectStrides[:rank])
	if err != nil {
		return fmt.Errorf("zarr: write %s: chunk %v: %w", w.URL(), idx[:rank], err)
	}
	first, edge := 0, false
	for k := range rank {
		start := idx[k] * w.object[k]
		part[k] = min(w.object[k], w.spec.Shape[k]-start)
		first += start * arrayStrides[k]
		edge = edge || part[k] < w.object[k]
	}
	if edge {
		fillBox(&chunk, w.sizes.fill)
	}
	to, err := chunk.Sub(corner[:rank], part[:rank])
	if err != nil {
		return fmt.Errorf("zarr: write %s: chunk %v: %w", w.URL(), idx[:rank], err)
	}
	from, err := strided.New(data, elem, first, part[:rank], arrayStrides[:rank])
	if err != nil {
		return fmt.Errorf("zarr: write %s: chunk %v of the array's data: %w", w.URL(), idx[:rank], err)
	}
	copyBox(&to, &from)
	return w.WriteChunk(ctx, idx[:rank], buf)
}

// WriteMultiscale writes the group metadata of an OME-NGFF 0.4 multiscale
// image at directory dir: .zgroup, and .zattrs with m's axes and levels
// (CreateMultiscale). Its levels' arrays are written apart, with
// WriteArray at dir/level.Path.
func WriteMultiscale(dir string, m Multiscale) error {
	return CreateMultiscale(context.Background(), storage.Local(dir), "", m, 2)
}
