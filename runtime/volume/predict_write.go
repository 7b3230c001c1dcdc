package volume

import (
	"errors"
	"fmt"
	"math"
	"slices"

	lgruntime "github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/zarr"
)

// Write takes the predictions of the tiles that samples indices read (a
// batch's Indices): one tensor per output key, in TileSpec.Outputs order,
// each of the key's dtype and shape [len(indices), (C,) S...] in C order,
// as the loader's batches hold the keys. It copies each tile into the
// chunks it covers; a chunk whose last tile this was is handed to a
// writer goroutine, and is stored whole. Write is safe for concurrent use.
// A tile written before, a tensor of another dtype or shape, and a Write
// after Close are errors that change nothing; once a chunk failed to be
// stored, every Write returns that error.
func (p *Predictions) Write(indices []int, values ...lgruntime.Tensor) error {
	if err := p.checkValues(len(indices), values); err != nil {
		return err
	}
	tiles := make([]int64, len(indices))
	if err := p.take(indices, tiles); err != nil {
		return err
	}
	defer p.done()
	parts, err := p.reserve(tiles)
	if err != nil {
		p.untake(tiles)
		return fmt.Errorf("predictions: tiles %d to %d (sample indices %d to %d): %w", tiles[0], tiles[len(tiles)-1], indices[0], indices[len(indices)-1], err)
	}
	for i, n := range tiles {
		p.writeTile(n, parts[i], values, i)
	}
	return nil
}

// checkValues checks that values are the output keys' tensors of n tiles.
func (p *Predictions) checkValues(n int, values []lgruntime.Tensor) error {
	if len(values) != len(p.outs) {
		return fmt.Errorf("predictions: %d tensors for %d output keys (%s)", len(values), len(p.outs), p.outNames())
	}
	for o, key := range p.outs {
		v := values[o]
		want := []int{n}
		if key.ClassAxis {
			want = append(want, p.classes[o])
		}
		want = append(want, key.Shape...)
		bytes, _, _ := lgruntime.KeyBytes(key.DType, want, 1)
		switch {
		case v.DType != key.DType:
			return fmt.Errorf("predictions: key %q: a %v tensor, the key is %v", key.Name, v.DType, key.DType)
		case !slices.Equal(v.Shape, want):
			return fmt.Errorf("predictions: key %q: a tensor of shape %v, want %v for %d tiles", key.Name, v.Shape, want, n)
		case int64(len(v.Data)) != bytes:
			return fmt.Errorf("predictions: key %q: a tensor of %d bytes, its shape %v of %v holds %d", key.Name, len(v.Data), v.Shape, v.DType, bytes)
		}
	}
	return nil
}

// outNames lists the output keys' names.
func (p *Predictions) outNames() string {
	names := make([]string, len(p.outs))
	for i, k := range p.outs {
		names[i] = k.Name
	}
	return fmt.Sprint(names)
}

// take marks the tiles of samples indices taken, writing their numbers
// into tiles, and counts the Write as under way; it refuses (marking
// nothing) after Close, after a failed chunk, an index out of range and a
// tile taken before.
func (p *Predictions) take(indices []int, tiles []int64) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.closed:
		return fmt.Errorf("predictions %s: Write after Close", p.where)
	case p.err != nil:
		return p.err
	}
	for i, index := range indices {
		n := p.tiles.Tile(index)
		if n < 0 {
			p.clear(tiles[:i])
			return fmt.Errorf("predictions: sample index %d: not a tile's (the source has %d)", index, p.tiles.Len())
		}
		if p.written[n/64]&(1<<(n%64)) != 0 {
			p.clear(tiles[:i])
			return fmt.Errorf("predictions: tile %d (sample index %d) written twice", n, index)
		}
		p.written[n/64] |= 1 << (n % 64)
		tiles[i] = n
	}
	p.stats.Tiles += int64(len(tiles))
	p.active++
	return nil
}

// clear unmarks tiles; p.mu is held.
func (p *Predictions) clear(tiles []int64) {
	for _, n := range tiles {
		p.written[n/64] &^= 1 << (n % 64)
	}
}

// untake unmarks tiles that a failed Write did not write.
func (p *Predictions) untake(tiles []int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.clear(tiles)
	p.stats.Tiles -= int64(len(tiles))
}

// done ends a Write.
func (p *Predictions) done() {
	p.mu.Lock()
	p.active--
	p.cond.Broadcast()
	p.mu.Unlock()
}

// writeTile copies tile n, the i-th of values, into its chunks, parts.
func (p *Predictions) writeTile(n int64, parts []*partial, values []lgruntime.Tensor, i int) {
	rank := len(p.outs[0].Shape)
	var c [lgruntime.MaxSpatialRank]int
	p.tiles.TileAt(n, c[:rank])
	for _, pt := range parts {
		a := pt.arr
		tile := tileData(values[a.output], i, p.classes[a.output], a.class)
		pt.mu.Lock()
		a.copyTile(pt, c[:rank], tile)
		pt.left--
		last := pt.left == 0
		pt.mu.Unlock()
		if last {
			p.complete(pt)
		}
	}
}

