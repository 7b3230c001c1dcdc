package records

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loadergen/loadergen/internal/testenv/bounded"
	"github.com/loadergen/loadergen/internal/testenv/remotetest"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/storage"
)

// TestShardsRemote: shards under an S3 root read as the same shards on
// local disk, arrays among their members too, without a copy on local
// disk, and a bad record in a remote shard is an error naming the shard's
// URL; class folders under a URL are refused.
func TestShardsRemote(t *testing.T) {
	srv := remotetest.Start(t)
	srv.Env(t)
	dir := srv.Bucket(t, "shards")
	writeShard(t, filepath.Join(dir, "s-0.tar"), goodSamples(t, "x/0", 3))
	writeShard(t, filepath.Join(dir, "s-1.tar"), goodSamples(t, "x/1", 2))
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	local, err := Open(spec(), dir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	remote, err := Open(spec(), "s3://shards", quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	if remote.Len() != local.Len() {
		t.Fatalf("Len = %d, want the local shards' %d", remote.Len(), local.Len())
	}
	sameSamples(t, local, remote, local.Len())
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("reading remote shards wrote %d files in TMPDIR", len(left))
	}
	depth, pose := npyFixture(t, "f4_3x2x2x2.npy"), npyFixture(t, "u8_4x2x3.npy")
	arr := filepath.Join(srv.Bucket(t, "arrays"), "s.tar")
	writeShard(t, arr, []member{{"a.depth.npy", depth}, {"a.npy", pose}, {"a.cls", []byte("4")}})
	arrays, err := Open(arraySpec(), "s3://arrays", quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer arrays.Close()
	d, p, label := make([]byte, 24*4), make([]byte, 24), make([]byte, 8)
	if err := arrays.Read(bg, nil, 0, d, p, label); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(d, depth[len(depth)-len(d):]) || !bytes.Equal(p, pose[len(pose)-len(p):]) || runtime.View[int64](label)[0] != 4 {
		t.Errorf("a remote shard's arrays: depth %v, pose %v, label %v", runtime.View[float32](d), p, label)
	}
	writeShard(t, filepath.Join(dir, "bad.tar"), []member{{"x/9.jpg", []byte("not a jpeg")}})
	bad := spec()
	bad.Shards = "bad.tar"
	if _, err := Open(bad, "s3://shards", quiet); err == nil || !strings.Contains(err.Error(), "s3://shards/bad.tar") {
		t.Errorf("a bad remote shard: %v, want an error naming s3://shards/bad.tar", err)
	}
	folder := spec()
	folder.Shards, folder.Folder = "", "train"
	if _, err := Open(folder, "s3://shards", quiet); err == nil || !strings.Contains(err.Error(), "class folders must be on local disk") {
		t.Errorf("a class folder under a URL: %v", err)
	}
}

// TestFolderURLSecret: the refusal of class folders under a URL names the
// URL without its user and password.
func TestFolderURLSecret(t *testing.T) {
	folder := spec()
	folder.Shards, folder.Folder = "", "train"
	_, err := Open(folder, "https://u-alice:pw-0xs3cr3t@host/x", quiet)
	if err == nil || !strings.Contains(err.Error(), "not under https://host/x:") || strings.Contains(err.Error(), "u-alice") || strings.Contains(err.Error(), "pw-0xs3cr3t") {
		t.Errorf("class folders under a URL with a password: %v", err)
	}
}

// readSample reads sample i of s, a dataset of spec()'s keys.
func readSample(s *Source, i int) ([][]byte, error) {
	out := [][]byte{make([]byte, 3*8*8), make([]byte, 8*8*8), make([]byte, 4)}
	return out, s.Read(bg, rand.New(rand.NewPCG(1, uint64(i))), i, out...)
}

// sameSamples checks that samples 0 to n-1 of got, a dataset of spec()'s
// keys, read as those of want.
func sameSamples(t *testing.T, want, got *Source, n int) {
	t.Helper()
	for i := range n {
		g, err := readSample(got, i)
		if err != nil {
			t.Fatal(err)
		}
		w, err := readSample(want, i)
		if err != nil {
			t.Fatal(err)
		}
		for k := range w {
			if !bytes.Equal(g[k], w[k]) {
				t.Errorf("sample %d key %d differs from the local shards'", i, k)
			}
		}
	}
}

// sameAsLocal opens the dataset of spec() under root (a URL), logging to
// log, and under dir, where its shards lie on local disk, checks that both
// hold the same samples, and returns the first, closed when the test
// ends.
func sameAsLocal(t *testing.T, root, dir string, log *slog.Logger) *Source {
	t.Helper()
	var srcs []*Source
	for _, at := range []string{root, dir} {
		src, err := Open(spec(), at, log)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { src.Close() })
		srcs = append(srcs, src)
	}
	remote, local := srcs[0], srcs[1]
	if remote.Len() != local.Len() {
		t.Fatalf("Len = %d, want the local shards' %d", remote.Len(), local.Len())
	}
	sameSamples(t, local, remote, local.Len())
	return remote
}

// requestLog is a web server's log of the requests it answered: each
// one's method and Range header, and the bytes of its body.
type requestLog struct {
	mu    sync.Mutex
	reqs  []string
	bytes int64
}

// serve starts a web server of dir that logs its requests in l.
func (l *requestLog) serve(t *testing.T, dir string) string {
	files := http.FileServer(http.Dir(dir))
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cw := &countingWriter{ResponseWriter: w}
		files.ServeHTTP(cw, r)
		l.mu.Lock()
		l.reqs = append(l.reqs, r.Method+" "+r.URL.Path+" "+r.Header.Get("Range"))
		l.bytes += cw.n
		l.mu.Unlock()
	}))
	t.Cleanup(web.Close)
	return web.URL
}

