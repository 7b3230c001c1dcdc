package schema

import (
	"fmt"
	"math"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/volume/volumespec"
	"github.com/loadergen/loadergen/runtime/zarr/zarrspec"
)

// The fields of the crops section and its parts, and of a zarr key's
// normalize.
var (
	zarrNormalizeFields = []string{"min", "max", "to", "mean", "std"}
	cropFields          = []string{"per_epoch", "pad", "align", "foreground", "augment", "locality", "on_error", "balance"}
	localityFields      = []string{"window"}
	foregroundFields    = []string{"key", "fraction"}
	augmentFields       = []string{"mirror", "transpose", "rot90", "rotate"}
)

// Crops says how samples are cut out of volumes: the sources of zarr keys
// (docs/VOLUMES.md).
type Crops struct {
	PerEpoch   int              // samples in an epoch: the source's Len
	Pad        bool             // crops may reach past an array's edge (its fill)
	Align      volumespec.Align // what to do with a key whose voxel grid is off the common grid
	Foreground *Foreground      // optional: crops centred on a labelled voxel
	// Mirror is each spatial axis' probability of being flipped; nil when
	// the schema asks for none.
	Mirror []float64
	// Transpose lists the spatial axes that may be permuted (at least two),
	// Rot90 the plane of quarter turns (two axes); nil when not asked for.
	Transpose, Rot90 []int
	// Locality is the window, in batches, within which crops are grouped
	// by the chunks they read (runtime.Locality); 0 is off.
	Locality int
	// OnError is what a crop that reads a chunk whose codecs fail does:
	// end the epoch, or be replaced (runtime.OnError).
	OnError runtime.OnError
	// Rotate turns crops by angles drawn from ranges, about z, y or x in
	// the order written (crops.augment.rotate); nil for none.
	Rotate []volumespec.Rotation
	// Balance picks the volumes by the classes they annotate
	// (crops.balance: classes).
	Balance bool
}

// DefaultLocalityWindow is crops.locality's window when the schema says
// nothing of it, or gives locality without a window.
const DefaultLocalityWindow = 32

// Foreground centres a fraction of the crops on a voxel where a target is
// non-zero.
type Foreground struct {
	Key      string  // a target with zarr:
	Fraction float64 // in [0, 1]
}

// VolumeWeight is the Go name of the generated Volume struct's own field,
// the volume's sampling weight, beside one field per key.
const VolumeWeight = "Weight"

// volumeKey reads the zarr, scale, fill, missing, array_dtype and
// normalize fields of key (f holds the key's fields) into key.
func (p *parser) volumeKey(kp string, f map[string]*yaml.Node, key *Key) error {
	zn, ok := f["zarr"]
	if !ok {
		return p.onlyFor(kp, f, []string{"scale", "fill", "missing", "array_dtype", "interpolation", "augment", "binarize"}, "zarr keys", "zarr:")
	}
	if _, ok := f["file"]; ok {
		return p.errorf(zn, kp+".zarr", "a key reads from file: or from zarr:, not both")
	}
	var err error
	if key.Zarr, err = p.zarrPath(kp+".zarr", zn, key.ClassAxis); err != nil {
		return err
	}
	rank := len(key.Shape)
	if rank == 0 || rank > runtime.MaxSpatialRank {
		return p.errorf(f["shape"], kp+".shape", "a zarr key has 1 to %d spatial axes (%s), this one %d",
			runtime.MaxSpatialRank, strings.Join(runtime.SpatialAxes(runtime.MaxSpatialRank), ", "), rank)
	}
	if n, ok := f["scale"]; ok {
		if key.Scale, err = p.scale(kp+".scale", n, rank); err != nil {
			return err
		}
	}
	if n, ok := f["fill"]; ok {
		if key.Fill, err = p.element(kp+".fill", n, key.DType); err != nil {
			return err
		}
	}
	if n, ok := f["missing"]; ok {
		if key.Missing, err = p.missing(kp+".missing", n); err != nil {
			return err
		}
	}
	if err := p.conversion(kp, f, key); err != nil {
		return err
	}
	return p.valueKey(kp, f, key)
}

