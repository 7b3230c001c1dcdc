package schema

import (
	"gopkg.in/yaml.v3"

	"github.com/loadergen/loadergen/runtime"
)

// The fields of loader.bucket.
var bucketFields = []string{"key", "window"}

// defaultBucketWindow is loader.bucket.window when the schema gives a
// bucket key but no window: batches whose samples are sorted by length
// together, Hugging Face's megabatch of 50 batches (group_by_length).
const defaultBucketWindow = 50

// raggedKey reads the ragged, pad, offsets and overflow fields of key (f
// holds the key's fields) into key: a ragged key's first axis of shape is
// a maximum, the rows a sample lacks are pad, a sample with more rows is
// an error or cut to the maximum (overflow), and a ragged key read from
// file: holds the rows of all samples back to back there, where offsets:
// says each sample's first row (CSR). It runs after volumeKey and
// recordKey, as zarr keys and record keys cannot be ragged.
func (p *parser) raggedKey(kp string, f map[string]*yaml.Node, key *Key) error {
	rn, ok := f["ragged"]
	if ok {
		var err error
		if key.Ragged, err = p.boolean(kp+".ragged", rn); err != nil {
			return err
		}
	}
	if !key.Ragged {
		return p.onlyFor(kp, f, []string{"pad", "offsets", "overflow"}, "ragged keys", "ragged: true")
	}
	path := kp + ".ragged"
	switch {
	case key.Zarr != "":
		return p.errorf(rn, path, "a zarr key cannot be ragged: volume crops are fixed-size boxes")
	case key.Member != "":
		return p.errorf(rn, path, "a record key cannot be ragged: its images are resampled to the shape, its labels are scalars, its arrays have the shape exactly")
	case len(key.Shape) == 0:
		return p.errorf(rn, path, "a scalar key cannot be ragged: ragged makes the first axis of shape a maximum")
	case key.ClassAxis:
		return p.errorf(rn, path, "a target with a class axis cannot be ragged: its samples are [classes, shape...], so the first sample axis, "+
			"which ragged makes a maximum, would be the class axis; set class_axis: false to make the first axis of shape ragged")
	case key.Shape[0] > runtime.MaxRows:
		return p.errorf(deref(f["shape"]).Content[0], kp+".shape[0]", "a ragged key has at most %d rows (its lengths are %s), got %d",
			runtime.MaxRows, runtime.LengthsDType, key.Shape[0])
	}
	var err error
	if n, ok := f["pad"]; ok {
		if key.Pad, err = p.element(kp+".pad", n, key.DType); err != nil {
			return err
		}
	}
	if n, ok := f["overflow"]; ok {
		if key.Overflow, err = parsed(parseOverflow)(p, kp+".overflow", n); err != nil {
			return err
		}
	}
	on, hasOffsets := f["offsets"]
	fn, hasFile := f["file"]
	switch {
	case hasOffsets && !hasFile:
		return p.errorf(on, kp+".offsets", "says where each sample's rows start in file:, but this key has no file: (give both, or neither when your own Source reads the key)")
	case hasFile && !hasOffsets:
		return p.errorf(fn, kp+".file", "a ragged key read from a file needs offsets: too, as its CSR layout has two arrays: "+
			"file: holds the rows of all samples back to back, offsets: the N+1 int64 offsets where each sample's rows start")
	case hasOffsets:
		key.Offsets, err = p.dataFile(kp+".offsets", on)
	}
	return err
}

// parseOverflow reads a ragged key's overflow as runtime.Overflow spells
// it: "error" or "truncate".
var parseOverflow = named("overflow", runtime.OverflowError, runtime.OverflowTruncate)

// bucket reads loader.bucket into ds.Loader.Bucket: the ragged key whose
// lengths group the samples, and the window (default defaultBucketWindow).
// The keys are known: loader is read after them.
func (p *parser) bucket(n *yaml.Node) error {
	const path = "loader.bucket"
	r, err := p.mappingOf(path, n, bucketFields)
	if err != nil {
		return err
	}
	b := runtime.Bucket{Window: defaultBucketWindow}
	kn, err := p.required(path, r.m, r.vals, "key")
	if err != nil {
		return err
	}
	if b.Key, err = p.str(path+".key", kn); err != nil {
		return err
	}
	i, err := p.keyIndex(path+".key", kn, b.Key)
	if err != nil {
		return err
	}
	if !p.ds.Keys[i].Ragged {
		return p.errorf(kn, path+".key", "key %s is not ragged; bucketing groups samples by a ragged key's lengths", quote(b.Key))
	}
	readOptional(r, path+".window", checked((*parser).anyInt, runtime.CheckBucketWindow), &b.Window)
	if r.err != nil {
		return r.err
	}
	p.ds.Loader.Bucket = b
	return nil
}
