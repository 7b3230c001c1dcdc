package zarr

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io/fs"
	"math"
	"path"
	"strconv"
	"strings"
	"sync"

	"github.com/klauspost/compress/gzip"

	lgruntime "github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/internal/strided"
	"github.com/loadergen/loadergen/runtime/storage"
	"github.com/loadergen/loadergen/runtime/zarr/blosc"
	"github.com/loadergen/loadergen/runtime/zarr/internal/compress"
	"github.com/loadergen/loadergen/runtime/zarr/zarrspec"
)

// CreateMode says what CreateArray does where a zarr node exists already.
type CreateMode uint8

const (
	// CreateNew refuses an existing node.
	CreateNew CreateMode = iota
	// Overwrite removes the node and everything under it first.
	Overwrite
	// Resume keeps an array whose metadata is what the spec writes, and
	// its chunks (ArrayWriter.Stored lists them); other nodes are refused.
	Resume
)

// ArrayWriter writes the chunks of a zarr array (v2, or v3 with or without
// sharding) at a writable root, each as one object put whole (a shard of a
// sharded array: WriteChunk takes the whole shard). Its methods are safe
// for concurrent use: CreateArray writes its fields, and nothing writes
// them after.
type ArrayWriter struct {
	root  storage.Writable
	path  string // the array's path in root; "" for root itself
	spec  ArraySpec
	sizes specSizes
	// object is the shape of a stored object (a shard, else a chunk), of
	// objectBytes bytes; grid counts objects along each axis.
	object      []int
	objectBytes int
	grid        []int
	encoders    sync.Pool // of *encoder: one WriteChunk's scratch between Get and Put
}

// CreateArray writes the metadata of the array spec describes at path of
// root, after what mode says of a node there already, and returns its
// writer. The metadata comes first, so that a store whose writing stopped
// halfway is an array of the chunks written (the others read as the fill
// value); each chunk is put whole.
func CreateArray(ctx context.Context, root storage.Writable, p string, spec ArraySpec, mode CreateMode) (*ArrayWriter, error) {
	w, err := newArrayWriter(root, p, spec)
	if err != nil {
		return nil, err
	}
	meta, err := w.metadata()
	if err != nil {
		return nil, err
	}
	name, found, err := w.node(ctx)
	switch {
	case err != nil:
		return nil, fmt.Errorf("zarr: create %s: %w", w.URL(), err)
	case !found:
	case mode == Resume && name == w.metadataName():
		old, err := root.ReadAll(ctx, w.file(name), nil, int64(len(meta))+1)
		if err == nil && bytes.Equal(old, meta) {
			return w, nil
		}
		if err != nil && !errors.Is(err, storage.ErrTooLarge) {
			return nil, fmt.Errorf("zarr: create %s: %w", w.URL(), err)
		}
		return nil, fmt.Errorf("zarr: resume %s: its %s is not this array's (it is a group, or an array of another shape, chunking, dtype, codec or attributes): overwrite it or write elsewhere", w.URL(), name)
	case mode == Overwrite:
		if err := w.remove(ctx); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("zarr: create %s: it holds a %s already (overwrite it, or resume an interrupted write of the same array)", w.URL(), name)
	}
	if err := w.putMetadata(ctx, meta); err != nil {
		return nil, err
	}
	return w, nil
}

// putMetadata puts the array's metadata document meta, after a v2 array's
// .zattrs when it has attributes: once it is there, the array can be read.
func (w *ArrayWriter) putMetadata(ctx context.Context, meta []byte) error {
	if len(w.spec.Attributes) > 0 && w.spec.Format == 2 {
		b, err := marshalJSON(w.file(".zattrs"), w.spec.Attributes)
		if err != nil {
			return err
		}
		if err := w.root.Put(ctx, w.file(".zattrs"), b); err != nil {
			return fmt.Errorf("zarr: %w", err)
		}
	}
	if err := w.root.Put(ctx, w.file(w.metadataName()), meta); err != nil {
		return fmt.Errorf("zarr: %w", err)
	}
	return nil
}

