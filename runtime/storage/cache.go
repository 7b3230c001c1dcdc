package storage

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"maps"
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
	key := c.disk.key(c.Root, name, -1, -1)
	if data, ok, err := c.disk.get(key, -1, max, buffer); ok || err != nil {
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
	key := c.disk.key(c.Root, name, off, int64(len(p)))
	if _, ok, _ := c.disk.get(key, int64(len(p)), int64(len(p)), reuse(p[:0])); ok {
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

// diskCache is a directory of entries, each an object or a byte range of
// one in a file named by its key (a hash of its server, URL and range),
// bounded in bytes: the least recently read go first. Beside each entry
// lies its record (KEY.meta), which it must match to be served. The
// processes of a node may share the directory: they change its entries
// one at a time, under a lock on its usage file, which holds the bytes of
// every entry and record, so that the bound holds for them all. Entries
// are written to a temporary file and renamed, so that a reader never
// sees half an entry.
type diskCache struct {
	dir   string
	bound int64
	usage *os.File // the usage file: locked around each change of the entries (lockFile)
	// mu orders this process's changes of the entries, as the usage
	// file's lock orders the processes' (it does not exclude the
	// goroutines sharing its descriptor), and guards pins, which Fetch
	// adds to and its done takes from.
	mu   sync.Mutex
	pins map[string]int // entry -> the Fetches of it not yet done; eviction keeps these
}

// The names in the cache's directory beside the entries.
const (
	usageName  = "usage" // the file the processes lock; it holds the bytes of the entries and records
	metaSuffix = ".meta" // ends the name of an entry's record
)

// record is what an entry must match to be served, written beside it.
type record struct {
	Size int64 `json:"size"` // the entry's bytes
	// Version is a fetched file's (Fetch) object's ETag, or else its
	// Last-Modified, as the server gave them with its size: "" when it
	// gave neither, and for entries of reads.
	Version string `json:"version,omitempty"`
	// CRC32C is the CRC-32C of an entry of a read (8 hex digits), checked
	// as the entry is read; "" for a fetched file, which is mapped, not
	// read.
	CRC32C string `json:"crc32c,omitempty"`
}

// castagnoli is CRC-32C's table; package crc32 computes it with the
// CPU's instructions where it has them (SSE4.2, ARMv8).
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// checksum is data's CRC-32C, as a record holds it.
func checksum(data []byte) string {
	return fmt.Sprintf("%08x", crc32.Checksum(data, castagnoli))
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
// bytes, counting what the directory holds.
func openDiskCache(dir string, bound int64) (*diskCache, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("%s %s: %w", CacheDirEnv, dir, err)
	}
	usage, err := os.OpenFile(filepath.Join(dir, usageName), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", CacheDirEnv, dir, err)
	}
	dc := &diskCache{dir: dir, bound: bound, usage: usage, pins: map[string]int{}}
	dc.locked(dc.scan) // corrects the usage file after a crash
	return dc, nil
}

// staleTemp is how long a temporary file of the cache's directory (an
// entry being written, a fetch being downloaded) goes unmodified before
// the next scan of the directory removes it as a crashed process's.
// A live writer modifies its file as it writes; a fetched file that a
// reader uses without adopting it (larger than the cache) stays readable
// through the reader's open file once removed.
const staleTemp = 24 * time.Hour

// isTemp reports whether name is one of the temporary files that put and
// Fetch write in the cache's directory before renaming them to entries.
func isTemp(name string) bool {
	return strings.HasPrefix(name, "put-") || strings.HasPrefix(name, "fetch-")
}

// key names the entry of object name of root r, its bytes [off, off+n),
// or the whole object when n < 0.
func (dc *diskCache) key(r Root, name string, off, n int64) string {
	h := sha256.Sum256(fmt.Appendf(nil, "%s\x00%s\x00%d\x00%d", endpoint(r), r.URL(name), off, n))
	return hex.EncodeToString(h[:])
}

// endpoint names the server of root r where its URLs do not: an S3
// root's endpoint (AWS_ENDPOINT_URL_S3, ...), "" for AWS's own, as its
// Endpoint method says. A web root's URLs name their host.
func endpoint(r Root) string {
	if e, ok := r.(interface{ Endpoint() string }); ok {
		return e.Endpoint()
	}
	return ""
}

// record reads the record of entry key; ok is false when it is missing,
// does not parse or says more bytes than the bound (no entry has more).
func (dc *diskCache) record(key string) (rec record, ok bool) {
	f, err := os.Open(filepath.Join(dc.dir, key+metaSuffix))
	if err != nil {
		return rec, false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, 4<<10)) // a record is short: one that is not does not parse
	if err != nil || json.Unmarshal(b, &rec) != nil || rec.Size < 0 || rec.Size > dc.bound {
		return rec, false
	}
	return rec, true
}

// errStale ends the read of an entry whose size is not its record's.
var errStale = errors.New("the entry does not match its record")

// get reads entry key into the buffer that buffer gives for its size, and
// marks it used, when it matches its record: its size (which must be
// want, unless want < 0, and at most max) and, when the record has one,
// its CRC-32C. ok is false when it is not there, does not match or is
// larger than max (the root's read then says so), or when buffer refused
// it (its error is then returned).
func (dc *diskCache) get(key string, want, max int64, buffer func(n int64) ([]byte, error)) (data []byte, ok bool, err error) {
	rec, ok := dc.record(key)
	if !ok || want >= 0 && rec.Size != want || rec.Size > max {
		return nil, false, nil
	}
	refused := false
	data, err = Local(dc.dir).readSized(context.Background(), key, rec.Size, func(n int64) ([]byte, error) {
		if n != rec.Size {
			return nil, errStale
		}
		buf, err := buffer(n)
		refused = err != nil
		return buf, err
	})
	switch {
	case refused:
		return nil, false, err
	case err != nil, rec.CRC32C != "" && checksum(data) != rec.CRC32C:
		return nil, false, nil
	}
	dc.touch(filepath.Join(dc.dir, key)) // the eviction order; a failure only ages the entry
	return data, true, nil
}

// fetched returns the path of entry key, marking it used, when it holds
// the object that the server says holds size bytes and has version
// (Fetch): its record says so, and the entry has those bytes.
func (dc *diskCache) fetched(key string, size int64, version string) (string, bool) {
	p := filepath.Join(dc.dir, key)
	rec, ok := dc.record(key)
	if !ok || rec.Size != size || rec.Version != version || fileSize(p) != size || !dc.touch(p) {
		return "", false
	}
	return p, true
}

// put writes entry key of data, with its CRC-32C. A failure leaves the
// cache without the entry: the object is read from its root again next
// time.
func (dc *diskCache) put(key string, data []byte) {
	if int64(len(data)) > dc.room() {
		return
	}
	tmp, err := writeTemp(dc.dir, "put-*", writer(data))
	if err != nil {
		return
	}
	if _, ok := dc.adopt(key, tmp, record{Size: int64(len(data)), CRC32C: checksum(data)}); !ok {
		os.Remove(tmp)
	}
}

// writeTemp writes a new temporary file of directory dir, named by
// pattern as os.CreateTemp names it, by write, and returns its path; a
// failure removes it.
func writeTemp(dir, pattern string, write func(f *os.File) error) (string, error) {
	f, err := os.CreateTemp(dir, pattern)
	if err != nil {
		return "", err
	}
	err = write(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// writer is writeTemp's write of data.
func writer(data []byte) func(f *os.File) error {
	return func(f *os.File) error {
		_, err := f.Write(data)
		return err
	}
}

// touch reports whether entry file p is in the cache, marking it used.
func (dc *diskCache) touch(p string) bool {
	now := time.Now()
	return os.Chtimes(p, now, now) == nil
}

// fileSize returns the size of file p, or -1 when it is not a regular
// file (a symlink, say) or not there.
func fileSize(p string) int64 {
	info, err := os.Lstat(p)
	if err != nil || !info.Mode().IsRegular() {
		return -1
	}
	return info.Size()
}

// adopt moves file tmp of the cache's directory into the cache as entry
// key, with its record rec, then evicts the least recently read entries
// over the bound, and returns the entry's path; ok is false when the
// entry is larger than the cache keeps (room) or cannot be written (tmp
// then stays as it is). The old record goes first and the new one comes
// last, so that a reader meanwhile, or after a crash, finds the entry
// without a record: not served.
func (dc *diskCache) adopt(key, tmp string, rec record) (path string, ok bool) {
	if rec.Size > dc.room() {
		return "", false
	}
	meta, _ := json.Marshal(rec) // a struct of numbers and strings
	mtmp, err := writeTemp(dc.dir, "put-*", writer(meta))
	if err != nil {
		return "", false
	}
	p := filepath.Join(dc.dir, key)
	recorded := false
	dc.locked(func() {
		// Counted before the renames: a crash between counts too much,
		// which the next scan corrects.
		if used := dc.used(); used >= 0 {
			dc.setUsed(used + rec.Size + int64(len(meta)) - max(fileSize(p), 0) - max(fileSize(p+metaSuffix), 0))
		}
		os.Remove(p + metaSuffix)
		if ok = os.Rename(tmp, p) == nil; ok {
			recorded = os.Rename(mtmp, p+metaSuffix) == nil // else the entry is never served, and evicted in its turn
		}
		dc.trim()
	})
	if !recorded {
		os.Remove(mtmp)
	}
	return p, ok
}

// pin keeps entry key from this process's evictions until unpin is
// called, which then evicts what the pin kept over the bound.
func (dc *diskCache) pin(key string) (unpin func()) {
	dc.mu.Lock()
	dc.pins[key]++
	dc.mu.Unlock()
	return func() {
		dc.locked(func() {
			if dc.pins[key]--; dc.pins[key] == 0 {
				delete(dc.pins, key)
			}
			dc.trim()
		})
	}
}

// locked runs change holding this process's lock on the entries and the
// node's (the usage file's; on a file system without locks, this
// process's only).
func (dc *diskCache) locked(change func()) {
	dc.mu.Lock()
	defer dc.mu.Unlock()
	if lockFile(dc.usage) == nil {
		defer unlockFile(dc.usage)
	}
	change()
}

// used returns the bytes of the entries and records as the usage file
// says, or -1 when it says nothing readable. Called with the lock held.
func (dc *diskCache) used() int64 {
	var b [32]byte
	n, _ := dc.usage.ReadAt(b[:], 0)
	v, err := strconv.ParseInt(strings.TrimSpace(string(b[:n])), 10, 64)
	if err != nil || v < 0 {
		return -1
	}
	return v
}

// setUsed writes n, the bytes of the entries and records, in the usage
// file, at a fixed width so that it needs no truncation. A failure leaves
// it stale until the next scan. Called with the lock held.
func (dc *diskCache) setUsed(n int64) {
	dc.usage.WriteAt(fmt.Appendf(nil, "%20d\n", n), 0)
}

// room is what an eviction leaves in the cache at most, 15/16 of its
// bound, so that the next eviction (a scan of the directory) comes only
// after a sixteenth of the bound more is written; no entry is larger.
func (dc *diskCache) room() int64 { return dc.bound - dc.bound/16 }

// trim scans the directory when the usage file says the entries are over
// the bound, or says nothing readable. Called with the lock held.
func (dc *diskCache) trim() {
	if used := dc.used(); used < 0 || used > dc.bound {
		dc.scan()
	}
}

// scan counts the bytes of the entries and records in the directory and
// writes them in the usage file. Over the bound, it evicts the least
// recently read entries (with their records) but those this process has
// pinned, down to room. It also removes records without their entry and
// temporary files that crashed processes left. Called with the lock held.
func (dc *diskCache) scan() {
	files, err := os.ReadDir(dc.dir)
	if err != nil {
		return
	}
	type entry struct {
		name       string
		size, meta int64 // the entry's bytes and its record's
		used       time.Time
	}
	entries := map[string]*entry{}
	metas := map[string]int64{} // entry name -> its record's bytes
	var total int64
	for _, f := range files {
		info, err := f.Info()
		name := f.Name()
		switch {
		case err != nil || !info.Mode().IsRegular():
		case len(name) == 64:
			entries[name] = &entry{name: name, size: info.Size(), used: info.ModTime()}
			total += info.Size()
		case len(name) == 64+len(metaSuffix) && strings.HasSuffix(name, metaSuffix):
			metas[strings.TrimSuffix(name, metaSuffix)] = info.Size()
			total += info.Size()
		case isTemp(name) && time.Since(info.ModTime()) > staleTemp:
			os.Remove(filepath.Join(dc.dir, name)) // a crashed process's; a failure leaves it for the next scan
		}
	}
	for name, size := range metas {
		if e := entries[name]; e != nil {
			e.meta = size
		} else if os.Remove(filepath.Join(dc.dir, name+metaSuffix)) == nil {
			total -= size
		}
	}
	if total > dc.bound {
		lru := slices.SortedFunc(maps.Values(entries), func(a, b *entry) int { return a.used.Compare(b.used) })
		for _, e := range lru {
			if total <= dc.room() {
				break
			}
			if dc.pins[e.name] > 0 {
				continue
			}
			if err := os.Remove(filepath.Join(dc.dir, e.name)); err == nil || errors.Is(err, fs.ErrNotExist) {
				total -= e.size
				if os.Remove(filepath.Join(dc.dir, e.name+metaSuffix)) == nil {
					total -= e.meta
				}
			}
		}
	}
	dc.setUsed(total)
}
