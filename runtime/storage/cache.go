package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// The on-disk cache's environment variables and default.
const (
	CacheDirEnv     = "LOADERGEN_REMOTE_CACHE_DIR" // a directory: remote objects read are kept there; unset, none are
	CacheMBEnv      = "LOADERGEN_REMOTE_CACHE_MB"  // its bound in MiB
	DefaultCacheMiB = 10240
)

// cached is a remote root whose whole-object and ranged reads are kept in
// a bounded directory on local disk, for repeated epochs on one node.
type cached struct {
	Root
	disk *diskCache
}

// withProcessLayers wraps remote root r in the process's disk cache when
// LOADERGEN_REMOTE_CACHE_DIR is set, then in the read-ahead.
func withProcessLayers(r Root) (Root, error) {
	dc, err := processCache()
	if err != nil {
		return nil, err
	}
	if dc != nil {
		r = &cached{Root: r, disk: dc}
	}
	return withAhead(r)
}

// ReadAll reads object name from the cache, or from the root and into the
// cache.
func (c *cached) ReadAll(ctx context.Context, name string, buf []byte, max int64) ([]byte, error) {
	return c.readSized(ctx, name, max, reuse(buf))
}

func (c *cached) readSized(ctx context.Context, name string, max int64, buffer func(n int64) ([]byte, error)) ([]byte, error) {
	key := c.disk.key(c.URL(name), -1, -1)
	if data, ok, err := c.disk.get(key, max, buffer); ok || err != nil {
		return data, err
	}
	data, err := readSized(ctx, c.Root, name, max, buffer)
	if err == nil {
		c.disk.put(key, data)
	}
	return data, err
}

// ReadAt reads bytes of object name from the cache, or from the root and
// into the cache: each range is an entry of its own.
func (c *cached) ReadAt(ctx context.Context, name string, p []byte, off int64) error {
	key := c.disk.key(c.URL(name), off, int64(len(p)))
	if data, ok, _ := c.disk.get(key, int64(len(p)), reuse(p[:0])); ok && len(data) == len(p) {
		return nil
	}
	if err := c.Root.ReadAt(ctx, name, p, off); err != nil {
		return err
	}
	c.disk.put(key, p)
	return nil
}

// Sub keeps the cache.
func (c *cached) Sub(dir string) Root { return &cached{Root: c.Root.Sub(dir), disk: c.disk} }

// diskCache is a directory of objects named by the hash of their URL and
// range, bounded in bytes: the least recently read go first. Entries are
// written to a temporary file and renamed, so that a reader never sees
// half an entry, even across processes sharing the directory.
type diskCache struct {
	dir   string
	bound int64
	// mu guards used and sizes; get and put take it after their file
	// operations, so that reads of different entries run in parallel.
	mu    sync.Mutex
	used  int64
	sizes map[string]int64 // entry file name -> bytes
}

// processCache returns the process's disk cache, or nil when
// LOADERGEN_REMOTE_CACHE_DIR is unset.
var processCache = sync.OnceValues(func() (*diskCache, error) {
	dir := os.Getenv(CacheDirEnv)
	if dir == "" {
		return nil, nil
	}
	mib, err := envMiB(CacheMBEnv, DefaultCacheMiB, 1)
	if err != nil {
		return nil, err
	}
	return openDiskCache(dir, mib<<20)
})

// envMiB reads environment variable name, a whole number of MiB from least
// up; def when it is unset or empty.
func envMiB(name string, def, least int64) (int64, error) {
	v := os.Getenv(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < least || n > 1<<30 {
		return 0, fmt.Errorf("environment %s=%q: want a whole number of MiB from %d", name, v, least)
	}
	return n, nil
}

// openDiskCache opens (creating it) the cache in dir, bounded by bound
// bytes, counting what earlier processes left there.
func openDiskCache(dir string, bound int64) (*diskCache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s %s: %w", CacheDirEnv, dir, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", CacheDirEnv, dir, err)
	}
	dc := &diskCache{dir: dir, bound: bound, sizes: map[string]int64{}}
	for _, e := range entries {
		info, err := e.Info()
		switch {
		case err != nil || !info.Mode().IsRegular():
		case len(e.Name()) == 64:
			dc.sizes[e.Name()] = info.Size()
			dc.used += info.Size()
		case isTemp(e.Name()) && time.Since(info.ModTime()) > staleTemp:
			os.Remove(filepath.Join(dir, e.Name())) // a crashed process's; a failure leaves it for the next
		}
	}
	dc.mu.Lock()
	dc.evict()
	dc.mu.Unlock()
	return dc, nil
}