// tileData returns the bytes of class c of tile i of tensor t (classes
// per tile).
func tileData(t lgruntime.Tensor, i, classes, c int) []byte {
	n := len(t.Data) / (t.Shape[0] * classes)
	at := (i*classes + c) * n
	return t.Data[at : at+n]
}

// reserve returns, for each tile, the partial chunks it writes into, in
// the order of its volume's arrays, making those the batch is the first
// to reach: their memory is counted against the bound first, waiting while
// complete chunks being written hold what they need, refused (making
// nothing) when partial chunks alone would exceed it.
func (p *Predictions) reserve(tiles []int64) ([][]*partial, error) {
	p.mu.Lock()
	for {
		need := p.need(tiles)
		if p.held+need > p.bound {
			p.mu.Unlock()
			return nil, fmt.Errorf("their chunks would take %d bytes with the %d of chunks partly written, more than the bound of %d (MaxPartialMB or %s): write tiles in the source's order, or raise the bound",
				need, p.held, p.bound, PartialEnv)
		}
		if p.held+p.flushing+need <= p.bound || p.flushing == 0 {
			break
		}
		p.cond.Wait() // for chunks being written to free their memory
	}
	parts := make([][]*partial, len(tiles))
	var made []*partial
	for i, n := range tiles {
		p.eachChunk(n, func(a *outArray, idx []int, chunk int64) {
			key := partialKey{a.id, chunk}
			pt := p.partials[key]
			if pt == nil {
				pt = &partial{arr: a, chunk: chunk, left: a.tilesIn(idx), bytes: a.bytes, buf: p.buffer(a.bytes)}
				copy(pt.idx[:len(idx)], idx)
				p.partials[key] = pt
				p.held += int64(a.bytes)
				p.peak = max(p.peak, p.held+p.flushing)
				pt.mu.Lock() // until its buffer is set up, below
				made = append(made, pt)
			}
			parts[i] = append(parts[i], pt)
		})
	}
	p.mu.Unlock()
	for _, pt := range made {
		pt.arr.initChunk(pt)
		pt.mu.Unlock()
	}
	return parts, nil
}

// need returns the bytes of the chunks tiles write into that are neither
// stored nor partial yet; p.mu is held.
func (p *Predictions) need(tiles []int64) int64 {
	var need int64
	var seen map[partialKey]bool // chunks of several tiles of the batch
	for _, n := range tiles {
		p.eachChunk(n, func(a *outArray, _ []int, chunk int64) {
			key := partialKey{a.id, chunk}
			if p.partials[key] != nil || seen[key] {
				return
			}
			if len(tiles) > 1 {
				if seen == nil {
					seen = map[partialKey]bool{}
				}
				seen[key] = true
			}
			need += int64(a.bytes)
		})
	}
	return need
}

// eachChunk calls f with each chunk that tile n writes into and is not
// stored: its array, grid index and number.
func (p *Predictions) eachChunk(n int64, f func(a *outArray, idx []int, chunk int64)) {
	rank := len(p.outs[0].Shape)
	var c, lo, hi [lgruntime.MaxSpatialRank]int
	v := p.tiles.TileAt(n, c[:rank])
	for _, a := range p.arrays[v] {
		if !a.chunks(c[:rank], lo[:rank], hi[:rank]) {
			continue
		}
		eachIndex(lo[:rank], hi[:rank], func(idx []int) bool {
			if chunk := ravelInt(idx, a.grid); a.stored == nil || !a.stored[chunk] {
				f(a, idx, chunk)
			}
			return true
		})
	}
}

// buffer returns a buffer of n bytes, a spare one when there is; p.mu is
// held.
func (p *Predictions) buffer(n int) []byte {
	if s := p.spare[n]; len(s) > 0 {
		b := s[len(s)-1]
		p.spare[n] = s[:len(s)-1]
		p.spared -= int64(n)
		return b
	}
	return make([]byte, n)
}

// recycle keeps buf for a later chunk while the spare buffers, with the
// chunks held, stay within the bound; p.mu is held.
func (p *Predictions) recycle(buf []byte) {
	if p.held+p.flushing+p.spared+int64(len(buf)) <= p.bound {
		p.spare[len(buf)] = append(p.spare[len(buf)], buf)
		p.spared += int64(len(buf))
	}
}

