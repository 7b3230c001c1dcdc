package zarr

import (
	"context"
	"errors"
	"testing"
)

// TestSharedCacheSize: the shared cache takes this process's share of
// DefaultCacheMiB, the node's, by the launcher's local world size, unless
// CacheEnv sizes it per process, held from the start; Describe says which.
func TestSharedCacheSize(t *testing.T) {
	torchrun := func(local string) map[string]string {
		return map[string]string{"RANK": "0", "WORLD_SIZE": "16", "LOCAL_RANK": "0", "LOCAL_WORLD_SIZE": local}
	}
	tests := []struct {
		name     string
		env      map[string]string
		mib      int64
		describe string
	}{
		{"alone", nil, 4096, "4 GiB (4 GiB per node / 1 local rank, no launcher variable gives the count; grows from 16 MiB as re-reading evicted chunks pays for the memory)"},
		{"8 torchrun ranks", torchrun("8"), 512, "512 MiB (4 GiB per node / 8 local ranks, torchrun's LOCAL_WORLD_SIZE; grows from 16 MiB as re-reading evicted chunks pays for the memory)"},
		{"3 Open MPI ranks", map[string]string{"OMPI_COMM_WORLD_RANK": "1", "OMPI_COMM_WORLD_SIZE": "3", "OMPI_COMM_WORLD_LOCAL_SIZE": "3"},
			1365, "1365 MiB (4 GiB per node / 3 local ranks, Open MPI's OMPI_COMM_WORLD_LOCAL_SIZE; grows from 16 MiB as re-reading evicted chunks pays for the memory)"},
		{"one torchrun rank", torchrun("1"), 4096, "4 GiB (4 GiB per node / 1 local rank, torchrun's LOCAL_WORLD_SIZE; grows from 16 MiB as re-reading evicted chunks pays for the memory)"},
		{"Slurm without a count", map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "8"},
			4096, "4 GiB (4 GiB per node / 1 local rank, no launcher variable gives the count; grows from 16 MiB as re-reading evicted chunks pays for the memory)"},
		{"explicit, per process", map[string]string{CacheEnv: "1000", "RANK": "0", "WORLD_SIZE": "16", "LOCAL_WORLD_SIZE": "8"},
			1000, "1000 MiB (LOADERGEN_ZARR_CACHE_MB=1000, per process)"},
		{"off", map[string]string{CacheEnv: "0"}, 0, "off (LOADERGEN_ZARR_CACHE_MB=0, per process)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := newSharedCache(func(k string) string { return tt.env[k] })
			if err != nil {
				t.Fatal(err)
			}
			if c.limit != tt.mib<<20 || c.Describe() != tt.describe {
				t.Errorf("cache of %d MiB, %q; want %d MiB, %q", c.limit>>20, c.Describe(), tt.mib, tt.describe)
			}
			// A size the environment set is held from the start; the
			// default grows from GrowFromMiB.
			start := min(c.limit, GrowFromMiB<<20)
			if tt.env[CacheEnv] != "" {
				start = c.limit
			}
			if c.target != start {
				t.Errorf("the cache starts at %d bytes, want %d", c.target, start)
			}
		})
	}
	for _, tt := range []struct{ name, value, want string }{
		{CacheEnv, "x", `environment LOADERGEN_ZARR_CACHE_MB="x": want a size in MiB from 0 to 1073741824`},
		{"RANK", "1", "zarr chunk cache: environment: torchrun sets only one of RANK and WORLD_SIZE"},
	} {
		_, err := newSharedCache(func(k string) string { return map[string]string{tt.name: tt.value}[k] })
		if err == nil || err.Error() != tt.want {
			t.Errorf("%s=%s: %v, want %s", tt.name, tt.value, err, tt.want)
		}
	}
}

// perMiB converts a cost in ms per MiB to the growth rule's ns per byte.
func perMiB(ms float64) float64 { return ms * 1e6 / (1 << 20) }

