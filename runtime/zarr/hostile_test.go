package zarr

import (
	"encoding/binary"
	"hash/crc32"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/loadergen/loadergen/internal/testenv/bounded"
	"github.com/loadergen/loadergen/internal/testenv/remotetest"
)

// liar serves the fixtures, but lies about the objects of lies, and
// counts the requests for each path.
type liar struct {
	files http.Handler
	lies  map[string]func(w http.ResponseWriter, r *http.Request)
	mu    sync.Mutex // guards asked, which the server's goroutines count in
	asked map[string]int
}

func (l *liar) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	l.mu.Lock()
	l.asked[r.URL.Path]++
	l.mu.Unlock()
	if lie, ok := l.lies[r.URL.Path]; ok {
		lie(w, r)
		return
	}
	l.files.ServeHTTP(w, r)
}

// declares answers with a Content-Length of n and 3 bytes.
func declares(n int64) func(http.ResponseWriter, *http.Request) {
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", strconv.FormatInt(n, 10))
		w.Write([]byte("abc"))
	}
}

// endless answers with a body that never ends.
func endless(w http.ResponseWriter, r *http.Request) {
	chunk := make([]byte, 64<<10)
	for r.Context().Err() == nil {
		if _, err := w.Write(chunk); err != nil {
			return
		}
	}
}

// hugeShard answers the request for the index at the end of
// sharded_end_u2's shards (8 inner chunks, a crc32c) with an index that
// places the first inner chunk at bytes [0, 1.5 GiB) of a shard that it
// says holds 1 TiB.
func hugeShard(w http.ResponseWriter, r *http.Request) {
	index := make([]byte, 8*16+4)
	for i := range 8 {
		binary.LittleEndian.PutUint64(index[16*i:], ^uint64(0)) // empty
		binary.LittleEndian.PutUint64(index[16*i+8:], ^uint64(0))
	}
	binary.LittleEndian.PutUint64(index[0:], 0)
	binary.LittleEndian.PutUint64(index[8:], 3<<29)
	binary.LittleEndian.PutUint32(index[128:], crc32.Checksum(index[:128], crc32.MakeTable(crc32.Castagnoli)))
	const size = 1 << 40
	w.Header().Set("Content-Range", "bytes "+strconv.Itoa(size-len(index))+"-"+strconv.Itoa(size-1)+"/"+strconv.Itoa(size))
	w.Header().Set("Content-Length", strconv.Itoa(len(index)))
	w.WriteHeader(http.StatusPartialContent)
	w.Write(index)
}

// TestHostileServer: a remote store's server that lies about sizes ends
// the read in an error naming the object and both sizes, refused before
// it allocates what the lie says and within bounded memory: consolidated
// metadata declared at 1 TiB, a chunk declared at 1.5 GiB (one request:
// refused, not retried), a chunk whose body never ends, and a shard said
// to hold 1 TiB whose index places an inner chunk of 1.5 GiB (refused
// before its request).
func TestHostileServer(t *testing.T) {
	if !bounded.Child(t, bounded.HostileRSS) {
		return
	}
	l := &liar{files: http.FileServer(http.Dir(fixtures)), asked: map[string]int{}, lies: map[string]func(http.ResponseWriter, *http.Request){
		"/v2/consolidated/.zmetadata": declares(1 << 40),
		"/v2/zstd6_u1_slash/0/0/0":    declares(3 << 29),
		"/v2/zstd6_u1_slash/0/0/1":    endless,
		"/v3/sharded_end_u2/c/0/0/0":  hugeShard,
	}}
	srv := httptest.NewServer(l)
	t.Cleanup(srv.Close)

	_, err := OpenStore(srv.URL+"/v2/consolidated", NewCache(16))
	for _, want := range []string{srv.URL + "/v2/consolidated/.zmetadata", "1099511627776 bytes, more than the 67108864 this read takes", "LOADERGEN_MAX_METADATA_MB"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("consolidated metadata of 1 TiB: %v; want it to say %q", err, want)
		}
	}
	t.Log(err)
	for _, c := range []struct {
		store  string
		origin []int
		object string // the path of the lie
		want   string
		asked  int // requests for the object
	}{
		{"v2/zstd6_u1_slash", []int{0, 0, 0}, "/v2/zstd6_u1_slash/0/0/0", "1610612736 bytes, more than the 1052672 this read takes", 1},
		{"v2/zstd6_u1_slash", []int{0, 0, 16}, "/v2/zstd6_u1_slash/0/0/1", "more than 1052672 bytes, the most this read takes", 1},
		{"v3/sharded_end_u2", []int{0, 0, 0}, "/v3/sharded_end_u2/c/0/0/0", "stored in 1610612736 bytes, more than the 1048816 a chunk of 120 bytes may take", 1},
	} {
		s, err := OpenStore(srv.URL+"/"+c.store, NewCache(16))
		if err != nil {
			t.Fatal(err)
		}
		a, err := s.Array("")
		if err != nil {
			t.Fatal(err)
		}
		err = a.Read(make([]byte, 8), c.origin, []int{1, 1, 1})
		for _, want := range []string{srv.URL + "/" + c.store, strings.TrimPrefix(c.object, "/"+c.store+"/"), c.want} {
			if err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: %v; want it to say %q", c.object, err, want)
			}
		}
		l.mu.Lock()
		n := l.asked[c.object]
		l.mu.Unlock()
		if n != c.asked {
			t.Errorf("%s: %d requests, want %d", c.object, n, c.asked)
		}
		t.Log(err)
	}
}

// TestHostileLocalChunk: a local chunk file larger than its chunk may be
// stored in (a sparse 1.5 GiB file) is refused by its size, unread.
func TestHostileLocalChunk(t *testing.T) {
	if !bounded.Child(t, bounded.HostileRSS) {
		return
	}
	dir := copyStore(t, "v2/zstd6_u1_slash")
	if err := os.Truncate(filepath.Join(dir, "0", "0", "0"), 3<<29); err != nil {
		t.Fatal(err)
	}
	err := openDir(t, dir, 16).Read(make([]byte, 1), []int{0, 0, 0}, []int{1, 1, 1})
	if err == nil || !strings.Contains(err.Error(), "chunk 0/0/0: stored in 1610612736 bytes, more than the 1052672 a chunk of 2048 bytes may take") {
		t.Errorf("a chunk file of 1.5 GiB: %v", err)
	}
}

// TestStoreClose: Close of a remote store whose server stops answering
// stops ReadAhead's loads of shard indexes and the read-ahead's fetches
// in flight, returns at once, and leaves no goroutine of ours.
func TestStoreClose(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) }) // the last cleanup: after the server's
	url, stall := remotetest.Stalling(t, fixtures)
	for _, name := range []string{"v3/sharded_end_u2", "v2/zstd6_u1_slash"} {
		s, err := OpenStore(url+"/"+name, NewCache(16))
		if err != nil {
			t.Fatal(err)
		}
		a, err := s.Array("")
		if err != nil {
			t.Fatal(err)
		}
		stall.Store(true)
		a.ReadAhead(make([]int, len(a.shape)), a.shape)
		time.Sleep(50 * time.Millisecond) // the requests reach the server
		start := time.Now()
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("%s: Close took %v", name, d)
		}
		stall.Store(false)
	}
}
