package zarr

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/loadergen/loadergen/runtime/loaderimpl"
	"github.com/loadergen/loadergen/runtime/zarr/blosc"
)

// DefaultCacheMiB is what the shared caches of decoded chunks of one node
// hold together unless the environment variable LOADERGEN_ZARR_CACHE_MB
// says otherwise: 4 GiB, a sixteenth of a 64 GiB training node, 4096 chunks
// of 1 MiB. Each process takes its share: DefaultCacheMiB divided by the
// processes that the launcher places on the node (loaderimpl.LocalProcesses),
// 512 MiB for each of 8 torchrun ranks.
const DefaultCacheMiB = 4096

// CacheEnv names the environment variable that sizes the shared cache, in
// MiB per process (not divided among the node's processes); 0 turns
// caching off (every read decodes its chunks).
const CacheEnv = "LOADERGEN_ZARR_CACHE_MB"

// Cache holds decoded chunks of any number of arrays, within a size limit,
// and evicts the least recently used that no read announced by
// Array.ReadAhead needs (see victim). All workers of a loader share one, so
// a chunk that several crops touch is decoded once; concurrent requests for
// a chunk being decoded wait for that decode instead of starting their own.
// The buffers of evicted chunks are decoded into again once no reader is
// copying from them, so reading does not allocate in steady state even when
// every read evicts. A Cache is safe for concurrent use.
//
// An entry holds a window of its chunk: bytes [lo, hi) of the chunk decoded
// in C order, with the window recorded in the entry. A read asks for the
// window from the first to the last byte its part of the chunk covers (the
// whole chunk where the chunk is stored transposed, or its codecs cannot
// decode in part; from byte 0 where a compressed stream must be decoded
// from its start); a read that needs bytes outside an entry's window
// extends it to the smallest window holding both, decoding only the bytes
// it lacks below and above (a compressed stream is decoded again whole,
// aside, and its bytes past hi copied, so it is extended once at most;
// Blosc decodes only the further blocks; an uncompressed chunk reads only
// the further bytes; see chain.decodeRange). Each entry's buffer is sized
// for the whole chunk and charged whole against the limit, so an extension
// never moves the data readers are copying from.
//
// A remote chunk stored as an uncompressed Blosc frame is held as its
// root's read-ahead lent it, not copied (see loader): the entry is the
// whole chunk, charged as a decoded one, and eviction ends the lend.
//
// The cache grows as its reads show that growing pays: it holds at most
// target bytes, which starts at GrowFromMiB and grows toward limit only
// by memory that misses have already paid for. A miss on a chunk evicted
// lately (a ghost) costs a load that a cache larger by the ghost's
// distance (the bytes evicted since it, its own included) would not have
// made. The cache tallies what those loads cost, at its measured decode
// time per byte, by distance; once the misses within some distance have
// cost what new memory for that distance costs, at its measured cost per
// byte, it grows by that distance and clears their tally (see growth).
// Memory new to the process costs a page fault per page when first
// written, far less than a decode on a machine of its own but 4.5 to 7
// ms a MiB in a VM whose host backs each page on first touch, against 0.3
// to 1.3 ms a MiB to decode a chunk again: a rule that grew on every such miss made
// a cold epoch slower than a cache of GrowFromMiB that decodes into the
// buffers it evicts. This is the rent-or-buy rule: a cache whose reads
// do not come back pays for no memory, and one whose reads keep coming
// back grows to hold them once re-reading has cost what the memory costs,
// about twice, at most, what the better of never growing and growing at
// once would have cost. A size the environment sets (CacheEnv) is held
// from the start: the user has said what memory to spend.
type Cache struct {
	limit int64  // bytes; NewCache sets it, nothing changes it
	why   string // how the shared cache's size was chosen, for Describe; "" for NewCache's. Set before the cache is shared
	grows bool   // whether target starts below limit, to grow as misses pay (not for a size the environment set). Set before the cache is shared

	// mu guards everything below. Any goroutine reading through the cache
	// takes it to look up, to insert a finished decode, to evict, to release
	// an entry it has copied from, and to take or give back a free buffer.
	mu      sync.Mutex
	used    int64
	target  int64 // what the cache holds at most now: from GrowFromMiB up to limit, grown by finish (growth)
	entries map[cacheKey]*cacheEntry
	// ghosts are the chunks evicted lately: a miss on one may grow
	// target. ghostOrder holds them oldest first (with keys of ghosts
	// since gone, which a stale eviction mark tells), ghostBytes their
	// sizes' sum, kept within limit - target (what growing could still
	// add). evicted is the bytes evicted since the cache was made, which
	// marks each ghost: a ghost's distance is the bytes evicted since it,
	// its own included.
	ghosts     map[cacheKey]ghost
	ghostOrder []ghostRef
	ghostBytes int64
	evicted    int64
	// costs is what loads and new buffers have cost (fetch adds each
	// load's time when it ends, buffer each new buffer's); rent is what
	// misses on ghosts have cost, by distance, that growing has not
	// answered yet: finish adds to it and clears it (growth).
	costs costs
	rent  rent
	lru   cacheEntry       // sentinel of a circular list of loaded entries, most recent first
	free  map[int][][]byte // buffers of evicted, unreferenced chunks, by size
	// freeBytes is the bytes of the buffers in free.
	freeBytes int64
	stats     CacheStats
	// hints holds, by chunk, the reads that Array.ReadAhead announced and
	// that have not happened yet; after links each announced read, by its
	// number, to the next one announced of the same chunk; seq numbers the
	// announced reads in the order announced, which is the order the
	// epoch makes them (a loader's engine announces its batches in order,
	// batches ahead); read is the number of the latest announced read
	// made. expect writes them, on the goroutine that calls ReadAhead;
	// fetch consumes them (consume), on the readers' goroutines; mu
	// orders those writes, and eviction (victim) reads them under it.
	hints map[cacheKey]hint
	after map[uint64]uint64
	seq   uint64
	read  uint64
}

