package records

import (
	"bytes"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/internal/testenv/remotetest"
)

// TestShardsRemote: shards under an S3 root read as the same shards on
// local disk, their fetched copies leave nothing behind, and a bad record
// in a remote shard is an error naming the shard's URL; class folders
// under a URL are refused.
func TestShardsRemote(t *testing.T) {
	srv := remotetest.Start(t)
	srv.Env(t)
	dir := srv.Bucket(t, "shards")
	writeShard(t, filepath.Join(dir, "s-0.tar"), goodSamples(t, "x/0", 3))
	writeShard(t, filepath.Join(dir, "s-1.tar"), goodSamples(t, "x/1", 2))
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	local, err := Open(spec(), dir, quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer local.Close()
	remote, err := Open(spec(), "s3://shards", quiet)
	if err != nil {
		t.Fatal(err)
	}
	defer remote.Close()
	if remote.Len() != local.Len() {
		t.Fatalf("Len = %d, want the local shards' %d", remote.Len(), local.Len())
	}
	for i := range local.Len() {
		read := func(s *Source) [][]byte {
			out := [][]byte{make([]byte, 3*8*8), make([]byte, 8*8*8), make([]byte, 4)}
			if err := s.Read(rand.New(rand.NewPCG(1, uint64(i))), i, out...); err != nil {
				t.Fatal(err)
			}
			return out
		}
		w, g := read(local), read(remote)
		for k := range w {
			if !bytes.Equal(g[k], w[k]) {
				t.Errorf("sample %d key %d differs from the local shards'", i, k)
			}
		}
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("the fetched shards left %d files in TMPDIR", len(left))
	}
	writeShard(t, filepath.Join(dir, "bad.tar"), []member{{"x/9.jpg", []byte("not a jpeg")}})
	bad := spec()
	bad.Shards = "bad.tar"
	if _, err := Open(bad, "s3://shards", quiet); err == nil || !strings.Contains(err.Error(), "s3://shards/bad.tar") {
		t.Errorf("a bad remote shard: %v, want an error naming s3://shards/bad.tar", err)
	}
	folder := spec()
	folder.Shards, folder.Folder = "", "train"
	if _, err := Open(folder, "s3://shards", quiet); err == nil || !strings.Contains(err.Error(), "class folders must be on local disk") {
		t.Errorf("a class folder under a URL: %v", err)
	}
}
