package zarr

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	lgruntime "github.com/loadergen/loadergen/runtime"
)

// copyStore copies fixture store name (a path under testdata/zarr) into a
// temporary directory, for tests that damage it.
func copyStore(t *testing.T, name string) string {
	t.Helper()
	dst := filepath.Join(t.TempDir(), filepath.Base(name))
	src := filepath.Join(fixtures, name)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// openDir opens the array in directory dir with a cache of its own that
// holds cacheMiB MiB from the start (a held size, as CacheEnv's), so that a
// warm read finds every chunk a store of that size has.
func openDir(t testing.TB, dir string, cacheMiB int) *Array {
	t.Helper()
	s, err := OpenStore(dir, newHeldCache(cacheMiB))
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Array("")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// readAll reads the whole of the array in dir with a fresh cache.
func readAll(t *testing.T, dir string) error {
	t.Helper()
	a := openDir(t, dir, 16)
	n := a.DType().Size()
	for _, s := range a.shape {
		n *= s
	}
	return a.Read(make([]byte, n), make([]int, len(a.shape)), a.shape)
}

func TestDamagedChunks(t *testing.T) {
	truncate := func(b []byte) []byte { return b[:len(b)*2/3] }
	garble := func(b []byte) []byte {
		for i := 0; i < len(b); i += 2 {
			b[i] ^= 0xa5
		}
		return b
	}
	flipLast := func(b []byte) []byte { b[len(b)-5] ^= 1; return b }
	tests := []struct {
		store, chunk string
		damage       func([]byte) []byte
		want         string
		bad          bool // a bad sample's error (its codecs failed), which on_error: skip replaces
	}{
		{"v2/blosc_lz4_shuffle_u1", "1.0.1", truncate, "chunk 1.0.1: blosc: corrupt blosc frame: header says", true},
		{"v2/blosc_zstd_bitshuffle_f8", "0.1.0", garble, "chunk 0.1.0: blosc: ", true},
		{"v2/zstd6_u1_slash", "0/1/0", truncate, "chunk 0/1/0: zstd: ", true},
		{"v2/gzip_i8", "1.1.1", truncate, "chunk 1.1.1: gzip: ", true},
		{"v2/gzip_i8", "1.1.1", flipLast, "chunk 1.1.1: gzip: ", true},
		{"v2/zlib_u8", "0.0.0", truncate, "chunk 0.0.0: zlib: ", true},
		{"v2/zlib_u8", "0.0.0", flipLast, "chunk 0.0.0: zlib: ", true},
		{"v2/lz4_f2", "2.0.1", truncate, "chunk 2.0.1: lz4: ", true},
		{"v2/raw_bool", "1.2.0", truncate, "chunk 1.2.0: 40 bytes, expected 60", true},
		{"v3/gzip_crc32c_f8", "c/0/0/0", flipLast, "chunk c/0/0/0: crc32c: checksum", true},
		{"v3/sharded_end_u2", "c/0/1/0", flipLast, "chunk c/0/1/0: index: crc32c: checksum", true},
		{"v3/sharded_start_u2", "c/1/0/1", func(b []byte) []byte { return b[:len(b)-30] }, "chunk c/1/0/1 (inner chunk [1 1 1]): index places it at bytes", false},
		{"v3/sharded_edge_noncrc_i8", "c/1/1", func(b []byte) []byte { return b[:8] }, "chunk c/1/1: shard of 8 bytes, shorter than its 64-byte index", false},
	}
	for _, tt := range tests {
		t.Run(tt.store+"/"+tt.chunk, func(t *testing.T) {
			dir := copyStore(t, tt.store)
			file := filepath.Join(dir, filepath.FromSlash(tt.chunk))
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, tt.damage(b), 0o644); err != nil {
				t.Fatal(err)
			}
			err = readAll(t, dir)
			var ce *ChunkError
			if !errors.As(err, &ce) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("read: %v, want a ChunkError containing %q", err, tt.want)
			}
			if ce.Array != dir {
				t.Errorf("ChunkError.Array = %q, want %q", ce.Array, dir)
			}
			var bad *lgruntime.BadSampleError
			if errors.As(err, &bad) != tt.bad {
				t.Errorf("a bad sample's error: %v, want %v", !tt.bad, tt.bad)
			}
		})
	}
}

