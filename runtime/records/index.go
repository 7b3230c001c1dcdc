package records

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/loadergen/loadergen/runtime/records/recordspec"
	"github.com/loadergen/loadergen/runtime/storage"
)

// extent is where bytes lie in a file: size bytes from offset off (a
// member's, or a sample's members').
type extent struct{ off, size int64 }

// sample is one sample of an index: the file holding it, its key (the
// WebDataset key, or a folder image's path under the folder, with '/')
// and its class (folders only).
type sample struct {
	file  int32
	label int32
	key   string
}

// index says where every sample's members lie: spans[i*len(members)+j]
// is member j of sample i.
type index struct {
	files   []string // the shards or the folder's images, as messages name them (a URL for a remote shard)
	members []string // the members each sample has, in the order asked: each as a key names it (Alternatives)
	samples []sample
	extents []extent
}

// indexParallel is how many shards are indexed at once.
const indexParallel = 16

// shardOpener opens shard i for indexing: a reader of its bytes from the
// start, its size, and what closes the reader.
type shardOpener func(i int) (r io.ReadSeeker, size int64, close func() error, err error)

// indexShards indexes WebDataset tar shards by reading their headers only,
// indexParallel shards at once, each read through open. A sample is the
// adjacent members sharing a key (the name up to the first '.' of its base
// name); its extension (the rest, lower case) names the member. Members
// named __*__ are metadata and skipped; directories are skipped. Each
// sample must hold every member of members, once. Of several bad shards,
// the error names the first.
func indexShards(files, members []string, open shardOpener) (*index, error) {
	ix := &index{files: files, members: members}
	parts := make([]*index, len(files))
	errs := make([]error, len(files))
	sem := make(chan struct{}, indexParallel)
	var wg sync.WaitGroup
	for i := range files {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			parts[i], errs[i] = ix.indexShard(int32(i), open)
		}()
	}
	wg.Wait()
	for i, part := range parts {
		if errs[i] != nil {
			return nil, errs[i]
		}
		ix.samples = append(ix.samples, part.samples...)
		ix.extents = append(ix.extents, part.extents...)
	}
	return ix, nil
}

// openedShards reads shard i from the open file shards[i], for
// indexShards.
func openedShards(shards []*os.File) shardOpener {
	return func(i int) (io.ReadSeeker, int64, func() error, error) {
		st, err := shards[i].Stat()
		if err != nil {
			return nil, 0, nil, err
		}
		return io.NewSectionReader(shards[i], 0, st.Size()), st.Size(), func() error { return nil }, nil
	}
}

// remoteShards reads shard i, names[i] under remote root r, by ranged
// requests that skip the members' bytes where they can (storage.Reader),
// for indexShards.
func remoteShards(r storage.Root, names []string) shardOpener {
	return func(i int) (io.ReadSeeker, int64, func() error, error) {
		ctx := context.Background() // indexing is part of opening, which nothing cancels
		size, err := r.Size(ctx, names[i])
		if err != nil {
			return nil, 0, nil, err
		}
		return storage.NewReader(ctx, r, names[i], size), size, func() error { return nil }, nil
	}
}

// sampleExtent returns the bytes of its shard that sample index's members span,
// from the first byte of the first to the last byte of the last (with the
// tar headers between them, and any members not read).
func (ix *index) sampleExtent(index int) extent {
	extents := ix.extents[index*len(ix.members) : (index+1)*len(ix.members)]
	lo, hi := extents[0].off, extents[0].off+extents[0].size
	for _, sp := range extents[1:] {
		lo, hi = min(lo, sp.off), max(hi, sp.off+sp.size)
	}
	return extent{off: lo, size: hi - lo}
}

// The bound of the bytes a sample read in place from a remote shard may
// span (see checkExtents), in MiB, and the variable that sets it.
const (
	MaxSampleEnv        = "LOADERGEN_MAX_SAMPLE_MB"
	DefaultMaxSampleMiB = 1024
)

// maxSample is the bound of checkExtents in bytes, read from the
// environment once.
var maxSample = sync.OnceValues(func() (int64, error) { return sampleBound(os.Getenv) })