// missing reads a zarr key's missing: "fill" (the default) or "error".
func (p *parser) missing(path string, n *yaml.Node) (volumespec.Missing, error) {
	s, err := p.str(path, n)
	if err != nil {
		return 0, err
	}
	names := make([]string, len(volumespec.MissingModes))
	for i, m := range volumespec.MissingModes {
		if s == m.String() {
			return m, nil
		}
		names[i] = m.String()
	}
	return 0, p.errorf(n, path, "must be %s, got %s", alternatives(names), quote(s))
}

// conversion reads a zarr key's array_dtype and normalize into key: the
// arrays' dtype (the key's own when left out), and the map of their values;
// zarrspec.CheckConversion says which conversions there are.
func (p *parser) conversion(kp string, f map[string]*yaml.Node, key *Key) error {
	key.ArrayDType = key.DType
	if n, ok := f["array_dtype"]; ok {
		var err error
		if key.ArrayDType, err = p.dtype(kp+".array_dtype", n); err != nil {
			return err
		}
		if err := zarrspec.CheckConversion(key.ArrayDType, key.DType, nil); err != nil {
			return p.errorf(n, kp+".array_dtype", "%v", err)
		}
	}
	n, ok := f["normalize"]
	if !ok {
		return nil
	}
	var err error
	if key.Normalize, err = p.zarrNormalize(kp+".normalize", n); err != nil {
		return err
	}
	if err := zarrspec.CheckConversion(key.ArrayDType, key.DType, key.Normalize); err != nil {
		return p.errorf(n, kp+".normalize", "%v", err)
	}
	return nil
}

// zarrNormalize reads a zarr key's normalize into the map it makes: {min,
// max} maps [min, max] onto [0, 1], or onto to: [lo, hi] when given;
// {mean, std} maps x to (x - mean) / std. (An image key's normalize is
// per channel: records.go.)
func (p *parser) zarrNormalize(path string, n *yaml.Node) (*zarrspec.Affine, error) {
	r, err := p.mappingOf(path, n, zarrNormalizeFields)
	if err != nil {
		return nil, err
	}
	f := r.vals
	_, hasMin := f["min"]
	_, hasMax := f["max"]
	stat := f["mean"]
	if stat == nil {
		stat = f["std"]
	}
	switch to, hasTo := f["to"]; {
	case stat != nil && hasTo:
		return nil, p.errorf(to, path+".to", "applies to {min, max} only; {mean, std} maps x to (x - mean) / std")
	case stat != nil && (hasMin || hasMax):
		return nil, p.errorf(stat, path, "give {min, max} or {mean, std}, not both")
	case stat == nil && !hasMin && !hasMax:
		return nil, p.errorf(n, path, "give {min, max} (with to: [lo, hi] for a range other than [0, 1]) or {mean, std}")
	}
	if stat != nil {
		var mean, std float64
		readRequired(r, path+".mean", (*parser).number, &mean)
		readRequired(r, path+".std", (*parser).number, &std)
		if r.err == nil && std <= 0 {
			return nil, p.errorf(f["std"], path+".std", "must be > 0, got %s", literal(deref(f["std"]).Value))
		}
		return &zarrspec.Affine{Sub: mean, Div: std, Mul: 1}, r.err
	}
	var lo, hi float64
	to := [2]float64{0, 1}
	readRequired(r, path+".min", (*parser).number, &lo)
	readRequired(r, path+".max", (*parser).number, &hi)
	readOptional(r, path+".to", (*parser).targetRange, &to)
	switch {
	case r.err != nil:
		return nil, r.err
	case hi <= lo:
		return nil, p.errorf(f["max"], path+".max", "must be greater than min (%s), got %s", literal(deref(f["min"]).Value), literal(deref(f["max"]).Value))
	case math.IsInf(hi-lo, 0):
		return nil, p.errorf(f["max"], path+".max", "max - min overflows a float64")
	case math.IsInf(to[1]-to[0], 0):
		return nil, p.errorf(f["to"], path+".to", "hi - lo overflows a float64")
	}
	return &zarrspec.Affine{Sub: lo, Div: hi - lo, Mul: to[1] - to[0], Add: to[0]}, nil
}