// TestChunkOfWrongSize: a chunk that decodes to a size other than the
// metadata's chunk shape is an error, not bytes read past or short.
func TestChunkOfWrongSize(t *testing.T) {
	dir := copyStore(t, "v2/zstd6_u1_slash")
	meta := filepath.Join(dir, ".zarray")
	b, _ := os.ReadFile(meta)
	b = []byte(strings.Replace(string(b), "16,\n        16\n", "16,\n        17\n", 1))
	if err := os.WriteFile(meta, b, 0o644); err != nil {
		t.Fatal(err)
	}
	err := readAll(t, dir)
	if err == nil || !strings.Contains(err.Error(), "zstd: decoded size differs from the expected size") {
		t.Fatalf("read: %v", err)
	}
}

// TestStoreGoneWhileReading: a missing chunk reads as the fill value, but
// not when the array's directory itself has gone.
func TestStoreGoneWhileReading(t *testing.T) {
	dir := copyStore(t, "v2/missing_nan_f4")
	a := openDir(t, dir, 16)
	box := make([]byte, 4*2*2*2)
	if err := a.Read(box, []int{0, 0, 0}, []int{2, 2, 2}); err != nil { // chunk 0.0.0 is missing
		t.Fatal(err)
	}
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	err := a.Read(box, []int{5, 5, 4}, []int{2, 2, 2}) // chunk 1.1.1, missing too
	if err == nil || !strings.Contains(err.Error(), "the array's directory is gone") {
		t.Fatalf("read after the store was removed: %v", err)
	}
	err = a.Read(box, []int{0, 0, 3}, []int{2, 2, 2}) // chunk 0.0.1, stored
	if !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("read of a stored chunk after the store was removed: %v", err)
	}
}

// TestShardShrinksWhileReading: a shard cut short after its index was read
// fails the inner chunks past its new end.
func TestShardShrinksWhileReading(t *testing.T) {
	dir := copyStore(t, "v3/sharded_start_u2")
	a := openDir(t, dir, 16)
	box := make([]byte, 2)
	if err := a.Read(box, []int{0, 0, 0}, []int{1, 1, 1}); err != nil { // loads shard c/0/0/0's index
		t.Fatal(err)
	}
	shard := filepath.Join(dir, "c", "0", "0", "0")
	st, _ := os.Stat(shard)
	if err := os.Truncate(shard, st.Size()/2); err != nil {
		t.Fatal(err)
	}
	err := a.Read(box, []int{7, 9, 5}, []int{1, 1, 1}) // the shard's last inner chunk
	if err == nil || !strings.Contains(err.Error(), "c/0/0/0 (inner chunk [1 1 1]): file ends before byte") {
		t.Fatalf("read of a shard cut short: %v", err)
	}
}

// TestConcurrentReadsDecodeOnce: readers that need the same chunks at the
// same time share one decode of each.
func TestConcurrentReadsDecodeOnce(t *testing.T) {
	a := openDir(t, filepath.Join(fixtures, "v2/blosc_zstd_bitshuffle_f8"), 64)
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs <- a.Read(make([]byte, 8*12*20*20), []int{0, 0, 0}, []int{12, 20, 20})
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	st := a.cache.Stats()
	if st.Loads != 8 || st.Hits != 15*8 {
		t.Errorf("16 readers of 8 chunks: %d loads and %d hits, want 8 and 120", st.Loads, st.Hits)
	}
}

func TestCacheEvictsLeastRecentlyUsed(t *testing.T) {
	a := openDir(t, filepath.Join(fixtures, "v2/blosc_lz4_shuffle_u2_blocks"), 1) // the 8 KiB chunks all fit, then fewer
	c := a.cache
	one := make([]byte, 2)
	read := func(z, y, x int) {
		t.Helper()
		if err := a.Read(one, []int{z, y, x}, []int{1, 1, 1}); err != nil {
			t.Fatal(err)
		}
	}
	read(0, 0, 0)
	read(0, 0, 16)
	setLimit(c, c.Stats().Bytes) // room for exactly these two
	read(0, 0, 0)                // now the most recent
	read(0, 16, 0)               // evicts chunk 0.0.1
	read(0, 0, 1)                // chunk 0.0.0 is still held
	st := c.Stats()
	if st.Loads != 3 || st.Evictions != 1 || st.Entries != 2 {
		t.Errorf("stats %+v, want 3 loads, 1 eviction, 2 entries", st)
	}
}

