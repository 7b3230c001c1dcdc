package zarr

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"

	lgruntime "github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/storage"
	"github.com/loadergen/loadergen/runtime/zarr/blosc"
)

// raws recycles the buffers that hold chunks' stored bytes; a buffer
// belongs to one load between Get and Put.
var raws = sync.Pool{New: func() any { return new([]byte) }}

// chunkEntry is the cache key of decoded chunk number unit.
func (a *Array) chunkEntry(unit int64) cacheKey {
	return cacheKey{array: a.id, kind: decodedChunk, n: unit}
}

// load reads and decodes the entry of key: at least the bytes want of a
// decoded chunk, or a shard's index (whole). A chunk or shard that is not
// stored loads as nil (it reads as the fill value). A remote chunk stored
// as an uncompressed Blosc frame that the read-ahead lends is not copied:
// load returns the lent frame whole, and lent, which ends the lend. charge
// is the decode memory (decoding) that buf holds, which the cache gives
// back.
func (a *Array) load(ctx context.Context, key cacheKey, want window) (buf []byte, win window, lent func(), charge int64, err error) {
	if key.kind == shardIndex {
		var shard [maxRank]int
		n := len(a.shape)
		unravel(key.n, a.shards, shard[:n])
		sh := a.chain.shard
		need := int64(sh.indexLen) + sh.index.scratch(sh.indexLen, false, false)
		if err := decoding.acquire(need); err != nil {
			return nil, window{}, nil, 0, a.chunkError(shard[:n], nil, fmt.Errorf("index: %w", err))
		}
		buf, err := a.loadIndex(ctx, shard[:n])
		if buf != nil {
			charge = int64(sh.indexLen)
		}
		decoding.release(need - charge)
		return buf, window{0, sh.indexLen}, nil, charge, err
	}
	return a.loadUnit(ctx, key.n, nil, window{}, want)
}

// extend decodes the bytes of want that a decoded chunk's buffer buf
// lacks, which holds the window have of it already (Cache.get's protocol).
func (a *Array) extend(ctx context.Context, key cacheKey, buf []byte, have, want window) (window, error) {
	if key.kind != decodedChunk || buf == nil {
		return window{}, fmt.Errorf("zarr array %s: extending entry %+v (a bug)", a.dir, key)
	}
	out, win, _, _, err := a.loadUnit(ctx, key.n, buf, have, want)
	if err == nil && out == nil {
		var idx [maxRank]int
		unravel(key.n, a.grid, idx[:len(a.shape)])
		return window{}, a.chunkError(idx[:len(a.shape)], nil, errors.New("the chunk's file is gone since it was first read"))
	}
	return win, err
}

// loadUnit decodes the bytes of want that out lacks, of decoded chunk
// number unit, into out (a buffer from the cache holding the window have
// already, or nil, with have empty, to get one), and returns out and the
// window it then holds, which holds have and want. It writes nothing
// inside have. A first load (out nil) may return lent bytes instead (see
// load). It takes the decode memory (decoding) that a new buffer and the
// decoder's scratch need before either is allocated, and a chunk that
// needs more than the bound is an error; charge is what the new buffer
// holds of it when one is returned.
func (a *Array) loadUnit(ctx context.Context, unit int64, out []byte, have, want window) (buf []byte, win window, lent func(), charge int64, err error) {
	if !a.partial {
		want = window{0, a.unitBytes}
	}
	n := len(a.shape)
	var idx [maxRank]int
	unravel(unit, a.grid, idx[:n])
	c := &a.chain
	var place innerPlace
	if sh := a.chain.shard; sh != nil {
		// The shard's index first: it is loaded, and its memory taken,
		// while this load holds none.
		c = &sh.inner
		if place, err = a.locate(ctx, idx[:n]); err != nil || !place.stored {
			return nil, window{}, nil, 0, err // not stored: an empty inner chunk, or a shard not written
		}
	}
	extending := have.lo < have.hi
	need := c.scratch(a.unitBytes, extending, !extending && a.partial && want.hi <= a.unitBytes/2)
	if out == nil {
		need += int64(a.unitBytes)
	}
	if err := decoding.acquire(need); err != nil {
		return nil, window{}, nil, 0, &ChunkError{Array: a.dir, Chunk: a.ChunkName(unit), Err: err}
	}
	fresh := out == nil
	switch {
	case a.chain.shard != nil:
		buf, win, err = a.loadInner(ctx, place, out, have, want)
	case a.remote != nil:
		buf, win, lent, err = a.loadRemoteChunk(ctx, idx[:n], out, have, want)
	default:
		buf, win, err = a.loadChunk(idx[:n], out, have, want)
	}
	if fresh && buf != nil && lent == nil && err == nil {
		charge = int64(a.unitBytes)
	}
	decoding.release(need - charge)
	return buf, win, lent, charge, err
}