// TestGrowth: the growth rule grows by a distance once the loads of the
// misses on ghosts within it have cost what that much new memory costs,
// and by nothing before; misses on farther ghosts do not pay for nearer
// memory; never past the room left; clearing the rent it grows on.
func TestGrowth(t *testing.T) {
	const mib = 1 << 20
	const room = 1024 * mib
	type miss struct {
		loaded, dist, room int64
		grow               int64 // what the miss grows the cache by
	}
	far, near := miss{mib, 8 * mib, room, 0}, miss{mib, 2 * mib, room, 0}
	tests := []struct {
		name          string
		decode, fresh float64 // ms per MiB
		misses        []miss
		left          float64 // ms of rent left after the misses
	}{
		{"memory dearer than decoding (a VM whose host backs each page): a ghost a chunk away is bought by the fifth miss", 1, 5, []miss{
			{mib, mib, room, 0}, {mib, mib, room, 0}, {mib, mib, room, 0}, {mib, mib, room, 0},
			{mib, mib, room, mib},
		}, 0},
		{"memory cheaper than decoding (a machine of its own): each miss buys its ghost's distance", 1, 0.0625, []miss{
			{mib, mib, room, mib}, {mib, 4 * mib, room, 4 * mib}, {mib, 8 * mib, room, 8 * mib},
		}, 0},
		{"far misses do not pay for near memory", 1, 1, []miss{
			far, far, far, near, {mib, 2 * mib, room, 2 * mib}, // the near ones pay for 2 MiB themselves
			far, far, far, far, {mib, 8 * mib, room, 8 * mib}, // the far ones wait for 8
		}, 0},
		{"a near miss completes the far ones' rent: the cache grows by the farthest distance paid for", 1, 1, []miss{
			far, far, far, far, far, far, far, {mib, mib, room, 8 * mib},
		}, 0},
		{"the farthest of a power of two's misses is what they buy", 1, 1, []miss{
			{mib, 5 * mib, room, 0}, {mib, 7 * mib, room, 0}, {mib, 6 * mib, room, 0}, {mib, 5 * mib, room, 0},
			{mib, 5 * mib, room, 0}, {mib, 5 * mib, room, 0}, {mib, 5 * mib, room, 7 * mib},
		}, 0},
		{"the rent a growth leaves: farther misses keep theirs", 1, 1, []miss{
			far, far, {mib, mib, room, mib},
		}, 2},
		{"a window of the chunk pays what decoding it cost", 1, 1, []miss{
			{mib / 4, mib, room, 0}, {mib / 4, mib, room, 0}, {mib / 4, mib, room, 0},
			{mib / 4, mib, room, mib},
		}, 0},
		{"no further than the limit, paying for that alone", 1, 2, []miss{
			{mib, 4 * mib, 3 * mib, 0}, {mib, 4 * mib, 3 * mib, 0}, {mib, 4 * mib, 3 * mib, 0}, {mib, 4 * mib, 3 * mib, 0},
			{mib, 4 * mib, 3 * mib, 0}, {mib, 4 * mib, 3 * mib, 3 * mib},
		}, 0},
		{"at the limit, nothing, and nothing tallied", 1, 0.0625, []miss{{mib, mib, 0, 0}}, 0},
		{"a chunk that is not stored decoded nothing and pays nothing", 1, 1, []miss{{0, mib, room, 0}}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var r rent
			for i, m := range tt.misses {
				if grow := growth(&r, perMiB(tt.decode), perMiB(tt.fresh), m.loaded, m.dist, m.room); grow != m.grow {
					t.Fatalf("miss %d (%+v): grows by %d bytes, want %d", i, m, grow, m.grow)
				}
			}
			left := 0.0
			for _, ns := range r.ns {
				left += ns
			}
			if want := perMiB(tt.left) * (1 << 20); left < want-1 || left > want+1 {
				t.Errorf("rent left %.0f ns, want %.0f", left, want)
			}
		})
	}
}

// cacheLoader loads chunks of size bytes into the cache's buffers, every
// byte of each, counting the loads.
type cacheLoader struct {
	c     *Cache
	size  int
	loads int
}