// sampleBound reads the bound of checkExtents, in bytes, from the
// environment through getenv.
func sampleBound(getenv func(string) string) (int64, error) {
	v := getenv(MaxSampleEnv)
	if v == "" { // empty is unset, as for every variable of loadergen
		return DefaultMaxSampleMiB << 20, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 || n > 1<<30 {
		return 0, fmt.Errorf("environment %s=%q: want a whole number of MiB from 1", MaxSampleEnv, v)
	}
	return n << 20, nil
}

// checkExtents refuses an index of remote shards read in place in which a
// sample's members span more than maxSample bytes: such a sample is read
// into memory whole, by one request, and its size comes from tar headers
// and a server's word, which may lie (a shard said to hold 1 TiB, a
// member said to hold 64 GiB). It runs before any member's bytes are
// fetched.
func (ix *index) checkExtents() error {
	most, err := maxSample()
	if err != nil {
		return err
	}
	for i, sm := range ix.samples {
		if ext := ix.sampleExtent(i); ext.size > most {
			return fmt.Errorf("shard %s: sample %q: its members span %d bytes from offset %d, more than the %d a sample read in place may (%s)",
				ix.files[sm.file], sm.key, ext.size, ext.off, most, MaxSampleEnv)
		}
	}
	return nil
}

// indexShard indexes shard i, opened with open, into an index of its own
// samples.
func (ix *index) indexShard(i int32, open shardOpener) (*index, error) {
	name := ix.files[i]
	f, size, closeShard, err := open(int(i))
	if err != nil {
		return nil, fmt.Errorf("shard %s: %w", name, err)
	}
	defer closeShard()
	part := &index{members: ix.members}
	wanted := make([][]string, len(ix.members)) // each member's alternatives
	for j, m := range ix.members {
		wanted[j] = recordspec.Alternatives(m)
	}
	tr := tar.NewReader(f)
	var cur *shardSample
	seen := map[string]string{} // sample key -> its first member, in this shard
	last := ""
	var end int64 // where the last member's data ends, padded to tar's 512-byte blocks
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			// archive/tar takes a file that ends after a member, or after
			// one zero block, for a whole archive.
			pos, err := f.Seek(0, io.SeekCurrent)
			if err != nil {
				return nil, fmt.Errorf("shard %s: %w", name, err)
			}
			if pos < end+2*512 {
				return nil, fmt.Errorf("shard %s: the tar ends %s without its end-of-archive marker (cut short?)", name, after(last))
			}
			break
		}
		if err != nil {
			if last == "" {
				if c := compressed(f); c != "" {
					return nil, fmt.Errorf("shard %s is compressed (%s), not a tar: %w", name, c, recordspec.ErrCompressed)
				}
				return nil, fmt.Errorf("shard %s: %w", name, err)
			}
			return nil, fmt.Errorf("shard %s: after member %q: %w", name, last, err)
		}
		last = h.Name
		off, err := f.Seek(0, io.SeekCurrent)
		if err != nil {
			return nil, fmt.Errorf("shard %s: %w", name, err)
		}
		end = off + (h.Size+511)/512*512
		switch h.Typeflag {
		case tar.TypeDir:
			continue
		case tar.TypeReg:
		default:
			return nil, fmt.Errorf("shard %s: member %q is not a regular file (tar type %q)", name, h.Name, h.Typeflag)
		}
		if !strings.Contains(h.Name, "/") && strings.HasPrefix(h.Name, "__") && strings.HasSuffix(h.Name, "__") {
			continue // WebDataset metadata
		}
		if off+h.Size > size {
			return nil, fmt.Errorf("shard %s: the tar ends inside member %q: its %d bytes from offset %d run past the file's %d", name, h.Name, h.Size, off, size)
		}
		key, ext, ok := splitName(h.Name)
		if !ok {
			return nil, fmt.Errorf("shard %s: member %q has no extension (WebDataset names members KEY.EXT)", name, h.Name)
		}
		if cur == nil || key != cur.key {
			if cur != nil {
				if err := part.addSample(name, cur); err != nil {
					return nil, err
				}
			}
			if first, dup := seen[key]; dup {
				return nil, fmt.Errorf("shard %s: member %q: sample %q appears again, apart from its member %q (a sample's members are adjacent)", name, h.Name, key, first)
			}
			seen[key] = h.Name
			cur = &shardSample{key: key, file: i, extents: make([]extent, len(ix.members)), alt: slices.Repeat([]int{-1}, len(ix.members))}
		}
		if prev, dup := cur.exts[ext]; dup {
			return nil, fmt.Errorf("shard %s: member %q: sample %q repeats extension %q (first in member %q)", name, h.Name, key, ext, prev)
		}
		if cur.exts == nil {
			cur.exts = map[string]string{}
		}
		cur.exts[ext] = h.Name
		for j, alts := range wanted {
			if a := slices.Index(alts, ext); a >= 0 && (cur.alt[j] < 0 || a < cur.alt[j]) {
				cur.extents[j], cur.alt[j] = extent{off: off, size: h.Size}, a
			}
		}
	}
	if cur != nil {
		if err := part.addSample(name, cur); err != nil {
			return nil, err
		}
	}
	return part, nil
}

