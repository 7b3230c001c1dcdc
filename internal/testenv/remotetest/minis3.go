package remotetest

import (
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// MiniS3 starts a server that speaks as much S3 as GetObject and
// HeadObject need (path-style addressing, byte ranges, NoSuchKey) over a
// new temporary directory, as versitygw would serve it (Server.Dir/bucket/key),
// stopped when the test ends. The tests of faults below HTTP (a refused
// port, a reset, silence) run against it without versitygw installed. It
// checks no signature.
func MiniS3(t testing.TB) *Server {
	t.Helper()
	dir := t.TempDir()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		name := filepath.Join(dir, filepath.FromSlash(strings.TrimPrefix(r.URL.Path, "/")))
		f, err := os.Open(name)
		if err == nil {
			defer f.Close()
			st, err := f.Stat()
			if err == nil && st.Mode().IsRegular() {
				http.ServeContent(w, r, "", st.ModTime(), f)
				return
			}
		}
		w.Header().Set("Content-Type", "application/xml")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>`)
	}))
	t.Cleanup(srv.Close)
	return &Server{Dir: dir, Endpoint: srv.URL}
}

// Refused returns the URL (http://127.0.0.1:port) of a port nothing
// listens on: a connection there is refused.
func Refused(t testing.TB) string {
	t.Helper()
	addr, err := freeAddr()
	if err != nil {
		t.Fatal(err)
	}
	return "http://" + addr
}

// Silent starts a server that accepts connections, reads what clients
// send and never answers, and returns its URL; it stops when the test
// ends.
func Silent(t testing.TB) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	t.Cleanup(func() {
		l.Close()
		<-done
	})
	go func() {
		defer close(done)
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
			go io.Copy(io.Discard, c)
		}
	}()
	return "http://" + l.Addr().String()
}

// Guarded starts a file server over dir that answers only the requests
// that authenticate as user with password (basic authentication) or
// carry X-Amz-Signature=signature in their query (a presigned URL's),
// and others with 403, and returns its URL; it stops when the test ends.
func Guarded(t testing.TB, dir, user, password, signature string) string {
	t.Helper()
	files := http.FileServer(http.Dir(dir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u, p, ok := r.BasicAuth()
		if !(ok && u == user && p == password) && r.URL.Query().Get("X-Amz-Signature") != signature {
			w.WriteHeader(http.StatusForbidden)
			return
		}
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// Stalling starts a file server over dir that, once stall is set, answers
// no request until its client hangs up, as a server that stops answering
// mid-epoch, and returns its URL; it stops when the test ends.
func Stalling(t testing.TB, dir string) (url string, stall *atomic.Bool) {
	t.Helper()
	stall = new(atomic.Bool)
	files := http.FileServer(http.Dir(dir))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if stall.Load() {
			<-r.Context().Done()
			return
		}
		files.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, stall
}