// ghost is an evicted chunk a read may come back to: its entry's size,
// and the cache's evicted bytes once it was evicted.
type ghost struct {
	size int64
	at   int64
}

// ghostRef is a ghost in order of eviction: its key and mark (ghost.at).
type ghostRef struct {
	key cacheKey
	at  int64
}

// costs is what the growth rule knows of this machine, measured as the
// cache works: the time loads took (reading and decoding, and allocating
// new buffers), the bytes they decoded, and the time and bytes of the new
// buffers that loads asked for (allocation and a write to each page:
// buffer). A load's decode time is its time less its new buffer's, so
// decode per byte is (loadNs - freshNs) / loadBytes. With pinned set (a
// test's costs), nothing measured is added.
type costs struct {
	loadNs, loadBytes   int64
	freshNs, freshBytes int64
	pinned              bool
}

// rates returns the measured costs in ns per byte: of decoding a chunk
// (0 before any load), and of a new buffer (the decode cost before any
// buffer was made: the chunks held are then lent, and growing keeps each
// from being recycled, about what reading it again costs).
func (k costs) rates() (decode, fresh float64) {
	if k.loadBytes > 0 {
		decode = float64(max(k.loadNs-k.freshNs, 0)) / float64(k.loadBytes)
	}
	fresh = decode
	if k.freshBytes > 0 {
		fresh = float64(k.freshNs) / float64(k.freshBytes)
	}
	return decode, fresh
}

// rent is the load time that misses on ghosts have cost, tallied by the
// ghost's distance (the bytes evicted since it, its own included): ns[b]
// is that of the misses at distances from 2^(b-1) (excluded) to 2^b
// bytes, and far[b] the farthest of them.
type rent struct {
	ns  [64]float64
	far [64]int64
}