func (l *cacheLoader) load(ctx context.Context, key cacheKey, want window) ([]byte, window, func(), int64, error) {
	l.loads++
	return l.c.buffer(l.size), window{0, l.size}, nil, 0, nil
}

func (l *cacheLoader) extend(ctx context.Context, key cacheKey, buf []byte, have, want window) (window, error) {
	return have, errors.New("cacheLoader: nothing to extend")
}

// pinCosts makes c's growth rule take decode and fresh, in ms per MiB,
// for what this machine measures.
func pinCosts(c *Cache, decode, fresh float64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	const n = 1 << 30
	c.costs = costs{loadNs: int64((decode + fresh) * 1e6 * (n >> 20)), loadBytes: n,
		freshNs: int64(fresh * 1e6 * (n >> 20)), freshBytes: n, pinned: true}
}

// TestCacheGrowthPaysItsWay: a cache of two chunks read over eight again
// and again does not grow on the first pass, which comes back to nothing;
// then it grows to hold all eight, at once, once its misses have cost
// what the memory for the six more costs: on the first miss where memory
// is cheap, after four passes where new memory costs five times a decode,
// after sixteen where it costs twenty. Growing from its own measures, it
// counts the bytes of each load and new buffer.
func TestCacheGrowthPaysItsWay(t *testing.T) {
	const size, chunks = 1 << 20, 8
	entry := int64(headroom + size + cacheEntryOverhead)
	tests := []struct {
		name          string
		decode, fresh float64 // ms per MiB; 0, 0: measured
		passes        int     // passes after the first until the cache holds all eight
	}{
		{"memory cheap", 1, 0.06, 1},
		{"memory five times a decode", 1, 5, 4},
		{"memory twenty times a decode", 0.25, 5, 16},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCache(0)
			l := &cacheLoader{c: c, size: size}
			c.limit, c.target = chunks*entry, 2*entry
			pinCosts(c, tt.decode, tt.fresh)
			pass := func() {
				t.Helper()
				for i := range chunks {
					e, err := c.get(context.Background(), cacheKey{n: int64(i)}, l, window{0, size})
					if err != nil {
						t.Fatal(err)
					}
					c.release(e)
				}
			}
			pass()
			if st := c.Stats(); st.Grows != 0 || st.Target != 2*entry || l.loads != chunks {
				t.Fatalf("a first pass over %d chunks: %+v after %d loads, want no growth", chunks, st, l.loads)
			}
			for p := 1; ; p++ {
				pass()
				st := c.Stats()
				if st.Target > c.limit {
					t.Fatalf("target %d past the limit %d", st.Target, c.limit)
				}
				if st.Target == c.limit {
					if p != tt.passes || st.Grows != 1 {
						t.Errorf("holds all %d chunks after %d passes back, grown %d times; want %d passes, grown once, by the distance of the ghost that paid: %+v",
							chunks, p, st.Grows, tt.passes, st)
					}
					break
				}
				if p > tt.passes {
					t.Fatalf("%d passes back, and the cache holds %d of %d bytes: %+v", p, st.Target, c.limit, st)
				}
			}
			pass() // loads what the pass that grew it evicted before it grew
			loads := l.loads
			pass()
			if l.loads != loads {
				t.Errorf("grown to hold every chunk, a pass still loaded %d", l.loads-loads)
			}
		})
	}
	t.Run("measured", func(t *testing.T) {
		c := NewCache(0)
		l := &cacheLoader{c: c, size: size}
		c.limit, c.target = chunks*entry, 2*entry
		for i := range chunks {
			e, err := c.get(context.Background(), cacheKey{n: int64(i)}, l, window{0, size})
			if err != nil {
				t.Fatal(err)
			}
			c.release(e)
		}
		c.mu.Lock()
		k := c.costs
		c.mu.Unlock()
		// Three new buffers (the third asked for before the first was
		// evicted), then the evicted ones decoded into again.
		if k.loadBytes != chunks*size || k.freshBytes != 3*(headroom+size) || k.pinned {
			t.Errorf("costs after %d loads of %d bytes, three of them into new buffers: %+v", chunks, size, k)
		}
	})
}