// loadChunk reads and decodes the bytes of want that out lacks (it holds
// have; nil: a new buffer) of the chunk at grid index idx of an array
// without shards, and returns out and the window it then holds. A chunk
// stored as it decodes (no codec, or an uncompressed Blosc frame, the
// common case for EM data under blosc-lz4) is read straight into its
// buffer, and only the bytes of want outside have: a box that crosses a
// chunk boundary reads the suffix it needs of the first chunk, not the
// chunk up to that suffix's end.
func (a *Array) loadChunk(idx []int, out []byte, have, want window) ([]byte, window, error) {
	f, size, err := a.openStored(idx)
	if f == nil {
		return nil, window{}, err
	}
	defer f.Close()
	if size > a.storedLimit() {
		return nil, window{}, a.chunkError(idx, nil, a.errStoredSize(size))
	}
	if skip, ok := a.chain.storedAsIs(size, a.unitBytes); ok {
		if out == nil {
			out = a.cache.buffer(a.unitBytes)
		}
		win, ok, err := readStored(f, out, skip, have, want)
		if err != nil {
			return nil, window{}, a.chunkError(idx, nil, readError(err, size))
		}
		if ok {
			return out, win, nil
		}
	}
	buf := raws.Get().(*[]byte)
	defer raws.Put(buf)
	if *buf, err = readAt(f, *buf, 0, size); err != nil {
		return nil, window{}, a.chunkError(idx, nil, err)
	}
	return a.decode(&a.chain, *buf, out, have, want, idx, nil)
}

// readStored reads into out, after its headroom, the bytes of want that
// it lacks (it holds have) of a chunk stored as it decodes in f, after
// skip bytes of a Blosc header, and returns the window out then holds. A
// first read (have empty) reads the header into the headroom, where later
// ones find it. ok is false, with nothing read but the header, when the
// header is not a stored frame's: the chunk must be decoded.
func readStored(f *os.File, out []byte, skip int, have, want window) (win window, ok bool, err error) {
	if have.lo >= have.hi {
		if skip > 0 {
			if _, err := f.ReadAt(out[headroom-skip:headroom], 0); err != nil {
				return window{}, false, err
			}
		}
		have = window{want.lo, want.lo}
	}
	if skip > 0 && !isStoredFrame(out, len(out)-headroom) {
		return window{}, false, nil
	}
	for _, r := range []window{{want.lo, have.lo}, {have.hi, want.hi}} {
		if r.lo < r.hi {
			if _, err := f.ReadAt(out[headroom+r.lo:headroom+r.hi], int64(skip+r.lo)); err != nil {
				return window{}, false, err
			}
		}
	}
	return window{min(have.lo, want.lo), max(have.hi, want.hi)}, true, nil
}

// loadRemoteChunk is loadChunk for a remote array: one request reads the
// stored chunk whole (a ranged read of a chunk stored as it decodes would
// save bytes but cost a request for its size first), or the read-ahead
// lends it, which decodes it from the bytes it fetched, without a copy. A
// first load (out nil) of a lent chunk stored as an uncompressed Blosc
// frame returns the frame itself, whose header takes the headroom's
// place, and lent, which ends the lend: the cache holds it as it is.
func (a *Array) loadRemoteChunk(ctx context.Context, idx []int, out []byte, have, want window) ([]byte, window, func(), error) {
	key := a.key(idx)
	if l, ok := a.remote.(storage.Lender); ok {
		raw, release, err := l.Lend(ctx, key)
		if release != nil && out == nil && a.storedFrame(raw) {
			a.noteStored(len(raw))
			return raw, window{0, a.unitBytes}, release, nil
		}
		if release != nil {
			defer release()
		}
		if release != nil || err != nil {
			buf, win, err := a.decodeRemote(idx, raw, err, out, have, want)
			return buf, win, nil, err
		}
	}
	buf := raws.Get().(*[]byte)
	defer raws.Put(buf)
	raw, err := a.remote.ReadAll(ctx, key, *buf, a.storedLimit())
	if err == nil {
		*buf = raw
	}
	out, win, err := a.decodeRemote(idx, raw, err, out, have, want)
	return out, win, nil, err
}

// storedFrame reports whether raw, a remote chunk's stored bytes, is an
// uncompressed Blosc frame that holds the decoded chunk after its header.
func (a *Array) storedFrame(raw []byte) bool {
	skip, ok := a.chain.storedAsIs(int64(len(raw)), a.unitBytes)
	return ok && skip == headroom && isStoredFrame(raw, a.unitBytes)
}

