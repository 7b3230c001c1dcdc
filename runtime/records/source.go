package records

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/images"
	"github.com/loadergen/loadergen/runtime/loaderimpl"
	"github.com/loadergen/loadergen/runtime/npy"
	"github.com/loadergen/loadergen/runtime/records/recordspec"
	"github.com/loadergen/loadergen/runtime/storage"
)

// Spec is what a schema says of a dataset of records (docs/IMAGES.md).
type Spec struct {
	Shards string // a brace pattern of tar shards relative to the root; "" with Folder
	Folder string // a directory of class folders relative to the root; "" with Shards
	Keys   []Key  // in plan order
	Seed   uint64 // the schema's seed, which Crop seeds each sample's Rand from
	// SkipUnknown skips the files of a folder's classes that are not
	// .jpg, .jpeg or .png images, as ImageFolder does; without it they are
	// an error at Open (dotfiles, .DS_Store, are skipped either way).
	SkipUnknown bool
}

// Key is one key of a record sample.
type Key struct {
	Name string
	// Member is jpg, jpeg, png, cls or npy, all but cls also as NAME.EXT
	// (recordspec.SplitMember); images also as alternatives, "jpg;jpeg;png"
	// (recordspec.Alternatives). A folder's image key reads every image file,
	// whatever its member says.
	Member string
	DType  runtime.DType
	Shape  []int // the sample's shape: [C, H, W] or [H, W, C] (Image.Layout), [H, W] for a mask, [] for cls
	// Image is an image key's transform; nil for masks and labels.
	Image *images.Transform
	// Geometry names a mask's image key, whose crop and flip it takes.
	Geometry string
}

// Source reads the samples of a records dataset: every key's member of
// sample i, decoded, cropped and written into staging. It is safe for
// concurrent use.
type Source struct {
	spec    Spec
	ix      *index
	classes []string   // a folder's classes, sorted; nil for shards
	shards  []*os.File // open shards, by file index; nil for a folder and for remote shards
	// remote is the root of shards read where they lie, by ranged
	// requests (a URL root with no disk cache), and names are their names
	// under it; nil otherwise.
	remote storage.Root
	names  []string
	member []int  // per key: its member's place in ix.members (-1 for a folder's cls)
	direct []bool // per member of ix.members: an array, which write reads straight into staging, so load skips it
	outs   []*images.Output
	arrays []*npy.Member // per key: an array key's reader, which each state clones; nil for others
	masks  []*images.Mask
	geom   []int // per mask key: its image key's index
	// free holds the states no Read or Crop is using: they pop one (or
	// make one) and push it back, under mu. A sync.Pool would drop them at
	// garbage collections and regrow their buffers; this list keeps as
	// many as calls have run at once.
	mu   sync.Mutex
	free []*state
}

// state is one Read's scratch: member bytes, the image buffers and the
// array readers.
type state struct {
	data    [][]byte     // per member; empty for arrays (of a local shard)
	held    []byte       // a remote shard's sample: the bytes its members span, which data slices
	mem     bytes.Reader // an array member of a remote shard's sample, for its reader
	scratch images.Scratch
	crops   []images.Crop // per key: an image key's crop in the image's pixels
	draw    drawer
	arrays  []*npy.Member // per key: an array key's reader, with the header it last accepted; nil for others
}

// drawer draws an image key's crop from a sample's Rand once its decoder
// knows the image's size (images.Drawer).
type drawer struct {
	r    *rand.Rand
	out  *images.Output
	crop images.Crop // what it drew, in the image's pixels
}

func (d *drawer) Draw(w, h int) images.Crop {
	d.crop = images.Draw(d.r, d.out.T, w, h, d.out.W, d.out.H)
	return d.crop
}