func TestWarmReadsDoNotAllocate(t *testing.T) {
	a, err := openFixture(t, fixtureCase{Path: "v2/blosc_lz4_shuffle_u1"}, 16)
	if err != nil {
		t.Fatal(err)
	}
	box := make([]byte, 10*10*10)
	origin, shape := []int{-2, 5, 7}, []int{10, 10, 10}
	if err := a.Read(box, origin, shape); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _ = a.Read(box, origin, shape) }); n != 0 {
		t.Errorf("a warm read allocates %v times", n)
	}
	lay := Layout{Start: 999, Strides: []int{-100, -10, -1}}
	if n := testing.AllocsPerRun(100, func() { _ = a.ReadLayout(bg, box, origin, shape, lay) }); n != 0 {
		t.Errorf("a warm laid-out read allocates %v times", n)
	}
}

// TestConcurrentReadsWithEvictions: with a cache too small for the array,
// buffers of evicted chunks are decoded into again while other readers may
// still be copying; every read must still give numpy's bytes.
func TestConcurrentReadsWithEvictions(t *testing.T) {
	for _, mib := range []int{0, 1} {
		c := fixtureCase{Name: "blosc_zstd_bitshuffle_f8", Path: "v2/blosc_zstd_bitshuffle_f8"}
		a, err := openFixture(t, c, mib)
		if err != nil {
			t.Fatal(err)
		}
		if mib == 1 {
			setLimit(a.cache, 3*(16*16*8*8+headroom+cacheEntryOverhead)) // 3 of the 8 chunks
		}
		want := loadExpected(t, c.Name, a)
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for g := range 4 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(g), 9))
				for range 200 {
					origin := []int{rng.IntN(12) - 2, rng.IntN(20) - 2, rng.IntN(20) - 2}
					shape := []int{1 + rng.IntN(10), 1 + rng.IntN(18), 1 + rng.IntN(18)}
					dst := make([]byte, 8*elems(shape))
					if err := a.Read(dst, origin, shape); err != nil {
						errs <- err
						return
					}
					if !bytes.Equal(dst, want.box(origin, shape, a.fill)) {
						errs <- fmt.Errorf("cache %d MiB: Read(%v, %v) differs from numpy's slice", mib, origin, shape)
						return
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatal(err)
		}
		if st := a.cache.Stats(); st.Evictions == 0 {
			t.Errorf("cache %d MiB: no evictions, so no recycling was tested: %+v", mib, st)
		}
	}
}

// TestReadOutsideValue: a layout's Outside value fills the box outside the
// array, while missing chunks inside it keep the array's fill value.
func TestReadOutsideValue(t *testing.T) {
	c := fixtureCase{Name: "missing_nan_f4", Path: "v2/missing_nan_f4"}
	a, err := openFixture(t, c, 4)
	if err != nil {
		t.Fatal(err)
	}
	want := loadExpected(t, c.Name, a)
	origin, shape := []int{-2, -1, -1}, []int{6, 5, 12} // chunk 0.0.0 (missing: NaN) and past the x end
	var strides [3]int
	cStrides(shape, strides[:])
	outside := lgruntime.Float32.Encode(-1)
	got := make([]byte, 4*elems(shape))
	if err := a.ReadLayout(bg, got, origin, shape, Layout{Strides: strides[:], Outside: outside}); err != nil {
		t.Fatal(err)
	}
	for z := range shape[0] {
		for y := range shape[1] {
			for x := range shape[2] {
				p := []int{origin[0] + z, origin[1] + y, origin[2] + x}
				i := (z*shape[1]+y)*shape[2] + x
				w := outside
				if p[0] >= 0 && p[1] >= 0 && p[2] >= 0 && p[2] < want.shape[2] {
					at := (p[0]*want.shape[1]+p[1])*want.shape[2] + p[2]
					w = want.data[4*at : 4*at+4]
				}
				if !bytes.Equal(got[4*i:4*i+4], w) {
					t.Fatalf("element %v = % x, want % x", p, got[4*i:4*i+4], w)
				}
				if p[0] == 0 && p[1] == 0 && p[2] == 0 && !bytes.Equal(w, a.fill) {
					t.Fatal("element (0, 0, 0) is not in a missing chunk: the test misses its point")
				}
			}
		}
	}
}