// growth is the growth rule. A miss on a ghost at distance dist, whose
// load decoded loaded bytes, adds that load's cost (decode ns per byte) to
// r. The cache then grows by the farthest distance d of the misses within
// some power of two of distance whose loads, with those of every nearer
// miss, have cost what d bytes of new memory cost (fresh ns per byte):
// growing by d would have saved every one of those loads. That rent is
// spent (cleared); where several distances qualify, the farthest is
// taken. It grows no further than room (what is left to the limit), and
// then pays for that alone. It returns the bytes to grow by.
func growth(r *rent, decode, fresh float64, loaded, dist, room int64) int64 {
	if dist <= 0 || room <= 0 {
		return 0
	}
	b := bits.Len64(uint64(dist - 1))
	r.ns[b] += decode * float64(loaded)
	r.far[b] = max(r.far[b], dist)
	var paid float64
	grow, upto := int64(0), -1
	for i := range r.ns {
		paid += r.ns[i]
		if i < b || r.far[i] == 0 {
			continue
		}
		if n := min(r.far[i], room); float64(n)*fresh <= paid {
			grow, upto = n, i
		}
	}
	clear(r.ns[:upto+1])
	clear(r.far[:upto+1])
	return grow
}

// hint is a chunk's announced reads that have not happened yet: n of
// them, the earliest numbered next and the latest last.
type hint struct {
	n          int
	next, last uint64
}

// maxHints bounds the chunks with announced reads: announcements that are
// never read (an epoch given up half way) would otherwise pile up. Past it
// they are all forgotten, and eviction is least recently used until the
// next ones.
const maxHints = 1 << 16

// staleReads is how far behind the latest announced read made an
// announced read may be and still be expected: reads come in about the
// order announced, a few batches apart at most, so one this far behind
// was given up (its epoch left half way), and eviction no longer keeps
// its chunk for it. 4096 reads are 40 batches of 8 crops of 3 arrays
// with 4 chunks a box.
const staleReads = 1 << 12

// maxFree bounds the free buffers kept per size: enough for every processor
// to give back at once the chunks a read held, evicted while it copied
// from them, so that the next loads decode into them rather than into new
// memory. A turned crop's sampled read holds a dozen or so of each array's
// chunks: with 4 a processor, a cold epoch of examples/peer/turned's
// turned loader on 2 processors dropped 25 to 46 buffers and made as many
// new ones.
var maxFree = 16 * runtime.GOMAXPROCS(0)

// CacheStats counts a cache's work since it was made.
type CacheStats struct {
	Hits      int64 // chunks found decoded (or being decoded by another reader)
	Loads     int64 // chunks read and decoded (a window of them, at least)
	Extends   int64 // decoded windows extended for a read that needed more
	Evictions int64 // chunks dropped to stay within the limit
	Announced int64 // chunk reads announced by Array.ReadAhead (eviction keeps their chunks until they are made)
	Ghosts    int64 // loads of chunks evicted lately (see Cache)
	Grows     int64 // those of Ghosts that grew Target: the misses till then had paid for the memory
	Bytes     int64 // bytes held now
	Target    int64 // bytes the cache may hold now: it grows from GrowFromMiB to its limit as misses on evicted chunks pay for the memory
	Entries   int   // chunks held now

	// DecodeCost and FreshCost are the growth rule's measures, per MiB:
	// what a load took, less its new buffer, and what a new buffer took
	// (allocating it and writing each page).
	DecodeCost, FreshCost time.Duration
}

// cacheKey names one entry of a cache: a decoded chunk of an array, or the
// index of one of its shards.
type cacheKey struct {
	array uint64 // Array.id
	kind  entryKind
	// n numbers the chunk in its array's grid of decoded chunks
	// (Array.grid), or the shard in its grid of shards (Array.shards).
	n int64
}

// entryKind says what a cache entry holds.
type entryKind uint8

const (
	decodedChunk entryKind = iota // a decoded chunk, or a window of it
	shardIndex                    // a shard's decoded index, whole
)

// cacheEntryOverhead is what an entry costs besides its data, so that the
// limit also bounds the entries of missing chunks.
const cacheEntryOverhead = 128

