package records

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/loadergen/loadergen/internal/testenv/bounded"
	"github.com/loadergen/loadergen/internal/testenv/remotetest"
	"github.com/loadergen/loadergen/runtime"
)

// headThenZeros reads as its bytes, then zeros without end.
type headThenZeros []byte

func (h headThenZeros) ReadAt(p []byte, off int64) (int, error) {
	clear(p)
	if off < int64(len(h)) {
		copy(p, h[off:])
	}
	return len(p), nil
}

// TestHostileShard: a remote shard whose server says it holds 1 TiB
// and whose tar header says a member holds 64 GiB (the rest reads as
// zeros, so the tar ends after it) is refused at open, before any of the
// member's bytes are fetched, with an error naming the shard, the sample
// and both sizes.
func TestHostileShard(t *testing.T) {
	if !bounded.Child(t, bounded.HostileRSS) {
		return
	}
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	if err := tw.WriteHeader(&tar.Header{Name: "a.cls", Mode: 0o644, Size: 64 << 30, Typeflag: tar.TypeReg}); err != nil {
		t.Fatal(err)
	}
	head := b.Bytes()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.ServeContent(w, r, "", time.Time{}, io.NewSectionReader(headThenZeros(head), 0, 1<<40))
	}))
	t.Cleanup(srv.Close)
	sp := Spec{Shards: "s.tar", Keys: []Key{{Name: "label", Member: "cls", DType: runtime.Int64, Shape: []int{}}}}
	src, err := Open(sp, srv.URL, quiet)
	if err == nil {
		defer src.Close()
		err = src.Read(bg, rand.New(rand.NewPCG(1, 2)), 0, make([]byte, 8))
	}
	want := `shard ` + srv.URL + `/s.tar: sample "a": its members span 68719476736 bytes from offset 1536, more than the 1073741824 a sample read in place may (LOADERGEN_MAX_SAMPLE_MB)`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("a shard that lies: %v; want %q", err, want)
	}
}

func TestSampleBound(t *testing.T) {
	for _, c := range []struct {
		value string
		want  int64
		err   string
	}{
		{"", 1 << 30, ""},
		{"2048", 2 << 30, ""},
		{"0", 0, `environment LOADERGEN_MAX_SAMPLE_MB="0": want a whole number of MiB from 1`},
		{"1.5", 0, `environment LOADERGEN_MAX_SAMPLE_MB="1.5": want a whole number of MiB from 1`},
	} {
		got, err := sampleBound(func(string) string { return c.value })
		if got != c.want || (err == nil) != (c.err == "") || err != nil && err.Error() != c.err {
			t.Errorf("%q: %d, %v; want %d, %q", c.value, got, err, c.want, c.err)
		}
	}
}

// TestRemoteClose: Close of a source of remote shards whose server stops
// answering while the read-ahead fetches its samples returns at once,
// and leaves no goroutine of ours; a read in flight stops once its
// context is cancelled.
func TestRemoteClose(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) }) // the last cleanup: after the server's
	dir := t.TempDir()
	writeShard(t, filepath.Join(dir, "s-0.tar"), goodSamples(t, "a", 8))
	writeShard(t, filepath.Join(dir, "s-1.tar"), goodSamples(t, "b", 8))
	url, stall := remotetest.Stalling(t, dir)
	src, err := Open(spec(), url, quiet)
	if err != nil {
		t.Fatal(err)
	}
	stall.Store(true)
	src.ReadAhead(0, []int{0, 1, 2, 3, 4, 5, 6, 7})
	ctx, cancel := context.WithCancel(bg)
	time.AfterFunc(100*time.Millisecond, cancel)
	start := time.Now()
	err = src.Read(ctx, rand.New(rand.NewPCG(1, 2)), 9, make([]byte, 3*8*8), make([]byte, 8*8*8), make([]byte, 4))
	if !errors.Is(err, context.Canceled) || time.Since(start) > time.Second {
		t.Errorf("a read of a stalled sample: %v after %v; want context.Canceled at once", err, time.Since(start))
	}
	start = time.Now()
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %v", d)
	}
}