// Open indexes the dataset under root (the shards' headers, or the class
// folders' files), checks that every sample holds every member the keys
// read, and logs what it found.
func Open(spec Spec, root string, log *slog.Logger) (*Source, error) {
	s := &Source{spec: spec}
	if err := s.prepareKeys(); err != nil {
		return nil, err
	}
	var members []string
	for _, k := range spec.Keys {
		if (spec.Folder == "" || k.Member != "cls") && !slices.Contains(members, k.Member) {
			members = append(members, k.Member)
		}
	}
	var err error
	if spec.Folder != "" {
		if storage.IsURL(root) {
			return nil, fmt.Errorf("records: class folders must be on local disk, not under %s: object stores cannot be walked as folders are; write the dataset as tar shards", storage.Redact(root))
		}
		dir := filepath.Join(root, filepath.FromSlash(spec.Folder))
		var other []string
		if s.ix, s.classes, other, err = indexFolder(dir, spec.SkipUnknown); err != nil {
			return nil, err
		}
		log.Info("records: opened class folders", "folder", dir, "classes", len(s.classes), "samples", len(s.ix.samples))
		if len(other) > 0 {
			level, warn := slog.LevelInfo, imageFolderReads(dir, other)
			if warn != "" {
				level = slog.LevelWarn
			}
			log.Log(context.Background(), level, "records: skipped the files of the class folders that are not .jpg, .jpeg or .png images (skip_unknown)"+warn,
				"folder", dir, "skipped", len(other), "first", listed(dir, other))
		}
	} else {
		names, err := recordspec.ExpandShards(spec.Shards)
		if err != nil {
			return nil, err
		}
		r, err := storage.Open(root)
		if err != nil {
			return nil, err
		}
		files := make([]string, len(names))
		for i, name := range names {
			files[i] = r.URL(name)
		}
		err = s.prepareShards(r, names, files, members, log)
		if err != nil || s.remote == nil {
			r.Close() // shards read in place keep it, until Close
		}
		if err != nil {
			return nil, err
		}
		log.Info("records: indexed tar shards", "shards", len(names), "samples", len(s.ix.samples), "members", strings.Join(members, ","), "in_place", s.remote != nil)
	}
	if len(s.ix.samples) == 0 {
		s.Close()
		return nil, errors.New("records: no samples")
	}
	s.member = make([]int, len(spec.Keys))
	for i, k := range spec.Keys {
		s.member[i] = slices.Index(s.ix.members, k.Member)
		if spec.Folder != "" && k.Member != "cls" {
			s.member[i] = 0
		}
	}
	s.direct = make([]bool, len(s.ix.members))
	for j, m := range s.ix.members {
		s.direct[j] = spec.Folder == "" && recordspec.ArrayMember(m)
	}
	return s, nil
}

// prepareKeys builds each key's output and finds each mask's image key.
func (s *Source) prepareKeys() error {
	n := len(s.spec.Keys)
	s.outs, s.masks, s.geom, s.arrays = make([]*images.Output, n), make([]*images.Mask, n), make([]int, n), make([]*npy.Member, n)
	for i, k := range s.spec.Keys {
		switch {
		case recordspec.ArrayMember(k.Member):
			if s.spec.Folder != "" {
				return fmt.Errorf("records: key %q: a folder sample is one image and its class, with no member %q", k.Name, k.Member)
			}
			var err error
			if s.arrays[i], err = npy.NewMember(npy.Spec{Key: k.Name, DType: k.DType, Sample: k.Shape}); err != nil {
				return fmt.Errorf("records: %w", err)
			}
		case k.Image != nil:
			h, w, c := k.Shape[1], k.Shape[2], k.Shape[0]
			if k.Image.Layout == images.HWC {
				h, w, c = k.Shape[0], k.Shape[1], k.Shape[2]
			}
			s.outs[i] = images.NewOutput(k.Image, h, w, c, k.DType == runtime.Float32)
		case k.Geometry != "":
			s.geom[i] = slices.IndexFunc(s.spec.Keys, func(o Key) bool { return o.Name == k.Geometry })
			if s.geom[i] < 0 || s.spec.Keys[s.geom[i]].Image == nil {
				return fmt.Errorf("records: key %q: geometry %q is not an image key", k.Name, k.Geometry)
			}
			s.masks[i] = &images.Mask{H: k.Shape[0], W: k.Shape[1], DType: k.DType}
		}
	}
	return nil
}