// cacheEntry is a chunk, loaded or being loaded. The goroutine that inserts
// it loads it and then, under mu, sets data, win, err and size and closes
// done; others wait on done before reading them. refs and evicted change
// under mu.
//
// Extending: a goroutine that finds win short of what it needs, with
// growing nil, sets growing under mu, decodes the bytes it lacks outside
// win into data outside mu (nobody reads outside win, so nobody reads what
// it writes, and it writes nothing inside win), then under mu sets win and
// closes and clears growing. Others that need more than win wait on
// growing and look again, so a chunk has one decode at a time, and the
// bytes of a window never change once they are out.
type cacheEntry struct {
	key        cacheKey
	buf        []byte        // what the loader returned: headroom bytes, then data
	data       []byte        // the chunk's buffer, of the whole chunk's size; nil for a chunk that is not stored
	lent       func()        // ends the lend of buf when a root lent it (see loader); recycle calls it
	win        window        // data[win.lo:win.hi] is decoded
	growing    chan struct{} // non-nil while a goroutine extends data past win
	err        error
	size       int64
	done       chan struct{}
	refs       int         // readers that got the entry from get and have not released it
	dist       int64       // set by begin where the chunk was a ghost: its distance, for endLoad's growth
	evicted    bool        // out of the map: its buffer is freed when refs drops to 0
	charge     int64       // decode memory its buffer holds until recycled: set by endLoad when it evicts the entry at once
	prev, next *cacheEntry // the lru list, once loaded
}

// window is the bytes [lo, hi) of a decoded chunk, in C order.
type window struct{ lo, hi int }

// holds reports whether s holds every byte of t.
func (s window) holds(t window) bool { return s.lo <= t.lo && t.hi <= s.hi }

// loader loads chunks for the cache (an Array), within the context of the
// read that asked (a read whose context is done fails). load returns a buffer from
// Cache.buffer holding at least the bytes want of the decoded chunk after
// its headroom, and the window it holds, or nil for a chunk that is not
// stored; or, with lent not nil, bytes a root lent (a stored frame: its
// header, then the whole chunk), which nobody may change and which the
// cache holds until it drops the entry and its last reader releases it,
// and then calls lent. charge is the decode memory (decoding) that buf
// holds, which the cache gives back (endLoad). extend decodes the bytes of
// want that have lacks into buf (from load, holding have already) and
// returns the window buf then holds, which holds have and want; it writes
// nothing inside have.
type loader interface {
	load(ctx context.Context, key cacheKey, want window) (buf []byte, win window, lent func(), charge int64, err error)
	extend(ctx context.Context, key cacheKey, buf []byte, have, want window) (window, error)
}

// headroom is the space before a chunk's data in its buffer: a chunk stored
// as an uncompressed Blosc frame is read straight into its buffer, header
// first, so that its data needs no copy.
const headroom = blosc.HeaderSize

// GrowFromMiB is what a cache holds at most until misses on chunks it
// evicted pay for more (see Cache): 16 MiB, 16 chunks of 1 MiB, the chunks
// a few crops read at once. More is memory new to the process that a cold
// epoch pays for before any chunk comes back: on the development VM the
// first 64 crops of make peer's big blosc-lz4 store ran at 360 crops/s
// with 16 MiB and 291 with 32 (docs/PERFORMANCE.md, "The first epoch").
const GrowFromMiB = 16

// NewCache returns a cache that holds up to maxMiB MiB of decoded chunks,
// growing to it from GrowFromMiB as its reads show that growing pays. A cache of 0 MiB
// holds nothing: every read decodes what it needs.
func NewCache(maxMiB int) *Cache {
	limit := int64(maxMiB) << 20
	c := &Cache{limit: limit, target: min(limit, GrowFromMiB<<20), grows: limit > GrowFromMiB<<20, entries: map[cacheKey]*cacheEntry{}, ghosts: map[cacheKey]ghost{},
		free: map[int][][]byte{}, hints: map[cacheKey]hint{}, after: map[uint64]uint64{}}
	c.lru.prev, c.lru.next = &c.lru, &c.lru
	return c
}

// newHeldCache returns a cache of maxMiB MiB that takes its size as chunks
// come, without waiting for misses to pay for it (NewCache's growth): for a
// size someone chose, CacheEnv's.
func newHeldCache(maxMiB int) *Cache {
	c := NewCache(maxMiB)
	c.target, c.grows = c.limit, false
	return c
}