// staleTemp is how long a temporary file of the cache's directory (an
// entry being written, a fetch being downloaded) goes unmodified before
// the next process to open the cache removes it as a crashed process's.
// A live writer modifies its file as it writes; a fetched file that a
// reader uses without adopting it (larger than the cache) stays readable
// through the reader's open file once removed.
const staleTemp = 24 * time.Hour

// isTemp reports whether name is one of the temporary files that put and
// Fetch write in the cache's directory before renaming them to entries.
func isTemp(name string) bool {
	return strings.HasPrefix(name, "put-") || strings.HasPrefix(name, "fetch-")
}

// key names the entry of object u's bytes [off, off+n), or of the whole
// object when n < 0.
func (dc *diskCache) key(u string, off, n int64) string {
	h := sha256.Sum256([]byte(fmt.Sprintf("%s\x00%d\x00%d", u, off, n)))
	return hex.EncodeToString(h[:])
}

// get reads entry key, of at most max bytes, into the buffer that buffer
// gives for its size, and marks it used; ok is false when it is not there
// (or larger than max), or when buffer refused it (its error is then
// returned).
func (dc *diskCache) get(key string, max int64, buffer func(n int64) ([]byte, error)) (data []byte, ok bool, err error) {
	refused := false
	data, err = Local(dc.dir).readSized(context.Background(), key, max, func(n int64) ([]byte, error) {
		buf, err := buffer(n)
		refused = err != nil
		return buf, err
	})
	if err != nil {
		if refused {
			return nil, false, err
		}
		return nil, false, nil
	}
	dc.touch(filepath.Join(dc.dir, key)) // the eviction order; a failure only ages the entry
	return data, true, nil
}

// put writes entry key, then evicts the least recently used entries over
// the bound. A failure to write leaves the cache without the entry: the
// object is read from its root again next time.
func (dc *diskCache) put(key string, data []byte) {
	if int64(len(data)) > dc.bound {
		return
	}
	tmp, err := os.CreateTemp(dc.dir, "put-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr != nil || cerr != nil || os.Rename(tmp.Name(), filepath.Join(dc.dir, key)) != nil {
		os.Remove(tmp.Name())
		return
	}
	dc.added(key, int64(len(data)))
}

// touch reports whether entry file p is in the cache, marking it used.
func (dc *diskCache) touch(p string) bool {
	now := time.Now()
	return os.Chtimes(p, now, now) == nil
}

// adopt moves file tmp, size bytes and in the cache's directory, into the
// cache as entry key, and returns the entry's path; ok is false when the
// object is larger than the whole cache (tmp stays as it is).
func (dc *diskCache) adopt(key, tmp string, size int64) (string, bool) {
	p := filepath.Join(dc.dir, key)
	if size > dc.bound || os.Rename(tmp, p) != nil {
		return "", false
	}
	dc.added(key, size)
	return p, true
}

// added counts entry key, now size bytes on disk, then evicts the least
// recently used entries over the bound.
func (dc *diskCache) added(key string, size int64) {
	dc.mu.Lock()
	defer dc.mu.Unlock()
	dc.used += size - dc.sizes[key]
	dc.sizes[key] = size
	dc.evict()
}

// evict removes the least recently used entries until the cache is within
// its bound. Called with mu held.
func (dc *diskCache) evict() {
	if dc.used <= dc.bound {
		return
	}
	type entry struct {
		name string
		used time.Time
	}
	var all []entry
	for name := range dc.sizes {
		info, err := os.Stat(filepath.Join(dc.dir, name))
		if err != nil {
			dc.used -= dc.sizes[name]
			delete(dc.sizes, name)
			continue
		}
		all = append(all, entry{name, info.ModTime()})
	}
	slices.SortFunc(all, func(a, b entry) int { return a.used.Compare(b.used) })
	for _, e := range all {
		if dc.used <= dc.bound {
			break
		}
		if err := os.Remove(filepath.Join(dc.dir, e.name)); err == nil || errors.Is(err, fs.ErrNotExist) {
			dc.used -= dc.sizes[e.name]
			delete(dc.sizes, e.name)
		}
	}
}