// compressions are the signatures of the compressed streams a shard may
// wrongly be.
var compressions = []struct{ name, magic string }{
	{"gzip", "\x1f\x8b"},
	{"zstd", "\x28\xb5\x2f\xfd"},
	{"xz", "\xfd7zXZ\x00"},
	{"bzip2", "BZh"},
}

// compressed names the compressed stream shard f holds by its first
// bytes, or returns "".
func compressed(f io.ReadSeeker) string {
	var head [6]byte
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return ""
	}
	n, _ := io.ReadFull(f, head[:])
	for _, c := range compressions {
		if strings.HasPrefix(string(head[:n]), c.magic) {
			return c.name
		}
	}
	return ""
}

// after says where a tar whose last member is last ends, for messages.
func after(last string) string {
	if last == "" {
		return "before any member"
	}
	return fmt.Sprintf("after member %q", last)
}

// shardSample is a sample being gathered from a shard's members.
type shardSample struct {
	key     string
	file    int32
	exts    map[string]string // extension -> member name
	extents []extent          // per wanted member
	alt     []int             // per wanted member: the alternative found (Alternatives), -1 for none yet
}

// addSample checks that sample c of shard name holds every wanted member
// and adds it.
func (ix *index) addSample(name string, c *shardSample) error {
	for j, a := range c.alt {
		if a < 0 {
			have := slices.Sorted(maps.Keys(c.exts))
			return fmt.Errorf("shard %s: sample %q has no member %q (it has %s)%s", name, c.key, ix.members[j], strings.Join(have, ", "), otherImages(ix.members[j], have))
		}
	}
	ix.samples = append(ix.samples, sample{file: c.file, key: c.key})
	ix.extents = append(ix.extents, c.extents...)
	return nil
}

// otherImages suggests alternatives for a sample that lacks image member
// want but has images under other extensions (have): "; member:
// \"jpg;jpeg\" reads either".
func otherImages(want string, have []string) string {
	alts := recordspec.Alternatives(want)
	if !slices.ContainsFunc(alts, recordspec.ImageMember) {
		return ""
	}
	for _, ext := range have {
		if recordspec.ImageMember(ext) && !slices.Contains(alts, ext) {
			alts = append(alts, ext)
		}
	}
	if len(alts) == len(recordspec.Alternatives(want)) {
		return ""
	}
	return fmt.Sprintf("; member: %q reads either", strings.Join(alts, ";"))
}

// splitName splits a member name into WebDataset's key (the directory and
// the base name up to its first '.') and extension (the rest, lower case).
func splitName(name string) (key, ext string, ok bool) {
	dir, base := path.Split(name)
	stem, ext, ok := strings.Cut(base, ".")
	if !ok || stem == "" || ext == "" {
		return "", "", false
	}
	return dir + stem, strings.ToLower(ext), true
}