// prepareShards opens the shards names of root r (files: their names in
// messages) for reading and indexes them. Local shards are read where they
// lie. Remote shards are fetched whole into the disk cache when it is set
// (later processes read them from local disk; see fetchShards), and else
// read where they lie: indexed by ranged requests for their tar headers,
// and each sample read by one ranged request, which ReadAhead starts
// early. Shards on local disk are opened first, then indexed from their
// open files.
func (s *Source) prepareShards(r storage.Root, names, files, members []string, log *slog.Logger) error {
	_, local := r.Local()
	var err error
	switch {
	case local:
		err = s.openShards(files, func(i int) (string, func(), error) { return files[i], func() {}, nil })
	case storage.DiskCached(r):
		err = s.fetchShards(r, names, files, log)
	default:
		s.ix, err = indexShards(files, members, remoteShards(r, names))
		if err == nil {
			err = s.ix.checkExtents()
		}
		s.remote, s.names = r, names
		return err
	}
	if err != nil {
		return err
	}
	if s.ix, err = indexShards(files, members, openedShards(s.shards)); err != nil {
		s.Close()
	}
	return err
}

// fetchShards fetches the shards names of remote root r (files: their
// names in messages) into the disk cache (storage.Fetch) and opens each as
// it arrives, before a later fetch may evict it: a cache too small to
// keep them all still serves this process, which logs that it is.
func (s *Source) fetchShards(r storage.Root, names, files []string, log *slog.Logger) error {
	paths := make([]string, len(names))
	err := s.openShards(files, func(i int) (path string, done func(), err error) {
		paths[i], done, err = storage.Fetch(context.Background(), r, names[i])
		return paths[i], done, err
	})
	if err != nil {
		return err
	}
	gone, total := 0, int64(0)
	for i, f := range s.shards {
		info, err := f.Stat()
		if err != nil {
			s.Close()
			return fmt.Errorf("shard %s: %w", files[i], err)
		}
		total += info.Size()
		if kept, err := os.Stat(paths[i]); err != nil || !os.SameFile(info, kept) {
			gone++
		}
	}
	if gone > 0 {
		log.Warn("records: the disk cache is too small to keep the shards: this process holds them open, on disk past the cache's bound until it ends, and the next one fetches them again; raise "+storage.CacheMBEnv+" above the shards' size, or unset "+storage.CacheDirEnv+" to read them in place",
			"shards", len(names), "not_kept", gone, "shards_mib", (total+1<<20-1)>>20)
	}
	return nil
}

// openShards opens every shard (files: their names in messages) for
// reading, kept open until Close: where says where shard i lies on local
// disk, and gives what ends its hold on the file once it is open (a
// fetch's done).
func (s *Source) openShards(files []string, where func(i int) (path string, done func(), err error)) error {
	s.shards = make([]*os.File, len(files))
	for i, name := range files {
		p, done, err := where(i)
		if err == nil {
			s.shards[i], err = os.Open(p)
			done()
		}
		if err != nil {
			s.Close()
			return fmt.Errorf("shard %s: %w", name, err)
		}
	}
	return nil
}

// Len returns the number of samples.
func (s *Source) Len() int { return len(s.ix.samples) }

// Classes returns a folder's classes, sorted: label i is Classes()[i].
// It is nil for shards.
func (s *Source) Classes() []string { return slices.Clone(s.classes) }

// Close closes the shards: the files of local ones, and the root of
// remote ones read in place, which stops and drops what is read ahead of
// them (see storage.Root.Close) and returns once none of it runs. For
// class folders it does nothing: each image is opened as it is read.
func (s *Source) Close() error {
	var errs []error
	for _, f := range s.shards {
		if f != nil {
			errs = append(errs, f.Close())
		}
	}
	s.shards = nil
	if s.remote != nil {
		errs = append(errs, s.remote.Close())
	}
	return errors.Join(errs...)
}

// SampleError is a sample that cannot be read: it names the file (a shard
// or a folder's image), the sample's key, and the member.
type SampleError struct {
	File   string
	Sample string // the WebDataset key, or the image's path under the folder
	Member string
	Err    error
}

// Name returns where sample index (in [0, Len())) comes from, as errors
// name it: the shard that holds it (a URL for a remote one) and its key
// there, WebDataset's __url__ and __key__; for class folders, the image's
// path, ImageFolder's samples[index][0], and its path under the folder
// (cat/001.jpg).
func (s *Source) Name(index int) (file, key string) {
	sm := s.ix.samples[index]
	return s.ix.files[sm.file], sm.key
}

func (e *SampleError) Error() string {
	return fmt.Sprintf("%s: sample %q, member %q: %v", e.File, e.Sample, e.Member, e.Err)
}

// Unwrap returns what went wrong.
func (e *SampleError) Unwrap() error { return e.Err }

