package storage

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/internal/testenv/remotetest"
)

// TestWritable puts, lists and removes objects of a local root and of an
// S3 bucket served by versitygw, and reads them back through the root.
func TestWritable(t *testing.T) {
	ctx := context.Background()
	roots := map[string]func(t *testing.T) Writable{
		"local": func(t *testing.T) Writable {
			w, err := OpenWritable(filepath.Join(t.TempDir(), "new", "out"))
			if err != nil {
				t.Fatal(err)
			}
			return w
		},
		"s3": func(t *testing.T) Writable {
			srv := remotetest.Start(t)
			srv.Env(t)
			srv.Bucket(t, "preds")
			w, err := OpenWritable("s3://preds/run1")
			if err != nil {
				t.Fatal(err)
			}
			return w
		},
	}
	for name, open := range roots {
		t.Run(name, func(t *testing.T) {
			w := open(t)
			objects := map[string]string{"a/.zarray": "{}", "a/0.0": "chunk0", "a/c/1/2": "nested", "b": "other"}
			for n, v := range objects {
				if err := w.Put(ctx, n, []byte(v)); err != nil {
					t.Fatal(err)
				}
			}
			if err := w.Put(ctx, "a/0.0", []byte("chunk0, again")); err != nil {
				t.Fatal(err)
			}
			got, err := w.ReadAll(ctx, "a/0.0", nil, 1<<20)
			if err != nil || string(got) != "chunk0, again" {
				t.Fatalf("read back %q, %v", got, err)
			}
			names, err := w.Walk(ctx, "a")
			if want := []string{".zarray", "0.0", "c/1/2"}; err != nil || !slices.Equal(names, want) {
				t.Fatalf("Walk(a) = %q, %v; want %q", names, err, want)
			}
			if names, err := w.Walk(ctx, "none"); err != nil || len(names) != 0 {
				t.Fatalf("Walk of a missing directory = %q, %v; want nothing", names, err)
			}
			if err := w.RemoveAll(ctx, "a"); err != nil {
				t.Fatal(err)
			}
			if names, err := w.Walk(ctx, ""); err != nil || !slices.Equal(names, []string{"b"}) {
				t.Fatalf("after RemoveAll(a), Walk = %q, %v; want [b]", names, err)
			}
			if _, err := w.ReadAll(ctx, "a/0.0", nil, 1<<20); !errors.Is(err, fs.ErrNotExist) {
				t.Fatalf("a removed object reads with %v, want fs.ErrNotExist", err)
			}
			for _, bad := range []string{"../x", "/abs"} {
				if err := w.Put(ctx, bad, nil); err == nil {
					t.Errorf("Put(%q) wrote outside the root", bad)
				}
			}
			if err := w.RemoveAll(ctx, ""); err == nil {
				t.Error("RemoveAll of the root itself did not refuse")
			}
		})
	}
}

// TestLocalPutFails checks that a local Put that cannot complete (its
// rename meets a directory of that name) leaves no temporary file.
func TestLocalPutFails(t *testing.T) {
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "x", "inside"), 0o755); err != nil {
		t.Fatal(err)
	}
	err := Local(dir).Put(context.Background(), "x", []byte("new"))
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "x")) {
		t.Fatalf("Put onto a directory: %v, want an error naming the file", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("after a failed Put the directory holds %d entries, want the directory x alone", len(entries))
	}
}