// targetRange reads normalize's to: [lo, hi], two numbers that differ,
// what min and max map onto (hi below lo reverses the range).
func (p *parser) targetRange(path string, n *yaml.Node) ([2]float64, error) {
	v, err := p.numbers(path, n, 2, false, "[lo, hi]")
	if err != nil {
		return [2]float64{}, err
	}
	if v[0] == v[1] {
		return [2]float64{}, p.errorf(n, path, "maps every value to %s: lo and hi must differ", formatFloat(v[0]))
	}
	return [2]float64{v[0], v[1]}, nil
}

// zarrPath reads a key's zarr path, relative to a volume's root: a path
// zarrspec.CheckPath accepts (what a Store opens), for every class, spelled
// as a schema must: a slashPath, naming an array (not empty, the root),
// without a slash at either end (which CheckPath ignores, but which reads
// as an absolute path or a directory). Targets with a class axis name one
// array per class through {class}; others may not.
func (p *parser) zarrPath(path string, n *yaml.Node, classAxis bool) (string, error) {
	s, err := p.slashPath(path, n)
	if err != nil {
		return "", err
	}
	switch has := strings.Contains(s, runtime.ClassPlaceholder); {
	case s == "":
		return "", p.errorf(n, path, "must not be empty")
	case strings.HasPrefix(s, "/") || strings.HasSuffix(s, "/") || zarrspec.CheckPath(strings.ReplaceAll(s, runtime.ClassPlaceholder, "c")) != nil:
		return "", p.errorf(n, path, "%s is not a plain relative path inside a volume's root", quote(s))
	case classAxis && !has:
		return "", p.errorf(n, path, "this target has a class axis, so its path must hold %s (one array per class, e.g. \"labels/%s\")", runtime.ClassPlaceholder, runtime.ClassPlaceholder)
	case !classAxis && has:
		return "", p.errorf(n, path, "%s stands for a class, but this key has no class axis", runtime.ClassPlaceholder)
	}
	if classAxis {
		// Each class's path is what the volume source opens.
		for _, class := range p.ds.Classes {
			if cp := strings.ReplaceAll(s, runtime.ClassPlaceholder, class); zarrspec.CheckPath(cp) != nil {
				return "", p.errorf(n, path, "%s for class %s is %s, not a plain relative path inside a volume's root", quote(s), quote(class), quote(cp))
			}
		}
	}
	return s, nil
}

// scale reads a voxel size: one positive number per spatial axis.
func (p *parser) scale(path string, n *yaml.Node, rank int) ([]float64, error) {
	seq, err := p.sequence(path, n)
	if err != nil {
		return nil, err
	}
	if len(seq.Content) != rank {
		return nil, p.errorf(n, path, "has %d values, but the key has %d spatial axes (%s)", len(seq.Content), rank, strings.Join(runtime.SpatialAxes(rank), ", "))
	}
	out := make([]float64, rank)
	for i, vn := range seq.Content {
		ip := fmt.Sprintf("%s[%d]", path, i)
		if out[i], err = p.number(ip, vn); err != nil {
			return nil, err
		}
		if out[i] <= 0 {
			return nil, p.errorf(vn, ip, "a voxel size must be > 0, got %s", literal(deref(vn).Value))
		}
	}
	return out, nil
}

// volumes checks that keys read from one kind of source (zarr arrays,
// record members, or files and your own Source), that zarr keys
// share their spatial rank, and that crops or tiles (or both) are there
// exactly when they are.
func (p *parser) volumes(vals map[string]*yaml.Node) error {
	var first *Key
	for i := range p.ds.Keys {
		k := &p.ds.Keys[i]
		if i == 0 {
			first = k
			continue
		}
		switch {
		case (k.Zarr != "") != (first.Zarr != "") || (k.Member != "") != (first.Member != ""):
			return p.errorAt(k.Pos, "", "key %s reads %s but key %s reads %s; all keys of a dataset use the same kind of source",
				quote(k.Name), sourceKind(*k), quote(first.Name), sourceKind(*first))
		case k.Zarr != "" && len(k.Shape) != len(first.Shape):
			return p.errorAt(k.Pos, "", "key %s has %d spatial axes but key %s has %d; the keys of a volume share their axes",
				quote(k.Name), len(k.Shape), quote(first.Name), len(first.Shape))
		}
	}
	for _, k := range p.ds.Keys {
		if k.Zarr != "" && k.GoName == VolumeWeight {
			return p.errorAt(k.Pos, "", "key %s has Go name %s, which the generated Volume struct's own %s field takes", quote(k.Name), VolumeWeight, VolumeWeight)
		}
	}
	return p.tilesOrCrops(vals, first)
}

