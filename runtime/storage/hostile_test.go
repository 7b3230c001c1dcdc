package storage

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"path"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/loadergen/loadergen/internal/testenv/bounded"
)

// bombSize is what the hostile server's gzip bomb inflates to.
const bombSize = 256 << 20

// liar is a server whose answers lie, by the object's name (the last
// element of the path, so that a web root and an S3 bucket ask alike):
// huge declares 1 TiB and sends 3 bytes, endless sends chunks until the
// client hangs up, bomb is a gzip-encoded body of bombSize zeros, and
// refusal is a 500 whose body never ends. gzipAsked counts the requests
// that asked for gzip.
type liar struct {
	bomb      []byte
	gzipAsked atomic.Int32
}

func newLiar(t *testing.T) *liar {
	var b bytes.Buffer
	z, _ := gzip.NewWriterLevel(&b, gzip.BestCompression)
	zeros := make([]byte, 1<<20)
	for range bombSize / len(zeros) {
		z.Write(zeros)
	}
	if err := z.Close(); err != nil {
		t.Fatal(err)
	}
	return &liar{bomb: b.Bytes()}
}

func (l *liar) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if strings.Contains(r.Header.Get("Accept-Encoding"), "gzip") {
		l.gzipAsked.Add(1)
	}
	endless := func() {
		chunk := make([]byte, 64<<10)
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}
	switch path.Base(r.URL.Path) {
	case "huge":
		w.Header().Set("Content-Length", strconv.FormatInt(1<<40, 10))
		w.Write([]byte("abc"))
	case "endless":
		endless()
	case "bomb":
		w.Header().Set("Content-Encoding", "gzip")
		w.Header().Set("Content-Length", strconv.Itoa(len(l.bomb)))
		w.Write(l.bomb)
	case "refusal":
		w.WriteHeader(http.StatusInternalServerError)
		endless()
	default:
		http.NotFound(w, r)
	}
}

// TestHostileBodies: answers whose size lies (a declared 1 TiB, a body
// without end, a gzip bomb, an error's endless body), from a web server
// and an S3 endpoint, end in errors that name the URL and the sizes, and
// hold memory to the read's maximum, not the server's word.
func TestHostileBodies(t *testing.T) {
	if !bounded.Child(t, bounded.HostileRSS) {
		return
	}
	l := newLiar(t)
	srv := httptest.NewServer(l)
	t.Cleanup(srv.Close)
	web, s3 := webAndS3(t, srv.URL, quick)
	const max = 64 << 20
	for kind, r := range map[string]Root{"http": web, "s3": s3} {
		for _, c := range []struct {
			name string
			want []string // what the error says; none: the read succeeds
		}{
			{"huge", []string{"1099511627776 bytes, more than the 67108864 this read takes"}},
			{"endless", []string{"more than 67108864 bytes, the most this read takes"}},
			{"bomb", nil},
			{"refusal", []string{"HTTP 500", "gave up after 5 attempts"}},
		} {
			t.Run(kind+"/"+c.name, func(t *testing.T) {
				asked := l.gzipAsked.Load()
				got, err := r.ReadAll(bg, c.name, nil, max)
				if c.want == nil {
					if n := l.gzipAsked.Load() - asked; err != nil || !bytes.Equal(got, l.bomb) || n != 0 {
						t.Errorf("ReadAll = %d bytes, %v, gzip asked for %d times; want the %d encoded bytes as they are, unasked",
							len(got), err, n, len(l.bomb))
					}
					return
				}
				if err == nil {
					t.Fatalf("ReadAll = %d bytes, no error", len(got))
				}
				for _, want := range append(c.want, r.URL(c.name)) {
					if !strings.Contains(err.Error(), want) {
						t.Errorf("ReadAll: %v; want it to say %q", err, want)
					}
				}
				if c.name != "refusal" && !errors.Is(err, ErrTooLarge) {
					t.Errorf("ReadAll: %v; want ErrTooLarge", err)
				}
				t.Log(err)
			})
		}
	}
}

// TestHostileFetch: a file fetched whole is streamed to disk by parts and
// bounded by its declared size: a server that declares 1 TiB and sends 3
// bytes ends the fetch at the first part, with an error naming the URL.
func TestHostileFetch(t *testing.T) {
	if !bounded.Child(t, bounded.HostileRSS) {
		return
	}
	srv := httptest.NewServer(newLiar(t))
	t.Cleanup(srv.Close)
	t.Setenv("TMPDIR", t.TempDir())
	r, err := openRemote(srv.URL, Options{Retry: quick})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = Fetch(bg, r, "huge")
	if !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, ErrShort) || !strings.Contains(err.Error(), srv.URL+"/huge") {
		t.Errorf("Fetch: %v; want a short body named", err)
	}
	t.Log(err)
}
