package records

import (
	"archive/tar"
	"bytes"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/loadergen/loadergen/internal/testenv/bounded"
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
		err = src.Read(rand.New(rand.NewPCG(1, 2)), 0, make([]byte, 8))
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
