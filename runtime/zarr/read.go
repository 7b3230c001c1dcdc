package zarr

import (
	"context"
	"fmt"
	"slices"

	"github.com/loadergen/loadergen/runtime/internal/strided"
	"github.com/loadergen/loadergen/runtime/storage"
)

// Layout places the elements of a box in a destination buffer: element
// (i_0, ..., i_n-1) of the box goes to element Start + Σ i_k·Strides[k] of
// the buffer (strides in elements, not bytes). C order is Start 0 and
// strides the suffix products of the box's shape. A negative stride mirrors
// an axis (with Start at that axis' far end) and permuted strides transpose
// axes, so a read can apply flips, transposes and quarter turns as it
// copies, with no second pass over the data. ReadLayout refuses, with an
// error giving the numbers at fault, a layout that places an element
// outside the destination, whose offsets overflow an int, or that places
// more elements than the span of offsets they occupy (some then overlap).
type Layout struct {
	Start   int
	Strides []int
	// Outside, when not nil, is the value (one element, little-endian) of
	// the box's elements outside the array; nil means the array's fill
	// value. Chunks inside the array that are not stored read as the fill
	// value either way, unless Missing refuses them.
	Outside []byte
	// Missing, when not nil, is called for each chunk inside the box that
	// is not stored (its file does not exist, or its shard's index marks
	// it empty), with the chunk's number, which ChunkName names. Returning
	// nil reads the chunk as the fill value, as the zarr spec says of
	// chunks never written; an error ends the read as a *ChunkError
	// naming the array and the chunk. Concurrent reads call it
	// concurrently. Nil reads every such chunk as the fill value.
	Missing func(chunk int64) error
	// Convert, when not nil, turns the array's elements (of its dtype, the
	// Conversion's from) into elements of the Conversion's to as they are
	// copied, in the same pass: the destination and Outside then hold
	// elements of that dtype, and chunks not stored read as the fill value
	// converted.
	Convert *Conversion
}

// CStrides returns the C-order strides of a box of shape, in elements: a
// Layout's Strides for a box read in C order.
func CStrides(shape []int) []int {
	out := make([]int, len(shape))
	cStrides(shape, out)
	return out
}

// Read copies the box of the given shape whose first corner is origin into
// dst, in C order. The box may reach outside the array (origin negative, or
// past the end): those elements are the fill value. Only the chunks the
// box touches are read, through the cache.
func (a *Array) Read(dst []byte, origin, shape []int) error {
	if len(shape) > maxRank {
		return fmt.Errorf("zarr array %s: box of %d axes; at most %d are supported", a.dir, len(shape), maxRank)
	}
	var strides [maxRank]int
	cStrides(shape, strides[:len(shape)])
	return a.read(context.Background(), dst, origin, shape, 0, strides[:len(shape)], a.fill, a.fill, nil, nil)
}

// ReadLayout is Read with the box's elements placed in dst by l, and
// converted by l.Convert. A remote array's reads stop once ctx is done
// (a local one's do not wait on it).
func (a *Array) ReadLayout(ctx context.Context, dst []byte, origin, shape []int, l Layout) error {
	fill := a.fill
	var converted [8]byte
	if c := l.Convert; c != nil {
		if c.from != a.dtype {
			return fmt.Errorf("zarr array %s: a conversion from %v, but the array holds %v", a.dir, c.from, a.dtype)
		}
		fill = c.one(&converted, a.fill)
	}
	outside := fill
	if l.Outside != nil {
		if len(l.Outside) != len(fill) {
			return fmt.Errorf("zarr array %s: an outside value of %d bytes for %d-byte elements", a.dir, len(l.Outside), len(fill))
		}
		outside = l.Outside
	}
	return a.read(ctx, dst, origin, shape, l.Start, l.Strides, fill, outside, l.Missing, l.Convert)
}

