package zarr

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"slices"

	lgruntime "github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/storage"
)

// v2Attributes reads a v2 node's optional .zattrs.
func (s *Store) v2Attributes(p string) (json.RawMessage, error) {
	doc, err := s.doc(p, ".zattrs")
	if errors.Is(err, fs.ErrNotExist) {
		return json.RawMessage("{}"), nil
	}
	if err != nil {
		return nil, err
	}
	return doc.text[doc.start:doc.end], nil
}

// parseV2 reads a .zarray.
func (a *Array) parseV2(doc *metaDoc) error {
	a.format = 2
	if err := a.checkFormat(doc, ".zarray"); err != nil {
		return err
	}
	if err := a.parseShapes(doc, "shape", doc, "chunks"); err != nil {
		return err
	}
	et, err := parseV2DType(doc.raw("dtype"))
	if err != nil {
		return doc.errorf("dtype", "%v", err)
	}
	a.dtype, a.chain.bigEndian = et.dtype, et.bigEndian
	if a.fill, err = parseFill(doc.raw("fill_value"), a.dtype); err != nil {
		return doc.errorf("fill_value", "%v", err)
	}
	if a.chain.codecs, err = v2Compressor(doc.raw("compressor")); err != nil {
		return doc.errorf("compressor", "%v", err)
	}
	if err := v2Filters(doc.raw("filters")); err != nil {
		return doc.errorf("filters", "%v", err)
	}
	var order string
	if err := doc.get("order", &order, true); err != nil {
		return err
	}
	switch order {
	case "C":
	case "F":
		a.chain.order = reversedAxes(len(a.shape))
		if isIdentity(a.chain.order) {
			a.chain.order = nil
		}
	default:
		return doc.errorf("order", "order %q (want \"C\" or \"F\")", order)
	}
	a.keySep = "."
	if err := doc.get("dimension_separator", &a.keySep, false); err != nil {
		return err
	}
	if err := checkSeparator(a.keySep); err != nil {
		return doc.errorf("dimension_separator", "dimension_separator %w", err)
	}
	return nil
}

// checkSeparator is the one rule of a chunk key's separator, which zarr v2's
// dimension_separator, v3's chunk_key_encoding and the writer's Spec name:
// "." or "/".
func checkSeparator(s string) error {
	if s != "." && s != "/" {
		return fmt.Errorf("%q (want \".\" or \"/\")", s)
	}
	return nil
}

// checkFormat checks that the document's zarr_format is a.format.
func (a *Array) checkFormat(doc *metaDoc, name string) error {
	var format int
	if err := doc.get("zarr_format", &format, true); err != nil {
		return err
	}
	if format != a.format {
		return doc.errorf("zarr_format", "zarr_format %d in a %s (want %d)", format, name, a.format)
	}
	return nil
}

// v3Known lists the fields of a v3 array's zarr.json this reader knows.
var v3Known = []string{"zarr_format", "node_type", "shape", "data_type", "chunk_grid",
	"chunk_key_encoding", "fill_value", "codecs", "attributes", "dimension_names", "storage_transformers"}

// parseV3 reads an array's zarr.json.
func (a *Array) parseV3(doc *metaDoc) error {
	a.format = 3
	if err := a.checkFormat(doc, "zarr.json"); err != nil {
		return err
	}
	for key, f := range doc.fields {
		if slices.Contains(v3Known, key) {
			continue
		}
		// An extension field may be skipped only when it says so.
		var ext struct {
			MustUnderstand *bool `json:"must_understand"`
		}
		if json.Unmarshal(f.raw, &ext) != nil || ext.MustUnderstand == nil || *ext.MustUnderstand {
			return doc.errorf(key, "field %q is not supported (and does not say \"must_understand\": false)", key)
		}
	}
	var err error
	if a.dtype, err = parseV3DType(doc.raw("data_type")); err != nil {
		return doc.errorf("data_type", "%v", err)
	}
	grid, err := doc.object("chunk_grid")
	if err != nil {
		return err
	}
	var gridName string
	if err := grid.get("name", &gridName, true); err != nil {
		return err
	}
	if gridName != "regular" {
		return doc.errorf("chunk_grid", "chunk_grid %q is not supported (regular is)", gridName)
	}
	gridConfig, err := grid.object("configuration")
	if err != nil {
		return err
	}
	if err := a.parseShapes(doc, "shape", gridConfig, "chunk_shape"); err != nil {
		return err
	}
	if a.fill, err = parseFill(doc.raw("fill_value"), a.dtype); err != nil {
		return doc.errorf("fill_value", "%v", err)
	}
	if !doc.has("fill_value") {
		return doc.errorf("fill_value", "field \"fill_value\" is missing")
	}
	if err := a.parseKeyEncoding(doc); err != nil {
		return err
	}
	var st []json.RawMessage
	if err := doc.get("storage_transformers", &st, false); err != nil {
		return err
	}
	if len(st) > 0 {
		return doc.errorf("storage_transformers", "storage transformers are not supported")
	}
	var codecs []v3Codec
	if err := doc.get("codecs", &codecs, true); err != nil {
		return err
	}
	if a.chain, err = v3Chain(codecs, a.stored, a.dtype.Size(), false); err != nil {
		return doc.errorf("codecs", "%v", err)
	}
	a.attrs = doc.raw("attributes")
	if a.attrs == nil {
		a.attrs = json.RawMessage("{}")
	}
	return nil
}