// sharedCache is the cache arrays use unless told otherwise.
var sharedCache = sync.OnceValues(func() (*Cache, error) { return newSharedCache(os.Getenv) })

// newSharedCache makes the shared cache as the environment, read through
// getenv, sizes it: CacheEnv's MiB, else this process's share of
// DefaultCacheMiB.
func newSharedCache(getenv func(string) string) (*Cache, error) {
	if v := getenv(CacheEnv); v != "" { // empty is unset, as for every variable of loadergen
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 || n > 1<<30 {
			return nil, fmt.Errorf("environment %s=%q: want a size in MiB from 0 to %d", CacheEnv, v, 1<<30)
		}
		c := newHeldCache(n) // a size the user set is theirs to spend
		c.why = fmt.Sprintf("%s=%s, per process", CacheEnv, v)
		return c, nil
	}
	local, from, err := loaderimpl.LocalProcesses(getenv)
	if err != nil {
		return nil, fmt.Errorf("zarr chunk cache: %w", err)
	}
	ranks := fmt.Sprintf("%d local ranks", local)
	if local == 1 {
		ranks = "1 local rank"
	}
	if from == "" {
		from = "no launcher variable gives the count"
	}
	c := NewCache(max(DefaultCacheMiB/local, 1))
	c.why = fmt.Sprintf("%s per node / %s, %s", mibString(DefaultCacheMiB), ranks, from)
	return c, nil
}

// SharedCache returns the process-wide cache that stores opened without a
// cache of their own use: CacheEnv's size, else this process's share of
// DefaultCacheMiB. Its Describe says which.
func SharedCache() (*Cache, error) { return sharedCache() }

// Describe says how large the cache may grow, how it grows and, for the
// shared cache, why it is that large: "512 MiB (4 GiB per node / 8 local
// ranks, torchrun's LOCAL_WORLD_SIZE; grows from 16 MiB as re-reading
// evicted chunks pays for the memory)", "1000 MiB (LOADERGEN_ZARR_CACHE_MB=1000, per
// process; ...)", "off (...)".
func (c *Cache) Describe() string {
	size := "off"
	if c.limit > 0 {
		size = mibString(int(c.limit >> 20))
	}
	why := c.why
	if c.grows {
		if why != "" {
			why += "; "
		}
		why += fmt.Sprintf("grows from %s as re-reading evicted chunks pays for the memory", mibString(GrowFromMiB))
	}
	if why == "" {
		return size
	}
	return size + " (" + why + ")"
}

// mibString writes a size in MiB, in GiB when it is a whole number of them.
func mibString(mib int) string {
	if mib >= 1024 && mib%1024 == 0 {
		return fmt.Sprintf("%d GiB", mib/1024)
	}
	return fmt.Sprintf("%d MiB", mib)
}

// Stats returns the cache's counters.
func (c *Cache) Stats() CacheStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.Bytes, s.Target, s.Entries = c.used, c.target, len(c.entries)
	decode, fresh := c.costs.rates()
	s.DecodeCost, s.FreshCost = time.Duration(decode*(1<<20)), time.Duration(fresh*(1<<20))
	return s
}

// has reports whether chunk key is loaded or being loaded.
func (c *Cache) has(key cacheKey) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.entries[key]
	return ok
}

// holdsWhole reports whether the cache holds chunk key loaded whole (all
// its size bytes decoded, or the chunk not stored): a read of it then
// needs nothing fetched.
func (c *Cache) holdsWhole(key cacheKey, size int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	return ok && e.prev != nil && (e.data == nil || e.win.holds(window{0, size}))
}

// loaded returns the entry of key when it is loaded, without loading it
// or waiting for a load in flight, holding a reference the caller
// releases; nil otherwise.
func (c *Cache) loaded(key cacheKey) *cacheEntry {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || e.prev == nil {
		return nil
	}
	e.refs++
	return e
}

