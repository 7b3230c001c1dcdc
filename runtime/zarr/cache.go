package zarr

import (
	"fmt"
	"os"
	goruntime "runtime"
	"strconv"
	"sync"

	"github.com/loadergen/loadergen/runtime/zarr/blosc"
)

// DefaultCacheMiB is the size of the shared cache of decoded chunks unless
// the environment variable LOADERGEN_ZARR_CACHE_MB says otherwise: 4 GiB,
// a sixteenth of a 64 GiB training node, holds 4096 chunks of 1 MiB.
const DefaultCacheMiB = 4096

// CacheEnv names the environment variable that sizes the shared cache, in
// MiB; 0 turns caching off (every read decodes its chunks).
const CacheEnv = "LOADERGEN_ZARR_CACHE_MB"

// Cache holds decoded chunks of any number of arrays, within a size limit,
// and evicts the least recently used. All workers of a loader share one, so
// a chunk that several crops touch is decoded once; concurrent requests for
// a chunk being decoded wait for that decode instead of starting their own.
// The buffers of evicted chunks are decoded into again once no reader is
// copying from them, so reading does not allocate in steady state even when
// every read evicts. A Cache is safe for concurrent use.
type Cache struct {
	limit int64 // bytes; NewCache sets it, nothing changes it

	// mu guards everything below. Any goroutine reading through the cache
	// takes it to look up, to insert a finished decode, to evict, to release
	// an entry it has copied from, and to take or give back a free buffer.
	mu      sync.Mutex
	used    int64
	entries map[cacheKey]*cacheEntry
	lru     cacheEntry       // sentinel of a circular list of loaded entries, most recent first
	free    map[int][][]byte // buffers of evicted, unreferenced chunks, by size
	stats   CacheStats
}

// maxFree bounds the free buffers kept per size: enough for every processor
// to hold a few chunks it is copying from.
var maxFree = 4 * goruntime.GOMAXPROCS(0)

// CacheStats counts a cache's work since it was made.
type CacheStats struct {
	Hits      int64 // chunks found decoded (or being decoded by another reader)
	Loads     int64 // chunks read and decoded
	Evictions int64 // chunks dropped to stay within the limit
	Bytes     int64 // bytes held now
	Entries   int   // chunks held now
}

// cacheKey names one decoded chunk: chunk is its index in its array's grid
// of decoded chunks, or a negative number for a shard's index.
type cacheKey struct {
	array uint64
	chunk int64
}

// cacheEntryOverhead is what an entry costs besides its data, so that the
// limit also bounds the entries of missing chunks.
const cacheEntryOverhead = 128

// cacheEntry is a chunk, loaded or being loaded. The goroutine that inserts
// it loads it and then, under mu, sets data, err and size and closes done;
// others wait on done before reading them. refs and evicted change under mu.
type cacheEntry struct {
	key        cacheKey
	buf        []byte // what the loader returned: headroom bytes, then data
	data       []byte // decoded chunk; nil for a chunk that is not stored
	err        error
	size       int64
	done       chan struct{}
	refs       int         // readers that got the entry from get and have not released it
	evicted    bool        // out of the map: its buffer is freed when refs drops to 0
	prev, next *cacheEntry // the lru list, once loaded
}

// loader loads chunks for the cache (an Array). load returns a buffer from
// Cache.buffer holding the chunk after its headroom, or nil for a chunk
// that is not stored.
type loader interface {
	load(chunk int64) ([]byte, error)
}

// headroom is the space before a chunk's data in its buffer: a chunk stored
// as an uncompressed Blosc frame is read straight into its buffer, header
// first, so that its data needs no copy.
const headroom = blosc.HeaderSize

// NewCache returns a cache that holds up to maxMiB MiB of decoded chunks.
// A cache of 0 MiB holds nothing: every read decodes what it needs.
func NewCache(maxMiB int) *Cache {
	c := &Cache{limit: int64(maxMiB) << 20, entries: map[cacheKey]*cacheEntry{}, free: map[int][][]byte{}}
	c.lru.prev, c.lru.next = &c.lru, &c.lru
	return c
}

