package zarr

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/loadergen/loadergen/internal/testenv/remotetest"
	"github.com/loadergen/loadergen/runtime/storage"
)

// TestFixturesRemote: every fixture array reads the same from an S3
// bucket (versitygw) and from a web server as from its local directory,
// sharded ones (ranged reads of shards and of their indexes) included,
// without and then with reading ahead the boxes first (in that order: the
// process's read-ahead keeps what it fetched, so a read after a hint of
// the same objects would not read them from the root).
func TestFixturesRemote(t *testing.T) {
	srv := remotetest.Start(t)
	srv.Env(t)
	if err := os.CopyFS(srv.Bucket(t, "fixtures"), os.DirFS(fixtures)); err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(http.FileServer(http.Dir(fixtures)))
	t.Cleanup(web.Close)
	for _, base := range []string{"s3://fixtures", web.URL} {
		for _, c := range fixtureCases(t) {
			if c.Error != "" || c.Multiscale != nil {
				continue
			}
			t.Run(base+"/"+c.Name, func(t *testing.T) {
				for _, ahead := range []bool{false, true} {
					a := openRemote(t, base, c)
					want := loadExpected(t, c.Name, a)
					if ahead {
						a.ReadAhead(make([]int, len(want.shape)), want.shape)
					}
					checkReads(t, a, want)
				}
			})
		}
	}
}