// sourceKind names where key k reads from, for messages.
func sourceKind(k Key) string {
	switch {
	case k.Zarr != "":
		return "zarr:"
	case k.Member != "":
		return "member:"
	case k.File != "":
		return "file:"
	}
	return "none of file:, zarr: and member:"
}

// crops reads the crops section for keys of the given spatial rank.
func (p *parser) crops(n *yaml.Node, rank int) error {
	r, err := p.mappingOf("crops", n, cropFields)
	if err != nil {
		return err
	}
	c := &Crops{Locality: DefaultLocalityWindow}
	readRequired(r, "crops.per_epoch", atLeast(1), &c.PerEpoch)
	readOptional(r, "crops.pad", (*parser).boolean, &c.Pad)
	readOptional(r, "crops.align", parsed(parseAlign), &c.Align)
	readOptional(r, "crops.locality", (*parser).locality, &c.Locality)
	readOptional(r, "crops.on_error", parsed(parseOnError), &c.OnError)
	readOptional(r, "crops.balance", (*parser).balance, &c.Balance)
	if r.err != nil {
		return r.err
	}
	f := r.vals
	if n, ok := f["foreground"]; ok {
		if c.Foreground, err = p.foreground(n); err != nil {
			return err
		}
	}
	if n, ok := f["augment"]; ok {
		if err := p.augment(n, rank, c); err != nil {
			return err
		}
	}
	if err := p.interpolated(c.Rotate != nil); err != nil {
		return err
	}
	p.ds.Crops = c
	return nil
}

// parseOnError reads a source's on_error (records.on_error,
// crops.on_error) as runtime.OnError spells it: "error" or "skip".
var parseOnError = named("on_error", runtime.OnErrorModes...)

// parseAlign reads crops.align as volumespec.Align spells it: "exact" or
// "nearest".
var parseAlign = named("align", volumespec.AlignExact, volumespec.AlignNearest)

// locality reads crops.locality: "off" (0), or a mapping with the window
// in batches, at least 1 (DefaultLocalityWindow when left out).
func (p *parser) locality(path string, n *yaml.Node) (int, error) {
	if v := deref(n); v.Kind != yaml.MappingNode {
		if v.Kind == yaml.ScalarNode && v.ShortTag() == strTag && v.Value == "off" {
			return 0, nil
		}
		return 0, p.errorf(n, path, "want \"off\" or a mapping such as {window: %d}, found %s", DefaultLocalityWindow, describe(v))
	}
	r, err := p.mappingOf(path, n, localityFields)
	if err != nil {
		return 0, err
	}
	window := DefaultLocalityWindow
	readOptional(r, path+".window", atLeast(1), &window)
	return window, r.err
}

// foreground reads crops.foreground: a target key and a fraction.
func (p *parser) foreground(n *yaml.Node) (*Foreground, error) {
	const path = "crops.foreground"
	r, err := p.mappingOf(path, n, foregroundFields)
	if err != nil {
		return nil, err
	}
	fg := &Foreground{}
	kn, err := p.required(path, r.m, r.vals, "key")
	if err != nil {
		return nil, err
	}
	if fg.Key, err = p.str(path+".key", kn); err != nil {
		return nil, err
	}
	i, err := p.keyIndex(path+".key", kn, fg.Key)
	if err != nil {
		return nil, err
	}
	if p.ds.Keys[i].Role != runtime.Target {
		return nil, p.errorf(kn, path+".key", "key %s is an input; crops are centred on a target's labelled voxels", quote(fg.Key))
	}
	fn, err := p.required(path, r.m, r.vals, "fraction")
	if err != nil {
		return nil, err
	}
	if fg.Fraction, err = p.number(path+".fraction", fn); err != nil {
		return nil, err
	}
	if fg.Fraction < 0 || fg.Fraction > 1 {
		return nil, p.errorf(fn, path+".fraction", "must be between 0 and 1, got %s", literal(deref(fn).Value))
	}
	return fg, nil
}

