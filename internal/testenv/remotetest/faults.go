package remotetest

import (
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"testing"
	"time"
)

// Faults is a proxy in front of a server that injects faults into the
// requests it forwards, as a congested or failing network and server
// would. Its faults may be changed between requests, with Set.
type Faults struct {
	URL string // the proxy's address: point clients here

	// mu guards the settings and the counts; the proxy's handler reads
	// and updates them per request, tests through Set, Requests and Conns.
	mu       sync.Mutex
	latency  time.Duration // added before each request is forwarded
	fail503  int           // the next fail503 requests get 503 SlowDown
	cut      int           // the next cut requests are forwarded, their bodies cut after a few bytes
	requests int           // requests seen
	conns    int           // connections clients opened to the proxy
}

// Proxy starts a fault proxy in front of target (a URL), stopped when the
// test ends.
func Proxy(t testing.TB, target string) *Faults {
	t.Helper()
	u, err := url.Parse(target)
	if err != nil {
		t.Fatal(err)
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.ErrorLog = log.New(io.Discard, "", 0) // the faults it injects are the point
	f := &Faults{}
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		f.requests++
		latency := f.latency
		slow, cut := f.fail503 > 0, f.cut > 0 && !(f.fail503 > 0)
		if slow {
			f.fail503--
		} else if cut {
			f.cut--
		}
		f.mu.Unlock()
		time.Sleep(latency)
		switch {
		case slow:
			w.Header().Set("Content-Type", "application/xml")
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`)
		case cut:
			rp.ServeHTTP(&cutter{ResponseWriter: w, left: 7}, r)
		default:
			rp.ServeHTTP(w, r)
		}
	}))
	srv.Config.ConnState = func(_ net.Conn, state http.ConnState) {
		if state == http.StateNew {
			f.mu.Lock()
			f.conns++
			f.mu.Unlock()
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	f.URL = srv.URL
	return f
}

// Set changes the faults to come: latency before every request, 503
// SlowDown for the next fail503 requests, then bodies cut short for the
// next cut ones.
func (f *Faults) Set(latency time.Duration, fail503, cut int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.latency, f.fail503, f.cut = latency, fail503, cut
}

// Requests returns how many requests the proxy has seen.
func (f *Faults) Requests() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.requests
}

// Conns returns how many connections clients have opened to the proxy.
func (f *Faults) Conns() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.conns
}

// cutter forwards a response's status and headers, then its first left
// bytes, and then drops the connection.
type cutter struct {
	http.ResponseWriter
	left int
}

func (c *cutter) Write(p []byte) (int, error) {
	if len(p) <= c.left {
		c.left -= len(p)
		return c.ResponseWriter.Write(p)
	}
	n, _ := c.ResponseWriter.Write(p[:c.left])
	c.left = 0
	if fl, ok := c.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
	if hj, ok := c.ResponseWriter.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			conn.(*net.TCPConn).SetLinger(0) // a reset, as a dropped connection gives
			conn.Close()
		}
	}
	return n, http.ErrAbortHandler
}
