package zarr

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/loadergen/loadergen/internal/testenv/remotetest"
	"github.com/loadergen/loadergen/runtime/storage"
)

// TestFixturesRemote: every fixture array reads the same from an S3
// bucket (versitygw) and from a web server as from its local directory,
// sharded ones (ranged reads of shards and of their indexes) included,
// with and without reading ahead the boxes first.
func TestFixturesRemote(t *testing.T) {
	srv := remotetest.Start(t)
	srv.Env(t)
	if err := os.CopyFS(srv.Bucket(t, "fixtures"), os.DirFS(fixtures)); err != nil {
		t.Fatal(err)
	}
	web := httptest.NewServer(http.FileServer(http.Dir(fixtures)))
	t.Cleanup(web.Close)
	for _, base := range []string{"s3://fixtures", web.URL} {
		for _, c := range fixtureCases(t) {
			if c.Error != "" || c.Multiscale != nil {
				continue
			}
			t.Run(base+"/"+c.Name, func(t *testing.T) {
				s, err := OpenStore(base+"/"+filepath.ToSlash(c.Path), NewCache(64))
				if err != nil {
					t.Fatal(err)
				}
				a, err := s.Array(c.Array)
				if err != nil {
					t.Fatal(err)
				}
				want := loadExpected(t, c.Name, a)
				a.ReadAhead(make([]int, len(want.shape)), want.shape)
				checkReads(t, a, want)
			})
		}
	}
}

// lender is a remote root over a local directory that lends every object
// (as the read-ahead lends what it fetched) and logs the calls.
type lender struct {
	storage.Root
	log *lendLog
}

// lendLog counts a lender's lends, releases and whole reads of chunks, and
// keeps its hints' estimates.
type lendLog struct {
	mu                     sync.Mutex
	lends, releases, reads int
	hints                  []int64
}

func (l lender) Local() (string, bool)       { return "", false }
func (l lender) Sub(dir string) storage.Root { return lender{l.Root.Sub(dir), l.log} }

func (l lender) ReadAll(name string, buf []byte) ([]byte, error) {
	if !strings.HasPrefix(name, ".") && name != "zarr.json" { // a chunk, not metadata
		l.log.mu.Lock()
		l.log.reads++
		l.log.mu.Unlock()
	}
	return l.Root.ReadAll(name, buf)
}

func (l lender) Lend(name string) ([]byte, func(), error) {
	data, err := l.Root.ReadAll(name, nil)
	if err != nil {
		return nil, nil, err
	}
	l.log.mu.Lock()
	defer l.log.mu.Unlock()
	l.log.lends++
	return data, func() {
		l.log.mu.Lock()
		l.log.releases++
		l.log.mu.Unlock()
	}, nil
}

func (l lender) LendRange(name string, off, n int64) ([]byte, func(), error) {
	data := make([]byte, n)
	if err := l.Root.ReadAt(name, data, off); err != nil {
		return nil, nil, err
	}
	l.log.mu.Lock()
	defer l.log.mu.Unlock()
	l.log.lends++
	return data, func() {
		l.log.mu.Lock()
		l.log.releases++
		l.log.mu.Unlock()
	}, nil
}

func (l lender) HintRange(name string, off, n int64) {
	l.log.mu.Lock()
	l.log.hints = append(l.log.hints, n)
	l.log.mu.Unlock()
}

func (l lender) Hint(name string, expect int64) {
	l.log.mu.Lock()
	l.log.hints = append(l.log.hints, expect)
	l.log.mu.Unlock()
}

// TestRemoteLends: a remote array decodes the chunks its root lends
// without reading them into a buffer of its own, releases each once, and
// its read-ahead hints count a chunk at the largest stored chunk read so
// far, its decoded size before the first.
func TestRemoteLends(t *testing.T) {
	const name = "bigendian_u8_blosc" // chunks of 480 bytes decoded, 41 to 92 stored
	dir := filepath.Join(fixtures, "v2", name)
	log := &lendLog{}
	s := &Store{root: lender{storage.Local(dir), log}, cache: NewCache(0)}
	a, err := s.Array("")
	if err != nil {
		t.Fatal(err)
	}
	a.ReadAhead([]int{0, 0, 0}, []int{1, 1, 1})
	checkReads(t, a, loadExpected(t, name, a))
	a.ReadAhead([]int{0, 0, 0}, []int{1, 1, 1})
	var largest int64
	chunks, _ := filepath.Glob(filepath.Join(dir, "[0-9]*"))
	for _, c := range chunks {
		st, err := os.Stat(c)
		if err != nil {
			t.Fatal(err)
		}
		largest = max(largest, st.Size())
	}
	log.mu.Lock()
	defer log.mu.Unlock()
	if log.lends == 0 || log.releases != log.lends || log.reads != 0 {
		t.Errorf("%d chunks lent, %d released, %d read whole; want every chunk lent and released, none read", log.lends, log.releases, log.reads)
	}
	if want := []int64{int64(a.unitBytes), largest}; !slices.Equal(log.hints, want) {
		t.Errorf("hinted estimates %v, want %v: the decoded size, then the largest stored chunk", log.hints, want)
	}
}