// TestReadPutsOffChunksInFlight: a read that meets a chunk another
// goroutine is loading copies the box's other chunks first and only then
// waits for that load, so that two readers of crops sharing chunks decode
// different chunks at once rather than take turns.
func TestReadPutsOffChunksInFlight(t *testing.T) {
	a := openDir(t, filepath.Join(fixtures, "v2/blosc_zstd_bitshuffle_f8"), 64)
	want := loadExpected(t, "blosc_zstd_bitshuffle_f8", a)
	chunks := int64(1)
	for _, g := range a.grid {
		chunks *= int64(g)
	}
	if chunks < 2 {
		t.Fatalf("%d chunks: the test needs a box over several", chunks)
	}
	// Another goroutine's load of chunk 0, the read's first, under way.
	key := a.chunkEntry(0)
	a.cache.mu.Lock()
	held := a.cache.begin(key)
	a.cache.mu.Unlock()

	shape := a.Shape()
	got := make([]byte, 8*elems(shape))
	done := make(chan error, 1)
	go func() { done <- a.Read(got, make([]int, len(shape)), shape) }()
	deadline := time.Now().Add(10 * time.Second)
	for a.cache.Stats().Loads < chunks && time.Now().Before(deadline) {
		time.Sleep(time.Millisecond)
	}
	loads := a.cache.Stats().Loads
	buf, win, lent, charge, err := a.load(bg, key, window{0, a.unitBytes})
	if err := a.cache.endLoad(held, buf, win, lent, charge, 0, err); err != nil {
		t.Fatal(err)
	}
	a.cache.release(held)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if loads != chunks {
		t.Errorf("while chunk 0 was being loaded elsewhere, the read loaded %d of the other %d chunks", loads-1, chunks-1)
	}
	if !bytes.Equal(got, want.box(make([]int, len(shape)), shape, a.fill)) {
		t.Error("the box differs from numpy's")
	}
}

// The origins of three chunks (A, B, C) of the fixture of 8 KiB chunks
// that the eviction tests read one element of.
var chunkA, chunkB, chunkC = []int{0, 0, 0}, []int{0, 0, 16}, []int{0, 16, 0}

// twoHeld is an eviction test's array, whose cache has room for two of
// its chunks.
type twoHeld struct {
	t *testing.T
	a *Array
}

// holdTwo opens the fixture of 8 KiB chunks, reads first and then second,
// and cuts the cache's room to those two chunks.
func holdTwo(t *testing.T, first, second []int) twoHeld {
	x := twoHeld{t, openDir(t, filepath.Join(fixtures, "v2/blosc_lz4_shuffle_u2_blocks"), 1)}
	x.read(first)
	x.read(second)
	setLimit(x.a.cache, x.a.cache.Stats().Bytes)
	return x
}

// read reads the element at p.
func (x twoHeld) read(p []int) {
	x.t.Helper()
	if err := x.a.Read(make([]byte, 2), p, []int{1, 1, 1}); err != nil {
		x.t.Fatal(err)
	}
}

// announce announces reads of the elements at ps, in turn.
func (x twoHeld) announce(ps ...[]int) {
	for _, p := range ps {
		x.a.ReadAhead(p, []int{1, 1, 1})
	}
}

// held reports whether the cache holds the chunk of the element at p.
func (x twoHeld) held(p []int) bool {
	idx := make([]int, len(p))
	for k := range p {
		idx[k] = p[k] / x.a.unit[k]
	}
	return x.a.cache.has(x.a.chunkEntry(ravel(idx, x.a.grid)))
}

// TestCacheKeepsAnnouncedChunks: a chunk whose read ReadAhead announced is
// kept while a chunk no announced read needs is evicted, least recently
// used or not; once its read is done, it is evicted as any other.
func TestCacheKeepsAnnouncedChunks(t *testing.T) {
	x := holdTwo(t, chunkA, chunkB)
	x.announce(chunkA)
	x.read(chunkC) // evicts B: A, least recently used, has a read announced
	x.read(chunkA) // A is still held; its announced read is done
	if st := x.a.cache.Stats(); st.Loads != 3 || st.Evictions != 1 {
		t.Fatalf("stats %+v, want 3 loads and 1 eviction: chunk A was not kept for its announced read", st)
	}
	x.read(chunkB) // evicts C, now the least recently used, no read announced for either
	x.read(chunkA) // A is still held
	if st := x.a.cache.Stats(); st.Loads != 4 || st.Evictions != 2 {
		t.Errorf("stats %+v, want 4 loads and 2 evictions", st)
	}
}

// TestCacheEvictsTheChunkNeededLast: when every chunk held has an
// announced read, the one whose next announced read comes last is
// evicted (Belady's rule), not the least recently used, counting from
// the reads not yet made: A, read again once of three times announced,
// is next needed after B and C.
func TestCacheEvictsTheChunkNeededLast(t *testing.T) {
	x := holdTwo(t, chunkB, chunkA)
	x.announce(chunkA, chunkC, chunkB, chunkC, chunkA, chunkA)
	x.read(chunkA) // held: its next announced read is now the fifth
	x.read(chunkC) // evicts A (fifth), not B (third), C (fourth) or the least recently used (B)
	if st := x.a.cache.Stats(); st.Loads != 3 || st.Evictions != 1 || x.held(chunkA) || !x.held(chunkB) || !x.held(chunkC) {
		t.Errorf("stats %+v; held: A %v, B %v, C %v; want 3 loads, 1 eviction, A evicted", st, x.held(chunkA), x.held(chunkB), x.held(chunkC))
	}
}

