package storage

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/loadergen/loadergen/internal/testenv/remotetest"
)

// stalled starts a server that answers no request until its client
// hangs up, and returns a web root on it, with a client of its own, and
// a function that closes both.
func stalled(t *testing.T) (Root, func()) {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	tr := &http.Transport{}
	r, err := openRemote(srv.URL, Options{Retry: quick, Client: &http.Client{Transport: tr}})
	if err != nil {
		t.Fatal(err)
	}
	return r, func() {
		tr.CloseIdleConnections()
		srv.Close()
	}
}

// TestAheadClose: Close of a root drops what it hinted, queued or in
// flight on a server that never answers, and returns at once, with
// nothing held and none of its fetchers left; hints after it are
// ignored, and the entries of another root stay.
func TestAheadClose(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) }) // the last cleanup: after the servers'
	r, stop := stalled(t)
	t.Cleanup(stop)
	dir := t.TempDir()
	want := chunks(t, dir, 1, 1000)
	other, _ := proxied(t, dir)
	ra := newReadAhead(1 << 30)
	a, b := newAhead(r, ra), newAhead(other, ra)
	for i := range AheadRequests + 10 { // every fetcher busy, some queued
		a.Hint(fmt.Sprintf("c/%d", i), 1000, big)
	}
	a.Sub("c").(Hinter).HintRange("0", 0, 10)
	b.Hint("c/0", 1000, big)
	if got, err := b.ReadAll(bg, "c/0", nil, big); err != nil || len(got) != len(want[0]) {
		t.Fatalf("another root's read: %d bytes, %v", len(got), err)
	}
	time.Sleep(50 * time.Millisecond) // the fetches reach the server
	start := time.Now()
	if err := a.Sub("c").Close(); err != nil {
		t.Fatal(err)
	}
	ra.mu.Lock()
	if len(ra.entries) != AheadRequests+12 {
		t.Errorf("Close of a Sub dropped entries: %d left, want %d", len(ra.entries), AheadRequests+12)
	}
	ra.mu.Unlock()
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %v", d)
	}
	a.Hint("c/0", 1000, big)
	ra.mu.Lock()
	if len(ra.entries) != 1 || ra.entries[aheadKey(other.URL("c/0"), 0, -1)] == nil || len(ra.queue) != 0 || ra.held != 1000 {
		t.Errorf("after Close: %d entries, %d queued, %d bytes held; want another root's 1, of 1000 bytes", len(ra.entries), len(ra.queue), ra.held)
	}
	ra.mu.Unlock()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	ra.mu.Lock()
	defer ra.mu.Unlock()
	if len(ra.entries) != 0 || ra.held != 0 {
		t.Errorf("after both Close: %d entries, %d bytes held", len(ra.entries), ra.held)
	}
}

// TestReadCancelled: a read stops once its context is done, with an
// error that wraps the context's: between the attempts of a refused
// port's retries, within an attempt a silent server holds, and while it
// waits for the read-ahead's fetch of the same object.
func TestReadCancelled(t *testing.T) {
	patient := Retry{Attempts: 10, First: 5 * time.Second, Max: 5 * time.Second, Timeout: time.Minute, Idle: time.Minute}
	refused, err := openRemote(remotetest.Refused(t), Options{Retry: patient})
	if err != nil {
		t.Fatal(err)
	}
	srv := remotetest.MiniS3(t)
	srv.Env(t)
	t.Setenv("AWS_ENDPOINT_URL_S3", remotetest.Refused(t))
	s3, err := openRemote("s3://data", Options{Retry: patient})
	if err != nil {
		t.Fatal(err)
	}
	silent, err := openRemote(remotetest.Silent(t), Options{Retry: patient})
	if err != nil {
		t.Fatal(err)
	}
	slow, stop := stalled(t)
	defer stop()
	ahead := newAhead(slow, newReadAhead(1<<20))
	defer ahead.Close()
	ahead.Hint("x", 10, big)
	for _, c := range []struct {
		name string
		root Root
	}{{"web, refused", refused}, {"s3, refused", s3}, {"silent", silent}, {"read ahead", ahead}} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(bg)
			time.AfterFunc(100*time.Millisecond, cancel)
			start := time.Now()
			_, err := c.root.ReadAll(ctx, "x", nil, big)
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("ReadAll returned %v after its context was cancelled", d-100*time.Millisecond)
			}
			if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), c.root.URL("x")) {
				t.Errorf("ReadAll: %v; want context.Canceled, naming %s", err, c.root.URL("x"))
			}
		})
	}
}