// read copies a box into dst, laid out by start and strides, and converted
// by conv unless conv is nil; its elements in chunks not stored are fill
// (the array's fill value, converted by conv), those outside the array
// outside, and missing, when not nil, is told of the chunks inside it that
// are not stored (Layout.Missing).
func (a *Array) read(ctx context.Context, dst []byte, origin, shape []int, start int, strides []int, fill, outside []byte, missing func(int64) error, conv *Conversion) error {
	n := len(a.shape)
	if len(origin) != n || len(shape) != n {
		return fmt.Errorf("zarr array %s: box origin %v, shape %v for an array of %d axes", a.dir, origin, shape, n)
	}
	elem := a.dtype.Size()
	if conv != nil {
		elem = conv.to.Size()
	}
	box, err := strided.New(dst, elem, start, shape, strides)
	if err != nil {
		return fmt.Errorf("zarr array %s: destination layout: %w", a.dir, err)
	}
	if box.Count() == 0 {
		return nil
	}

	// The part of the box inside the array, and the chunks it touches.
	var lo, hi, c0, c1, idx [maxRank]int
	inside := true
	for k := range n {
		lo[k] = max(origin[k], 0)
		hi[k] = min(origin[k]+shape[k], a.shape[k])
		if lo[k] != origin[k] || hi[k] != origin[k]+shape[k] {
			inside = false
		}
		if lo[k] >= hi[k] {
			fillBox(&box, outside)
			return nil
		}
		c0[k], c1[k] = lo[k]/a.unit[k], (hi[k]-1)/a.unit[k]
	}
	if !inside {
		fillBox(&box, outside)
	}
	// Chunks that another goroutine is loading or extending are put off
	// until the box's other chunks are copied, so that a reader decodes
	// what nobody else is decoding rather than wait (two workers reading
	// crops that share chunks, as crop locality makes them, would
	// otherwise take turns); then it waits for them, in the order met.
	var later [16]int64
	deferred := later[:0]
	copy(idx[:n], c0[:n])
	for {
		busy, err := a.readChunk(ctx, &box, idx[:n], origin, lo[:n], hi[:n], fill, missing, conv, false)
		if err != nil {
			return err
		}
		if busy {
			deferred = append(deferred, ravel(idx[:n], a.grid))
		}
		if !next(idx[:n], c0[:n], c1[:n]) {
			break
		}
	}
	for _, unit := range deferred {
		unravel(unit, a.grid, idx[:n])
		if _, err := a.readChunk(ctx, &box, idx[:n], origin, lo[:n], hi[:n], fill, missing, conv, true); err != nil {
			return err
		}
	}
	return nil
}

// readChunk copies the part of a read's box (origin, its part inside the
// array from lo to hi) in the chunk at grid index idx into box, as read
// does. Unless wait is set, a chunk that another goroutine is loading or
// extending is left alone and reported busy.
func (a *Array) readChunk(ctx context.Context, box *strided.Region, idx, origin, lo, hi []int, fill []byte, missing func(int64) error, conv *Conversion, wait bool) (busy bool, err error) {
	// The chunk's part of the box: where it starts in the chunk and in
	// the box, and its shape; and the window of the chunk it needs, from
	// its first to its last element in C order.
	n := len(idx)
	var part, at [maxRank]int
	first, last := 0, 0
	for k := range n {
		c := idx[k] * a.unit[k]
		from, end := max(lo[k], c), min(hi[k], c+a.unit[k])
		part[k] = end - from
		first += (from - c) * a.unitStrides[k]
		last += (end - 1 - c) * a.unitStrides[k]
		at[k] = from - origin[k]
	}
	want := window{first * a.dtype.Size(), (last + 1) * a.dtype.Size()}
	if !a.partial {
		want = window{0, a.unitBytes}
	}
	unit := ravel(idx, a.grid)
	e, busy, err := a.cache.fetch(ctx, a.chunkEntry(unit), a, want, wait)
	if busy || err != nil {
		return busy, err
	}
	if e.data == nil && missing != nil {
		if err := missing(unit); err != nil {
			a.cache.release(e)
			return false, &ChunkError{Array: a.dir, Chunk: a.ChunkName(unit), Err: err}
		}
	}
	err = a.copyPart(box, at[:n], part[:n], e.data, first, fill, conv)
	a.cache.release(e)
	if err != nil {
		return false, fmt.Errorf("zarr array %s: chunk %v: %w", a.dir, slices.Clone(idx), err)
	}
	return false, nil
}

// copyPart copies the part of shape part of a chunk's elements data (nil
// for a missing chunk, which reads as fill, the fill value as box holds
// it), starting at element first of data, into box at at, converted by c
// unless c is nil.
func (a *Array) copyPart(box *strided.Region, at, part []int, data []byte, first int, fill []byte, c *Conversion) error {
	to, err := box.Sub(at, part)
	if err != nil {
		return err
	}
	if data == nil {
		fillBox(&to, fill)
		return nil
	}
	from, err := strided.New(data, a.dtype.Size(), first, part, a.unitStrides[:len(part)])
	if err != nil {
		return fmt.Errorf("decoded elements: %w", err)
	}
	if c != nil {
		convertBox(&to, &from, c)
	} else {
		copyBox(&to, &from)
	}
	return nil
}

