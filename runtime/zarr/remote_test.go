package zarr

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/loadergen/loadergen/internal/remotetest"
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