// openRemote opens case c's array at base, a remote copy of the fixtures'
// tree, with a cache of its own.
func openRemote(t *testing.T, base string, c fixtureCase) *Array {
	t.Helper()
	s, err := OpenStore(base+"/"+filepath.ToSlash(c.Path), NewCache(64))
	if err != nil {
		t.Fatal(err)
	}
	a, err := s.Array(c.Array)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// lender is a remote root over a local directory that lends every object
// (as the read-ahead lends what it fetched) and logs the calls.
type lender struct {
	storage.Root
	log *lendLog
}

// lendLog counts a lender's lends, releases, whole reads of chunks and
// ranged reads (tail reads included), and keeps its hints' estimates.
type lendLog struct {
	mu                             sync.Mutex
	lends, releases, reads, ranges int
	hints                          []int64
	lent                           [][]byte // the bytes of each lend
}

func (l lender) Local() (string, bool)       { return "", false }
func (l lender) Sub(dir string) storage.Root { return lender{l.Root.Sub(dir), l.log} }

func (l lender) ReadAll(ctx context.Context, name string, buf []byte, max int64) ([]byte, error) {
	if !strings.HasPrefix(name, ".") && name != "zarr.json" { // a chunk, not metadata
		l.log.mu.Lock()
		l.log.reads++
		l.log.mu.Unlock()
	}
	return l.Root.ReadAll(ctx, name, buf, max)
}

func (l lender) ReadAt(ctx context.Context, name string, p []byte, off int64) error {
	l.log.mu.Lock()
	l.log.ranges++
	l.log.mu.Unlock()
	return l.Root.ReadAt(ctx, name, p, off)
}

func (l lender) ReadTail(ctx context.Context, name string, p []byte) (int64, error) {
	l.log.mu.Lock()
	l.log.ranges++
	l.log.mu.Unlock()
	return l.Root.ReadTail(ctx, name, p)
}

func (l lender) Lend(ctx context.Context, name string) ([]byte, func(), error) {
	data, err := l.Root.ReadAll(ctx, name, nil, 1<<31)
	return l.lend(data, err)
}

func (l lender) LendRange(ctx context.Context, name string, off, n int64) ([]byte, func(), error) {
	data := make([]byte, n)
	return l.lend(data, l.Root.ReadAt(ctx, name, data, off))
}

// lend logs a lend of data, read with error err, and returns its release.
func (l lender) lend(data []byte, err error) ([]byte, func(), error) {
	if err != nil {
		return nil, nil, err
	}
	l.log.mu.Lock()
	defer l.log.mu.Unlock()
	l.log.lends++
	l.log.lent = append(l.log.lent, data)
	return data, func() {
		l.log.mu.Lock()
		l.log.releases++
		l.log.mu.Unlock()
	}, nil
}

func (l lender) Hint(name string, expect, max int64) { l.hint(expect) }

func (l lender) HintRange(name string, off, n int64) { l.hint(n) }

func (l lender) hint(n int64) {
	l.log.mu.Lock()
	l.log.hints = append(l.log.hints, n)
	l.log.mu.Unlock()
}

// TestRemoteLends: a remote array decodes the chunks its root lends
// without reading them into a buffer of its own, releases each once, and
// its read-ahead hints count a chunk at the largest stored chunk read so
// far, its decoded size before the first.
func TestRemoteLends(t *testing.T) {
	const name = "bigendian_u8_blosc" // chunks of 480 bytes decoded, 41 to 92 stored
	dir := filepath.Join(fixtures, "v2", name)
	log := &lendLog{}
	s := newStore(lender{storage.Local(dir), log}, NewCache(0))
	a, err := s.Array("")
	if err != nil {
		t.Fatal(err)
	}
	a.ReadAhead([]int{0, 0, 0}, []int{1, 1, 1})
	checkReads(t, a, loadExpected(t, name, a))
	a.ReadAhead([]int{0, 0, 0}, []int{1, 1, 1})
	var largest int64
	chunks, _ := filepath.Glob(filepath.Join(dir, "[0-9]*"))
	for _, c := range chunks {
		st, err := os.Stat(c)
		if err != nil {
			t.Fatal(err)
		}
		largest = max(largest, st.Size())
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if log.lends == 0 || log.releases != log.lends || log.reads != 0 {
		t.Errorf("%d chunks lent, %d released, %d read whole; want every chunk lent and released, none read", log.lends, log.releases, log.reads)
	}
	if want := []int64{int64(a.unitBytes), largest}; !slices.Equal(log.hints, want) {
		t.Errorf("hinted estimates %v, want %v: the decoded size, then the largest stored chunk", log.hints, want)
	}
}

// TestRemoteLendsRanges: a remote sharded array decodes the inner chunks
// its root lends (ranges of their shards) without reading them into a
// buffer of its own, and releases each once; its only ranged reads are
// the shards' indexes, each read once into the cache (a missing shard's
// read is how it is found missing).
func TestRemoteLendsRanges(t *testing.T) {
	const name = "v3_sharded_end_u2"
	dir := filepath.Join(fixtures, "v3", "sharded_end_u2")
	stored, missing, inner := shardCounts(t, openDir(t, dir, 0))
	log := &lendLog{}
	s := newStore(lender{storage.Local(dir), log}, NewCache(64))
	a, err := s.Array("")
	if err != nil {
		t.Fatal(err)
	}
	want := loadExpected(t, name, a)
	a.ReadAhead(make([]int, len(want.shape)), want.shape)
	a.bg.wg.Wait()
	checkReads(t, a, want)
	log.mu.Lock()
	defer log.mu.Unlock()
	if log.lends != inner || log.releases != log.lends || log.ranges != stored+missing || len(log.hints) != inner {
		t.Errorf("%d inner chunks hinted, %d lent, %d released, %d ranged reads; want each of the %d stored inner chunks hinted, lent and released once, and a ranged read for each of the %d shards' indexes (one finds a shard missing)",
			len(log.hints), log.lends, log.releases, log.ranges, inner, stored+missing)
	}
}

// shardRuns counts the runs of TestShardedReadAhead in this process.
var shardRuns atomic.Int64

// TestShardedReadAhead: reading a sharded array ahead over S3 (versitygw
// behind a proxy adding latency to every request) fetches each shard's
// index once (an index at the shard's end with the shard's size, by one
// suffix range) and each stored inner chunk once, in the background, so
// that the reads that follow make no request of their own, and give
// numpy's bytes.
func TestShardedReadAhead(t *testing.T) {
	srv := remotetest.Start(t)
	// A bucket of its own, named anew for each run (go test -count): the
	// process's read-ahead keys what it holds by URL, and other tests and
	// earlier runs read the same keys from other servers.
	bucket := fmt.Sprintf("shardahead%d", shardRuns.Add(1))
	if err := os.CopyFS(srv.Bucket(t, bucket), os.DirFS(fixtures)); err != nil {
		t.Fatal(err)
	}
	proxy := remotetest.Proxy(t, srv.Endpoint)
	srv.Env(t)
	t.Setenv("AWS_ENDPOINT_URL_S3", proxy.URL)
	proxy.Set(20*time.Millisecond, 0, 0)
	arrays := 0
	for _, c := range fixtureCases(t) {
		if !strings.Contains(c.Name, "_sharded_") || c.Error != "" {
			continue
		}
		arrays++
		t.Run(c.Name, func(t *testing.T) {
			la, err := openFixture(t, c, 0)
			if err != nil {
				t.Fatal(err)
			}
			stored, missing, inner := shardCounts(t, la)
			indexReads := 1 // an index at a shard's end comes with its size
			if la.chain.shard.indexAtStart {
				indexReads = 2 // the shard's size, then its index
			}
			fetches := missing + indexReads*stored + inner
			a := openRemote(t, "s3://"+bucket, c)
			want := loadExpected(t, c.Name, a)
			before := proxy.Requests()
			a.ReadAhead(make([]int, len(want.shape)), want.shape)
			a.bg.wg.Wait()
			for deadline := time.Now().Add(10 * time.Second); proxy.Requests()-before < fetches && time.Now().Before(deadline); {
				time.Sleep(5 * time.Millisecond)
			}
			ahead := proxy.Requests() - before
			checkReads(t, a, want)
			if reads := proxy.Requests() - before - ahead; ahead != fetches || reads != 0 {
				t.Errorf("read ahead: %d requests, want %d (each shard's index, each stored inner chunk); the reads then made %d, want 0", ahead, fetches, reads)
			}
		})
	}
	if arrays == 0 {
		t.Fatal("no sharded fixture array in cases.json")
	}
}

// shardCounts counts the shards of sharded local array a that are
// stored and missing, and the stored inner chunks inside the array.
func shardCounts(t *testing.T, a *Array) (stored, missing, inner int) {
	t.Helper()
	sh := a.chain.shard
	n := len(a.shape)
	shard, at := make([]int, n), make([]int, n)
	for s := range int64(elems(a.shards)) {
		unravel(s, a.shards, shard)
		if _, err := os.Stat(filepath.Join(a.dir, a.key(shard))); err != nil {
			missing++
			continue
		}
		stored++
		index, err := a.loadIndex(bg, shard)
		if err != nil {
			t.Fatal(err)
		}
	inners:
		for i := range int64(elems(sh.perShard)) {
			unravel(i, sh.perShard, at)
			for k := range n {
				if shard[k]*sh.perShard[k]+at[k] >= a.grid[k] {
					continue inners
				}
			}
			if _, _, ok := sh.place(index[headroom:], at); ok {
				inner++
			}
		}
	}
	return stored, missing, inner
}

// BenchmarkShardedRemote reads epochs of 64 random crops (48x96x96) of a
// sharded uint8 array (128x512x512; shards of 64x256x256, inner chunks of
// 32x64x64 stored uncompressed) over S3, versitygw behind a proxy delaying
// every request by 20 ms, in batches of 8 crops read by 8 workers. ahead
// hints the crops of the batch after next as a batch starts, as a loader
// does; none hints nothing; ahead_direct is ahead without the proxy, the
// rate latency is measured against. Each epoch reads the store through a bucket
// of its own (a link to the same directory), so that nothing the
// process's read-ahead holds from an earlier epoch serves it: every epoch
// is cold.
func BenchmarkShardedRemote(b *testing.B) {
	srv := remotetest.Start(b)
	data := writeShardedStore(b, b.TempDir())
	d, err := remotetest.ListenDelay("127.0.0.1:0", strings.TrimPrefix(srv.Endpoint, "http://"), 20*time.Millisecond)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { d.Close() })
	srv.Env(b)
	const crops, batch, workers = 64, 8, 8
	shape := []int{48, 96, 96}
	rng := rand.New(rand.NewPCG(7, 7))
	origins := make([][]int, crops)
	for i := range origins {
		origins[i] = []int{rng.IntN(128 - 48), rng.IntN(512 - 96), rng.IntN(512 - 96)}
	}
	buckets := 0
	for _, mode := range []struct {
		name     string
		ahead    bool
		endpoint string
	}{
		{"none", false, "http://" + d.Addr()},
		{"ahead", true, "http://" + d.Addr()},
		{"ahead_direct", true, srv.Endpoint},
	} {
		b.Run(mode.name, func(b *testing.B) {
			b.Setenv("AWS_ENDPOINT_URL_S3", mode.endpoint)
			for b.Loop() {
				b.StopTimer()
				buckets++
				name := fmt.Sprintf("shards%d", buckets)
				if err := os.Symlink(data, filepath.Join(srv.Dir, name)); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				s, err := OpenStore("s3://"+name, NewCache(256))
				if err != nil {
					b.Fatal(err)
				}
				a, err := s.Array("")
				if err != nil {
					b.Fatal(err)
				}
				hint := func(bt int) {
					for i := bt * batch; mode.ahead && i < min((bt+1)*batch, crops); i++ {
						a.ReadAhead(origins[i], shape)
					}
				}
				hint(0)
				hint(1)
				for bt := range crops / batch {
					hint(bt + 2)
					var wg sync.WaitGroup
					for w := range workers {
						wg.Add(1)
						go func() {
							defer wg.Done()
							buf := make([]byte, 48*96*96)
							for i := bt*batch + w; i < (bt+1)*batch; i += workers {
								if err := a.Read(buf, origins[i], shape); err != nil {
									b.Error(err)
								}
							}
						}()
					}
					wg.Wait()
				}
				a.bg.wg.Wait()
			}
		})
	}
}

// writeShardedStore writes BenchmarkShardedRemote's array into directory
// dir (zarr.json and c/Z/Y/X shards, each its inner chunks and then its
// index, no checksum) and returns dir.
func writeShardedStore(b *testing.B, dir string) string {
	b.Helper()
	meta := `{"zarr_format": 3, "node_type": "array", "shape": [128, 512, 512], "data_type": "uint8",
"chunk_grid": {"name": "regular", "configuration": {"chunk_shape": [64, 256, 256]}},
"chunk_key_encoding": {"name": "default", "configuration": {"separator": "/"}}, "fill_value": 0,
"codecs": [{"name": "sharding_indexed", "configuration": {"chunk_shape": [32, 64, 64],
"codecs": [{"name": "bytes"}], "index_codecs": [{"name": "bytes", "configuration": {"endian": "little"}}],
"index_location": "end"}}], "attributes": {}}`
	if err := os.WriteFile(filepath.Join(dir, "zarr.json"), []byte(meta), 0o644); err != nil {
		b.Fatal(err)
	}
	const innerBytes = 32 * 64 * 64
	for s := range 2 * 2 * 2 {
		sz, sy, sx := s/4, s/2%2, s%2
		var shard, index []byte
		for i := range 2 * 4 * 4 {
			iz, iy, ix := i/16, i/4%4, i%4
			index = binary.LittleEndian.AppendUint64(index, uint64(len(shard)))
			index = binary.LittleEndian.AppendUint64(index, innerBytes)
			for z := range 32 {
				for y := range 64 {
					for x := range 64 {
						gz, gy, gx := sz*64+iz*32+z, sy*256+iy*64+y, sx*256+ix*64+x
						shard = append(shard, byte(gz*7+gy*3+gx))
					}
				}
			}
		}
		file := filepath.Join(dir, "c", fmt.Sprint(sz), fmt.Sprint(sy), fmt.Sprint(sx))
		if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(file, append(shard, index...), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// TestMetadataRequests: opening an array of a remote store (IsArray, then
// Array, as a volume source does) requests each metadata file once, and
// a node's files together: the server holds each request a while and
// counts how many it holds at once.
func TestMetadataRequests(t *testing.T) {
	var mu sync.Mutex
	requests := map[string]int{}
	inFlight, most := 0, 0
	files := http.FileServer(http.Dir(fixtures))
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		requests[r.URL.Path]++
		inFlight++
		most = max(most, inFlight)
		mu.Unlock()
		time.Sleep(50 * time.Millisecond)
		files.ServeHTTP(w, r)
		mu.Lock()
		inFlight--
		mu.Unlock()
	}))
	t.Cleanup(web.Close)
	s, err := OpenStore(web.URL+"/v2/blosc_lz4_bitshuffle_i8_odd", NewCache(64))
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := s.IsArray(""); !ok || err != nil {
		t.Fatalf("IsArray: %v, %v; want true", ok, err)
	}
	if _, err := s.Array(""); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for p, n := range requests {
		if n != 1 {
			t.Errorf("%s: %d requests, want 1", p, n)
		}
	}
	if most < 2 {
		t.Errorf("at most %d metadata request in flight at once, want the node's files requested together", most)
	}
}

// TestRemoteDecodesItsWindow: an array whose remote root lends what its
// read-ahead keeps decodes the window a read needs, as a local array does
// (the last row's read of a chunk of several Blosc blocks decodes from
// that row's block on), extends it from the lent bytes for the first row,
// and hints again a chunk it holds in part; one whose root does not lend
// decodes whole chunks.
func TestRemoteDecodesItsWindow(t *testing.T) {
	c := fixtureCase{Name: "blosc_zstd_shuffle_u8_blocks", Path: "v2/blosc_zstd_shuffle_u8_blocks"}
	dir := filepath.Join(fixtures, c.Path)
	for _, lends := range []bool{true, false} {
		log := &lendLog{}
		var root storage.Root = lender{storage.Local(dir), log}
		if !lends {
			root = storage.Local(dir)
		}
		s := newStore(root, NewCache(64))
		a, err := s.Array("")
		if err != nil {
			t.Fatal(err)
		}
		if !lends {
			a.remote = storage.Local(dir) // remote, without a read-ahead
			if err := a.setUnits(); err != nil {
				t.Fatal(err)
			}
		}
		want := loadExpected(t, c.Name, a)
		origins, shapes := chunkSlabs(a)
		read := func(i int) {
			t.Helper()
			got := make([]byte, len(want.box(origins[i], shapes[i], a.fill)))
			if err := a.Read(got, origins[i], shapes[i]); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got, want.box(origins[i], shapes[i], a.fill)) {
				t.Fatalf("lends %v: row %d differs from numpy's", lends, i)
			}
		}
		last := len(origins) - 1
		read(last)
		a.cache.mu.Lock()
		win := a.cache.entries[a.chunkEntry(0)].win
		a.cache.mu.Unlock()
		if partial := win.lo > 0; partial != lends {
			t.Errorf("lends %v: the last row's read decoded %v of %d bytes", lends, win, a.unitBytes)
		}
		if lends {
			log.mu.Lock()
			before := len(log.hints)
			log.mu.Unlock()
			chunk0 := make([]int, len(a.shape)) // the box of chunk 0 alone
			for k := range chunk0 {
				chunk0[k] = min(a.unit[k], a.shape[k])
			}
			a.ReadAhead(make([]int, len(a.shape)), chunk0)
			log.mu.Lock()
			if len(log.hints) == before {
				t.Errorf("chunk 0, held in part, was not hinted again")
			}
			log.mu.Unlock()
		}
		read(0)
	}
}