// complete hands a chunk whose tiles have all been written to the
// flushers.
func (p *Predictions) complete(pt *partial) {
	p.mu.Lock()
	delete(p.partials, partialKey{pt.arr.id, pt.chunk})
	p.held -= int64(pt.bytes)
	p.flushing += int64(pt.bytes)
	p.mu.Unlock()
	p.queue <- pt
}

// flush stores the complete chunks of the queue until it is closed.
func (p *Predictions) flush() {
	defer p.flushers.Done()
	var out []byte // a blended chunk, converted to the key's dtype
	for pt := range p.queue {
		a := pt.arr
		data := pt.buf
		if a.blend {
			n := len(pt.buf) / a.acc.Size() * a.key.DType.Size()
			if cap(out) < n {
				out = make([]byte, n)
			}
			data = out[:n]
			a.average(data, pt)
		}
		err := a.w.WriteChunk(p.ctx, pt.idx[:len(a.grid)], data)
		p.mu.Lock()
		p.flushing -= int64(pt.bytes)
		p.recycle(pt.buf)
		if err != nil && p.err == nil {
			p.err = fmt.Errorf("predictions: key %q: %w (the chunk is not stored; Resume writes it again)", a.key.Name, err)
		}
		if err == nil {
			p.stats.Chunks++
		}
		p.cond.Broadcast()
		p.mu.Unlock()
	}
}

// Close waits for the Writes under way, stores the complete chunks still
// queued, and reports what could not be written: a failed chunk, and the
// chunks some of whose tiles were never written (left out: a Resume writes
// them). It logs what was written and the peak of the chunks held. Close
// after Close does nothing.
func (p *Predictions) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	for p.active > 0 {
		p.cond.Wait()
	}
	var incomplete []string
	for key, pt := range p.partials {
		if len(incomplete) < 3 {
			incomplete = append(incomplete, fmt.Sprintf("%s chunk %s (%d tiles missing)", pt.arr.w.URL(), pt.arr.w.Key(pt.idx[:len(pt.arr.grid)]), pt.left))
		}
		p.held -= int64(pt.bytes)
		delete(p.partials, key)
	}
	left := len(incomplete)
	p.mu.Unlock()
	close(p.queue)
	p.flushers.Wait()
	st := p.Stats()
	p.log.Info("predictions", "root", p.where, "tiles", st.Tiles, "chunks", st.Chunks, "skipped_chunks", st.SkippedChunks,
		"partial_peak_bytes", st.PartialPeak, "partial_bound_bytes", st.PartialBound)
	var errs []error
	if p.err != nil {
		errs = append(errs, p.err)
	}
	if left > 0 {
		errs = append(errs, fmt.Errorf("predictions %s: chunks left out, as tiles covering them were not written: %s", p.where, incompleteList(incomplete, left)))
	}
	return errors.Join(errs...)
}

// incompleteList names the first chunks of n left out.
func incompleteList(first []string, n int) string {
	s := fmt.Sprint(first)
	if n > len(first) {
		s += fmt.Sprintf(" and %d more", n-len(first))
	}
	return s
}

// Stats returns the writer's running totals.
func (p *Predictions) Stats() PredictStats {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := p.stats
	st.PartialPeak = p.peak
	return st
}

// initChunk sets up the buffer of a new chunk, pt's: zero sums when
// blended; else, for a chunk reaching past the array's end, the fill
// value, which its tiles overwrite inside the array. Inside, every voxel
// is written by a tile, so a chunk there is left as it is.
func (a *outArray) initChunk(pt *partial) {
	if a.blend {
		clear(pt.buf)
		return
	}
	for ax, m := range pt.idx[:len(a.grid)] {
		if (m+1)*a.chunk[ax] > a.out.Shape[ax] {
			zarr.Repeat(pt.buf, a.w.Fill())
			return
		}
	}
}

// copyTile writes tile c's values (its class's box, in C order) into the
// chunk of pt, where it writes: its extent there (ext) within the chunk.
func (a *outArray) copyTile(pt *partial, c []int, tile []byte) {
	rank := len(c)
	var from, to, shape [lgruntime.MaxSpatialRank]int
	for ax := range rank {
		e := a.ext[ax][c[ax]]
		start := pt.idx[ax] * a.chunk[ax]
		lo, hi := max(e[0], start), min(e[1], start+a.chunk[ax])
		from[ax] = lo - (a.out.Origin[ax] + c[ax]*a.out.Step[ax])
		to[ax], shape[ax] = lo-start, hi-lo
	}
	elem := a.key.DType.Size()
	if !a.blend {
		boxRuns(a.chunk, to[:rank], a.out.Tile, from[:rank], shape[:rank], func(do, so, n int) {
			copy(pt.buf[do*elem:(do+n)*elem], tile[so*elem:(so+n)*elem])
		})
		return
	}
	boxRuns(a.chunk, to[:rank], a.out.Tile, from[:rank], shape[:rank], func(do, so, n int) {
		addRun(pt.buf, a.acc, do, tile, a.key.DType, so, n)
	})
}

