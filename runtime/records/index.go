package records

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
)

// span is where one member's bytes lie in a file.
type span struct{ off, size int64 }

// sample is one sample of an index: the file holding it, its key (the
// WebDataset key, or a folder image's path) and its class (folders only).
type sample struct {
	file  int32
	label int32
	key   string
}

// index says where every sample's members lie: spans[i*len(members)+j]
// is member j of sample i.
type index struct {
	files   []string // the shards or the folder's images, as messages name them (a URL for a fetched shard)
	paths   []string // where files lie on local disk, when fetched there; nil when files are local paths
	members []string // the members each sample has, in the order asked
	samples []sample
	spans   []span
}

// indexShards indexes WebDataset tar shards by reading their headers only.
// A sample is the adjacent members sharing a key (the name up to the
// first '.' of its base name); its extension (the rest, lower case) names
// the member. Members named __*__ are metadata and skipped; directories
// are skipped. Each sample must hold every member of members, once.
// paths, when not nil, holds where each file lies on local disk.
func indexShards(files, paths []string, members []string) (*index, error) {
	ix := &index{files: files, paths: paths, members: members}
	for i, name := range files {
		if err := ix.addShard(int32(i), name, ix.path(i)); err != nil {
			return nil, err
		}
	}
	return ix, nil
}

// path returns where file i lies on local disk.
func (ix *index) path(i int) string {
	if ix.paths != nil {
		return ix.paths[i]
	}
	return ix.files[i]
}

// addShard indexes the shard at path, number i, named name in messages.
func (ix *index) addShard(i int32, name, path string) (err error) {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("shard %s: %w", name, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return fmt.Errorf("shard %s: %w", name, err)
	}
	tr := tar.NewReader(f)
	var cur *shardSample
	seen := map[string]string{} // sample key -> its first member, in this shard
	last := ""
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			if last == "" {
				return fmt.Errorf("shard %s: %w", name, err)
			}
			return fmt.Errorf("shard %s: after member %q: %w", name, last, err)
		}
		last = h.Name
		switch h.Typeflag {
		case tar.TypeDir:
			continue
		case tar.TypeReg:
		default:
			return fmt.Errorf("shard %s: member %q is not a regular file (tar type %q)", name, h.Name, h.Typeflag)
		}
		if !strings.Contains(h.Name, "/") && strings.HasPrefix(h.Name, "__") && strings.HasSuffix(h.Name, "__") {
			continue // WebDataset metadata
		}
		off, err := f.Seek(0, io.SeekCurrent)
		if err != nil {
			return fmt.Errorf("shard %s: %w", name, err)
		}
		if off+h.Size > st.Size() {
			return fmt.Errorf("shard %s: the tar ends inside member %q: its %d bytes from offset %d run past the file's %d", name, h.Name, h.Size, off, st.Size())
		}
		key, ext, ok := splitName(h.Name)
		if !ok {
			return fmt.Errorf("shard %s: member %q has no extension (WebDataset names members KEY.EXT)", name, h.Name)
		}
		if cur == nil || key != cur.key {
			if cur != nil {
				if err := ix.finish(name, cur); err != nil {
					return err
				}
			}
			if first, dup := seen[key]; dup {
				return fmt.Errorf("shard %s: member %q: sample %q appears again, apart from its member %q (a sample's members are adjacent)", name, h.Name, key, first)
			}
			seen[key] = h.Name
			cur = &shardSample{key: key, file: i, spans: make([]span, len(ix.members)), found: make([]bool, len(ix.members))}
		}
		if prev, dup := cur.exts[ext]; dup {
			return fmt.Errorf("shard %s: member %q: sample %q repeats extension %q (first in member %q)", name, h.Name, key, ext, prev)
		}
		if cur.exts == nil {
			cur.exts = map[string]string{}
		}
		cur.exts[ext] = h.Name
		if j := slices.Index(ix.members, ext); j >= 0 {
			cur.spans[j], cur.found[j] = span{off: off, size: h.Size}, true
		}
	}
	if cur != nil {
		return ix.finish(name, cur)
	}
	return nil
}

// shardSample is a sample being gathered from a shard's members.
type shardSample struct {
	key   string
	file  int32
	exts  map[string]string // extension -> member name
	spans []span            // per wanted member
	found []bool
}

// finish checks that sample c of shard name holds every wanted member
// and adds it.
func (ix *index) finish(name string, c *shardSample) error {
	for j, ok := range c.found {
		if !ok {
			have := make([]string, 0, len(c.exts))
			for ext := range c.exts {
				have = append(have, ext)
			}
			slices.Sort(have)
			return fmt.Errorf("shard %s: sample %q has no member %q (it has %s)", name, c.key, ix.members[j], strings.Join(have, ", "))
		}
	}
	ix.samples = append(ix.samples, sample{file: c.file, key: c.key})
	ix.spans = append(ix.spans, c.spans...)
	return nil
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
