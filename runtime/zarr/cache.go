package zarr

import (
	"fmt"
	"os"
	"strconv"
	"sync"
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
// A Cache is safe for concurrent use.
type Cache struct {
	limit int64 // bytes

	// mu guards everything below. Any goroutine reading through the cache
	// takes it to look up, to insert a finished decode, and to evict.
	mu      sync.Mutex
	used    int64
	entries map[cacheKey]*cacheEntry
	lru     cacheEntry // sentinel of a circular list of loaded entries, most recent first
	stats   CacheStats
}

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
// others wait on done before reading them.
type cacheEntry struct {
	key        cacheKey
	data       []byte // decoded chunk; nil for a chunk that is not stored
	err        error
	size       int64
	done       chan struct{}
	prev, next *cacheEntry // the lru list, once loaded
}

// loader loads chunks for the cache (an Array).
type loader interface {
	load(chunk int64) ([]byte, error)
}

// NewCache returns a cache that holds up to maxMiB MiB of decoded chunks.
// A cache of 0 MiB holds nothing: every read decodes what it needs.
func NewCache(maxMiB int) *Cache {
	c := &Cache{limit: int64(maxMiB) << 20, entries: map[cacheKey]*cacheEntry{}}
	c.lru.prev, c.lru.next = &c.lru, &c.lru
	return c
}

// sharedCache is the cache arrays use unless told otherwise.
var sharedCache = sync.OnceValues(func() (*Cache, error) {
	mib := DefaultCacheMiB
	if v, ok := os.LookupEnv(CacheEnv); ok {
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

// get returns chunk key, loading it with l unless it is held or being
// loaded already. Errors are not kept: the next get tries again.
func (c *Cache) get(key cacheKey, l loader) ([]byte, error) {
	c.mu.Lock()
	if e, ok := c.entries[key]; ok {
		c.stats.Hits++
		if e.prev != nil { // loaded: most recent now
			e.unlink()
			c.pushFront(e)
			c.mu.Unlock()
			return e.data, nil
		}
		c.mu.Unlock()
		<-e.done
		return e.data, e.err
	}
	e := &cacheEntry{key: key, done: make(chan struct{})}
	c.entries[key] = e
	c.stats.Loads++
	c.mu.Unlock()

	data, err := l.load(key.chunk)

	c.mu.Lock()
	e.data, e.err = data, err
	if err != nil {
		delete(c.entries, key)
	} else {
		e.size = int64(len(data)) + cacheEntryOverhead
		c.used += e.size
		c.pushFront(e)
		for c.used > c.limit && c.lru.prev != &c.lru {
			c.evict(c.lru.prev)
		}
	}
	close(e.done)
	c.mu.Unlock()
	return data, err
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

// evict drops a loaded entry. Readers still copying from its data keep it
// alive until they are done; it is never reused.
func (c *Cache) evict(e *cacheEntry) {
	e.unlink()
	delete(c.entries, e.key)
	c.used -= e.size
	c.stats.Evictions++
}