// Read draws sample index's crops from r (each image key's, in key order)
// and writes every key into dst, one buffer per key in spec order. An
// error is a *runtime.KeyError around a *SampleError; one of the sample's
// bytes (an image that does not decode, a bad cls or array member) is
// within a *runtime.BadSampleError, which on_error: skip replaces, and
// one of reading them (I/O, a server) is not. The read of a remote
// shard's sample stops once ctx is done; a nil ctx is never done.
func (s *Source) Read(ctx context.Context, r *rand.Rand, index int, dst ...[]byte) error {
	if ctx == nil {
		ctx = context.Background() // a generated sample made by hand
	}
	st := s.get()
	defer s.put(st)
	if err := s.load(ctx, st, index); err != nil {
		return err
	}
	for i, k := range s.spec.Keys {
		if err := s.write(st, r, index, i, dst[i]); err != nil {
			return &runtime.BadSampleError{Err: &runtime.KeyError{Key: k.Name, Err: s.sampleError(index, i, err)}}
		}
	}
	return nil
}

// get takes a free state, or makes one.
func (s *Source) get() *state {
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.free); n > 0 {
		st := s.free[n-1]
		s.free = s.free[:n-1]
		return st
	}
	st := &state{data: make([][]byte, len(s.ix.members)), crops: make([]images.Crop, len(s.spec.Keys)), arrays: make([]*npy.Member, len(s.arrays))}
	for i, m := range s.arrays {
		if m != nil {
			st.arrays[i] = m.Clone()
		}
	}
	return st
}

// put gives st back.
func (s *Source) put(st *state) {
	s.mu.Lock()
	s.free = append(s.free, st)
	s.mu.Unlock()
}

// load reads sample index's members into st.data, but for arrays of local
// shards, which write reads; a remote shard's within ctx.
func (s *Source) load(ctx context.Context, st *state, index int) error {
	if s.remote != nil {
		return s.loadRemote(ctx, st, index)
	}
	sm := s.ix.samples[index]
	for j := range s.ix.members {
		if s.direct[j] {
			continue
		}
		sp := s.ix.extents[index*len(s.ix.members)+j]
		st.data[j] = slices.Grow(st.data[j][:0], int(sp.size))[:sp.size]
		var err error
		if s.shards != nil {
			_, err = s.shards[sm.file].ReadAt(st.data[j], sp.off)
		} else {
			err = readFile(s.ix.files[sm.file], st.data[j])
		}
		if err != nil {
			k := slices.IndexFunc(s.member, func(m int) bool { return m == j })
			return &runtime.KeyError{Key: s.spec.Keys[k].Name, Err: s.sampleError(index, k, err)}
		}
	}
	return nil
}

// loadRemote reads the bytes sample index's members span in its remote
// shard into st.held, by one ranged request (served by the read-ahead when
// ReadAhead was told of the sample), and points st.data at the members.
func (s *Source) loadRemote(ctx context.Context, st *state, index int) error {
	ext := s.ix.sampleExtent(index)
	st.held = slices.Grow(st.held[:0], int(ext.size))[:ext.size]
	if err := s.remote.ReadAt(ctx, s.names[s.ix.samples[index].file], st.held, ext.off); err != nil {
		st.held = st.held[:0]
		se := s.sampleError(index, 0, err)
		se.Member = strings.Join(s.ix.members, ",")
		return &runtime.KeyError{Key: s.spec.Keys[0].Name, Err: se}
	}
	for j := range s.ix.members {
		sp := s.ix.extents[index*len(s.ix.members)+j]
		st.data[j] = st.held[sp.off-ext.off : sp.off-ext.off+sp.size]
	}
	return nil
}

// ReadAhead starts fetching the samples indices (of any epoch: what a
// sample holds does not depend on it) from remote shards, each by one
// ranged request for the bytes its members span, within the read-ahead's
// bound (LOADERGEN_READAHEAD_MB); Read then finds them fetched. It does
// nothing for local shards, shards in the disk cache, or folders.
func (s *Source) ReadAhead(epoch int, indices []int) {
	h, ok := s.remote.(storage.Hinter)
	if !ok {
		return
	}
	for _, i := range indices {
		ext := s.ix.sampleExtent(i)
		h.HintRange(s.names[s.ix.samples[i].file], ext.off, ext.size)
	}
}