// get returns the entry of chunk key, holding at least its bytes want
// decoded, loading or extending it with l unless that is done already. The
// caller reads the entry's data[want.lo:want.hi] and then releases it, and
// may not touch the data after. Errors are not kept: the next get tries
// again (a failed extension leaves the window held before it). A wait
// for another goroutine's load or extension ends once ctx is done; a load
// that another read's cancellation ended is made again.
func (c *Cache) get(ctx context.Context, key cacheKey, l loader, want window) (*cacheEntry, error) {
	e, _, err := c.fetch(ctx, key, l, want, true)
	return e, err
}

// fetch is get, or with wait false, get that does not wait for another
// goroutine's load or extension of the chunk: then it returns busy, with no
// entry and nothing counted, and the caller may do other work before
// asking again.
func (c *Cache) fetch(ctx context.Context, key cacheKey, l loader, want window, wait bool) (*cacheEntry, bool, error) {
	c.mu.Lock()
	if e, ok := c.entries[key]; ok {
		loaded := e.prev != nil
		if !wait && (!loaded || e.growing != nil && e.data != nil && !e.win.holds(want)) {
			c.mu.Unlock()
			return nil, true, nil
		}
		c.consume(key)
		c.stats.Hits++
		e.refs++
		if loaded { // most recent now
			e.unlink()
			c.pushFront(e)
			if e.win.holds(want) || e.data == nil {
				c.mu.Unlock()
				return e, false, nil
			}
			e, err := c.extend(ctx, e, l, want) // unlocks mu
			return e, false, err
		}
		c.mu.Unlock()
		select {
		case <-e.done:
		case <-ctx.Done():
			c.release(e)
			return nil, false, ctx.Err()
		}
		if e.err != nil {
			c.release(e)
			if errors.Is(e.err, context.Canceled) && ctx.Err() == nil {
				return c.fetch(ctx, key, l, want, wait) // another read's, cancelled: load it
			}
			return nil, false, e.err
		}
		c.mu.Lock()
		if e.evicted && e.data != nil && !e.win.holds(want) {
			// Dropped as soon as it was loaded (larger than what the
			// cache keeps) or since: load it again rather than extend a
			// chunk whose decode memory its loader may still hold
			// (endLoad), which would wait on that memory holding it.
			c.mu.Unlock()
			c.release(e)
			return c.fetch(ctx, key, l, want, wait)
		}
		e, err := c.extend(ctx, e, l, want) // unlocks mu
		return e, false, err
	}
	c.consume(key)
	e := c.begin(key)
	c.mu.Unlock()
	start := time.Now()
	buf, win, lent, charge, err := l.load(ctx, key, want)
	if err := c.endLoad(e, buf, win, lent, charge, time.Since(start), err); err != nil {
		return nil, false, err
	}
	return e, false, nil
}

// begin enters the entry of key, which the caller is about to load, held
// by the caller, with the distance of its ghost if it is one, for finish.
// mu is held.
func (c *Cache) begin(key cacheKey) *cacheEntry {
	e := &cacheEntry{key: key, done: make(chan struct{}), refs: 1}
	if g, ok := c.ghosts[key]; ok {
		delete(c.ghosts, key)
		c.ghostBytes -= g.size
		e.dist = c.evicted - g.at + g.size
		c.stats.Ghosts++
	}
	c.entries[key] = e
	c.stats.Loads++
	return e
}

// grow applies the growth rule to a load of a ghost at distance dist that
// decoded loaded bytes. mu is held.
func (c *Cache) grow(dist, loaded int64) {
	decode, fresh := c.costs.rates()
	if n := growth(&c.rent, decode, fresh, loaded, dist, c.limit-c.target); n > 0 {
		c.target += n
		c.stats.Grows++
		c.trimGhosts()
	}
}

// remember keeps evicted entry e as a ghost, while growing could still
// make room for it. mu is held.
func (c *Cache) remember(e *cacheEntry) {
	c.evicted += e.size
	if c.target >= c.limit {
		return
	}
	if g, ok := c.ghosts[e.key]; ok {
		c.ghostBytes -= g.size
	}
	c.ghosts[e.key] = ghost{size: e.size, at: c.evicted}
	c.ghostOrder = append(c.ghostOrder, ghostRef{e.key, c.evicted})
	c.ghostBytes += e.size
	c.trimGhosts()
}