// count returns how many requests were logged since the last take.
func (l *requestLog) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.reqs)
}

// take returns the requests and bytes logged since the last take.
func (l *requestLog) take() ([]string, int64) {
	l.mu.Lock()
	defer l.mu.Unlock()
	reqs, n := l.reqs, l.bytes
	l.reqs, l.bytes = nil, 0
	return reqs, n
}

// countingWriter counts the body bytes written through it.
type countingWriter struct {
	http.ResponseWriter
	n int64
}

func (w *countingWriter) Write(p []byte) (int, error) {
	n, err := w.ResponseWriter.Write(p)
	w.n += int64(n)
	return n, err
}

// TestShardsRemoteRanges: a remote shard is indexed from its tar headers
// without fetching the members they skip over (a 9 MiB member not read
// costs no request for its bytes), and ReadAhead fetches each hinted
// sample by one ranged request for the bytes its members span, before any
// Read, which then takes them: reading the hinted samples makes no request
// of its own.
// A shard cut short after it was indexed is an error naming its URL, the
// sample and its members.
func TestShardsRemoteRanges(t *testing.T) {
	dir := t.TempDir()
	var ms []member
	for i, m := range goodSamples(t, "x/", 3) {
		ms = append(ms, m)
		if i%4 == 3 { // after each sample: a member no key reads, between samples
			ms = append(ms, member{fmt.Sprintf("x/%c.bin", 'a'+i/4), bytes.Repeat([]byte{byte(i)}, 9<<20)})
		}
	}
	shard := filepath.Join(dir, "s.tar")
	writeShard(t, shard, ms)
	one := spec()
	one.Shards = "s.tar"
	log := &requestLog{}
	root := log.serve(t, dir)
	src, err := Open(one, root, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	size := int64(len(fileBytes(t, shard)))
	reqs, n := log.take()
	t.Logf("indexing: %d requests %q, %d of the shard's %d bytes", len(reqs), reqs, n, size) // docs/REMOTE.md cites this
	if n > size/8 {
		t.Errorf("indexing fetched %d of the shard's %d bytes, want its headers, not the members they skip", n, size)
	}
	local, err := Open(one, dir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	all := []int{0, 1, 2}
	src.ReadAhead(0, all)
	for deadline := time.Now().Add(10 * time.Second); log.count() < len(all) && time.Now().Before(deadline); {
		time.Sleep(time.Millisecond) // the read-ahead's fetches, before any Read
	}
	reqs, _ = log.take()
	if len(reqs) != len(all) {
		t.Errorf("%d requests for %d samples read ahead, want one each: %q", len(reqs), len(all), reqs)
	}
	for _, i := range all {
		ext := src.ix.sampleExtent(i)
		if want := fmt.Sprintf("GET /s.tar bytes=%d-%d", ext.off, ext.off+ext.size-1); !slices.Contains(reqs, want) {
			t.Errorf("no request %q for sample %d among %q", want, i, reqs)
		}
	}
	sameSamples(t, local, src, len(all))
	if reqs, _ := log.take(); len(reqs) != 0 {
		t.Errorf("reading the samples read ahead made requests %q", reqs)
	}
	// A shard of its own: the read-ahead keeps s.tar's samples read.
	data := fileBytes(t, shard)
	cut := filepath.Join(dir, "cut.tar")
	if err := os.WriteFile(cut, data, 0o644); err != nil {
		t.Fatal(err)
	}
	one.Shards = "cut.tar"
	src, err = Open(one, root, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	if err := os.WriteFile(cut, data[:src.ix.sampleExtent(2).off+10], 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = readSample(src, 2)
	var se *SampleError
	if err == nil || !errors.As(err, &se) || se.File != root+"/cut.tar" || se.Sample != "x/c" || se.Member != "jpg,png,cls" {
		t.Errorf("a sample cut off the shard: %v, want a SampleError of %s/cut.tar, sample x/c, members jpg,png,cls", err, root)
	}
}

// TestShardsRemoteDiskCache: with the disk cache set, remote shards are
// fetched whole into it and read from there, and read as the local ones.
// The process's disk cache is fixed at its first use, so the test runs in
// a child process with LOADERGEN_REMOTE_CACHE_DIR set.
func TestShardsRemoteDiskCache(t *testing.T) {
	const child = "LOADERGEN_RECORDS_TEST_CHILD"
	if dir := os.Getenv(child); dir != "" {
		if remote := sameAsLocal(t, os.Getenv("LOADERGEN_RECORDS_TEST_ROOT"), dir, quiet); remote.shards == nil || remote.remote != nil {
			t.Fatal("with the disk cache set, remote shards are not read from local files")
		}
		return
	}
	dir := t.TempDir()
	writeShard(t, filepath.Join(dir, "s-0.tar"), goodSamples(t, "x/0", 3))
	writeShard(t, filepath.Join(dir, "s-1.tar"), goodSamples(t, "x/1", 2))
	root := (&requestLog{}).serve(t, dir)
	cache := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestShardsRemoteDiskCache$", "-test.count=1")
	cmd.Env = append(os.Environ(), child+"="+dir, "LOADERGEN_RECORDS_TEST_ROOT="+root, storage.CacheDirEnv+"="+cache)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the child: %v\n%s", err, out)
	}
	if entries := cacheEntries(t, cache); len(entries) != 2 {
		t.Errorf("the disk cache holds %d entries, want the 2 shards", len(entries))
	}
}

// cacheEntries returns the entries of the disk cache in dir: its files
// named by a key (64 hex digits).
func cacheEntries(t *testing.T, dir string) []string {
	t.Helper()
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		if len(f.Name()) == 64 {
			out = append(out, filepath.Join(dir, f.Name()))
		}
	}
	return out
}

// TestShardsDiskCacheCut: a shard's entry in the disk cache cut short at a
// member's end is fetched again, not read as a shard of fewer samples.
// The process's disk cache is fixed at its first use, so the test runs in
// a child process.
func TestShardsDiskCacheCut(t *testing.T) {
	if !bounded.Child(t, bounded.HostileRSS) {
		return
	}
	cache := t.TempDir()
	t.Setenv(storage.CacheDirEnv, cache)
	dir := t.TempDir()
	ms := goodSamples(t, "x/", 100)
	writeShard(t, filepath.Join(dir, "s.tar"), ms)
	log := &requestLog{}
	root := log.serve(t, dir)
	one := spec()
	one.Shards = "s.tar"
	for i, cut := range []int{0, tarLength(t, ms[:4*40])} {
		if cut > 0 {
			entries := cacheEntries(t, cache)
			if len(entries) != 1 {
				t.Fatalf("%d entries in the cache, want the shard's", len(entries))
			}
			if err := os.Truncate(entries[0], int64(cut)); err != nil {
				t.Fatal(err)
			}
			log.take()
		}
		src, err := Open(one, root, quiet)
		if err != nil {
			t.Fatalf("open %d: %v", i, err)
		}
		if src.Len() != 100 {
			t.Errorf("open %d: %d samples, want 100", i, src.Len())
		}
		src.Close()
	}
	if reqs, _ := log.take(); !slices.ContainsFunc(reqs, func(r string) bool { return strings.HasPrefix(r, "GET /s.tar bytes=0-") }) {
		t.Errorf("the cut entry was not fetched again: requests %q", reqs)
	}
}

// TestShardsSmallDiskCache: with a disk cache smaller than the shards,
// each fetch evicting the one before, the source still opens and reads
// them all, and says in its log that the cache is too small to keep them.
func TestShardsSmallDiskCache(t *testing.T) {
	if !bounded.Child(t, bounded.HostileRSS) {
		return
	}
	t.Setenv(storage.CacheDirEnv, t.TempDir())
	t.Setenv(storage.CacheMBEnv, "1")
	dir := t.TempDir()
	for i := range 2 {
		prefix := fmt.Sprintf("x/%d", i)
		ms := goodSamples(t, prefix, 3)
		ms = slices.Insert(ms, 4, member{prefix + "a.bin", bytes.Repeat([]byte{1}, 600<<10)}) // a member no key reads
		writeShard(t, filepath.Join(dir, fmt.Sprintf("s-%d.tar", i)), ms)
	}
	root := (&requestLog{}).serve(t, dir)
	var logged bytes.Buffer
	sameAsLocal(t, root, dir, slog.New(slog.NewTextHandler(&logged, nil)))
	if !strings.Contains(logged.String(), "too small") || !strings.Contains(logged.String(), storage.CacheMBEnv) {
		t.Errorf("the log does not say that the cache is too small for the shards, nor what raises it:\n%s", logged.String())
	}
}
