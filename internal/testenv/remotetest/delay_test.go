package remotetest

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// TestDelay sends requests through delay proxies on one kept-alive
// connection each: every request takes at least the latency longer, and
// the bodies arrive whole.
func TestDelay(t *testing.T) {
	body := bytes.Repeat([]byte("0123456789abcdef"), 1<<16) // 1 MiB
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write(body) }))
	defer srv.Close()
	for _, latency := range []time.Duration{0, 30 * time.Millisecond} {
		d, err := ListenDelay("127.0.0.1:0", strings.TrimPrefix(srv.URL, "http://"), latency)
		if err != nil {
			t.Fatal(err)
		}
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
		for i := range 3 {
			start := time.Now()
			resp, err := client.Get("http://" + d.Addr() + "/x")
			if err != nil {
				t.Fatalf("latency %v, request %d: %v", latency, i, err)
			}
			got, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			took := time.Since(start)
			if err != nil || !bytes.Equal(got, body) {
				t.Fatalf("latency %v, request %d: %d bytes, %v; want the 1 MiB body", latency, i, len(got), err)
			}
			if took < latency {
				t.Errorf("latency %v, request %d took %v", latency, i, took)
			}
		}
		client.CloseIdleConnections()
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