// readFile reads the file name into buf, which holds its size as indexed.
func readFile(name string, buf []byte) error {
	f, err := os.Open(name)
	if err != nil {
		return err
	}
	defer f.Close()
	n, err := f.ReadAt(buf, 0)
	if n == len(buf) {
		return nil
	}
	return err
}

// sampleError names sample index, key i's member and the file.
func (s *Source) sampleError(index, i int, err error) *SampleError {
	sm := s.ix.samples[index]
	member := s.spec.Keys[i].Member
	if s.spec.Folder != "" && member != "cls" {
		member = filepath.Base(sm.key)
	}
	return &SampleError{File: s.ix.files[sm.file], Sample: sm.key, Member: member, Err: err}
}

// write writes key i of sample index, whose members st holds, into dst.
func (s *Source) write(st *state, r *rand.Rand, index, i int, dst []byte) error {
	k := s.spec.Keys[i]
	switch {
	case k.Image != nil:
		st.draw = drawer{r: r, out: s.outs[i]}
		d, c, err := st.scratch.Decode(st.data[s.member[i]], &st.draw)
		if err != nil {
			return err
		}
		st.crops[i] = st.draw.crop
		return s.outs[i].Write(&st.scratch, dst, d, c)
	case k.Geometry != "":
		d, err := st.scratch.DecodeMask(st.data[s.member[i]])
		if err != nil {
			return err
		}
		return s.masks[i].Write(&st.scratch, dst, d, st.crops[s.geom[i]])
	case s.arrays[i] != nil:
		sp := s.ix.extents[index*len(s.ix.members)+s.member[i]]
		if s.remote != nil { // the member is in memory, at st.data
			st.mem.Reset(st.data[s.member[i]])
			return st.arrays[i].ReadAt(&st.mem, 0, sp.size, dst)
		}
		return st.arrays[i].ReadAt(s.shards[s.ix.samples[index].file], sp.off, sp.size, dst)
	case s.member[i] < 0:
		k.DType.PutInt(dst, int64(s.ix.samples[index].label))
		return nil
	}
	v, err := parseLabel(st.data[s.member[i]], k.DType)
	if err != nil {
		return err
	}
	k.DType.PutInt(dst, v)
	return nil
}

// parseLabel reads a cls member: a text integer (surrounding white space
// allowed) that dtype d holds.
func parseLabel(b []byte, d runtime.DType) (int64, error) {
	text := bytes.TrimSpace(b)
	v, err := strconv.ParseInt(string(text), 10, 64) // converted on the stack: ParseInt keeps no reference
	if err != nil {
		return 0, fmt.Errorf("cls %s is not an integer", quoted(text))
	}
	if lo, hi := d.IntRange(); v < lo || (v > 0 && uint64(v) > hi) {
		return 0, fmt.Errorf("cls %d does not fit %s", v, d)
	}
	return v, nil
}

// maxQuoted is the most bytes of a bad member that a message quotes.
const maxQuoted = 64

// quoted quotes b for a message: whole, or its first maxQuoted bytes and
// its size.
func quoted(b []byte) string {
	if len(b) <= maxQuoted {
		return strconv.Quote(string(b))
	}
	return fmt.Sprintf("%q... (%d bytes)", b[:maxQuoted], len(b))
}

// Crop returns the crop and flip of each image key (nil entries for other
// keys) of sample index in epoch: the draws Read makes, whatever the number
// of workers. It reads the images' headers to know their sizes.
func (s *Source) Crop(epoch, index int) ([]images.Crop, error) {
	var pcg rand.PCG
	loaderimpl.SeedSample(&pcg, loaderimpl.EpochSeed(s.spec.Seed, epoch), index)
	r := rand.New(&pcg)
	st := s.get()
	defer s.put(st)
	if err := s.load(context.Background(), st, index); err != nil {
		return nil, err
	}
	crops := make([]images.Crop, len(s.spec.Keys))
	for i, k := range s.spec.Keys {
		if k.Image == nil {
			continue
		}
		w, h, err := images.Size(st.data[s.member[i]])
		if err != nil {
			return nil, &runtime.KeyError{Key: k.Name, Err: s.sampleError(index, i, err)}
		}
		crops[i] = images.Draw(r, k.Image, w, h, s.outs[i].W, s.outs[i].H)
	}
	return crops, nil
}