// newArrayWriter checks spec and lays out its objects, writing nothing.
func newArrayWriter(root storage.Writable, p string, spec ArraySpec) (*ArrayWriter, error) {
	p = strings.Trim(p, "/")
	if err := zarrspec.CheckPath(p); err != nil {
		return nil, err
	}
	w := &ArrayWriter{root: root, path: p, spec: spec}
	var err error
	if w.sizes, err = w.spec.check(); err != nil {
		return nil, fmt.Errorf("zarr: create %s: %w", w.URL(), err)
	}
	w.object = w.spec.Chunks
	if w.spec.Shards != nil {
		w.object = w.spec.Shards
	}
	n, _, _ := lgruntime.KeyBytes(w.spec.DType, w.object, 1) // check bounded it
	w.objectBytes = int(n)
	w.grid = make([]int, len(w.spec.Shape))
	for k, s := range w.spec.Shape {
		w.grid[k] = (s + w.object[k] - 1) / w.object[k]
	}
	w.encoders.New = func() any { return new(encoder) }
	return w, nil
}

// URL names the array for messages: its directory, or its URL.
func (w *ArrayWriter) URL() string { return w.root.URL(w.path) }

// file returns the name of file name of the array in its root.
func (w *ArrayWriter) file(name string) string { return path.Join(w.path, name) }

// metadataName is the array's metadata file: .zarray or zarr.json.
func (w *ArrayWriter) metadataName() string {
	if w.spec.Format == 3 {
		return "zarr.json"
	}
	return ".zarray"
}

// node reports which metadata file of a zarr node the array's path holds,
// if any.
func (w *ArrayWriter) node(ctx context.Context) (name string, found bool, err error) {
	for _, name := range []string{"zarr.json", ".zarray", ".zgroup"} {
		_, err := w.root.Size(ctx, w.file(name))
		switch {
		case err == nil:
			return name, true, nil
		case !errors.Is(err, fs.ErrNotExist):
			return "", false, err
		}
	}
	return "", false, nil
}

// remove removes the array's node and everything under it.
func (w *ArrayWriter) remove(ctx context.Context) error {
	if w.path == "" {
		return fmt.Errorf("zarr: overwrite %s: the array is the root itself; remove it by hand", w.URL())
	}
	if err := w.root.RemoveAll(ctx, w.path); err != nil {
		return fmt.Errorf("zarr: overwrite: %w", err)
	}
	return nil
}

// ObjectShape returns the shape of what WriteChunk takes: a shard of a
// sharded array, else a chunk.
func (w *ArrayWriter) ObjectShape() []int { return w.object }

// Grid returns the number of objects (shards or chunks) along each axis.
func (w *ArrayWriter) Grid() []int { return w.grid }

// Fill returns one element of the fill value, little-endian.
func (w *ArrayWriter) Fill() []byte { return w.sizes.fill }

// Key returns the storage key of the object at grid index idx, relative
// to the array.
func (w *ArrayWriter) Key(idx []int) string {
	return chunkKey(w.keyPrefix(), w.spec.Separator, idx)
}

// keyPrefix is "c" for v3's default chunk key encoding, else "".
func (w *ArrayWriter) keyPrefix() string {
	if w.spec.Format == 3 {
		return "c"
	}
	return ""
}

// Stored returns the grid numbers (C order) of the objects stored:
// what a resumed write need not write again. Other files are ignored.
func (w *ArrayWriter) Stored(ctx context.Context) ([]int64, error) {
	names, err := w.root.Walk(ctx, w.path)
	if err != nil {
		return nil, fmt.Errorf("zarr: %w", err)
	}
	var out []int64
	idx := make([]int, len(w.grid))
	for _, name := range names {
		if w.parseKey(name, idx) {
			out = append(out, ravel(idx, w.grid))
		}
	}
	return out, nil
}

