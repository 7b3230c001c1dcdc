package https

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/loadergen/loadergen/runtime/storage"
)

// bg is the context of the tests' reads, never done.
var bg = context.Background()

// big is the maximum of the tests' whole reads that no object comes near.
const big = 1 << 30

// quick retries for tests: the faults they inject pass at once.
var quick = storage.Retry{Attempts: 5, First: time.Millisecond, Max: 5 * time.Millisecond, Timeout: 10 * time.Second}

// aBin is an object of 10000 bytes, "0123456789" again and again.
var aBin = bytes.Repeat([]byte("0123456789"), 1000)

// TestRegistered: importing the package registers https and http, whose
// roots storage.Open opens, read-only.
func TestRegistered(t *testing.T) {
	for _, s := range []string{"http", "https"} {
		r, err := storage.Open(s + "://example.com/x")
		if err != nil {
			t.Fatalf("storage.Open(%s://...): %v", s, err)
		}
		r.Close()
	}
	if _, err := storage.OpenWritable("https://example.com/x"); err == nil || !strings.Contains(err.Error(), "cannot write there") {
		t.Errorf("OpenWritable(https://...) = %v, want a refusal", err)
	}
	if _, err := Open("https://host/x?y=1"); err == nil || !strings.Contains(err.Error(), "no query") {
		t.Errorf("Open of a presigned URL as a root: %v, want a refusal", err)
	}
}

// TestMissing: a 404 is fs.ErrNotExist, at once, naming the URL.
func TestMissing(t *testing.T) {
	web := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(web.Close)
	r, err := Open(web.URL+"/x", storage.Options{Retry: quick})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := r.ReadAll(bg, "a.bin", nil, big); !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), web.URL+"/x/a.bin") {
		t.Errorf("ReadAll of a missing object: %v, want fs.ErrNotExist naming it", err)
	}
}

// TestNoRanges: a web server that ignores Range headers, answering every
// GET with the whole object, still gives the bytes a ranged read and a
// tail read ask for.
func TestNoRanges(t *testing.T) {
	web := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data := map[string][]byte{"a.bin": aBin, "dir/b.txt": []byte("hello, world")}[strings.TrimPrefix(r.URL.Path, "/")]
		w.Header().Set("Content-Length", strconv.Itoa(len(data)))
		w.Write(data)
	}))
	t.Cleanup(web.Close)
	r, err := Open(web.URL, storage.Options{Retry: quick})
	if err != nil {
		t.Fatal(err)
	}
	p := make([]byte, 12)
	if err := r.ReadAt(bg, "a.bin", p, 9983); err != nil || string(p) != "345678901234" {
		t.Errorf("ReadAt(a.bin, 9983) = %q, %v", p, err)
	}
	if size, err := r.ReadTail(bg, "a.bin", p); err != nil || size != 10000 || string(p) != "890123456789" {
		t.Errorf("ReadTail(a.bin, 12) = %q, %d, %v; want 890123456789, 10000", p, size, err)
	}
	if size, err := r.ReadTail(bg, "dir/b.txt", make([]byte, 20)); !errors.Is(err, storage.ErrShort) || size != 12 {
		t.Errorf("ReadTail(dir/b.txt, 20) = %d, %v; want 12, ErrShort", size, err)
	}
}

// TestServerGone: a server that stops answering (connection refused) is
// retried, then named.
func TestServerGone(t *testing.T) {
	web := httptest.NewServer(http.NotFoundHandler())
	web.Close()
	r, err := Open(web.URL+"/x", storage.Options{Retry: quick})
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.ReadAll(bg, "a.bin", nil, big)
	if err == nil || !strings.Contains(err.Error(), web.URL+"/x/a.bin") || !strings.Contains(err.Error(), "gave up after 5 attempts") {
		t.Errorf("server gone: %v", err)
	}
}