// trimGhosts forgets the oldest ghosts until their bytes are within what
// growing could still add, limit - target, and drops the order's refs to
// ghosts since gone once they outnumber the live ones. mu is held.
func (c *Cache) trimGhosts() {
	room := c.limit - c.target
	for c.ghostBytes > room && len(c.ghostOrder) > 0 {
		r := c.ghostOrder[0]
		c.ghostOrder = c.ghostOrder[1:]
		if g, ok := c.ghosts[r.key]; ok && g.at == r.at {
			delete(c.ghosts, r.key)
			c.ghostBytes -= g.size
		}
	}
	if len(c.ghostOrder) > 2*len(c.ghosts)+64 {
		live := c.ghostOrder[:0]
		for _, r := range c.ghostOrder {
			if g, ok := c.ghosts[r.key]; ok && g.at == r.at {
				live = append(live, r)
			}
		}
		c.ghostOrder = live
	}
}

// endLoad ends the load of e that begin entered, with what the loader
// returned and the time the load took, and wakes those waiting for it;
// a loaded ghost grows the cache as the growth rule says, before it
// evicts to stay within target. On an error it drops the
// entry, releases the caller's reference and returns the error. A lent
// buffer is charged as a decoded one, so the limit also bounds the
// read-ahead's memory that the cache keeps from being recycled. The
// decode memory that buf holds (charge) is given back once the cache
// keeps it within its limit; an entry evicted as soon as it is entered
// (larger than the cache keeps) holds it until its last reader lets go
// (recycle), so that decode memory also bounds the chunks that are only
// being copied from.
func (c *Cache) endLoad(e *cacheEntry, buf []byte, win window, lent func(), charge int64, took time.Duration, err error) error {
	c.mu.Lock()
	e.err = err
	if buf != nil {
		e.buf, e.data, e.win, e.lent = buf, buf[headroom:], win, lent
	}
	if err != nil {
		delete(c.entries, e.key)
		e.evicted = true
		decoding.release(charge)
	} else {
		loaded := int64(win.hi - win.lo)
		if !c.costs.pinned && loaded > 0 {
			c.costs.loadNs += int64(took)
			c.costs.loadBytes += loaded
		}
		if e.dist > 0 {
			c.grow(e.dist, loaded)
		}
		e.size = int64(len(buf)) + cacheEntryOverhead
		c.used += e.size
		c.pushFront(e)
		for c.used > c.target && c.lru.prev != &c.lru {
			c.evict(c.victim())
		}
		if e.evicted {
			e.charge = charge
		} else {
			decoding.release(charge)
		}
	}
	close(e.done)
	c.mu.Unlock()
	if err != nil {
		c.release(e)
	}
	return err
}

// extend makes a loaded entry hold at least the bytes want, waiting for
// another goroutine's extension or making its own (see cacheEntry). mu is
// held on entry and released on return; the caller holds a reference,
// which an error releases.
func (c *Cache) extend(ctx context.Context, e *cacheEntry, l loader, want window) (*cacheEntry, error) {
	for e.data != nil && !e.win.holds(want) {
		if ch := e.growing; ch != nil {
			c.mu.Unlock()
			select {
			case <-ch:
			case <-ctx.Done():
				c.release(e)
				return nil, ctx.Err()
			}
			c.mu.Lock()
			continue
		}
		ch := make(chan struct{})
		e.growing = ch
		have := e.win
		c.stats.Extends++
		c.mu.Unlock()

		win, err := l.extend(ctx, e.key, e.buf, have, want)

		c.mu.Lock()
		e.growing = nil
		close(ch)
		if err != nil {
			c.mu.Unlock()
			c.release(e)
			return nil, err
		}
		e.win = win
	}
	c.mu.Unlock()
	return e, nil
}

