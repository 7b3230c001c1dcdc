package outfile

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x_loader.go")
	changed, err := Write(path, []byte("one"))
	if err != nil || !changed {
		t.Fatalf("first write: changed=%v err=%v", changed, err)
	}
	past := time.Now().Add(-time.Hour)
	if err := os.Chtimes(path, past, past); err != nil {
		t.Fatal(err)
	}
	if changed, err := Write(path, []byte("one")); err != nil || changed {
		t.Errorf("same bytes: changed=%v err=%v, want no write", changed, err)
	}
	if fi, _ := os.Stat(path); !fi.ModTime().Equal(past) {
		t.Errorf("unchanged file was touched: mtime %v", fi.ModTime())
	}
	if changed, err := Write(path, []byte("two")); err != nil || !changed {
		t.Errorf("new bytes: changed=%v err=%v", changed, err)
	}
	if got, _ := os.ReadFile(path); string(got) != "two" {
		t.Errorf("content %q, want %q", got, "two")
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Errorf("mode %v, want 0644", fi.Mode().Perm())
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Errorf("directory holds %d entries, want only the output (no temp files)", len(entries))
	}
}

func TestFailedWriteLeavesNothing(t *testing.T) {
	dir := t.TempDir()
	// A non-empty directory where the output should go: the rename fails.
	path := filepath.Join(dir, "x_loader.go")
	if err := os.MkdirAll(filepath.Join(path, "keep"), 0o755); err != nil {
		t.Fatal(err)
	}
	if _, err := Write(path, []byte("new")); err == nil {
		t.Fatal("write over a non-empty directory succeeded")
	}
	if _, err := os.Stat(filepath.Join(path, "keep")); err != nil {
		t.Errorf("failed write disturbed what was there: %v", err)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("directory holds %d entries after a failed write, want 1 (no temp file)", len(entries))
	}
}