// parseKeyEncoding reads chunk_key_encoding: "default" keys are "c/1/2/3",
// "v2" keys "1.2.3"; either may name its separator.
func (a *Array) parseKeyEncoding(doc *metaDoc) error {
	var enc struct {
		Name   string `json:"name"`
		Config struct {
			Separator *string `json:"separator"`
		} `json:"configuration"`
	}
	if err := doc.get("chunk_key_encoding", &enc, true); err != nil {
		return err
	}
	switch enc.Name {
	case "default":
		a.keyPrefix, a.keySep = "c", "/"
	case "v2":
		a.keySep = "."
	default:
		return doc.errorf("chunk_key_encoding", "chunk_key_encoding %q is not supported (default and v2 are)", enc.Name)
	}
	if s := enc.Config.Separator; s != nil {
		if err := checkSeparator(*s); err != nil {
			return doc.errorf("chunk_key_encoding", "separator %w", err)
		}
		a.keySep = *s
	}
	return nil
}

// parseShapes reads the array's shape from field shapeKey of doc and its
// chunk shape from field chunkKey of chunkDoc (the same document in v2, the
// chunk grid's configuration in v3).
func (a *Array) parseShapes(doc *metaDoc, shapeKey string, chunkDoc *metaDoc, chunkKey string) error {
	if err := doc.get(shapeKey, &a.shape, true); err != nil {
		return err
	}
	if err := chunkDoc.get(chunkKey, &a.stored, true); err != nil {
		return err
	}
	if len(a.shape) > maxRank {
		return doc.errorf(shapeKey, "%d axes; at most %d are supported", len(a.shape), maxRank)
	}
	for _, n := range a.shape {
		if n < 0 {
			return doc.errorf(shapeKey, "shape %v has a negative length", a.shape)
		}
	}
	if len(a.stored) != len(a.shape) {
		return chunkDoc.errorf(chunkKey, "chunk shape %v has %d axes but shape %v has %d", a.stored, len(a.stored), a.shape, len(a.shape))
	}
	for _, n := range a.stored {
		if n < 1 {
			return chunkDoc.errorf(chunkKey, "chunk shape %v has a length below 1", a.stored)
		}
	}
	return nil
}

// setUnits derives the decoded chunks' shape and grid, and whether reads
// may decode them in part, and checks that their counts and sizes fit the
// arithmetic of reads.
func (a *Array) setUnits() error {
	a.unit = a.stored
	if sh := a.chain.shard; sh != nil {
		a.unit = sh.innerShape
	}
	a.grid = make([]int, len(a.shape))
	a.shards = make([]int, len(a.shape))
	for k, n := range a.shape {
		a.grid[k] = (n + a.unit[k] - 1) / a.unit[k]
		a.shards[k] = (n + a.stored[k] - 1) / a.stored[k]
	}
	// The number of chunks is the byte size of a uint8 array with one
	// element per chunk: one overflow-checked product.
	units, _, unitsOK := lgruntime.KeyBytes(lgruntime.Uint8, a.grid, 1)
	bytes, _, bytesOK := lgruntime.KeyBytes(a.dtype, a.unit, 1)
	if !unitsOK || !bytesOK || units > math.MaxInt64/2 || bytes > maxChunkBytes {
		return fmt.Errorf("a chunk of %v or a grid of %v chunks is too large to read (chunks up to 2 GiB are)", a.unit, a.grid)
	}
	a.unitBytes = int(bytes)
	cStrides(a.unit, a.unitStrides[:len(a.unit)])
	_, lends := a.remote.(storage.Lender)
	switch sh := a.chain.shard; {
	case a.remote != nil && (!lends || sh != nil):
		// A remote chunk comes whole in one request: with no read-ahead
		// keeping it, extending a window decoded of it would fetch the
		// chunk again. (Inner chunks of shards are decoded whole too:
		// their read-ahead hints skip what the cache holds in any part.)
		a.partial = false
	case a.remote != nil && sh == nil:
		// The read-ahead lends the chunk it keeps: a window is decoded
		// of it, as of a local chunk, and extended from it again while
		// it keeps it (ReadAhead hints a chunk the cache holds in part).
		a.partial = a.chain.partial()
	case sh != nil:
		a.partial = sh.inner.partial()
	default:
		a.partial = a.chain.partial()
	}
	return nil
}