// parseKey reads object key name into idx, and reports whether it is one
// of the array's.
func (w *ArrayWriter) parseKey(name string, idx []int) bool {
	if p := w.keyPrefix(); p != "" {
		var ok bool
		if name, ok = strings.CutPrefix(name, p+w.spec.Separator); !ok {
			return false
		}
	}
	parts := strings.Split(name, w.spec.Separator)
	if len(parts) != len(idx) {
		return false
	}
	for k, s := range parts {
		i, err := strconv.Atoi(s)
		if err != nil || i < 0 || i >= w.grid[k] || strconv.Itoa(i) != s {
			return false
		}
		idx[k] = i
	}
	return true
}

// WriteChunk encodes data, the object at grid index idx whole (in C order,
// little-endian; an edge object's part past the array's end is stored but
// never read), and puts it.
func (w *ArrayWriter) WriteChunk(ctx context.Context, idx []int, data []byte) error {
	if len(idx) != len(w.grid) {
		return fmt.Errorf("zarr: write %s: chunk index %v for %d axes", w.URL(), idx, len(w.grid))
	}
	for k, i := range idx {
		if i < 0 || i >= w.grid[k] {
			return fmt.Errorf("zarr: write %s: chunk index %v outside the grid %v", w.URL(), idx, w.grid)
		}
	}
	if len(data) != w.objectBytes {
		return fmt.Errorf("zarr: write %s: chunk %v of %d bytes, want %d", w.URL(), idx, len(data), w.objectBytes)
	}
	e := w.encoders.Get().(*encoder)
	defer w.encoders.Put(e)
	var enc []byte
	var err error
	if w.spec.Shards != nil {
		enc, err = e.shard(&w.spec, data)
	} else if enc, err = e.compress(&w.spec, e.out, data); err == nil && w.spec.Compressor.id != "" {
		e.out = enc[:0] // kept for the next chunk; data itself is the caller's
	}
	if err != nil {
		return fmt.Errorf("zarr: write %s: chunk %v: %w", w.URL(), idx, err)
	}
	if err := w.root.Put(ctx, w.file(w.Key(idx)), enc); err != nil {
		return fmt.Errorf("zarr: %w", err)
	}
	return nil
}

// encoder is one WriteChunk's scratch, kept between calls.
type encoder struct {
	blosc blosc.Encoder
	out   []byte // the encoded object
	inner []byte // a shard's inner chunk, gathered
	frame []byte // an inner chunk encoded
	index []byte // a shard's index
}

// compress returns data compressed as spec says, in dst's memory when it
// is large enough (data itself without a compressor).
func (e *encoder) compress(spec *ArraySpec, dst, data []byte) ([]byte, error) {
	switch c := spec.Compressor; c.id {
	case "zstd":
		return compress.ZstdEncode(dst, data, c.level)
	case "blosc":
		return e.blosc.Encode(dst[:0], data, spec.DType.Size())
	case "gzip":
		b := bytes.NewBuffer(dst[:0])
		zw, err := gzip.NewWriterLevel(b, c.level)
		if err == nil {
			_, err = zw.Write(data)
		}
		if err == nil {
			err = zw.Close()
		}
		if err != nil {
			return nil, fmt.Errorf("gzip: %w", err)
		}
		return b.Bytes(), nil
	}
	return data, nil
}

