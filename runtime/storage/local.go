package storage

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Local is a root in a local directory.
type Local string

// ReadAll reads the whole file name, of at most max bytes. A local read
// does not wait on ctx.
func (l Local) ReadAll(ctx context.Context, name string, buf []byte, max int64) ([]byte, error) {
	return l.readSized(ctx, name, max, reuse(buf))
}

func (l Local) readSized(_ context.Context, name string, max int64, buffer func(n int64) ([]byte, error)) ([]byte, error) {
	f, err := l.open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	n := st.Size()
	if n > max {
		return nil, fmt.Errorf("%s: %w", f.Name(), errTooLarge(n, max))
	}
	buf, err := buffer(n)
	if err != nil {
		return nil, err
	}
	buf = slices.Grow(buf[:0], int(n))[:n]
	if _, err := io.ReadFull(f, buf); err != nil {
		return buf, fmt.Errorf("%s: %w (truncated while in use?)", f.Name(), err)
	}
	return buf, nil
}

// ReadAt reads len(p) bytes of file name at offset off.
func (l Local) ReadAt(_ context.Context, name string, p []byte, off int64) error {
	f, err := l.open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := f.ReadAt(p, off)
	if errors.Is(err, io.EOF) {
		return errShort(f.Name(), off, int64(len(p)), int64(n))
	}
	return err
}

// ReadTail reads the last len(p) bytes of file name.
func (l Local) ReadTail(_ context.Context, name string, p []byte) (int64, error) {
	f, err := l.open(name)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return 0, err
	}
	size, n := st.Size(), int64(len(p))
	if size < n {
		return size, errTail(f.Name(), n, size)
	}
	if _, err := f.ReadAt(p, size-n); err != nil {
		return size, fmt.Errorf("%s: %w (truncated while in use?)", f.Name(), err)
	}
	return size, nil
}

// Size returns the size of file name.
func (l Local) Size(_ context.Context, name string) (int64, error) {
	if err := CheckName(name); err != nil {
		return 0, err
	}
	st, err := os.Stat(l.path(name))
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// List lists directory dir.
func (l Local) List(_ context.Context, dir string) ([]string, error) {
	if err := CheckName(dir); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(l.path(dir))
	if err != nil {
		return nil, err
	}
	names := make([]string, len(entries))
	for i, e := range entries {
		names[i] = e.Name()
		if e.IsDir() {
			names[i] += "/"
		}
	}
	return names, nil // os.ReadDir sorts by name
}

// Sub returns the root of directory dir.
func (l Local) Sub(dir string) Root { return Local(l.path(dir)) }

// Close does nothing: a local root holds nothing.
func (l Local) Close() error { return nil }

// Local returns the directory.
func (l Local) Local() (string, bool) { return string(l), true }

// URL returns the file's path.
func (l Local) URL(name string) string { return l.path(name) }

// path returns the file path of name.
func (l Local) path(name string) string {
	return filepath.Join(string(l), filepath.FromSlash(strings.TrimSuffix(name, "/")))
}

// open opens file name after checking the name.
func (l Local) open(name string) (*os.File, error) {
	if err := CheckName(name); err != nil {
		return nil, err
	}
	return os.Open(l.path(name))
}
