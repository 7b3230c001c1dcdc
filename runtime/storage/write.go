package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Writable is a root that objects can be written to and removed from: a
// local directory or an S3 prefix (OpenWritable). Web servers are
// read-only. A Writable is safe for concurrent use.
type Writable interface {
	Root
	// Put writes data as object name, whole and atomically: a reader finds
	// the object as it was or as data, never a part of it, and a Put that
	// fails (a full disk, a refused request) leaves it as it was. A local
	// root writes a temporary file beside it (".NAME.*.tmp") and renames
	// it, making the directories above it; an S3 root makes one PutObject,
	// retried as reads are (Retry).
	Put(ctx context.Context, name string, data []byte) error
	// Walk returns the names of every object under directory dir ("" is
	// the root), relative to dir, at any depth, sorted. A missing
	// directory holds none.
	Walk(ctx context.Context, dir string) ([]string, error)
	// RemoveAll removes object or directory dir and everything under it;
	// nothing there is not an error.
	RemoveAll(ctx context.Context, dir string) error
}

// OpenWritable returns the writable root at loc: a URL whose driver's
// roots can be written ("s3://bucket/prefix" with runtime/storage/s3),
// or a local directory, made if missing. It bypasses the disk cache and
// the read-ahead: what it reads back is what is stored.
func OpenWritable(loc string) (Writable, error) {
	if !IsURL(loc) {
		if err := os.MkdirAll(loc, 0o755); err != nil {
			return nil, err
		}
		return Local(loc), nil
	}
	r, err := openRemote(loc, Options{})
	if err != nil {
		return nil, err
	}
	if w, ok := r.(Writable); ok {
		return w, nil
	}
	return nil, fmt.Errorf("%s: cannot write there (a local directory or s3://bucket/prefix can be written)", Redact(loc))
}

// Put writes file name through a temporary file in its directory and a
// rename. A local write does not wait on ctx.
func (l Local) Put(_ context.Context, name string, data []byte) error {
	if err := CheckName(name); err != nil {
		return err
	}
	file := l.path(name)
	dir := filepath.Dir(file)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(file)+".*.tmp")
	if err != nil {
		return fmt.Errorf("write %s: %w", file, err)
	}
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), file)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("write %s: %w", file, err)
	}
	return nil
}

// Walk lists the files under directory dir.
func (l Local) Walk(_ context.Context, dir string) ([]string, error) {
	if err := CheckName(dir); err != nil {
		return nil, err
	}
	top := l.path(dir)
	var names []string
	err := filepath.WalkDir(top, func(p string, d fs.DirEntry, err error) error {
		switch {
		case errors.Is(err, fs.ErrNotExist) && p == top:
			return fs.SkipAll
		case err != nil:
			return err
		case d.IsDir():
			return nil
		}
		rel, err := filepath.Rel(top, p)
		names = append(names, filepath.ToSlash(rel))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", top, err)
	}
	slices.Sort(names)
	return names, nil
}

// RemoveAll removes file or directory dir.
func (l Local) RemoveAll(_ context.Context, dir string) error {
	if err := CheckName(dir); err != nil {
		return err
	}
	if strings.Trim(dir, "/") == "" {
		return fmt.Errorf("remove %s: refusing to remove the root itself", l.path(dir))
	}
	return os.RemoveAll(l.path(dir))
}