// TestCacheForgetsUnreadAnnouncements: announced reads that never come
// (an epoch given up half way) are forgotten past maxHints, so they
// cannot pile up.
func TestCacheForgetsUnreadAnnouncements(t *testing.T) {
	c := NewCache(1)
	a := &Array{id: arrayIDs.Add(1), grid: []int{4 * maxHints}}
	for i := range maxHints + 2 {
		c.expect(a, []int{i}, []int{i}, nil)
	}
	c.mu.Lock()
	n := len(c.hints)
	c.mu.Unlock()
	if n > maxHints {
		t.Errorf("%d chunks with announced reads held, more than maxHints (%d)", n, maxHints)
	}
}

// TestCacheGivesUpStaleAnnouncements: a chunk whose announced read is
// staleReads behind the reads made (an epoch left half way) is no longer
// kept for it.
func TestCacheGivesUpStaleAnnouncements(t *testing.T) {
	x := holdTwo(t, chunkA, chunkB)
	x.announce(chunkA) // a read of A that never comes
	for range staleReads + 1 {
		x.announce(chunkB)
		x.read(chunkB)
	}
	x.read(chunkC) // evicts A, the least recently used, its announcement stale
	if x.held(chunkA) {
		t.Errorf("chunk A is held for a read announced %d reads ago: %+v", staleReads+1, x.a.cache.Stats())
	}
}

// setLimit bounds c at n bytes, all of which it may hold at once: the
// eviction tests' cache, which does not grow.
func setLimit(c *Cache, n int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.limit, c.target = n, n
}

// TestCacheGrowsOnReuse: a cache starts small and recycles the buffers of
// what it evicts while no read comes back to an evicted chunk; reads that
// come back grow it, never past its limit, until it holds what they need
// (with new memory costing nothing: TestCacheGrowthPaysItsWay prices it).
func TestCacheGrowsOnReuse(t *testing.T) {
	a := openDir(t, filepath.Join(fixtures, "v2/blosc_lz4_shuffle_u2_blocks"), 1)
	c := a.cache
	one := make([]byte, 2)
	var chunks [][]int // one point in each chunk
	for z := 0; z < a.shape[0]; z += a.unit[0] {
		for y := 0; y < a.shape[1]; y += a.unit[1] {
			for x := 0; x < a.shape[2]; x += a.unit[2] {
				chunks = append(chunks, []int{z, y, x})
			}
		}
	}
	if len(chunks) < 6 {
		t.Fatalf("the fixture has %d chunks, want at least 6", len(chunks))
	}
	readAll := func() {
		t.Helper()
		for _, p := range chunks {
			if err := a.Read(one, p, []int{1, 1, 1}); err != nil {
				t.Fatal(err)
			}
		}
	}
	readAll()
	entry := c.Stats().Bytes / int64(len(chunks))
	c.mu.Lock()
	c.entries, c.used = map[cacheKey]*cacheEntry{}, 0 // forget them, buffers and all
	c.lru.prev, c.lru.next = &c.lru, &c.lru
	c.limit, c.target = entry*int64(len(chunks)), 2*entry // room for two, growing to all
	c.mu.Unlock()
	pinCosts(c, 1, 0)
	before := c.Stats()
	readAll() // a cold pass: nothing comes back
	cold := c.Stats()
	if cold.Grows != 0 || cold.Target != 2*entry || cold.Evictions-before.Evictions != int64(len(chunks)-2) {
		t.Fatalf("a pass over %d chunks that reads none again: %+v, want no growth and %d evictions", len(chunks), cold, len(chunks)-2)
	}
	for pass := 0; ; pass++ {
		readAll()
		st := c.Stats()
		if st.Target > c.limit {
			t.Fatalf("target %d past the limit %d", st.Target, c.limit)
		}
		if st.Target == c.limit {
			break
		}
		if pass > len(chunks) {
			t.Fatalf("%d passes, and the cache still holds %d of %d bytes: %+v", pass, st.Target, c.limit, st)
		}
	}
	loads := c.Stats().Loads
	readAll()
	if st := c.Stats(); st.Loads != loads {
		t.Errorf("grown to hold every chunk, a pass still loaded %d: %+v", st.Loads-loads, st)
	}
}
