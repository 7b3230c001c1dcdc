package storage

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/loadergen/loadergen/internal/testenv/remotetest"
)

// faultRoots returns a web root and an S3 root over objects, each through
// its own fault proxy.
func faultRoots(t *testing.T) map[string]struct {
	root   Root
	faults *remotetest.Faults
} {
	t.Helper()
	local := t.TempDir()
	writeObjects(t, local)
	web := httptest.NewServer(http.FileServer(http.Dir(local)))
	t.Cleanup(web.Close)
	wf := remotetest.Proxy(t, web.URL)
	w, err := openRemote(wf.URL, Options{Retry: quick})
	if err != nil {
		t.Fatal(err)
	}
	srv := remotetest.Start(t)
	writeObjects(t, srv.Bucket(t, "data"))
	sf := remotetest.Proxy(t, srv.Endpoint)
	srv.Env(t)
	t.Setenv("AWS_ENDPOINT_URL_S3", sf.URL)
	s3, err := openRemote("s3://data", Options{Retry: quick})
	if err != nil {
		t.Fatal(err)
	}
	return map[string]struct {
		root   Root
		faults *remotetest.Faults
	}{"http": {w, wf}, "s3": {s3, sf}}
}

// TestFaultsSurvived: throttling and connections dropped mid-body are
// retried until the read succeeds, whole or by range.
func TestFaultsSurvived(t *testing.T) {
	for kind, c := range faultRoots(t) {
		t.Run(kind, func(t *testing.T) {
			for _, f := range []struct {
				name          string
				fail503, cuts int
			}{{"503 SlowDown", 3, 0}, {"cut bodies", 0, 2}, {"both", 2, 2}} {
				c.faults.Set(time.Millisecond, f.fail503, f.cuts)
				before := c.faults.Requests()
				got, err := c.root.ReadAll(bg, "a.bin", nil, big)
				if err != nil || !bytes.Equal(got, objects["a.bin"]) {
					t.Errorf("%s: ReadAll = %d bytes, %v", f.name, len(got), err)
				}
				if n, want := c.faults.Requests()-before, 1+f.fail503+f.cuts; n != want {
					t.Errorf("%s: %d requests, want %d", f.name, n, want)
				}
				c.faults.Set(0, f.fail503, f.cuts)
				p := make([]byte, 100)
				if err := c.root.ReadAt(bg, "a.bin", p, 5000); err != nil || !bytes.Equal(p, objects["a.bin"][5000:5100]) {
					t.Errorf("%s: ReadAt = %v", f.name, err)
				}
			}
		})
	}
}

// TestFaultsNamed: a server that keeps throttling is given up on after
// the policy's attempts, and the error names the URL, the status and the
// attempts; a missing object is fs.ErrNotExist at once, without retries.
func TestFaultsNamed(t *testing.T) {
	for kind, c := range faultRoots(t) {
		t.Run(kind, func(t *testing.T) {
			c.faults.Set(0, 100, 0)
			before := c.faults.Requests()
			_, err := c.root.ReadAll(bg, "dir/b.txt", nil, big)
			for _, want := range []string{c.root.URL("dir/b.txt"), "HTTP 503", "gave up after 5 attempts"} {
				if err == nil || !strings.Contains(err.Error(), want) {
					t.Errorf("endless 503: %v, want it to say %q", err, want)
				}
			}
			t.Log(err)
			if n := c.faults.Requests() - before; n != quick.Attempts {
				t.Errorf("endless 503: %d requests, want %d", n, quick.Attempts)
			}
			c.faults.Set(0, 0, 0)
			before = c.faults.Requests()
			if _, err := c.root.ReadAll(bg, "nope.bin", nil, big); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("missing object: %v, want fs.ErrNotExist", err)
			}
			if n := c.faults.Requests() - before; n != 1 {
				t.Errorf("missing object: %d requests, want 1 (no retry)", n)
			}
		})
	}
}

// TestConnectionsReused: sequential reads, whole and by range, reuse one
// connection; a client that opened one per request would leave thousands
// of sockets behind an epoch.
func TestConnectionsReused(t *testing.T) {
	for kind, c := range faultRoots(t) {
		t.Run(kind, func(t *testing.T) {
			c.faults.Set(0, 0, 0)
			before := c.faults.Conns()
			p := make([]byte, 100)
			for range 10 {
				if _, err := c.root.ReadAll(bg, "a.bin", nil, big); err != nil {
					t.Fatal(err)
				}
				if err := c.root.ReadAt(bg, "a.bin", p, 10); err != nil {
					t.Fatal(err)
				}
			}
			if n := c.faults.Conns() - before; n > 1 {
				t.Errorf("20 sequential reads opened %d connections, want 1", n)
			}
		})
	}
}