// ReadAhead announces a Read of the box at origin, shape, after the reads
// announced before it: the cache keeps the chunks of announced reads
// rather than evict them (Cache). For a remote array it also asks the
// root to start reading the stored chunks that the Read would load and
// that the cache neither holds nor is loading, so that the Read finds
// them fetched. Each is expected to be as large as the largest stored
// chunk read so far (the decoded size before the first). A sharded
// array's inner chunks are byte ranges of their shards, placed by each
// shard's index: the ranges are hinted at their sizes once the index is in
// the cache, which ReadAhead loads in the background when it is not (see
// readAheadShards). It returns at once. A box outside the array is
// ignored.
func (a *Array) ReadAhead(origin, shape []int) {
	n := len(a.shape)
	if len(origin) != n || len(shape) != n {
		return
	}
	var c0, c1 [maxRank]int
	for k := range n {
		lo, hi := max(origin[k], 0), min(origin[k]+shape[k], a.shape[k])
		if lo >= hi {
			return
		}
		c0[k], c1[k] = lo/a.unit[k], (hi-1)/a.unit[k]
	}
	a.readAhead(c0[:n], c1[:n], nil)
}

// readAhead announces a read of the chunks from grid index c0 to c1 (both
// included) for which read, when not nil, reports true, as ReadAhead does.
func (a *Array) readAhead(c0, c1 []int, read func(idx []int) bool) {
	a.cache.expect(a, c0, c1, read)
	h, ok := a.remote.(storage.Hinter)
	if !ok {
		return
	}
	if a.chain.shard != nil {
		a.readAheadShards(h, c0, c1, read)
		return
	}
	expect := a.storedMax.Load()
	if expect == 0 {
		expect = int64(a.unitBytes)
	}
	var idx [maxRank]int
	n := len(c0)
	copy(idx[:n], c0)
	for {
		if (read == nil || read(idx[:n])) && !a.cache.holdsWhole(a.chunkEntry(ravel(idx[:n], a.grid)), a.unitBytes) {
			h.Hint(a.key(idx[:n]), expect, a.storedLimit())
		}
		if !next(idx[:n], c0, c1) {
			return
		}
	}
}

// next steps grid index idx to the next one in the box of indexes from c0
// to c1 (both included), last axis fastest, and reports whether there was
// one.
func next(idx, c0, c1 []int) bool {
	k := len(idx) - 1
	for ; k >= 0 && idx[k] == c1[k]; k-- {
		idx[k] = c0[k]
	}
	if k < 0 {
		return false
	}
	idx[k]++
	return true
}

// readAheadShards hints the inner chunks from grid index c0 to c1 (both
// included, those read reports true for when it is not nil) of a sharded
// array that the cache neither holds nor is loading, as ranges of their
// shards. A shard whose index the cache holds
// has its inner chunks hinted at once; any other's index is loaded into
// the cache in the background (the store's: see background), which then
// hints them.
// A failed index load hints nothing: the read that needs the shard meets
// the error and names it.
func (a *Array) readAheadShards(h storage.Hinter, c0, c1 []int, read func(idx []int) bool) {
	sh := a.chain.shard
	n := len(c0)
	var idx, shard [maxRank]int
	var shards []int64
	units := map[int64][]int64{} // by shard: the units to hint
	copy(idx[:n], c0)
	for {
		if u := ravel(idx[:n], a.grid); (read == nil || read(idx[:n])) && !a.cache.has(a.chunkEntry(u)) {
			for k := range n {
				shard[k] = idx[k] / sh.perShard[k]
			}
			s := ravel(shard[:n], a.shards)
			if _, ok := units[s]; !ok {
				shards = append(shards, s)
			}
			units[s] = append(units[s], u)
		}
		if !next(idx[:n], c0, c1) {
			break
		}
	}
	for _, s := range shards {
		key := a.indexEntry(s)
		if e := a.cache.loaded(key); e != nil {
			a.hintInner(h, s, units[s], e.data)
			a.cache.release(e)
			continue
		}
		a.bg.start(func(ctx context.Context) {
			e, err := a.cache.get(ctx, key, a, window{0, sh.indexLen})
			if err != nil {
				return
			}
			a.hintInner(h, s, units[s], e.data)
			a.cache.release(e)
		})
	}
}

// hintInner hints the stored ones of decoded chunks units, all in shard
// number s, that the cache does not hold or load (a worker may have read
// one while the index was loading), as the byte ranges of the shard that
// index (the shard's decoded index; nil for a shard not stored) places
// them at.
func (a *Array) hintInner(h storage.Hinter, s int64, units []int64, index []byte) {
	sh := a.chain.shard
	n := len(a.shape)
	var shard, idx, inner [maxRank]int
	unravel(s, a.shards, shard[:n])
	key := a.key(shard[:n])
	for _, u := range units {
		if a.cache.has(a.chunkEntry(u)) {
			continue
		}
		unravel(u, a.grid, idx[:n])
		for k := range n {
			inner[k] = idx[k] % sh.perShard[k]
		}
		if off, size, ok := sh.place(index, inner[:n]); ok && size <= a.storedLimit() {
			h.HintRange(key, off, size) // a larger one is refused by its read
		}
	}
}