// shard encodes data, a whole shard, as sharding_indexed stores it: its
// inner chunks in C order, each compressed, then their index (an offset
// and a size per inner chunk, little-endian) and the index's crc32c.
func (e *encoder) shard(spec *ArraySpec, data []byte) ([]byte, error) {
	rank, elem := len(spec.Chunks), spec.DType.Size()
	var per, idx, corner, shardStrides, innerStrides [maxRank]int
	inners := 1
	for k := range rank {
		per[k] = spec.Shards[k] / spec.Chunks[k]
		inners *= per[k]
	}
	cStrides(spec.Shards, shardStrides[:rank])
	cStrides(spec.Chunks, innerStrides[:rank])
	innerBytes := len(data) / inners
	if cap(e.inner) < innerBytes {
		e.inner = make([]byte, innerBytes)
	}
	inner := e.inner[:innerBytes]
	if cap(e.index) < 16*inners+4 {
		e.index = make([]byte, 16*inners+4)
	}
	index := e.index[:16*inners]
	out := e.out[:0]
	for i := range inners {
		unravel(int64(i), per[:rank], idx[:rank])
		first := 0
		for k := range rank {
			corner[k] = idx[k] * spec.Chunks[k]
			first += corner[k] * shardStrides[k]
		}
		from, err := strided.New(data, elem, first, spec.Chunks, shardStrides[:rank])
		if err != nil {
			return nil, err
		}
		to, err := strided.New(inner, elem, 0, spec.Chunks, innerStrides[:rank])
		if err != nil {
			return nil, err
		}
		copyBox(&to, &from)
		frame, err := e.compress(spec, e.frame, inner)
		if err != nil {
			return nil, fmt.Errorf("inner chunk %v: %w", idx[:rank], err)
		}
		if spec.Compressor.id != "" {
			e.frame = frame[:0]
		}
		binary.LittleEndian.PutUint64(index[16*i:], uint64(len(out)))
		binary.LittleEndian.PutUint64(index[16*i+8:], uint64(len(frame)))
		out = append(out, frame...)
	}
	index = binary.LittleEndian.AppendUint32(index, crc32.Checksum(index, castagnoli))
	out = append(out, index...)
	e.out = out[:0]
	return out, nil
}

// metadata returns the array's metadata document: .zarray (v2) or
// zarr.json (v3).
func (w *ArrayWriter) metadata() ([]byte, error) {
	s := &w.spec
	if s.Format != 3 {
		meta := map[string]any{
			"zarr_format": 2, "shape": s.Shape, "chunks": s.Chunks,
			"dtype": v2DType(s.DType), "compressor": s.Compressor.metadata(),
			"fill_value": s.fillJSON(), "order": "C", "filters": nil,
			"dimension_separator": s.Separator,
		}
		return marshalJSON(w.file(".zarray"), meta)
	}
	codecs := []any{bytesCodecJSON}
	if c := s.Compressor.v3Metadata(s.DType); c != nil {
		codecs = append(codecs, c)
	}
	if s.Shards != nil {
		codecs = []any{map[string]any{"name": "sharding_indexed", "configuration": map[string]any{
			"chunk_shape": s.Chunks, "codecs": codecs, "index_location": "end",
			"index_codecs": []any{bytesCodecJSON, map[string]any{"name": "crc32c"}},
		}}}
	}
	attrs := s.Attributes
	if attrs == nil {
		attrs = map[string]any{}
	}
	meta := map[string]any{
		"zarr_format": 3, "node_type": "array", "shape": s.Shape, "data_type": s.DType.String(),
		"chunk_grid":         map[string]any{"name": "regular", "configuration": map[string]any{"chunk_shape": w.object}},
		"chunk_key_encoding": map[string]any{"name": "default", "configuration": map[string]any{"separator": s.Separator}},
		"fill_value":         s.fillJSON(), "codecs": codecs, "attributes": attrs,
	}
	if s.DimensionNames != nil {
		meta["dimension_names"] = s.DimensionNames
	}
	return marshalJSON(w.file("zarr.json"), meta)
}

// bytesCodecJSON is v3's bytes codec, little-endian.
var bytesCodecJSON = map[string]any{"name": "bytes", "configuration": map[string]any{"endian": "little"}}

// v3Metadata returns the compressor's entry of a v3 codec list for
// elements of d, or nil for none.
func (c Compressor) v3Metadata(d lgruntime.DType) any {
	switch c.id {
	case "zstd":
		return map[string]any{"name": "zstd", "configuration": map[string]any{"level": c.level, "checksum": false}}
	case "gzip":
		return map[string]any{"name": "gzip", "configuration": map[string]any{"level": c.level}}
	case "blosc":
		return map[string]any{"name": "blosc", "configuration": map[string]any{
			"cname": "lz4", "clevel": 5, "shuffle": "shuffle", "typesize": d.Size(), "blocksize": 0}}
	}
	return nil
}

// marshalJSON returns v as an indented JSON document, for file.
func marshalJSON(file string, v any) ([]byte, error) {
	b, err := json.MarshalIndent(v, "", "    ")
	if err != nil {
		return nil, fmt.Errorf("zarr: %s: %w", file, err)
	}
	return append(b, '\n'), nil
}