// keeps reports whether the cache keeps a decoded chunk of n bytes, rather
// than drop it as soon as it is loaded (one larger than its limit).
func (c *Cache) keeps(n int) bool {
	return int64(n)+headroom+cacheEntryOverhead <= c.limit
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
// undefined. A new one is written once a page, so that the page faults
// of memory new to the process are taken here and timed, for the growth
// rule (costs), rather than in the decode that follows.
func (c *Cache) buffer(n int) []byte {
	c.mu.Lock()
	if free := c.free[n]; len(free) > 0 {
		b := free[len(free)-1]
		c.free[n] = free[:len(free)-1]
		c.freeBytes -= int64(len(b))
		c.mu.Unlock()
		return b
	}
	c.mu.Unlock()
	start := time.Now()
	b := make([]byte, headroom+n)
	for i := 0; i < len(b); i += pageSize {
		b[i] = 0
	}
	took := time.Since(start)
	c.mu.Lock()
	if !c.costs.pinned {
		c.costs.freshNs += int64(took)
		c.costs.freshBytes += int64(len(b))
	}
	c.mu.Unlock()
	return b
}

// pageSize is the step at which buffer writes a new buffer.
var pageSize = os.Getpagesize()

// recycle keeps an unreferenced, evicted entry's buffer for a later decode,
// while the free buffers stay within the decode memory's bound (more could
// never all be decoded into at once), or ends the lend of a lent one, and
// gives back the decode memory it holds. mu is held.
func (c *Cache) recycle(e *cacheEntry) {
	limit, _ := decoding.limit() // the load that made the buffer read it
	switch n := len(e.data); {
	case e.lent != nil:
		e.lent()
	case e.buf != nil && len(c.free[n]) < maxFree && c.freeBytes+int64(len(e.buf)) <= limit:
		c.free[n] = append(c.free[n], e.buf)
		c.freeBytes += int64(len(e.buf))
	}
	e.buf, e.data, e.lent = nil, nil, nil
	decoding.release(e.charge)
	e.charge = 0
}

// expect announces a read of each chunk of array from grid index c0 to c1
// (both included) for which read, when not nil, reports true, after those
// announced before. mu is not held.
func (c *Cache) expect(array *Array, c0, c1 []int, read func(idx []int) bool) {
	var idx [maxRank]int
	n := len(c0)
	copy(idx[:n], c0)
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.hints) > maxHints || len(c.after) > maxHints {
		clear(c.hints)
		clear(c.after)
	}
	for {
		if read == nil || read(idx[:n]) {
			c.seq++
			c.stats.Announced++
			key := array.chunkEntry(ravel(idx[:n], array.grid))
			h := c.hints[key]
			if h.n == 0 {
				h.next = c.seq
			} else {
				c.after[h.last] = c.seq
			}
			h.n++
			h.last = c.seq
			c.hints[key] = h
		}
		if !next(idx[:n], c0, c1) {
			return
		}
	}
}

// consume ends the earliest announced read of chunk key, if any: a read
// of it is under way. mu is held.
func (c *Cache) consume(key cacheKey) {
	h, ok := c.hints[key]
	if !ok {
		return
	}
	c.read = max(c.read, h.next)
	if h.n--; h.n == 0 {
		delete(c.hints, key)
		return
	}
	next := c.after[h.next]
	delete(c.after, h.next)
	h.next = next
	c.hints[key] = h
}

// victim picks the loaded entry to evict: the least recently used that no
// announced read needs (none, or none later than staleReads behind the
// latest read made); if every one is needed, the one whose next announced
// read comes last (Belady's rule, within what was announced).
// The walk stops at the first entry without a hint, so it visits at most
// len(hints)+1 entries. mu is held; the list is not empty.
func (c *Cache) victim() *cacheEntry {
	var far *cacheEntry
	var farNext uint64
	for e := c.lru.prev; e != &c.lru; e = e.prev {
		h, ok := c.hints[e.key]
		if !ok || h.next+staleReads < c.read {
			return e
		}
		if far == nil || h.next > farNext {
			far, farNext = e, h.next
		}
	}
	return far
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
	c.remember(e)
	if e.refs == 0 {
		c.recycle(e)
	}
}
