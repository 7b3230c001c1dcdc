package schema

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/images/imagespec"
	"github.com/loadergen/loadergen/runtime/records/recordspec"
)

// The fields of the records section and of a record key's parts.
var (
	recordsFields   = []string{"shards", "folder", "skip_unknown", "on_error"}
	resizeFields    = []string{"crop", "scale", "ratio", "size"}
	normalizeFields = []string{"mean", "std"}
	// imageTransforms are the fields of image keys that a mask (geometry:)
	// takes from its image instead; imageFields are all of an image key's.
	imageTransforms = []string{"resize", "flip", "normalize", "layout"}
	imageFields     = append(slices.Clip(imageTransforms), "geometry")
	// imageOnlyFields are those no other kind of key has: a zarr key has
	// a normalize of its own (volumeKey).
	imageOnlyFields = []string{"resize", "flip", "layout", "geometry"}
)

// The members a record key reads, by extension (case-folded).
const (
	MemberJPG  = "jpg"
	MemberJPEG = "jpeg"
	MemberPNG  = "png"
	MemberCls  = "cls" // a text integer, or a folder sample's class index
	MemberNPY  = "npy" // an array, one sample as numpy.save writes it
)

// Every member but cls may also be named NAME.EXT (left.jpg, depth.npy:
// WebDataset's 000042.left.jpg), so that a sample holds several of one
// kind (recordspec.SplitMember).

var memberNames = []string{MemberJPG, MemberJPEG, MemberPNG, MemberCls, MemberNPY}

// Records says where the samples of record keys (member:) come from
// (docs/IMAGES.md): WebDataset tar shards or class folders.
type Records struct {
	// Shards is a brace pattern of tar files relative to the data root,
	// "train-{000000..001023}.tar"; "" with Folder.
	Shards string
	// Folder is a directory of class folders relative to the data root,
	// as torchvision's ImageFolder reads it; "" with Shards.
	Folder string
	// SkipUnknown skips the files of Folder's classes that are not
	// images, which are otherwise an error (records.Spec.SkipUnknown).
	SkipUnknown bool
	// OnError is what a bad sample does: end the epoch, or be replaced
	// (runtime.OnError).
	OnError runtime.OnError
}

// recordKey reads the member field of key and, for an image member, its
// transforms (f holds the key's fields): resize, flip, normalize, layout,
// or geometry for a mask. It runs after volumeKey.
func (p *parser) recordKey(kp string, f map[string]*yaml.Node, key *Key) error {
	mn, ok := f["member"]
	if !ok {
		if n, ok := f["normalize"]; ok && key.Zarr == "" {
			return p.errorf(n, kp+".normalize", "applies to zarr keys and image keys only (this key has neither zarr: nor member:)")
		}
		return p.onlyFor(kp, f, imageOnlyFields, "record keys", "member:")
	}
	for _, other := range []string{"file", "zarr"} {
		if _, ok := f[other]; ok {
			return p.errorf(mn, kp+".member", "a key reads from one of file:, zarr: and member:, this one also names %s:", other)
		}
	}
	path := kp + ".member"
	s, err := p.str(path, mn)
	if err != nil {
		return err
	}
	key.Member = strings.ToLower(s)
	alts := strings.Split(s, ";") // as written, for messages; recordspec.Alternatives splits key.Member alike
	for _, alt := range alts {
		if err := p.member(mn, path, s, alt, len(alts) > 1); err != nil {
			return err
		}
	}
	if i := repeated(recordspec.Alternatives(key.Member)); i > 0 {
		return p.errorf(mn, path, "member %s lists %s twice", quote(s), quote(alts[i]))
	}
	array := recordspec.ArrayMember(key.Member)
	switch {
	case key.ClassAxis:
		return p.errorf(mn, path, "a record key has no class axis, but classes gives this target one; set class_axis: false")
	case key.Member == MemberCls:
		return p.labelKey(kp, f, *key)
	case array:
		return p.onlyFor(kp, f, imageFields, "image keys", "image member")
	}
	if n, ok := f["geometry"]; ok {
		return p.maskKey(kp, f, n, key)
	}
	return p.imageKey(kp, f, key)
}

