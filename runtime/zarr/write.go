package zarr

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/loadergen/loadergen/internal/outfile"
	lgruntime "github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/internal/strided"
	"github.com/loadergen/loadergen/runtime/zarr/blosc"
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

// ArraySpec describes a zarr v2 array for WriteArray to write.
type ArraySpec struct {
	Shape      []int
	Chunks     []int
	DType      lgruntime.DType
	Compressor Compressor
	Fill       float64        // the fill value (NaN for a float dtype is allowed)
	Separator  string         // chunk key separator: "." (the default) or "/"
	Attributes map[string]any // written to .zattrs when not empty
}

// writer writes a zarr v2 array (C order, little-endian) chunk by chunk.
// The array's metadata is written by close: until then there is no array
// at the directory, so a writer that fails leaves no half-written array
// behind for readers to take as complete. writeChunk may be called from
// several goroutines at once.
type writer struct {
	dir   string
	spec  ArraySpec
	grid  []int
	bytes int    // of a chunk
	fill  []byte // one element of the fill value, for edge chunks
	// zstd is shared by every writeChunk: EncodeAll is safe for concurrent
	// use. create writes it and the fields above; nothing writes them until
	// close, which the caller calls after the last writeChunk returned.
	zstd *zstd.Encoder

	// C-order element strides of the whole array and of a chunk.
	arrayStrides, chunkStrides [maxRank]int
}

// bloscEncoders recycles Blosc encoders among concurrent writeChunk calls.
var bloscEncoders = sync.Pool{New: func() any { return new(blosc.Encoder) }}