// average writes the blended chunk of pt, in the key's dtype, into out:
// each voxel's sum over the number of tiles that cover it, the fill value
// past the array's end.
func (a *outArray) average(out []byte, pt *partial) {
	rank := len(a.chunk)
	var zero, start, inside [lgruntime.MaxSpatialRank]int
	for ax := range rank {
		start[ax] = pt.idx[ax] * a.chunk[ax]
		inside[ax] = max(0, min(a.chunk[ax], a.out.Shape[ax]-start[ax]))
	}
	zarr.Repeat(out, a.w.Fill())
	last := rank - 1
	boxRuns(a.chunk, zero[:rank], a.chunk, zero[:rank], inside[:rank], func(do, _, n int) {
		// The weight of the run's voxels but along the last axis.
		w := 1.0
		rest := do
		for ax := last; ax >= 0; ax-- {
			x := rest % a.chunk[ax]
			rest /= a.chunk[ax]
			if ax < last {
				w *= a.inv[ax][start[ax]+x]
			}
		}
		averageRun(out, a.key.DType, pt.buf, a.acc, do, n, w, a.inv[last][start[last]+do%a.chunk[last]:])
	})
}

// boxRuns calls f for each run along the last axis of a box of shape that
// lies at dstAt of a C-order array of dstShape and at srcAt of one of
// srcShape: the run's first element in each (element offsets) and its
// length.
func boxRuns(dstShape, dstAt, srcShape, srcAt, shape []int, f func(do, so, n int)) {
	rank := len(shape)
	for _, n := range shape {
		if n <= 0 {
			return
		}
	}
	var ds, ss, idx [lgruntime.MaxSpatialRank]int
	d, s := 1, 1
	do, so := 0, 0
	for ax := rank - 1; ax >= 0; ax-- {
		ds[ax], ss[ax] = d, s
		do += dstAt[ax] * d
		so += srcAt[ax] * s
		d *= dstShape[ax]
		s *= srcShape[ax]
	}
	last := rank - 1
	for {
		f(do, so, shape[last])
		ax := last - 1
		for ; ax >= 0; ax-- {
			idx[ax]++
			do += ds[ax]
			so += ss[ax]
			if idx[ax] < shape[ax] {
				break
			}
			do -= ds[ax] * shape[ax]
			so -= ss[ax] * shape[ax]
			idx[ax] = 0
		}
		if ax < 0 {
			return
		}
	}
}

// addRun adds n elements of src (of dtype d) from element so to the
// accumulator acc (of dtype accT, float32 or float64) from element do.
func addRun(acc []byte, accT lgruntime.DType, do int, src []byte, d lgruntime.DType, so, n int) {
	if accT == lgruntime.Float32 {
		dst := lgruntime.View[float32](acc)[do : do+n]
		switch d {
		case lgruntime.Float32:
			for i, x := range lgruntime.View[float32](src)[so : so+n] {
				dst[i] += x
			}
		case lgruntime.Uint8:
			for i, x := range src[so : so+n] {
				dst[i] += float32(x)
			}
		default:
			elem := d.Size()
			for i := range dst {
				dst[i] += float32(d.Value(src[(so+i)*elem:]))
			}
		}
		return
	}
	dst := lgruntime.View[float64](acc)[do : do+n]
	if d == lgruntime.Float64 {
		for i, x := range lgruntime.View[float64](src)[so : so+n] {
			dst[i] += x
		}
		return
	}
	elem := d.Size()
	for i := range dst {
		dst[i] += d.Value(src[(so+i)*elem:])
	}
}

// averageRun writes n averaged values into out (dtype d) from element do:
// the sums of acc (dtype accT) there, times w and inv[i].
func averageRun(out []byte, d lgruntime.DType, acc []byte, accT lgruntime.DType, do, n int, w float64, inv []float64) {
	if accT == lgruntime.Float32 && d == lgruntime.Float32 {
		dst := lgruntime.View[float32](out)[do : do+n]
		for i, sum := range lgruntime.View[float32](acc)[do : do+n] {
			dst[i] = float32(float64(sum) * w * inv[i])
		}
		return
	}
	elem := d.Size()
	lo, hi := d.IntRange()
	for i := range n {
		var sum float64
		if accT == lgruntime.Float32 {
			sum = float64(lgruntime.View[float32](acc[(do+i)*4:])[0])
		} else {
			sum = lgruntime.View[float64](acc[(do+i)*8:])[0]
		}
		v := sum * w * inv[i]
		if !d.IsFloat() {
			v = min(max(math.RoundToEven(v), float64(lo)), float64(hi))
		}
		d.Put(out[(do+i)*elem:], v)
	}
}
