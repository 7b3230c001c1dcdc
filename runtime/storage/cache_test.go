package storage

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/loadergen/loadergen/internal/testenv/remotetest"
)

// useCache makes dc the process's disk cache for the test.
func useCache(t *testing.T, dc *diskCache) {
	saved := processCache
	processCache = func() (*diskCache, error) { return dc, nil }
	t.Cleanup(func() { processCache = saved })
}

// cachedObject serves data as object "obj" (at path obj) of a web root,
// through a fault proxy, and returns the root in a disk cache of 1 MiB,
// which it makes the process's for the test, and the proxy.
func cachedObject(t *testing.T, data []byte) (c *cached, faults *remotetest.Faults, obj string) {
	t.Helper()
	dir := t.TempDir()
	obj = filepath.Join(dir, "obj")
	if err := os.WriteFile(obj, data, 0o644); err != nil {
		t.Fatal(err)
	}
	r, faults := proxied(t, dir)
	dc, err := openDiskCache(t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	useCache(t, dc)
	return &cached{Root: r, disk: dc}, faults, obj
}

// entryFiles returns the paths of the entries in cache directory dir (the
// files named by a key), sorted.
func entryFiles(t *testing.T, dir string) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "[0-9a-f]*"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, f := range files {
		if len(filepath.Base(f)) == 64 {
			out = append(out, f)
		}
	}
	return out
}

// cacheBytes is the bytes of the entries and records in cache directory
// dir: every file but the usage file and the temporary files being
// written.
func cacheBytes(t *testing.T, dir string) int64 {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.Mode().IsRegular() && !isTemp(e.Name()) && e.Name() != usageName {
			n += info.Size()
		}
	}
	return n
}

