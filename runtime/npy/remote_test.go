package npy

import (
	"bytes"
	"errors"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/internal/testenv/remotetest"
	"github.com/loadergen/loadergen/runtime"
)

// TestOpenAllRemote: files under an S3 root open as under the local
// directory they were copied from, ragged ones included; messages name
// their URLs; the fetched copies leave nothing behind in the temporary
// directory; a missing file is fs.ErrNotExist naming the key and the URL.
func TestOpenAllRemote(t *testing.T) {
	srv := remotetest.Start(t)
	srv.Env(t)
	if err := os.CopyFS(srv.Bucket(t, "tokens"), os.DirFS(fixtures)); err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	t.Setenv("TMPDIR", tmp)
	tokens := Spec{Key: "tokens", File: "csr_tokens.npy", Offsets: "csr_tokens_offsets.npy", DType: runtime.Int32, Sample: []int{5}}
	flags := Spec{Key: "flags", File: "b1_5x2.npy", DType: runtime.Bool, Sample: []int{2}}
	local, err := OpenAll(fixtures, []Spec{flags, tokens})
	if err != nil {
		t.Fatal(err)
	}
	defer CloseAll(local...)
	remote, err := OpenAll("s3://tokens", []Spec{flags, tokens})
	if err != nil {
		t.Fatal(err)
	}
	defer CloseAll(remote...)
	if !bytes.Equal(remote[0].Data(), local[0].Data()) || remote[0].Path() != "s3://tokens/b1_5x2.npy" {
		t.Errorf("flags: %d bytes at %s, want the local file's %d", len(remote[0].Data()), remote[0].Path(), len(local[0].Data()))
	}
	for i := range local[1].Len() {
		got, err := AppendRows(remote[1], i, make([]int32, 0, 5))
		want, _ := AppendRows(local[1], i, make([]int32, 0, 5))
		if err != nil || !slices.Equal(got, want) {
			t.Errorf("tokens sample %d: %v, %v; want %v", i, got, err, want)
		}
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("the fetches left %d files in TMPDIR", len(left))
	}
	missing := flags
	missing.File = "nope.npy"
	_, err = OpenAll("s3://tokens", []Spec{missing})
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), `key "flags"`) || !strings.Contains(err.Error(), "s3://tokens/nope.npy") {
		t.Errorf("a missing remote file: %v", err)
	}
}

// TestOpenAllSecret: a missing file under a root whose URL holds a user
// and password is named without them.
func TestOpenAllSecret(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	t.Cleanup(srv.Close)
	root := "http://u-alice:pw-0xs3cr3t@" + strings.TrimPrefix(srv.URL, "http://") + "/x"
	_, err := OpenAll(root, []Spec{{Key: "flags", File: "nope.npy", DType: runtime.Bool, Sample: []int{2}}})
	if !errors.Is(err, fs.ErrNotExist) || !strings.Contains(err.Error(), "the data root "+srv.URL+"/x") || strings.Contains(err.Error(), "u-alice") || strings.Contains(err.Error(), "pw-0xs3cr3t") {
		t.Errorf("a missing file: %v; want it named under %s/x, without the user and password", err, srv.URL)
	}
}