// create starts writing an array at dir, which must not hold a zarr node
// already, for a spec that check accepted, giving sizes.
func create(dir string, spec ArraySpec, sizes specSizes) (*writer, error) {
	for _, name := range []string{".zarray", ".zgroup", "zarr.json"} {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("zarr: create %s: it holds a %s already (remove it first)", dir, name)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("zarr: create %s: %w", dir, err)
	}
	w := &writer{dir: dir, spec: spec, grid: make([]int, len(spec.Shape)), bytes: sizes.chunk, fill: sizes.fill}
	for k, n := range spec.Shape {
		w.grid[k] = (n + spec.Chunks[k] - 1) / spec.Chunks[k]
	}
	cStrides(spec.Shape, w.arrayStrides[:len(spec.Shape)])
	cStrides(spec.Chunks, w.chunkStrides[:len(spec.Chunks)])
	if spec.Compressor.id == "zstd" {
		// Single-segment frames always record their content size, which
		// numcodecs' decoder needs (the encoder leaves it out of small
		// frames otherwise).
		var err error
		w.zstd, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.EncoderLevelFromZstd(spec.Compressor.level)),
			zstd.WithEncoderConcurrency(runtime.GOMAXPROCS(0)), zstd.WithSingleSegment(true))
		if err != nil {
			return nil, fmt.Errorf("zarr: create %s: %w", dir, err)
		}
	}
	return w, nil
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
	if !s.DType.Valid() || v2DType(s.DType) == "" {
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
	if s.Separator == "" {
		s.Separator = "."
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

// writeChunk writes the chunk at grid index idx. data holds the whole
// chunk in C order, little-endian, edge chunks included (their part past
// the array's end is stored but never read).
func (w *writer) writeChunk(idx []int, data []byte) error {
	if len(idx) != len(w.grid) {
		return fmt.Errorf("zarr: write %s: chunk index %v for %d axes", w.dir, idx, len(w.grid))
	}
	for k, i := range idx {
		if i < 0 || i >= w.grid[k] {
			return fmt.Errorf("zarr: write %s: chunk index %v outside the grid %v", w.dir, idx, w.grid)
		}
	}
	if len(data) != w.bytes {
		return fmt.Errorf("zarr: write %s: chunk %v of %d bytes, want %d", w.dir, idx, len(data), w.bytes)
	}
	var enc []byte
	switch w.spec.Compressor.id {
	case "zstd":
		enc = w.zstd.EncodeAll(data, nil)
	case "blosc":
		e := bloscEncoders.Get().(*blosc.Encoder)
		var err error
		enc, err = e.Encode(nil, data, w.spec.DType.Size())
		bloscEncoders.Put(e)
		if err != nil {
			return fmt.Errorf("zarr: write %s: chunk %v: %w", w.dir, idx, err)
		}
	case "gzip":
		var b bytes.Buffer
		zw, err := gzip.NewWriterLevel(&b, w.spec.Compressor.level)
		if err == nil {
			_, err = zw.Write(data)
		}
		if err == nil {
			err = zw.Close()
		}
		if err != nil {
			return fmt.Errorf("zarr: write %s: chunk %v: gzip: %w", w.dir, idx, err)
		}
		enc = b.Bytes()
	default:
		enc = data
	}
	file := filepath.Join(w.dir, filepath.FromSlash(chunkKey("", w.spec.Separator, idx)))
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return fmt.Errorf("zarr: write %s: %w", w.dir, err)
	}
	if _, err := outfile.Write(file, enc); err != nil {
		return fmt.Errorf("zarr: %w", err)
	}
	return nil
}

// close writes the array's metadata (.zarray, and .zattrs when the spec
// has attributes), after which the array can be read.
func (w *writer) close() error {
	w.release()
	meta := map[string]any{
		"zarr_format": 2, "shape": w.spec.Shape, "chunks": w.spec.Chunks,
		"dtype": v2DType(w.spec.DType), "compressor": w.spec.Compressor.metadata(),
		"fill_value": w.spec.fillJSON(), "order": "C", "filters": nil,
		"dimension_separator": w.spec.Separator,
	}
	if len(w.spec.Attributes) > 0 {
		if err := writeJSON(filepath.Join(w.dir, ".zattrs"), w.spec.Attributes); err != nil {
			return err
		}
	}
	return writeJSON(filepath.Join(w.dir, ".zarray"), meta)
}

// release frees the encoder's resources.
func (w *writer) release() {
	if w.zstd != nil {
		w.zstd.Close()
	}
}

// WriteArray writes data, the whole array in C order, as the array spec
// describes, chunking it on all processors: a store this package reads, as
// the examples make theirs (docs/VOLUMES.md, "Writing").
func WriteArray(dir string, spec ArraySpec, data []byte) error {
	// Check the data against the spec before create makes the directory.
	sizes, err := spec.check()
	if err != nil {
		return fmt.Errorf("zarr: create %s: %w", dir, err)
	}
	if len(data) != sizes.array {
		return fmt.Errorf("zarr: write %s: %d bytes of data for shape %v of %v (%d bytes)", dir, len(data), spec.Shape, spec.DType, sizes.array)
	}
	w, err := create(dir, spec, sizes)
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
			buf := make([]byte, w.bytes)
			for c := next.Add(1) - 1; c < chunks; c = next.Add(1) - 1 {
				if errs[i] = w.writeFrom(data, c, buf); errs[i] != nil {
					next.Store(chunks)
					return
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		w.release()
		return err
	}
	return w.close()
}

// writeFrom writes chunk number c (in C order of the grid) of the whole
// array data, padding an edge chunk with the fill value, using buf.
func (w *writer) writeFrom(data []byte, c int64, buf []byte) error {
	rank := len(w.grid)
	var idx, part, corner [maxRank]int
	unravel(c, w.grid, idx[:rank])
	elem := w.spec.DType.Size()
	chunk, err := strided.New(buf, elem, 0, w.spec.Chunks, w.chunkStrides[:rank])
	if err != nil {
		return fmt.Errorf("zarr: write %s: chunk %v: %w", w.dir, idx[:rank], err)
	}
	first, edge := 0, false
	for k := range rank {
		start := idx[k] * w.spec.Chunks[k]
		part[k] = min(w.spec.Chunks[k], w.spec.Shape[k]-start)
		first += start * w.arrayStrides[k]
		edge = edge || part[k] < w.spec.Chunks[k]
	}
	if edge {
		fillBox(&chunk, w.fill)
	}
	to, err := chunk.Sub(corner[:rank], part[:rank])
	if err != nil {
		return fmt.Errorf("zarr: write %s: chunk %v: %w", w.dir, idx[:rank], err)
	}
	from, err := strided.New(data, elem, first, part[:rank], w.arrayStrides[:rank])
	if err != nil {
		return fmt.Errorf("zarr: write %s: chunk %v of the array's data: %w", w.dir, idx[:rank], err)
	}
	copyBox(&to, &from)
	return w.writeChunk(idx[:rank], buf)
}

// WriteMultiscale writes the group metadata of an OME-NGFF 0.4 multiscale
// image at dir: .zgroup, and .zattrs with m's axes and levels. Its levels'
// arrays are written apart, with WriteArray at dir/level.Path.
func WriteMultiscale(dir string, m Multiscale) error {
	if len(m.Levels) == 0 || len(m.Axes) == 0 {
		return fmt.Errorf("zarr: multiscale %s: want axes and at least one level", dir)
	}
	axes := make([]map[string]string, len(m.Axes))
	for i, a := range m.Axes {
		axes[i] = map[string]string{"name": a.Name}
		if a.Type != "" {
			axes[i]["type"] = a.Type
		}
		if a.Unit != "" {
			axes[i]["unit"] = a.Unit
		}
	}
	datasets := make([]any, len(m.Levels))
	for i, l := range m.Levels {
		if len(l.Scale) != len(m.Axes) || (l.Translation != nil && len(l.Translation) != len(m.Axes)) {
			return fmt.Errorf("zarr: multiscale %s: level %q has %d scales and %d translations for %d axes", dir, l.Path, len(l.Scale), len(l.Translation), len(m.Axes))
		}
		ts := []any{map[string]any{"type": "scale", "scale": l.Scale}}
		if l.Translation != nil {
			ts = append(ts, map[string]any{"type": "translation", "translation": l.Translation})
		}
		datasets[i] = map[string]any{"path": l.Path, "coordinateTransformations": ts}
	}
	ms := map[string]any{"version": "0.4", "axes": axes, "datasets": datasets}
	if m.Name != "" {
		ms["name"] = m.Name
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("zarr: %w", err)
	}
	if err := writeJSON(filepath.Join(dir, ".zattrs"), map[string]any{"multiscales": []any{ms}}); err != nil {
		return err
	}
	return writeGroup(dir)
}

// writeGroup writes a v2 group's .zgroup at dir, so that zarr-python can
// walk a hierarchy down to its arrays.
func writeGroup(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("zarr: %w", err)
	}
	return writeJSON(filepath.Join(dir, ".zgroup"), map[string]any{"zarr_format": 2})
}

func writeJSON(file string, v any) error {
	b, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return fmt.Errorf("zarr: %s: %w", file, err)
	}
	if _, err := outfile.Write(file, append(b, '\n')); err != nil {
		return fmt.Errorf("zarr: %w", err)
	}
	return nil
}
