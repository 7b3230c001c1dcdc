package storage

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
)

// A fetch reads an object by parts of fetchPart bytes, fetchParallel of
// them in flight: a large object comes at the link's rate, not one
// request's.
const (
	fetchPart     = 16 << 20
	fetchParallel = 8
)

// Fetch returns a local file that holds object name of r, for what needs
// one (a .npy file is mapped into memory): the file itself for a local
// root; for a remote one, the object fetched whole, into the disk cache
// when LOADERGEN_REMOTE_CACHE_DIR is set (a later Fetch of it, by any
// process, reads no byte), else into a temporary file that done removes.
// Call done once the file is opened: a mapping outlives the file's name.
// The fetch stops once ctx is done.
func Fetch(ctx context.Context, r Root, name string) (path string, done func(), err error) {
	nothing := func() {}
	if _, local := r.Local(); local {
		return r.URL(name), nothing, nil
	}
	loc := r.URL(name)
	r = bare(r) // the whole file is the cache's entry, not its parts
	dc, err := processCache()
	if err != nil {
		return "", nothing, err
	}
	var key string
	tmpDir := os.TempDir()
	if dc != nil {
		key, tmpDir = dc.key(loc, -1, -1), dc.dir
		if p := filepath.Join(dc.dir, key); dc.touch(p) {
			return p, nothing, nil
		}
	}
	size, err := r.Size(ctx, name)
	if err != nil {
		return "", nothing, err
	}
	f, err := os.CreateTemp(tmpDir, "fetch-*")
	if err != nil {
		return "", nothing, fmt.Errorf("fetch %s: %w", loc, err)
	}
	err = download(ctx, r, name, size, f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", nothing, fmt.Errorf("fetch %s: %w", loc, err)
	}
	if dc != nil {
		if p, ok := dc.adopt(key, f.Name(), size); ok {
			return p, nothing, nil
		}
	}
	return f.Name(), func() { os.Remove(f.Name()) }, nil
}

// bare returns r without the process's layers (read-ahead, disk cache).
func bare(r Root) Root {
	r = unahead(r)
	if c, ok := r.(*cached); ok {
		r = c.Root
	}
	return r
}

// unahead returns r without the process's read-ahead.
func unahead(r Root) Root {
	if a, ok := r.(*ahead); ok {
		return a.Root
	}
	return r
}

// DiskCached reports whether remote root r keeps what it reads in the
// process's disk cache (LOADERGEN_REMOTE_CACHE_DIR), so that an object
// fetched whole (Fetch) is read from local disk by later processes too.
func DiskCached(r Root) bool {
	_, ok := unahead(r).(*cached)
	return ok
}

// download writes object name of r, size bytes, into f, by parts read in
// parallel within ctx; the first failure is returned.
func download(ctx context.Context, r Root, name string, size int64, f *os.File) error {
	parts := make(chan int64)
	errs := make(chan error, fetchParallel)
	var wg sync.WaitGroup
	for range fetchParallel {
		wg.Add(1)
		go func() {
			defer wg.Done()
			buf := make([]byte, 0, min(size, fetchPart))
			for off := range parts {
				p := buf[:min(fetchPart, size-off)]
				err := r.ReadAt(ctx, name, p, off)
				if err == nil {
					_, err = f.WriteAt(p, off)
				}
				if err != nil {
					errs <- err
					for range parts { // drain: the sender stops at the first error
					}
					return
				}
			}
		}()
	}
	var err error
send:
	for off := int64(0); off < size; off += fetchPart {
		select {
		case parts <- off:
		case err = <-errs:
			break send
		}
	}
	close(parts)
	wg.Wait()
	if err == nil {
		select {
		case err = <-errs:
		default:
		}
	}
	return err
}