// augment reads crops.augment into c.
func (p *parser) augment(n *yaml.Node, rank int, c *Crops) error {
	const path = "crops.augment"
	r, err := p.mappingOf(path, n, augmentFields)
	if err != nil {
		return err
	}
	f := r.vals
	axes := runtime.SpatialAxes(rank)
	if n, ok := f["mirror"]; ok {
		mm, err := p.mapping(path+".mirror", n)
		if err != nil {
			return err
		}
		c.Mirror = make([]float64, rank)
		seen := map[string]*yaml.Node{}
		for i := 0; i+1 < len(mm.Content); i += 2 {
			a, err := p.axis(path+".mirror", mm.Content[i], axes, seen)
			if err != nil {
				return err
			}
			vp := path + ".mirror." + axes[a]
			if c.Mirror[a], err = p.number(vp, mm.Content[i+1]); err != nil {
				return err
			}
			if c.Mirror[a] < 0 || c.Mirror[a] > 1 {
				return p.errorf(mm.Content[i+1], vp, "a probability is between 0 and 1, got %s", literal(deref(mm.Content[i+1]).Value))
			}
		}
	}
	if n, ok := f["transpose"]; ok {
		if c.Transpose, err = p.axisList(path+".transpose", n, axes, 0); err != nil {
			return err
		}
	}
	if n, ok := f["rot90"]; ok {
		if c.Rot90, err = p.axisList(path+".rot90", n, axes, 2); err != nil {
			return err
		}
	}
	if n, ok := f["rotate"]; ok {
		if c.Rotate, err = p.rotate(path+".rotate", n, rank); err != nil {
			return err
		}
	}
	return nil
}

// axis reads an axis name node (checked against seen for repeats) and
// returns its index in axes.
func (p *parser) axis(path string, n *yaml.Node, axes []string, seen map[string]*yaml.Node) (int, error) {
	s, err := p.str(path, n)
	if err != nil {
		return 0, err
	}
	i := slices.Index(axes, s)
	if i < 0 {
		return 0, p.errorf(n, path, "unknown axis %s (the keys' axes are %s)", quote(s), strings.Join(axes, ", "))
	}
	if prev, dup := seen[s]; dup {
		return 0, p.errorf(n, path, "axis %s repeated (first at %d:%d)", s, prev.Line, prev.Column)
	}
	seen[s] = n
	return i, nil
}

// axisList reads a list of distinct axes over which the samples are
// permuted or turned: exactly want of them (at least two when want is 0),
// each of the same size in every key, so that a sample keeps its shape.
func (p *parser) axisList(path string, n *yaml.Node, axes []string, want int) ([]int, error) {
	seq, err := p.sequence(path, n)
	if err != nil {
		return nil, err
	}
	switch l := len(seq.Content); {
	case want > 0 && l != want:
		return nil, p.errorf(n, path, "names the %d axes of a plane, got %d", want, l)
	case want == 0 && l < 2:
		return nil, p.errorf(n, path, "needs at least two axes to permute, got %d", l)
	}
	out := make([]int, len(seq.Content))
	seen := map[string]*yaml.Node{}
	for i, an := range seq.Content {
		if out[i], err = p.axis(path, an, axes, seen); err != nil {
			return nil, err
		}
	}
	for _, k := range p.ds.Keys {
		for _, a := range out[1:] {
			if k.Shape[a] != k.Shape[out[0]] {
				return nil, p.errorf(n, path, "key %s has size %d along %s but %d along %s; axes turned into each other need one size",
					quote(k.Name), k.Shape[out[0]], axes[out[0]], k.Shape[a], axes[a])
			}
		}
	}
	return out, nil
}