// decodeRemote decodes the stored bytes raw of remote chunk idx, read with
// error err, as loadChunk does, and notes their size for ReadAhead.
func (a *Array) decodeRemote(idx []int, raw []byte, err error, out []byte, have, want window) ([]byte, window, error) {
	if errors.Is(err, fs.ErrNotExist) {
		return nil, window{}, nil // never written: the fill value
	}
	if err != nil {
		return nil, window{}, a.chunkError(idx, nil, err)
	}
	a.noteStored(len(raw))
	return a.decode(&a.chain, raw, out, have, want, idx, nil)
}

// noteStored records that a chunk of this array is stored in n bytes: the
// largest is what ReadAhead expects of chunks it hints.
func (a *Array) noteStored(n int) {
	for {
		seen := a.storedMax.Load()
		if int64(n) <= seen || a.storedMax.CompareAndSwap(seen, int64(n)) {
			return
		}
	}
}

// readRange reads n bytes at offset off of the object at key into buf
// (grown as needed): a local file, or a remote object.
func (a *Array) readRange(ctx context.Context, key string, buf []byte, off, n int64) ([]byte, error) {
	if a.remote == nil {
		return readFile(filepath.Join(a.dir, filepath.FromSlash(key)), buf, off, n)
	}
	if n > maxChunkBytes {
		return buf, fmt.Errorf("%d bytes is more than a chunk may hold", n)
	}
	buf = slices.Grow(buf[:0], int(n))[:n]
	return buf, a.remote.ReadAt(ctx, key, buf, off)
}

// openStored opens the file of the chunk or shard at grid index idx and
// returns its size. A file that does not exist gives a nil file, and the
// error of missing.
func (a *Array) openStored(idx []int) (*os.File, int64, error) {
	f, err := os.Open(filepath.Join(a.dir, filepath.FromSlash(a.key(idx))))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, 0, a.missing(idx)
	}
	if err != nil {
		return nil, 0, a.chunkError(idx, nil, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, a.chunkError(idx, nil, err)
	}
	return f, st.Size(), nil
}

// isStoredFrame reports whether out holds, in its headroom and data, a
// Blosc frame that stores n bytes uncompressed.
func isStoredFrame(out []byte, n int) bool {
	h, err := blosc.ParseHeader(out)
	return err == nil && h.Stored() && h.NBytes == n
}

// decode decodes the bytes of want that out lacks (it holds have; nil: a
// new buffer from the cache) of a chunk from its stored bytes src with c,
// and returns out and the window it then holds.
func (a *Array) decode(c *chain, src, out []byte, have, want window, idx, inner []int) ([]byte, window, error) {
	if out == nil {
		out = a.cache.buffer(a.unitBytes)
	}
	d := decoders.Get().(*decoder)
	defer decoders.Put(d)
	win, err := c.decodeRange(d, out[headroom:], src, have, want, a.unit, a.dtype.Size())
	if err != nil {
		// The chunk's bytes are bad: a source may skip the sample
		// (on_error: skip), as it may not a chunk it failed to read.
		return nil, window{}, a.chunkError(idx, inner, &lgruntime.BadSampleError{Err: err})
	}
	return out, win, nil
}

// missing handles a chunk or shard file that does not exist: the chunk was
// never written and reads as the fill value, unless the array's directory
// is gone too (a store removed or unmounted while in use).
func (a *Array) missing(idx []int) error {
	if _, err := os.Stat(a.dir); err != nil {
		return a.chunkError(idx, nil, fmt.Errorf("the array's directory is gone: %w", err))
	}
	return nil
}

// readFile reads n bytes at offset off of file into buf (grown as needed).
func readFile(file string, buf []byte, off, n int64) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return buf, err
	}
	defer f.Close()
	return readAt(f, buf, off, n)
}

// readAt reads n bytes at offset off of f into buf (grown as needed).
func readAt(f *os.File, buf []byte, off, n int64) ([]byte, error) {
	if n > maxChunkBytes {
		return buf, fmt.Errorf("%d bytes is more than a chunk may hold", n)
	}
	buf = slices.Grow(buf[:0], int(n))[:n]
	if _, err := f.ReadAt(buf, off); err != nil {
		return buf, readError(err, off+n)
	}
	return buf, nil
}

// readError explains a read that hit the end of a file before byte end.
func readError(err error, end int64) error {
	if errors.Is(err, io.EOF) {
		return fmt.Errorf("file ends before byte %d (truncated while in use?)", end)
	}
	return err
}