// member checks alt, one of the alternatives of a key's member s (n, at
// path), of which there are several when alts says so: a known extension,
// with a NAME that is not empty, holds no slash or control character and
// is not a cls's; an image, when there are alternatives.
func (p *parser) member(n *yaml.Node, path, s, alt string, alts bool) error {
	name, ext, named := recordspec.SplitMember(strings.ToLower(alt))
	switch {
	case alts && alt == "":
		return p.errorf(n, path, "member %s has an empty alternative: alternatives are image members between semicolons (%q)", quote(s), "jpg;jpeg;png")
	case named && (strings.ContainsAny(alt, `/\`) || hasControl(alt)):
		return p.errorf(n, path, "%s is not an extension: a member is named KEY.EXT, and EXT holds no slash or control character", quote(alt))
	case !slices.Contains(memberNames, ext):
		return p.errorf(n, path, "unknown member %s%s", quote(alt), hint(ext, memberNames))
	case named && name == "":
		return p.errorf(n, path, "member %s has an empty NAME: a member is EXT or NAME.EXT (%s or left.%s)", quote(alt), ext, ext)
	case named && ext == MemberCls:
		return p.errorf(n, path, "a cls member has no NAME. prefix (%s): NAME.EXT names images and arrays", quote(alt))
	case alts && !recordspec.ImageMember(strings.ToLower(alt)):
		return p.errorf(n, path, "member %s: alternatives are images (jpg, jpeg, png, or NAME. of them), and %s is not", quote(s), quote(alt))
	}
	return nil
}

// repeated returns the index of the first element of s that an earlier
// one equals, or -1.
func repeated(s []string) int {
	for i := range s {
		if slices.Contains(s[:i], s[i]) {
			return i
		}
	}
	return -1
}

// labelKey checks a cls key: an integer scalar, with no image fields. An
// array key (npy) has none either, and any shape and dtype: its members'
// headers must match them exactly.
func (p *parser) labelKey(kp string, f map[string]*yaml.Node, key Key) error {
	if err := p.onlyFor(kp, f, imageFields, "image keys", "image member"); err != nil {
		return err
	}
	switch {
	case len(key.Shape) != 0:
		return p.errorf(f["shape"], kp+".shape", "a cls key is a scalar (shape: []): one class index per sample")
	case key.DType.IsFloat() || key.DType == runtime.Bool:
		return p.errorf(f["dtype"], kp+".dtype", "a cls key holds a class index, an integer dtype, not %s", key.DType)
	}
	return nil
}

// maskKey reads a mask: an image member resampled with the crop and flip
// of the image key geometry names (checked once every key is read), by
// nearest neighbour; [H, W] of an integer dtype, with no transforms of its
// own.
func (p *parser) maskKey(kp string, f map[string]*yaml.Node, gn *yaml.Node, key *Key) error {
	var err error
	if key.Geometry, err = p.str(kp+".geometry", gn); err != nil {
		return err
	}
	p.geometry[key.Name] = gn
	for _, name := range imageTransforms {
		if n, ok := f[name]; ok {
			return p.errorf(n, kp+"."+name, "a mask takes its crop and flip from key %s (geometry:) and its values as they are", quote(key.Geometry))
		}
	}
	switch {
	case len(key.Shape) != 2:
		return p.errorf(f["shape"], kp+".shape", "a mask (geometry:) is [H, W], got %d dimensions", len(key.Shape))
	case key.DType.IsFloat() || key.DType == runtime.Bool:
		return p.errorf(f["dtype"], kp+".dtype", "a mask (geometry:) holds label values, an integer dtype, not %s", key.DType)
	}
	return nil
}

// imageKey reads an image key's layout, resize, flip and normalize.
func (p *parser) imageKey(kp string, f map[string]*yaml.Node, key *Key) error {
	t := &imagespec.Transform{}
	r := &mappingReader{p: p, vals: f}
	readOptional(r, kp+".layout", parsed(imagespec.ParseLayout), &t.Layout)
	readOptional(r, kp+".flip", probability, &t.Flip)
	if r.err != nil {
		return r.err
	}
	if len(key.Shape) != 3 {
		return p.errorf(f["shape"], kp+".shape", "an image key is %s with layout %s, got %d dimensions", layoutShape(t.Layout), t.Layout, len(key.Shape))
	}
	if c := Channels(*key, t.Layout); c != 1 && c != 3 {
		return p.errorf(f["shape"], kp+".shape", "an image has 1 (grey) or 3 (RGB) channels, got %d in %s (layout %s)", c, layoutShape(t.Layout), t.Layout)
	}
	switch key.DType {
	case runtime.Uint8:
		if n, ok := f["normalize"]; ok {
			return p.errorf(n, kp+".normalize", "applies to float32 images only (this key is uint8)")
		}
	case runtime.Float32:
		if n, ok := f["normalize"]; ok {
			var err error
			if t.Mean, t.Std, err = p.normalize(kp+".normalize", n, Channels(*key, t.Layout)); err != nil {
				return err
			}
		}
	default:
		return p.errorf(f["dtype"], kp+".dtype", "an image key is uint8 or float32 (0..1, or normalized), not %s", key.DType)
	}
	if n, ok := f["resize"]; ok {
		h, w := ImageSize(*key, t.Layout)
		if err := p.resize(kp+".resize", n, h, w, t); err != nil {
			return err
		}
	}
	key.Image = t
	return nil
}

// layoutShape names the axes of an image key's shape in layout l.
func layoutShape(l imagespec.Layout) string {
	if l == imagespec.HWC {
		return "[H, W, C]"
	}
	return "[C, H, W]"
}

// Channels is the number of channels of image key k in layout l.
func Channels(k Key, l imagespec.Layout) int {
	if l == imagespec.HWC {
		return k.Shape[2]
	}
	return k.Shape[0]
}

// ImageSize is the height and width of image key k in layout l, or of a
// mask ([H, W]).
func ImageSize(k Key, l imagespec.Layout) (h, w int) {
	if len(k.Shape) == 2 || l == imagespec.HWC {
		return k.Shape[0], k.Shape[1]
	}
	return k.Shape[1], k.Shape[2]
}

// probability reads a number between 0 and 1.
func probability(p *parser, path string, n *yaml.Node) (float64, error) {
	v, err := p.number(path, n)
	if err == nil && (v < 0 || v > 1) {
		err = p.errorf(n, path, "a probability is between 0 and 1, got %s", literal(deref(n).Value))
	}
	return v, err
}

// normalize reads mean and std, one number per channel, std > 0.
func (p *parser) normalize(path string, n *yaml.Node, channels int) (mean, std []float64, err error) {
	r, err := p.mappingOf(path, n, normalizeFields)
	if err != nil {
		return nil, nil, err
	}
	for _, field := range normalizeFields {
		vn, err := p.required(path, r.m, r.vals, field)
		if err != nil {
			return nil, nil, err
		}
		v, err := p.numbers(path+"."+field, vn, channels, field == "std", "one per channel")
		if err != nil {
			return nil, nil, err
		}
		if field == "mean" {
			mean = v
		} else {
			std = v
		}
	}
	return mean, std, nil
}

// numbers reads want numbers, each > 0 when positive says so; what says
// what they are, for the message on a wrong count.
func (p *parser) numbers(path string, n *yaml.Node, want int, positive bool, what string) ([]float64, error) {
	seq, err := p.sequence(path, n)
	if err != nil {
		return nil, err
	}
	if len(seq.Content) != want {
		return nil, p.errorf(n, path, "has %d values, want %d (%s)", len(seq.Content), want, what)
	}
	out := make([]float64, want)
	for i, vn := range seq.Content {
		ip := fmt.Sprintf("%s[%d]", path, i)
		if out[i], err = p.number(ip, vn); err != nil {
			return nil, err
		}
		if positive && out[i] <= 0 {
			return nil, p.errorf(vn, ip, "must be > 0, got %s", literal(deref(vn).Value))
		}
	}
	return out, nil
}

// resize reads an image key's resize: {crop: random_resized, scale,
// ratio} or {crop: center, size}, for a key of h x w pixels.
func (p *parser) resize(path string, n *yaml.Node, h, w int, t *imagespec.Transform) error {
	r, err := p.mappingOf(path, n, resizeFields)
	if err != nil {
		return err
	}
	readRequired(r, path+".crop", parsed(imagespec.ParseCropMode), &t.Crop)
	if r.err != nil {
		return r.err
	}
	f := r.vals
	if t.Crop == imagespec.Center {
		if err := p.onlyForCrop(path, f, []string{"scale", "ratio"}, imagespec.RandomResized); err != nil {
			return err
		}
		t.Size = max(h, w)
		if sn, ok := f["size"]; ok {
			if t.Size, err = p.count(path+".size", sn, 1); err != nil {
				return err
			}
			if t.Size < max(h, w) {
				return p.errorf(sn, path+".size", "%d is less than the key's %d x %d: the shorter side, resized to size, must hold the crop", t.Size, h, w)
			}
		}
		return nil
	}
	if err := p.onlyForCrop(path, f, []string{"size"}, imagespec.Center); err != nil {
		return err
	}
	t.Scale, t.Ratio = imagespec.DefaultScale, imagespec.DefaultRatio
	if sn, ok := f["scale"]; ok {
		if t.Scale, err = p.interval(path+".scale", sn, 1); err != nil {
			return err
		}
	}
	if rn, ok := f["ratio"]; ok {
		if t.Ratio, err = p.interval(path+".ratio", rn, 0); err != nil {
			return err
		}
	}
	return nil
}

// onlyForCrop returns an error at the first of the resize fields names
// (f holds the resize's fields) that only crop mode m reads.
func (p *parser) onlyForCrop(path string, f map[string]*yaml.Node, names []string, m imagespec.CropMode) error {
	for _, name := range names {
		if n, ok := f[name]; ok {
			return p.errorf(n, path+"."+name, "applies to crop: %s only", m)
		}
	}
	return nil
}

// interval reads [lo, hi] with 0 < lo <= hi, and hi <= most when most > 0.
func (p *parser) interval(path string, n *yaml.Node, most float64) ([2]float64, error) {
	v, err := p.numbers(path, n, 2, true, "[low, high]")
	if err != nil {
		return [2]float64{}, err
	}
	switch {
	case v[0] > v[1]:
		return [2]float64{}, p.errorf(n, path, "is [low, high], got %s > %s", formatFloat(v[0]), formatFloat(v[1]))
	case most > 0 && v[1] > most:
		return [2]float64{}, p.errorf(n, path, "an area fraction is at most %s, got %s", formatFloat(most), formatFloat(v[1]))
	}
	return [2]float64{v[0], v[1]}, nil
}

// records checks that record keys and the records section come together,
// reads the section, and checks each mask's image key.
func (p *parser) records(vals map[string]*yaml.Node) error {
	first := slices.IndexFunc(p.ds.Keys, func(k Key) bool { return k.Member != "" })
	rn, has := vals["records"]
	switch {
	case first >= 0 && !has:
		return p.errorAt(p.ds.Keys[first].Pos, "", "record keys (member:) need a records: section saying where samples come from (shards: or folder:)")
	case has && first < 0:
		return p.errorf(rn, "records", "applies to keys with member: only (no key has member:)")
	case !has:
		return nil
	}
	r, err := p.mappingOf("records", rn, recordsFields)
	if err != nil {
		return err
	}
	rec := &Records{}
	readOptional(r, "records.shards", shardPattern, &rec.Shards)
	readOptional(r, "records.folder", (*parser).localPath, &rec.Folder)
	readOptional(r, "records.skip_unknown", (*parser).boolean, &rec.SkipUnknown)
	readOptional(r, "records.on_error", parsed(parseOnError), &rec.OnError)
	switch {
	case r.err != nil:
		return r.err
	case rec.Shards != "" && rec.Folder != "":
		return p.errorf(r.vals["folder"], "records.folder", "records come from shards: or folder:, not both")
	case rec.Shards != "" && r.vals["skip_unknown"] != nil:
		return p.errorf(r.vals["skip_unknown"], "records.skip_unknown", "applies to folder: only: the members of shards that no key reads are skipped already")
	case rec.Shards == "" && rec.Folder == "":
		return p.errorf(rn, "records", "needs shards: (WebDataset tar shards) or folder: (a directory of class folders)")
	}
	for _, k := range p.ds.Keys {
		if err := p.checkGeometry(k); err != nil {
			return err
		}
	}
	if rec.Folder != "" {
		if err := p.folderKeys(r.vals["folder"]); err != nil {
			return err
		}
	}
	p.ds.Records = rec
	return nil
}

// checkGeometry checks that mask key k names an image key of its size.
func (p *parser) checkGeometry(k Key) error {
	if k.Geometry == "" {
		return nil
	}
	path := "inputs"
	if k.Role == runtime.Target {
		path = "targets"
	}
	path += "." + k.Name + ".geometry"
	gn := p.geometry[k.Name]
	i, err := p.keyIndex(path, gn, k.Geometry)
	if err != nil {
		return err
	}
	img := p.ds.Keys[i]
	if img.Image == nil {
		return p.errorf(gn, path, "key %s is not an image key (a mask takes the crop and flip of one)", quote(img.Name))
	}
	ih, iw := ImageSize(img, img.Image.Layout)
	if mh, mw := ImageSize(k, 0); mh != ih || mw != iw {
		return p.errorf(gn, path, "the mask is %d x %d but image key %s is %d x %d; they share a crop", mh, mw, quote(img.Name), ih, iw)
	}
	return nil
}

// namedMember reports whether member is named NAME.EXT.
func namedMember(member string) bool {
	_, _, named := recordspec.SplitMember(member)
	return named
}

// folderKeys checks that the keys suit class folders, whose sample is one
// image file and its class: one image key, cls keys, no mask or array. n
// is the folder field.
func (p *parser) folderKeys(n *yaml.Node) error {
	count := 0
	for _, k := range p.ds.Keys {
		switch {
		case k.Geometry != "":
			return p.errorAt(k.Pos, "", "key %s is a mask, but a folder sample is one image file and its class; masks need shards:", quote(k.Name))
		case recordspec.ArrayMember(k.Member):
			return p.errorAt(k.Pos, "", "key %s reads an array (member %s), but a folder sample is one image file and its class; arrays need shards:", quote(k.Name), quote(k.Member))
		case namedMember(k.Member):
			return p.errorAt(k.Pos, "", "key %s reads member %s, but a folder sample is one image file and its class, whose members have no names; NAME.EXT needs shards:", quote(k.Name), quote(k.Member))
		case k.Image != nil:
			count++
		}
	}
	if count != 1 {
		return p.errorf(n, "records.folder", "a folder sample is one image file, so exactly one key reads it; %d keys have an image member", count)
	}
	return nil
}

// shardPattern reads records.shards: a slashPath holding a brace pattern
// (recordspec.ExpandShards) whose every name is a local path.
func shardPattern(p *parser, path string, n *yaml.Node) (string, error) {
	s, err := p.slashPath(path, n)
	if err != nil {
		return "", err
	}
	switch {
	case s == "":
		return "", p.errorf(n, path, "must not be empty")
	case strings.Contains(s, "://"):
		return "", p.errorf(n, path, "%s is a URL; shards are read from the local file system only (mount remote storage)", quote(s))
	}
	names, err := recordspec.ExpandShards(s)
	if err != nil {
		return "", p.errorf(n, path, "%v", err)
	}
	for _, name := range names {
		if !filepath.IsLocal(name) {
			return "", p.errorf(n, path, "shard %s is not a local path (relative, inside the data root)", quote(name))
		}
		if ext := compressedExt(name); ext != "" {
			return "", p.errorf(n, path, "shard %s is compressed (%s): %v", quote(name), ext, recordspec.ErrCompressed)
		}
	}
	return s, nil
}

// compressedExts are the extensions of compressed tar files, lower case.
var compressedExts = []string{".tgz", ".gz", ".zst", ".zstd", ".xz", ".txz", ".bz2", ".tbz2"}

// compressedExt returns the extension of a compressed tar that name ends
// with, as written, or "".
func compressedExt(name string) string {
	ext := filepath.Ext(name)
	if slices.Contains(compressedExts, strings.ToLower(ext)) {
		return ext
	}
	return ""
}