// TestDiskCacheChecks: an entry is checked before it is served, whole or
// ranged, or fetched (Fetch): one cut short, one the cache did not write
// (no record beside it) and, for entries of reads, one whose bytes
// changed are fetched again and served right, and the entry is then good
// again. A fetched file is also fetched again when the object changed on
// the server (its size, or its Last-Modified where the server gives no
// ETag).
func TestDiskCacheChecks(t *testing.T) {
	want := make([]byte, 10000)
	for i := range want {
		want[i] = byte(i * 13 / 7)
	}
	reads := []struct {
		name string
		// read reads the object through cache c and returns its bytes
		// (the range's for ReadAt).
		read func(t *testing.T, c *cached) []byte
		want []byte
	}{
		{"ReadAll", func(t *testing.T, c *cached) []byte {
			got, err := c.ReadAll(bg, "obj", nil, big)
			if err != nil {
				t.Fatal(err)
			}
			return got
		}, want},
		{"ReadAt", func(t *testing.T, c *cached) []byte {
			p := make([]byte, 5000)
			if err := c.ReadAt(bg, "obj", p, 1000); err != nil {
				t.Fatal(err)
			}
			return p
		}, want[1000:6000]},
		{"Fetch", func(t *testing.T, c *cached) []byte {
			path, done, err := Fetch(bg, c, "obj")
			if err != nil {
				t.Fatal(err)
			}
			defer done()
			got, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			return got
		}, want},
	}
	damages := []struct {
		name   string
		damage func(t *testing.T, entry string, size int)
		fetch  bool // applies to fetched files
	}{
		{"cut", func(t *testing.T, entry string, size int) {
			if err := os.Truncate(entry, 123); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"planted", func(t *testing.T, entry string, size int) {
			for _, f := range []string{entry, entry + ".meta"} {
				os.Remove(f)
			}
			if err := os.WriteFile(entry, bytes.Repeat([]byte{'x'}, size), 0o644); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"changed", func(t *testing.T, entry string, size int) {
			f, err := os.OpenFile(entry, os.O_WRONLY, 0)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if _, err := f.WriteAt([]byte("xyz"), int64(size/2)); err != nil {
				t.Fatal(err)
			}
		}, false},
	}
	for _, rd := range reads {
		for _, dm := range damages {
			if rd.name == "Fetch" && !dm.fetch {
				continue
			}
			t.Run(rd.name+"/"+dm.name, func(t *testing.T) {
				c, faults, _ := cachedObject(t, want)
				if got := rd.read(t, c); !bytes.Equal(got, rd.want) {
					t.Fatalf("the first read: %d bytes, not the object's", len(got))
				}
				entries := entryFiles(t, c.disk.dir)
				if len(entries) != 1 {
					t.Fatalf("%d entries after one read, want 1", len(entries))
				}
				dm.damage(t, entries[0], len(rd.want))
				before := faults.Requests()
				if got := rd.read(t, c); !bytes.Equal(got, rd.want) {
					t.Fatalf("a %s entry was served: %d bytes, not the object's", dm.name, len(got))
				}
				if faults.Requests() == before {
					t.Error("the object was not fetched again")
				}
				again := faults.Requests()
				if got := rd.read(t, c); !bytes.Equal(got, rd.want) {
					t.Fatalf("the entry fetched again: %d bytes, not the object's", len(got))
				}
				if n, most := faults.Requests()-again, map[bool]int{false: 0, true: 1}[rd.name == "Fetch"]; n > most {
					t.Errorf("reading the entry fetched again made %d requests, want %d", n, most)
				}
			})
		}
	}
	t.Run("Fetch/object changed", func(t *testing.T) {
		c, _, obj := cachedObject(t, want)
		for i, next := range [][]byte{want, bytes.Repeat([]byte{1}, len(want)), bytes.Repeat([]byte{2}, 500)} {
			if err := os.WriteFile(obj, next, 0o644); err != nil {
				t.Fatal(err)
			}
			at := time.Now().Add(time.Duration(i) * time.Hour) // Last-Modified counts seconds
			if err := os.Chtimes(obj, at, at); err != nil {
				t.Fatal(err)
			}
			path, done, err := Fetch(bg, c, "obj")
			if err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(path)
			done()
			if err != nil || !bytes.Equal(got, next) {
				t.Errorf("fetch %d: %d bytes (%v), not the object as it is now", i, len(got), err)
			}
		}
	})
}

// TestDiskCacheEndpoint: the same bucket and key at two S3 endpoints are
// two objects, whose entries the cache keeps apart.
func TestDiskCacheEndpoint(t *testing.T) {
	var rs []Root
	for i, content := range []string{"endpoint A's", "endpoint B's"} {
		srv := remotetest.Start(t)
		srv.Env(t)
		if err := os.WriteFile(filepath.Join(srv.Bucket(t, "bkt"), "x"), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		r, err := openRemote("s3://bkt", Options{Retry: quick})
		if err != nil {
			t.Fatalf("endpoint %d: %v", i, err)
		}
		rs = append(rs, r)
	}
	dc, err := openDiskCache(t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	useCache(t, dc)
	for i, want := range []string{"endpoint A's", "endpoint B's"} {
		c := &cached{Root: rs[i], disk: dc}
		got, err := c.ReadAll(bg, "x", nil, big)
		if err != nil || string(got) != want {
			t.Errorf("ReadAll at endpoint %d: %q, %v; want %q", i, got, err, want)
		}
		path, done, err := Fetch(bg, c, "x")
		if err != nil {
			t.Fatal(err)
		}
		got, err = os.ReadFile(path)
		done()
		if err != nil || string(got) != want {
			t.Errorf("Fetch at endpoint %d: %q, %v; want %q", i, got, err, want)
		}
	}
}

// TestDiskCacheNodeBound: two processes sharing a cache directory, each
// writing almost the bound in entries at the same time, hold no more
// than the bound between them: the bound is the node's, not each
// process's.
func TestDiskCacheNodeBound(t *testing.T) {
	const (
		bound   = 4 << 20
		entries = 40
		size    = 100 << 10 // 40 of them: 4000 KiB, within the bound
		envDir  = "LOADERGEN_STORAGE_TEST_CACHE"
		envSync = "LOADERGEN_STORAGE_TEST_SYNC"
		envRole = "LOADERGEN_STORAGE_TEST_ROLE"
	)
	if dir := os.Getenv(envDir); dir != "" {
		role, _ := strconv.Atoi(os.Getenv(envRole))
		dc, err := openDiskCache(dir, bound)
		if err != nil {
			t.Fatal(err)
		}
		// Both open the cache before either writes.
		sync := os.Getenv(envSync)
		if err := os.WriteFile(filepath.Join(sync, strconv.Itoa(role)), nil, 0o644); err != nil {
			t.Fatal(err)
		}
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Millisecond) {
			if ready, _ := os.ReadDir(sync); len(ready) == 2 {
				break
			}
			if time.Now().After(deadline) {
				t.Fatal("the other process did not open the cache")
			}
		}
		data := bytes.Repeat([]byte{byte(role)}, size)
		for i := range entries {
			dc.put(fmt.Sprintf("%064x", role<<16|i), data)
		}
		return
	}
	dir, sync := t.TempDir(), t.TempDir()
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for role := range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDiskCacheNodeBound$", "-test.count=1")
		cmd.Env = append(os.Environ(), envDir+"="+dir, envSync+"="+sync, envRole+"="+strconv.Itoa(role))
		out := &bytes.Buffer{}
		cmd.Stdout, cmd.Stderr = out, out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, out)
	}
	for i, cmd := range cmds {
		if err := cmd.Wait(); err != nil {
			t.Fatalf("process %d: %v\n%s", i, err, outs[i])
		}
	}
	if n := cacheBytes(t, dir); n > bound {
		t.Errorf("the two processes left %d KiB in the cache, over its bound of %d KiB", n>>10, bound>>10)
	}
	if n := len(entryFiles(t, dir)); n < entries/2 {
		t.Errorf("%d entries left, want the bound's worth", n)
	}
}

// TestDiskCacheLock: a write into the cache waits for the lock on its
// usage file, which another process may hold.
func TestDiskCacheLock(t *testing.T) {
	dc, err := openDiskCache(t.TempDir(), 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	other, err := os.Open(filepath.Join(dc.dir, usageName)) // another open file: flock excludes it as another process's
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if err := lockFile(other); err != nil {
		t.Skipf("no file locks here: %v", err)
	}
	put := make(chan struct{})
	go func() {
		dc.put(fmt.Sprintf("%064x", 1), []byte("entry"))
		close(put)
	}()
	select {
	case <-put:
		t.Fatal("put wrote its entry while another held the cache's lock")
	case <-time.After(100 * time.Millisecond):
	}
	unlockFile(other)
	<-put
	if n := len(entryFiles(t, dc.dir)); n != 1 {
		t.Errorf("%d entries once the lock was free, want 1", n)
	}
}

// TestFetchSmallCache: a fetched file stays until its done is called, also
// when the cache is too small for it and the next one fetched: a caller
// that fetches two files before opening them (a ragged .npy key's data
// and offsets) finds both.
func TestFetchSmallCache(t *testing.T) {
	dir := t.TempDir()
	want := chunks(t, dir, 2, 1000)
	r, _ := proxied(t, dir)
	dc, err := openDiskCache(t.TempDir(), 1500)
	if err != nil {
		t.Fatal(err)
	}
	useCache(t, dc)
	paths, dones := make([]string, len(want)), make([]func(), len(want))
	for i := range want {
		if paths[i], dones[i], err = Fetch(bg, r, fmt.Sprintf("c/%d", i)); err != nil {
			t.Fatal(err)
		}
	}
	for i, path := range paths {
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, want[i]) {
			t.Errorf("c/%d, fetched and not yet done: %d bytes, %v", i, len(got), err)
		}
		dones[i]()
	}
	if n := cacheBytes(t, dc.dir); n > 1500 {
		t.Errorf("%d bytes in the cache once both are done, over its bound of 1500", n)
	}
}
