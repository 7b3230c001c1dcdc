package volume

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/loadergen/loadergen/internal/fixture/emvolume"
	"github.com/loadergen/loadergen/internal/testenv/remotetest"
	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/loaderimpl"
	"github.com/loadergen/loadergen/runtime/storage"
)

// readSample reads sample (epoch, index) of s as the loader does.
func readSample(s *Source, epoch, index int) ([][]byte, error) {
	var pcg rand.PCG
	loaderimpl.SeedSample(&pcg, loaderimpl.EpochSeed(s.spec.Seed, epoch), index)
	dst := sampleBufs(s)
	return dst, s.Read(bg, rand.New(&pcg), epoch, index, dst...)
}

// TestRemoteVolumes: volumes whose manifest and stores are in an S3
// bucket (versitygw) give every sample the bytes of the same volumes on
// local disk, with read-ahead, through a network that adds latency,
// throttles and cuts connections; a store the server stops serving fails
// the sample with an error naming the URL.
func TestRemoteVolumes(t *testing.T) {
	local := t.TempDir()
	testVolume(t, filepath.Join(local, "a.zarr"), true)
	testVolume(t, filepath.Join(local, "b.zarr"), false)
	manifest := "raw,labels,weight\na.zarr,a.zarr,1\nb.zarr,b.zarr,2\n"
	if err := os.WriteFile(filepath.Join(local, "volumes.csv"), []byte(manifest), 0o644); err != nil {
		t.Fatal(err)
	}
	srv := remotetest.Start(t)
	for _, dir := range []string{"cells", "unread"} {
		if err := os.CopyFS(filepath.Join(srv.Bucket(t, "emdata"), dir), os.DirFS(local)); err != nil {
			t.Fatal(err)
		}
	}
	faults := remotetest.Proxy(t, srv.Endpoint)
	srv.Env(t)
	t.Setenv("AWS_ENDPOINT_URL_S3", faults.URL)

	open := func(manifest string) *Source {
		t.Helper()
		vols, err := LoadManifest(manifest, cellSpec())
		if err != nil {
			t.Fatal(err)
		}
		s, err := Open(cellSpec(), vols, nil)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	want := open(filepath.Join(local, "volumes.csv"))
	got := open("s3://emdata/cells/volumes.csv")
	if r := got.vols[0].roots[0]; r != "s3://emdata/cells/a.zarr" {
		t.Errorf("the manifest's first root is %q, want s3://emdata/cells/a.zarr", r)
	}
	faults.Set(2*time.Millisecond, 3, 3)
	for epoch := range 2 {
		indices := make([]int, want.Len())
		for i := range indices {
			indices[i] = i
		}
		got.ReadAhead(epoch, indices)
		for _, i := range indices {
			w, err := readSample(want, epoch, i)
			if err != nil {
				t.Fatal(err)
			}
			g, err := readSample(got, epoch, i)
			if err != nil {
				t.Fatalf("epoch %d sample %d: %v", epoch, i, err)
			}
			for k := range w {
				if !bytes.Equal(g[k], w[k]) {
					t.Fatalf("epoch %d sample %d key %d: the S3 volume's bytes differ from the local one's", epoch, i, k)
				}
			}
		}
	}

	// A fresh source over a server that keeps failing, on objects nothing
	// has read (the process's read-ahead keeps what it read).
	failing := open("s3://emdata/unread/volumes.csv")
	faults.Set(0, 1000, 0)
	_, err := readSample(failing, 5, 0)
	var ke *runtime.KeyError
	if !errors.As(err, &ke) || !strings.Contains(err.Error(), "s3://emdata/unread/") || !strings.Contains(err.Error(), "HTTP 503 SlowDown") {
		t.Errorf("a failing server: %v, want a KeyError naming the chunk's URL and the status", err)
	}
}

// TestRemoteSecrets: a manifest given as a URL with a user and password,
// or presigned, is read with them, and no error shows them: not the
// manifest's, not a store's whose root inherits the user and password.
func TestRemoteSecrets(t *testing.T) {
	const user, pw, sig = "u-alice", "pw-0xs3cr3t", "sig-0xf00"
	local := t.TempDir()
	testVolume(t, filepath.Join(local, "a.zarr"), true)
	for name, text := range map[string]string{"volumes.csv": "raw,labels\na.zarr,a.zarr\n", "bad.csv": "raw,labels,extra\n", "gone.csv": "raw,labels\nmissing.zarr,a.zarr\n"} {
		if err := os.WriteFile(filepath.Join(local, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	url := remotetest.Guarded(t, local, user, pw, sig)
	authed := "http://" + user + ":" + pw + "@" + strings.TrimPrefix(url, "http://")
	if _, err := LoadManifest(url+"/volumes.csv?X-Amz-Signature="+sig, cellSpec()); err != nil {
		t.Errorf("a presigned manifest: %v", err)
	}
	vols, err := LoadManifest(authed+"/volumes.csv", cellSpec())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Open(cellSpec(), vols, nil); err != nil {
		t.Errorf("a store under a root with a user and password: %v", err)
	}
	for _, c := range []struct{ manifest, want string }{
		{authed + "/bad.csv", url + `/bad.csv:1: unknown column "extra"`},
		{url + "/bad.csv?X-Amz-Signature=" + sig, url + `/bad.csv:1: unknown column "extra"`},
		{url + "/volumes.csv?X-Amz-Signature=wrong", url + "/volumes.csv: HTTP 403"},
		{authed + "/gone.csv", "no array or group at " + url + "/missing.zarr/" + emvolume.RawPath},
	} {
		vols, err := LoadManifest(c.manifest, cellSpec())
		if err == nil {
			_, err = Open(cellSpec(), vols, nil)
		}
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v; want it to say %q", storage.Redact(c.manifest), err, c.want)
			continue
		}
		for _, s := range []string{user, pw, sig} {
			if strings.Contains(err.Error(), s) {
				t.Errorf("%v shows %q", err, s)
			}
		}
	}
}

// TestRemoteClose: Close of a source of remote volumes whose server stops
// answering while the read-ahead fetches its crops' chunks returns at
// once, and leaves no goroutine of ours.
func TestRemoteClose(t *testing.T) {
	before := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, before) }) // the last cleanup: after the server's
	local := t.TempDir()
	testVolume(t, filepath.Join(local, "a.zarr"), true)
	url, stall := remotetest.Stalling(t, local)
	s, err := Open(cellSpec(), []Volume{{Roots: []string{url + "/a.zarr", url + "/a.zarr"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	stall.Store(true)
	s.ReadAhead(0, []int{0, 1, 2, 3, 4, 5, 6, 7})
	time.Sleep(50 * time.Millisecond) // the requests reach the server
	start := time.Now()
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > time.Second {
		t.Errorf("Close took %v", d)
	}
}