// CreateGroups writes the metadata of a group at p and at every directory
// above it in root (v2's .zgroup, v3's zarr.json), for the given format,
// so that zarr-python walks the hierarchy down to arrays below p. A node
// already there is kept.
func CreateGroups(ctx context.Context, root storage.Writable, p string, format int) error {
	p = strings.Trim(p, "/")
	if err := zarrspec.CheckPath(p); err != nil {
		return err
	}
	name, doc := ".zgroup", map[string]any{"zarr_format": 2}
	if format == 3 {
		name, doc = "zarr.json", map[string]any{"zarr_format": 3, "node_type": "group", "attributes": map[string]any{}}
	}
	meta, err := marshalJSON(name, doc)
	if err != nil {
		return err
	}
	for dir := p; ; dir = path.Dir(dir) {
		if dir == "." {
			dir = ""
		}
		file := path.Join(dir, name)
		if _, err := root.Size(ctx, file); errors.Is(err, fs.ErrNotExist) {
			if err := root.Put(ctx, file, meta); err != nil {
				return fmt.Errorf("zarr: %w", err)
			}
		} else if err != nil {
			return fmt.Errorf("zarr: %w", err)
		}
		if dir == "" {
			return nil
		}
	}
}

// CreateMultiscale writes the group metadata of an OME-NGFF multiscale
// image at p of root: version 0.4 in a v2 group's .zattrs (format 2), or
// 0.5 in a v3 group's attributes under "ome" (format 3); the groups above
// it get their metadata too (CreateGroups). Its levels' arrays are written
// apart, at p/level.Path.
func CreateMultiscale(ctx context.Context, root storage.Writable, p string, m Multiscale, format int) error {
	ms, err := m.metadata()
	if err != nil {
		return fmt.Errorf("zarr: multiscale %s: %w", root.URL(p), err)
	}
	p = strings.Trim(p, "/")
	if parent := path.Dir(p); p != "" {
		if parent == "." {
			parent = ""
		}
		if err := CreateGroups(ctx, root, parent, format); err != nil {
			return err
		}
	}
	var docs map[string]any
	if format == 3 {
		delete(ms, "version")
		docs = map[string]any{"zarr.json": map[string]any{"zarr_format": 3, "node_type": "group",
			"attributes": map[string]any{"ome": map[string]any{"version": "0.5", "multiscales": []any{ms}}}}}
	} else {
		ms["version"] = "0.4"
		docs = map[string]any{".zgroup": map[string]any{"zarr_format": 2}, ".zattrs": map[string]any{"multiscales": []any{ms}}}
	}
	for _, name := range []string{".zattrs", "zarr.json", ".zgroup"} { // the group's metadata last
		doc, ok := docs[name]
		if !ok {
			continue
		}
		b, err := marshalJSON(name, doc)
		if err == nil {
			err = root.Put(ctx, path.Join(p, name), b)
		}
		if err != nil {
			return fmt.Errorf("zarr: %w", err)
		}
	}
	return nil
}

// metadata returns m's entry of "multiscales", without its version.
func (m Multiscale) metadata() (map[string]any, error) {
	if len(m.Levels) == 0 || len(m.Axes) == 0 {
		return nil, errors.New("want axes and at least one level")
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
			return nil, fmt.Errorf("level %q has %d scales and %d translations for %d axes", l.Path, len(l.Scale), len(l.Translation), len(m.Axes))
		}
		for _, v := range append(append([]float64{}, l.Scale...), l.Translation...) {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("level %q: scale %v and translation %v must be finite", l.Path, l.Scale, l.Translation)
			}
		}
		ts := []any{map[string]any{"type": "scale", "scale": l.Scale}}
		if l.Translation != nil {
			ts = append(ts, map[string]any{"type": "translation", "translation": l.Translation})
		}
		datasets[i] = map[string]any{"path": l.Path, "coordinateTransformations": ts}
	}
	ms := map[string]any{"axes": axes, "datasets": datasets}
	if m.Name != "" {
		ms["name"] = m.Name
	}
	return ms, nil
}