// TestFetch: a URL's object is fetched whole, by parts in parallel,
// through throttling and cut connections, into a temporary file that done
// removes; a local path is itself.
func TestFetch(t *testing.T) {
	dir := t.TempDir()
	big := make([]byte, 2*fetchPart+12345)
	for i := range big {
		big[i] = byte(i * 7 / 5)
	}
	if err := os.WriteFile(filepath.Join(dir, "big.npy"), big, 0o644); err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(http.FileServer(http.Dir(dir)))
	t.Cleanup(web.Close)
	faults := remotetest.Proxy(t, web.URL)
	faults.Set(0, 2, 2)
	t.Setenv("TMPDIR", t.TempDir())
	web2, err := openRemote(faults.URL, Options{Retry: quick})
	if err != nil {
		t.Fatal(err)
	}
	path, done, err := Fetch(bg, web2, "big.npy")
	if err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil || !bytes.Equal(got, big) {
		t.Errorf("fetched %d bytes, %v; want the object's %d", len(got), err, len(big))
	}
	done()
	if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("done left %s: %v", path, err)
	}
	if p, _, err := Fetch(bg, Local(dir), "big.npy"); p != filepath.Join(dir, "big.npy") || err != nil {
		t.Errorf("Fetch of a local path = %q, %v", p, err)
	}
}

// TestFetchCached: with the disk cache set, a fetched object becomes a
// cache entry that outlives done, and a later Fetch of it asks only for
// its size and version.
func TestFetchCached(t *testing.T) {
	want := bytes.Repeat([]byte("npy"), 1000)
	c, faults, _ := cachedObject(t, want)
	for i := range 2 {
		path, done, err := Fetch(bg, c, "obj")
		if err != nil {
			t.Fatal(err)
		}
		done()
		got, err := os.ReadFile(path)
		if err != nil || !bytes.Equal(got, want) || filepath.Dir(path) != c.disk.dir {
			t.Errorf("fetch %d: %s, %d bytes, %v; want the object, in the cache %s", i, path, len(got), err, c.disk.dir)
		}
	}
	if n := faults.Requests(); n != 3 {
		t.Errorf("%d requests for two fetches, want 3: the size (with the version) twice and the object once", n)
	}
}

// dripper serves objects of 20 bytes, one byte at a time: "steady" sends
// one each 25 ms, "drip" one each 5 s.
func dripper(w http.ResponseWriter, r *http.Request) {
	gap := 5 * time.Second
	if path.Base(r.URL.Path) == "steady" {
		gap = 25 * time.Millisecond
	}
	w.Header().Set("Content-Length", "20")
	for range 20 {
		w.Write([]byte{'x'})
		w.(http.Flusher).Flush()
		select {
		case <-time.After(gap):
		case <-r.Context().Done():
			return
		}
	}
}

// TestIdleDeadline: an attempt fails, and is retried, once the server
// sends nothing for the policy's Idle: before its answer's head (silent)
// or within its body (drip); a body that keeps coming (steady) is read
// whole, however long it takes past Idle.
func TestIdleDeadline(t *testing.T) {
	drips := httptest.NewServer(http.HandlerFunc(dripper))
	t.Cleanup(drips.Close)
	policy := Retry{Attempts: 2, First: time.Millisecond, Max: time.Millisecond, Timeout: 10 * time.Second, Idle: 300 * time.Millisecond}
	web, s3 := webAndS3(t, drips.URL, policy)
	silent, err := openRemote(remotetest.Silent(t), Options{Retry: policy})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		kind, name string
		root       Root
		stalls     bool
	}{
		{"http", "steady", web, false},
		{"http", "drip", web, true},
		{"http", "silent", silent, true},
		{"s3", "steady", s3, false},
		{"s3", "drip", s3, true},
	} {
		t.Run(c.kind+"/"+c.name, func(t *testing.T) {
			start := time.Now()
			got, err := c.root.ReadAll(bg, c.name, nil, big)
			if !c.stalls {
				if err != nil || string(got) != strings.Repeat("x", 20) {
					t.Errorf("ReadAll = %q, %v; want the 20 bytes", got, err)
				}
				return
			}
			if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "no byte from the server for 300ms (gave up after 2 attempts)") {
				t.Errorf("ReadAll: %v; want each attempt to stall", err)
			}
			if d := time.Since(start); d > 3*time.Second {
				t.Errorf("ReadAll took %v, want about 2 x 300ms", d)
			}
		})
	}
}

// webAndS3 returns, under policy, a web root at url/data and the S3 root
// s3://data at endpoint url: a server that names objects by the last
// element of their path answers both alike.
func webAndS3(t *testing.T, url string, policy Retry) (web, s3 Root) {
	t.Helper()
	web, err := openRemote(url+"/data", Options{Retry: policy})
	if err != nil {
		t.Fatal(err)
	}
	(&remotetest.Server{Dir: t.TempDir(), Endpoint: url}).Env(t)
	if s3, err = openRemote("s3://data", Options{Retry: policy}); err != nil {
		t.Fatal(err)
	}
	return web, s3
}