// TestRemoteKeepsStoredFrames: a remote chunk stored as an uncompressed
// Blosc frame, lent by its root, is held by the cache as it was lent, not
// copied: the entry's data is the frame's own bytes after its header, the
// lend lasts while the cache holds the chunk, and ends once it drops it.
// Compressed chunks (this fixture's edge chunks, whose padding compresses)
// are decoded, and their lends end at once. Reads give numpy's bytes
// throughout.
func TestRemoteKeepsStoredFrames(t *testing.T) {
	c := fixtureCase{Name: "blosc_lz4_memcpy_random_u1", Path: "v2/blosc_lz4_memcpy_random_u1"}
	dir := filepath.Join(fixtures, c.Path)
	for _, cacheMiB := range []int{64, 0} {
		log := &lendLog{}
		a, err := newStore(lender{storage.Local(dir), log}, NewCache(cacheMiB)).Array("")
		if err != nil {
			t.Fatal(err)
		}
		want := loadExpected(t, c.Name, a)
		shape := a.Shape()
		got := make([]byte, len(want.box(make([]int, len(shape)), shape, a.fill)))
		a.ReadAhead(make([]int, len(shape)), shape)
		if err := a.Read(got, make([]int, len(shape)), shape); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want.box(make([]int, len(shape)), shape, a.fill)) {
			t.Fatalf("cache of %d MiB: the array differs from numpy's", cacheMiB)
		}
		log.mu.Lock()
		lends, releases, lent := log.lends, log.releases, log.lent
		log.mu.Unlock()
		if lends == 0 {
			t.Fatalf("cache of %d MiB: nothing was lent", cacheMiB)
		}
		if cacheMiB == 0 {
			if releases != lends {
				t.Errorf("a cache that keeps nothing released %d of %d lends", releases, lends)
			}
			continue
		}
		units := make([]int, len(lent))
		for i, raw := range lent { // before taking the lock: lentChunk may stop the test
			units[i] = lentChunk(t, a, dir, raw)
		}
		stored := 0
		a.cache.mu.Lock()
		for i, raw := range lent {
			u := units[i]
			if len(raw) != headroom+a.unitBytes { // compressed
				continue
			}
			stored++
			e := a.cache.entries[a.chunkEntry(int64(u))]
			if e == nil || len(e.data) == 0 || &e.data[0] != &raw[headroom] || e.win != (window{0, a.unitBytes}) {
				t.Errorf("stored chunk %d is not held as lent, whole", u)
			}
		}
		a.cache.mu.Unlock()
		if stored == 0 || releases != lends-stored {
			t.Errorf("a cache that holds every chunk released %d of %d lends, %d of them of stored chunks", releases, lends, stored)
		}
	}
}

// lentChunk finds which decoded chunk of a, stored in dir, the lent bytes
// raw are, by comparing them with each stored chunk's file.
func lentChunk(t *testing.T, a *Array, dir string, raw []byte) int {
	t.Helper()
	for u := range elems(a.grid) {
		idx := make([]int, len(a.grid))
		unravel(int64(u), a.grid, idx)
		stored, err := os.ReadFile(filepath.Join(dir, a.key(idx)))
		if err == nil && bytes.Equal(stored, raw) {
			return u
		}
	}
	t.Fatalf("lent bytes of no stored chunk")
	return -1
}
