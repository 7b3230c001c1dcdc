package storage

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/loadergen/loadergen/internal/testenv/remotetest"
)

// proxied returns a web root over dir through a fault proxy.
func proxied(t *testing.T, dir string) (Root, *remotetest.Faults) {
	t.Helper()
	return gated(t, dir, nil)
}

// gated is proxied whose server answers no request before gate is closed
// (nil: at once).
func gated(t *testing.T, dir string, gate <-chan struct{}) (Root, *remotetest.Faults) {
	t.Helper()
	files := http.FileServer(http.Dir(dir))
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if gate != nil {
			<-gate
		}
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(web.Close)
	f := remotetest.Proxy(t, web.URL)
	r, err := openRemote(f.URL, Options{Retry: quick})
	if err != nil {
		t.Fatal(err)
	}
	return r, f
}

// chunks writes n objects of size bytes each, "c/0" ... and returns them.
func chunks(t *testing.T, dir string, n, size int) [][]byte {
	t.Helper()
	os.MkdirAll(filepath.Join(dir, "c"), 0o755)
	out := make([][]byte, n)
	for i := range out {
		out[i] = bytes.Repeat([]byte{byte(i)}, size)
		if err := os.WriteFile(filepath.Join(dir, "c", fmt.Sprint(i)), out[i], 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestAhead: hinted objects are fetched once each, in the background,
// and their reads take them; a read of an object not hinted goes to the
// root; hints past the memory bound are dropped, so those objects are
// read when needed; what was read stays held, within the bound.
func TestAhead(t *testing.T) {
	dir := t.TempDir()
	want := chunks(t, dir, 16, 1000)
	r, faults := proxied(t, dir)
	faults.Set(5*time.Millisecond, 0, 0)
	ra := newReadAhead(10 * 1000) // room for 10 of the 16
	a := newAhead(r, ra)
	for i := range want {
		a.Hint(fmt.Sprintf("c/%d", i), 1000, big)
	}
	a.Hint("c/0", 1000, big) // again: ignored
	ra.mu.Lock()
	hinted := len(ra.entries)
	ra.mu.Unlock()
	if hinted != 10 {
		t.Errorf("%d objects hinted, want the 10 the bound holds", hinted)
	}
	var wg sync.WaitGroup
	for i := range want {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, err := a.ReadAll(bg, fmt.Sprintf("c/%d", i), nil, big)
			if err != nil || !bytes.Equal(got, want[i]) {
				t.Errorf("c/%d: %d bytes, %v", i, len(got), err)
			}
		}()
	}
	wg.Wait()
	if n := faults.Requests(); n != 16 {
		t.Errorf("%d requests for 16 objects, want 16 (each once)", n)
	}
	ra.mu.Lock()
	defer ra.mu.Unlock()
	if len(ra.entries) != 10 || ra.read.Len() != 10 || len(ra.queue) != 0 || ra.held != 10*1000 {
		t.Errorf("after every read: %d entries, %d read, %d queued, %d bytes held; want the 10 read, 10000 bytes",
			len(ra.entries), ra.read.Len(), len(ra.queue), ra.held)
	}
}

// TestAheadReadAgain: an object read ahead is read again without a
// request (a chunk the chunk cache evicted between two crops), into the
// caller's buffer, which may change without changing what later reads
// get; read objects make room for new hints least recently read first.
func TestAheadReadAgain(t *testing.T) {
	dir := t.TempDir()
	want := chunks(t, dir, 4, 1000)
	r, faults := proxied(t, dir)
	ra := newReadAhead(3 * 1000)
	a := newAhead(r, ra)
	read := func(i int) {
		t.Helper()
		got, err := a.ReadAll(bg, fmt.Sprintf("c/%d", i), make([]byte, 0, 2000), big)
		if err != nil || !bytes.Equal(got, want[i]) {
			t.Fatalf("c/%d: %d bytes, %v", i, len(got), err)
		}
		clear(got) // the caller's buffer: reused for other data
	}
	for i := range 3 {
		a.Hint(fmt.Sprintf("c/%d", i), 1000, big)
	}
	for _, tc := range []struct {
		read     []int
		requests int
	}{
		{[]int{0, 1, 2}, 3},    // each fetched once
		{[]int{2, 0, 0, 1}, 3}, // again: held; c/2 is now the least recently read
	} {
		for _, i := range tc.read {
			read(i)
		}
		if n := faults.Requests(); n != tc.requests {
			t.Fatalf("after reading %v: %d requests, want %d", tc.read, n, tc.requests)
		}
	}
	a.Hint("c/3", 1000, big) // the bound is full: c/2 makes room
	read(3)
	read(0)
	read(1)
	if n := faults.Requests(); n != 4 {
		t.Errorf("c/3 hinted and read, c/0 and c/1 read again: %d requests, want 4", n)
	}
	read(2)
	if n := faults.Requests(); n != 5 {
		t.Errorf("c/2, dropped for c/3, read again: %d requests, want 5", n)
	}
}

// TestAheadStale: an object hinted and fetched but never read (an epoch
// stopped early) leaves room for new hints once it is stale.
func TestAheadStale(t *testing.T) {
	dir := t.TempDir()
	chunks(t, dir, 2, 1000)
	r, _ := proxied(t, dir)
	ra := newReadAhead(1000)
	a := newAhead(r, ra)
	a.Hint("c/0", 1000, big)
	ra.mu.Lock()
	f := ra.entries[r.URL("c/0")]
	ra.mu.Unlock()
	<-f.done
	a.Hint("c/1", 1000, big)
	ra.mu.Lock()
	_, fresh := ra.entries[r.URL("c/1")]
	f.at = time.Now().Add(-2 * aheadStale)
	ra.mu.Unlock()
	if fresh {
		t.Fatal("c/1 hinted while c/0, fetched and fresh, fills the bound")
	}
	a.Hint("c/1", 1000, big)
	ra.mu.Lock()
	defer ra.mu.Unlock()
	if _, ok := ra.entries[r.URL("c/1")]; !ok {
		t.Error("c/1 not hinted after c/0 went stale")
	}
	if _, ok := ra.entries[r.URL("c/0")]; ok {
		t.Error("stale c/0 still held")
	}
}

// TestDiskCache: a second read of an object, whole or by range, comes
// from the disk, also for a new process (a cache reopened on the same
// directory); the cache stays within its bound, dropping the least
// recently read.
func TestDiskCache(t *testing.T) {
	dir := t.TempDir()
	want := chunks(t, dir, 4, 1000)
	r, faults := proxied(t, dir)
	cacheDir := t.TempDir()
	dc, err := openDiskCache(cacheDir, 2500)
	if err != nil {
		t.Fatal(err)
	}
	c := &cached{Root: r, disk: dc}
	read := func(c Root, i int) {
		t.Helper()
		got, err := c.ReadAll(bg, fmt.Sprintf("c/%d", i), nil, big)
		if err != nil || !bytes.Equal(got, want[i]) {
			t.Fatalf("c/%d: %d bytes, %v", i, len(got), err)
		}
	}
	read(c, 0)
	read(c, 1)
	read(c, 0)
	if n := faults.Requests(); n != 2 {
		t.Errorf("%d requests for c/0, c/1, c/0; want 2", n)
	}
	p := make([]byte, 10)
	for range 2 {
		if err := c.ReadAt(bg, "c/2", p, 100); err != nil || !bytes.Equal(p, want[2][:10]) {
			t.Fatalf("ReadAt(c/2) = %v", err)
		}
	}
	if n := faults.Requests(); n != 3 {
		t.Errorf("%d requests after two ranged reads of c/2; want 3", n)
	}
	time.Sleep(10 * time.Millisecond) // distinct modification times
	read(c, 1)                        // c/1 is now the most recent, c/0 the least
	time.Sleep(10 * time.Millisecond)
	read(c, 3) // 1000+1000+10+1000 > 2500: c/0, the least recently read, goes
	dc2, err := openDiskCache(cacheDir, 2500)
	if err != nil {
		t.Fatal(err)
	}
	if n := cacheBytes(t, cacheDir); n > 2500 || dc2.used() != n {
		t.Errorf("the cache holds %d bytes, its usage file says %d; bound 2500", n, dc2.used())
	}
	before := faults.Requests()
	c2 := &cached{Root: r, disk: dc2}
	read(c2, 1)
	read(c2, 3)
	if n := faults.Requests() - before; n != 0 {
		t.Errorf("the reopened cache made %d requests for c/1 and c/3, want 0", n)
	}
	read(c2, 0)
	if n := faults.Requests() - before; n != 1 {
		t.Errorf("c/0, the least recently read, was not evicted (%d requests)", n)
	}
}

// TestDiskCacheStaleTemps: opening a cache removes the temporary files
// that crashed processes left (unmodified for longer than staleTemp), and
// keeps those that may still be written, and every other file.
func TestDiskCacheStaleTemps(t *testing.T) {
	dir := t.TempDir()
	old := time.Now().Add(-staleTemp - time.Minute)
	files := map[string]bool{ // name -> kept
		"put-123": false, "fetch-456": false, // crashed writers'
		"put-789": true, "fetch-012": true, // recent: maybe being written
		"notes.txt": true, // not the cache's
	}
	for name, kept := range files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte("partial"), 0o644); err != nil {
			t.Fatal(err)
		}
		if !kept || name == "notes.txt" {
			if err := os.Chtimes(p, old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	if _, err := openDiskCache(dir, 1<<20); err != nil {
		t.Fatal(err)
	}
	for name, kept := range files {
		_, err := os.Stat(filepath.Join(dir, name))
		if exists := err == nil; exists != kept {
			t.Errorf("%s: exists %v, want %v", name, exists, kept)
		}
	}
}

// TestAheadBound: objects that come larger than their hints' estimate
// are counted at their size as soon as it is known, before their bodies
// are read (through the disk cache too); one that the bound then has no
// room for is not kept, and its reader fetches it. The bound holds
// throughout. The server answers once all three are hinted, so that no
// object's size is known before the last hint.
func TestAheadBound(t *testing.T) {
	for _, disk := range []bool{false, true} {
		t.Run(fmt.Sprintf("disk_cache=%v", disk), func(t *testing.T) {
			dir := t.TempDir()
			want := chunks(t, dir, 3, 1500)
			gate := make(chan struct{})
			r, faults := gated(t, dir, gate)
			if disk {
				dc, err := openDiskCache(t.TempDir(), 1<<20)
				if err != nil {
					t.Fatal(err)
				}
				r = &cached{Root: r, disk: dc}
			}
			ra := newReadAhead(3000)
			a := newAhead(r, ra)
			for i := range want {
				a.Hint(fmt.Sprintf("c/%d", i), 1000, big) // 3 x 1000 fit; 3 x 1500 do not
			}
			close(gate)
			ra.mu.Lock()
			var all []*fetch
			for _, f := range ra.entries {
				all = append(all, f)
			}
			ra.mu.Unlock()
			for _, f := range all {
				<-f.done
			}
			ra.mu.Lock()
			held := ra.held
			ra.mu.Unlock()
			if held > 3000 {
				t.Errorf("%d bytes held once every fetch arrived; the bound is 3000", held)
			}
			for i := range want {
				got, err := a.ReadAll(bg, fmt.Sprintf("c/%d", i), nil, big)
				if err != nil || !bytes.Equal(got, want[i]) {
					t.Errorf("c/%d: %d bytes, %v", i, len(got), err)
				}
			}
			if n := faults.Requests(); n != 4 {
				t.Errorf("%d requests, want 4: 3 fetches, one refused for room and fetched by its reader", n)
			}
		})
	}
}

// TestAheadLends: Lend hands out the fetched bytes themselves, no copy;
// an object dropped while lent keeps its bytes until released, and then
// its buffer serves a later fetch of the same size class rather than a
// new allocation.
func TestAheadLends(t *testing.T) {
	dir := t.TempDir()
	const n = 20
	want := chunks(t, dir, n, 6000) // a recycled size (over smallBuf)
	r, _ := proxied(t, dir)
	ra := newReadAhead(7000) // room for one
	a := newAhead(r, ra)
	lend := func(i int) ([]byte, func()) {
		t.Helper()
		data, release, err := a.Lend(bg, fmt.Sprintf("c/%d", i))
		if err != nil || release == nil || !bytes.Equal(data, want[i]) {
			t.Fatalf("Lend(c/%d): %d bytes, release %v, %v", i, len(data), release != nil, err)
		}
		return data, release
	}
	if _, release, err := a.Lend(bg, "c/0"); release != nil || err != nil {
		t.Fatalf("Lend of an object not hinted: release %v, %v; want nil, nil", release != nil, err)
	}
	a.Hint("c/0", 6000, big)
	data, release := lend(0)
	again, releaseAgain := lend(0)
	if &again[0] != &data[0] {
		t.Error("two lends of c/0 gave two copies, want the fetched bytes both times")
	}
	releaseAgain()
	a.Hint("c/1", 6000, big) // drops c/0, still lent
	lend1, release1 := lend(1)
	if &lend1[0] == &data[0] {
		t.Fatal("c/1 was fetched into c/0's buffer while c/0 was lent")
	}
	if !bytes.Equal(data, want[0]) {
		t.Fatal("c/0's bytes changed while lent")
	}
	release()
	release1()
	// Each hint now drops the object before it, released: its buffer is
	// free for the next fetch. sync.Pool may let some go (under -race it
	// drops a quarter of them on purpose), so count the reuses.
	seen := map[*byte]bool{&data[0]: true, &lend1[0]: true}
	reused := 0
	for i := 2; i < n; i++ {
		a.Hint(fmt.Sprintf("c/%d", i), 6000, big)
		d, release := lend(i)
		if seen[&d[0]] {
			reused++
		}
		seen[&d[0]] = true
		release()
	}
	if reused < (n-2)/3 {
		t.Errorf("%d of %d fetches reused a dropped object's buffer, want most", reused, n-2)
	}
}

// TestAheadRanges: hinted byte ranges of an object are fetched once
// each, in the background, and lent (the fetched bytes themselves) or
// copied (ReadAt) to their readers; a range is its own entry, so reads of
// ranges not hinted, or of the object whole, go to the root; ranges past
// the memory bound are not hinted, and the bound holds.
func TestAheadRanges(t *testing.T) {
	dir := t.TempDir()
	parts := chunks(t, dir, 10, 1000)
	if err := os.WriteFile(filepath.Join(dir, "shard"), bytes.Join(parts, nil), 0o644); err != nil {
		t.Fatal(err)
	}
	r, faults := proxied(t, dir)
	faults.Set(5*time.Millisecond, 0, 0)
	ra := newReadAhead(6 * 1000) // room for 6 of the 10
	a := newAhead(r, ra)
	for i := range parts {
		a.HintRange("shard", int64(i*1000), 1000)
	}
	a.HintRange("shard", 0, 1000) // again: ignored
	ra.mu.Lock()
	hinted, held := len(ra.entries), ra.held
	ra.mu.Unlock()
	if hinted != 6 || held > 6000 {
		t.Errorf("%d ranges hinted, %d bytes held; want the 6 the bound holds, 6000 bytes at most", hinted, held)
	}
	var wg sync.WaitGroup
	for i := range parts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			got := make([]byte, 1000)
			if err := a.ReadAt(bg, "shard", got, int64(i*1000)); err != nil || !bytes.Equal(got, parts[i]) {
				t.Errorf("range %d: %v, or other bytes", i, err)
			}
		}()
	}
	wg.Wait()
	if n := faults.Requests(); n != 10 {
		t.Errorf("%d requests for 10 ranges, want 10 (each once)", n)
	}
	data, release, err := a.LendRange(bg, "shard", 0, 1000)
	again, releaseAgain, _ := a.LendRange(bg, "shard", 0, 1000)
	if err != nil || release == nil || releaseAgain == nil || !bytes.Equal(data, parts[0]) || &again[0] != &data[0] {
		t.Fatalf("LendRange of a range fetched: %v, release %v; want its fetched bytes, lent twice", err, release != nil)
	}
	release()
	releaseAgain()
	for _, tc := range []struct {
		off, n int64
	}{
		{500, 1000},  // not a hinted range
		{0, 999},     // a hinted range's start, another length
		{9000, 1000}, // hinted past the bound
	} {
		if _, release, err := a.LendRange(bg, "shard", tc.off, tc.n); release != nil || err != nil {
			t.Errorf("LendRange(%d, %d), not held: release %v, %v; want nil, nil", tc.off, tc.n, release != nil, err)
		}
	}
	got, err := a.ReadAll(bg, "shard", nil, big)
	if err != nil || len(got) != 10*1000 {
		t.Errorf("ReadAll of the object whose ranges are held: %d bytes, %v", len(got), err)
	}
	if n := faults.Requests(); n != 11 {
		t.Errorf("%d requests, want 11: the ranges once, then the object whole", n)
	}
	ra.mu.Lock()
	defer ra.mu.Unlock()
	if ra.held > 6000 {
		t.Errorf("%d bytes held; the bound is 6000", ra.held)
	}
}

// TestAheadMax: an object hinted with a maximum it passes is not held:
// its reader gets the hint's error, naming both sizes, from the one
// request the fetch made; one larger than the read-ahead's bound but
// within the read's maximum is left to the reader, which reads it.
func TestAheadMax(t *testing.T) {
	dir := t.TempDir()
	want := chunks(t, dir, 2, 1000)
	r, faults := proxied(t, dir)
	a := newAhead(r, newReadAhead(900))
	a.Hint("c/0", 100, 800)
	_, err := a.ReadAll(bg, "c/0", nil, 800)
	if !errors.Is(err, ErrTooLarge) || !strings.Contains(err.Error(), "c/0: 1000 bytes, more than the 800 this read takes") {
		t.Errorf("ReadAll of an object past its hint's maximum: %v; want ErrTooLarge naming it", err)
	}
	a.Hint("c/1", 100, big)
	if got, err := a.ReadAll(bg, "c/1", nil, big); err != nil || !bytes.Equal(got, want[1]) {
		t.Errorf("ReadAll of an object past the bound: %d bytes, %v; want it read", len(got), err)
	}
	if n := faults.Requests(); n != 3 {
		t.Errorf("%d requests, want 3: c/0 once, c/1 by the read-ahead, which stops at its bound, then by its reader", n)
	}
}