// sharedCache is the cache arrays use unless told otherwise.
var sharedCache = sync.OnceValues(func() (*Cache, error) {
	mib := DefaultCacheMiB
	if v := os.Getenv(CacheEnv); v != "" { // empty is unset, as for every variable of loadergen
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 1<<30 {
			return nil, fmt.Errorf("environment %s=%q: want a size in MiB from 0 to %d", CacheEnv, v, 1<<30)
		}
		mib = n
	}
	return NewCache(mib), nil
})

// SharedCache returns the process-wide cache that stores opened without a
// cache of their own use: DefaultCacheMiB, or CacheEnv's value.
func SharedCache() (*Cache, error) { return sharedCache() }

// Stats returns the cache's counters.
func (c *Cache) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Bytes, s.Entries = c.used, len(c.entries)
	return s
}

// get returns the entry of chunk key, loading it with l unless it is held
// or being loaded already. The caller reads the entry's data and then
// releases it, and may not touch the data after. Errors are not kept: the
// next get tries again.
func (c *Cache) get(key cacheKey, l loader) (*cacheEntry, error) {
	c.mu.Lock()
	if e, ok := c.entries[key]; ok {
		c.stats.Hits++
		e.refs++
		if e.prev != nil { // loaded: most recent now
			e.unlink()
			c.pushFront(e)
			c.mu.Unlock()
			return e, nil
		}
		c.mu.Unlock()
		<-e.done
		if e.err != nil {
			c.release(e)
			return nil, e.err
		}
		return e, nil
	}
	e := &cacheEntry{key: key, done: make(chan struct{}), refs: 1}
	c.entries[key] = e
	c.stats.Loads++
	c.mu.Unlock()

	buf, err := l.load(key.chunk)

	c.mu.Lock()
	e.err = err
	if buf != nil {
		e.buf, e.data = buf, buf[headroom:]
	}
	if err != nil {
		delete(c.entries, key)
		e.evicted = true
	} else {
		e.size = int64(len(buf)) + cacheEntryOverhead
		c.used += e.size
		c.pushFront(e)
		for c.used > c.limit && c.lru.prev != &c.lru {
			c.evict(c.lru.prev)
		}
	}
	close(e.done)
	c.mu.Unlock()
	if err != nil {
		c.release(e)
		return nil, err
	}
	return e, nil
}

// release ends a reader's use of an entry from get.
func (c *Cache) release(e *cacheEntry) {
	c.mu.Lock()
	e.refs--
	if e.refs == 0 && e.evicted {
		c.recycle(e)
	}
	c.mu.Unlock()
}

// buffer returns a buffer for a chunk of n bytes to be decoded into, after
// headroom bytes: a recycled one when there is one. Its content is
// undefined.
func (c *Cache) buffer(n int) []byte {
	c.mu.Lock()
	defer c.mu.Unlock()
	if free := c.free[n]; len(free) > 0 {
		b := free[len(free)-1]
		c.free[n] = free[:len(free)-1]
		return b
	}
	return make([]byte, headroom+n)
}

// recycle keeps an unreferenced, evicted entry's buffer for a later decode.
// mu is held.
func (c *Cache) recycle(e *cacheEntry) {
	if n := len(e.data); e.buf != nil && len(c.free[n]) < maxFree {
		c.free[n] = append(c.free[n], e.buf)
	}
	e.buf, e.data = nil, nil
}

func (c *Cache) pushFront(e *cacheEntry) {
	e.prev, e.next = &c.lru, c.lru.next
	c.lru.next.prev = e
	c.lru.next = e
}

func (e *cacheEntry) unlink() {
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
}

// evict drops a loaded entry; its buffer is recycled once the readers
// still copying from it have released it.
func (c *Cache) evict(e *cacheEntry) {
	e.unlink()
	delete(c.entries, e.key)
	e.evicted = true
	c.used -= e.size
	c.stats.Evictions++
	if e.refs == 0 {
		c.recycle(e)
	}
}
