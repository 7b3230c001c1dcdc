package storage

import (
	"context"
	"fmt"
	"os"
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
// when LOADERGEN_REMOTE_CACHE_DIR is set, else into a temporary file that
// done removes. A later Fetch of it, by any process, then asks the server
// only for its size and version (ETag, or Last-Modified), and fetches it
// again when they, or the entry's size, are not what the entry's record
// says. Call done once the file is opened: a mapping outlives the file's
// name. Until then, this process does not evict the entry. The fetch
// stops once ctx is done.
func Fetch(ctx context.Context, r Root, name string) (path string, done func(), err error) {
	nothing := func() {}
	if _, local := r.Local(); local {
		return r.URL(name), nothing, nil
	}
	loc := r.URL(name)
	r = withoutLayers(r) // the whole file is the cache's entry, not its parts
	dc, err := processCache()
	if err != nil {
		return "", nothing, err
	}
	size, version, err := stat(ctx, r, name)
	if err != nil {
		return "", nothing, err
	}
	if dc == nil {
		tmp, err := fetchFile(ctx, r, name, size, os.TempDir(), false)
		if err != nil {
			return "", nothing, fmt.Errorf("fetch %s: %w", loc, err)
		}
		return tmp, func() { os.Remove(tmp) }, nil
	}
	key := dc.key(r, name, -1, -1)
	unpin := dc.pin(key)
	if p, ok := dc.fetched(key, size, version); ok {
		return p, unpin, nil
	}
	tmp, err := fetchFile(ctx, r, name, size, dc.dir, true)
	if err != nil {
		unpin()
		return "", nothing, fmt.Errorf("fetch %s: %w", loc, err)
	}
	if p, ok := dc.adopt(key, tmp, record{Size: size, Version: version}); ok {
		return p, unpin, nil
	}
	unpin()
	return tmp, func() { os.Remove(tmp) }, nil
}

// versioned is a root that gives an object's version with its size, in
// one request: its ETag, or else its Last-Modified ("" when the server
// gives neither).
type versioned interface {
	stat(ctx context.Context, name string) (size int64, version string, err error)
}

// stat returns the size of object name of r and its version, "" when r
// gives none.
func stat(ctx context.Context, r Root, name string) (size int64, version string, err error) {
	if v, ok := r.(versioned); ok {
		return v.stat(ctx, name)
	}
	size, err = r.Size(ctx, name)
	return size, "", err
}

// fetchFile downloads object name of r, size bytes, into a new temporary
// file of directory dir, synced to the disk when sync is set (an entry
// of the disk cache, whose record may outlive a crash), and returns its
// path.
func fetchFile(ctx context.Context, r Root, name string, size int64, dir string, sync bool) (string, error) {
	return writeTemp(dir, "fetch-*", func(f *os.File) error {
		if err := download(ctx, r, name, size, f); err != nil || !sync {
			return err
		}
		return f.Sync()
	})
}

// withoutLayers returns the root beneath the process's layers of r (its
// read-ahead and disk cache): the root its driver opened.
func withoutLayers(r Root) Root {
	r = withoutReadAhead(r)
	if c, ok := r.(*cached); ok {
		r = c.Root
	}
	return r
}

// withoutReadAhead returns the root beneath the process's read-ahead of
// r.
func withoutReadAhead(r Root) Root {
	if a, ok := r.(*ahead); ok {
		return a.Root
	}
	return r
}

// DiskCached reports whether remote root r keeps what it reads in the
// process's disk cache (LOADERGEN_REMOTE_CACHE_DIR), so that an object
// fetched whole (Fetch) is read from local disk by later processes too.
func DiskCached(r Root) bool {
	_, ok := withoutReadAhead(r).(*cached)
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
