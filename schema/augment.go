package schema

import (
	"fmt"
	"slices"

	"gopkg.in/yaml.v3"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/volume/volumespec"
)

// The fields of a zarr key's value augmentations and of its blur, and the
// names of interpolation and crops.balance.
var (
	valueFields   = []string{"noise", "contrast", "gamma", "blur"}
	noiseFields   = []string{"std", "mean"}
	blurFields    = []string{"sigma"}
	interpolation = []string{"linear", "nearest"}
	balanceModes  = []string{"classes"}
)

// rotateAxes names the axes a rotation turns about, as cellmap-data names
// them: the axis normal to the plane turned, whatever the keys' rank.
var rotateAxes = runtime.SpatialAxes(runtime.MaxSpatialRank)

// valueKey reads a zarr key's interpolation, augment and binarize (f holds
// the key's fields) into key. Interpolation defaults to linear for inputs
// and nearest for targets; crops checks that it is asked for only with
// crops.augment.rotate (rotated).
func (p *parser) valueKey(kp string, f map[string]*yaml.Node, key *Key) error {
	key.Linear = key.Role == runtime.Input
	if n, ok := f["interpolation"]; ok {
		s, err := p.str(kp+".interpolation", n)
		if err != nil {
			return err
		}
		if !slices.Contains(interpolation, s) {
			return p.errorf(n, kp+".interpolation", "must be %s, got %s", alternatives(quoted(interpolation)), quote(s))
		}
		key.Linear = s == "linear"
	}
	if n, ok := f["augment"]; ok {
		if err := p.valueAugments(kp+".augment", n, key); err != nil {
			return err
		}
	}
	n, ok := f["binarize"]
	if !ok {
		return nil
	}
	switch {
	case key.Role == runtime.Input:
		return p.errorf(n, kp+".binarize", "applies to targets only (cellmap-data binarises labels, not raw)")
	case key.DType == runtime.Bool:
		return p.errorf(n, kp+".binarize", "a bool key's values are 0 and 1 already")
	}
	t, err := p.number(kp+".binarize", n)
	if err != nil {
		return err
	}
	key.Values = append(key.Values, volumespec.ValueOp{Kind: volumespec.Binarize, Threshold: t})
	return nil
}

func quoted(names []string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = quote(n)
	}
	return out
}

// valueAugments reads a key's augment: noise, contrast, gamma and blur,
// each at most once, kept in the order written, on a float key.
func (p *parser) valueAugments(path string, n *yaml.Node, key *Key) error {
	r, err := p.mappingOf(path, n, valueFields)
	if err != nil {
		return err
	}
	for i := 0; i+1 < len(r.m.Content); i += 2 {
		name, vn := deref(r.m.Content[i]).Value, r.m.Content[i+1]
		fp := path + "." + name
		if !key.DType.IsFloat() {
			return p.errorf(r.m.Content[i], fp, "needs a float dtype, and key %s is %v (read its arrays into float32 with dtype: float32, array_dtype: %v)",
				quote(key.Name), key.DType, key.DType)
		}
		op := volumespec.ValueOp{}
		switch name {
		case "noise":
			op.Kind = volumespec.Noise
			err = p.noise(fp, vn, &op)
		case "contrast":
			op.Kind = volumespec.Contrast
			op.Range, err = p.valueRange(fp, vn, false, "a ratio")
		case "gamma":
			op.Kind = volumespec.Gamma
			op.Range, err = p.valueRange(fp, vn, true, "an exponent")
		case "blur":
			op.Kind = volumespec.Blur
			err = p.blur(fp, vn, &op)
		}
		if err != nil {
			return err
		}
		key.Values = append(key.Values, op)
	}
	return nil
}

// valueRange reads [lo, hi], lo <= hi, the range what is drawn from;
// both above 0 when positive.
func (p *parser) valueRange(path string, n *yaml.Node, positive bool, what string) ([2]float64, error) {
	v, err := p.numbers(path, n, 2, positive, "[lo, hi]: the range "+what+" is drawn from")
	if err != nil {
		return [2]float64{}, err
	}
	if v[0] > v[1] {
		return [2]float64{}, p.errorf(n, path, "lo (%s) is above hi (%s)", formatFloat(v[0]), formatFloat(v[1]))
	}
	return [2]float64{v[0], v[1]}, nil
}

// noise reads {std, mean}: std >= 0, mean 0 unless given.
func (p *parser) noise(path string, n *yaml.Node, op *volumespec.ValueOp) error {
	r, err := p.mappingOf(path, n, noiseFields)
	if err != nil {
		return err
	}
	readRequired(r, path+".std", (*parser).number, &op.Std)
	readOptional(r, path+".mean", (*parser).number, &op.Mean)
	if r.err == nil && op.Std < 0 {
		return p.errorf(r.vals["std"], path+".std", "a deviation is >= 0, got %s", literal(deref(r.vals["std"]).Value))
	}
	return r.err
}

// blur reads {sigma: [lo, hi]}, 0 <= lo <= hi <= volumespec.MaxBlurSigma.
func (p *parser) blur(path string, n *yaml.Node, op *volumespec.ValueOp) error {
	r, err := p.mappingOf(path, n, blurFields)
	if err != nil {
		return err
	}
	readRequired(r, path+".sigma", func(p *parser, path string, n *yaml.Node) ([2]float64, error) {
		return p.valueRange(path, n, false, "the deviation (in voxels)")
	}, &op.Range)
	switch sn := r.vals["sigma"]; {
	case r.err != nil:
		return r.err
	case op.Range[0] < 0:
		return p.errorf(sn, path+".sigma", "a deviation is >= 0, got %s", formatFloat(op.Range[0]))
	case op.Range[1] > volumespec.MaxBlurSigma:
		return p.errorf(sn, path+".sigma", "at most %d voxels (a kernel of %d), got %s", volumespec.MaxBlurSigma, 6*volumespec.MaxBlurSigma+1, formatFloat(op.Range[1]))
	}
	return nil
}

// rotate reads crops.augment.rotate: per axis named (z, y or x; z alone
// in 2D, the turn of the plane y, x), in the order written, degrees m
// (meaning [-m, m]) or [lo, hi].
func (p *parser) rotate(path string, n *yaml.Node, rank int) ([]volumespec.Rotation, error) {
	m, err := p.mapping(path, n)
	if err != nil {
		return nil, err
	}
	if rank < 2 {
		return nil, p.errorf(n, path, "turns a plane, and the keys have 1 spatial axis (%s)", runtime.SpatialAxes(rank)[0])
	}
	var out []volumespec.Rotation
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		an, vn := m.Content[i], m.Content[i+1]
		name, err := p.str(path, an)
		if err != nil {
			return nil, err
		}
		a := slices.Index(rotateAxes, name)
		if a < 0 {
			return nil, p.errorf(an, path, "unknown axis %s (rotate turns about z, y or x)", quote(name))
		}
		if prev, dup := seen[name]; dup {
			return nil, p.errorf(an, path, "axis %s repeated (first at %d:%d)", name, prev.Line, prev.Column)
		}
		seen[name] = an
		ap := path + "." + name
		if rank == 2 && a != 0 {
			return nil, p.errorf(an, ap, "the keys have the axes y and x, whose plane turns about z alone")
		}
		var turn volumespec.Rotation
		if rank == 2 {
			turn.Plane = [2]int{0, 1}
		} else {
			var plane []int
			for b := range rank {
				if b != a {
					plane = append(plane, b)
				}
			}
			turn.Plane = [2]int{plane[0], plane[1]}
		}
		if v := deref(vn); v.Kind == yaml.SequenceNode {
			r, err := p.valueRange(ap, vn, false, "the angle (degrees)")
			if err != nil {
				return nil, err
			}
			turn.Min, turn.Max = r[0], r[1]
		} else {
			d, err := p.number(ap, vn)
			if err != nil {
				return nil, p.errorf(vn, ap, "expected degrees m (for [-m, m]) or [lo, hi], found %s", describe(v))
			}
			if d < 0 {
				return nil, p.errorf(vn, ap, "m degrees means [-m, m], so m is >= 0; got %s (write [lo, hi] for another range)", literal(v.Value))
			}
			turn.Min, turn.Max = -d, d
		}
		out = append(out, turn)
	}
	if len(out) == 0 {
		return nil, p.errorf(n, path, "names no axis: give the angles to turn about z, y or x, such as {z: 180}")
	}
	return out, nil
}

// balance reads crops.balance, "classes", which needs a target with a
// class axis.
func (p *parser) balance(path string, n *yaml.Node) (bool, error) {
	s, err := p.str(path, n)
	if err != nil {
		return false, err
	}
	if !slices.Contains(balanceModes, s) {
		return false, p.errorf(n, path, "must be %s, got %s", alternatives(quoted(balanceModes)), quote(s))
	}
	if !slices.ContainsFunc(p.ds.Keys, func(k Key) bool { return k.ClassAxis }) {
		return false, p.errorf(n, path, "balances the classes a target annotates, and no key has a class axis")
	}
	return true, nil
}

// interpolated checks that no key asks for an interpolation unless crops
// are turned (rotated).
func (p *parser) interpolated(rotated bool) error {
	if rotated {
		return nil
	}
	for _, k := range p.ds.Keys {
		path := fmt.Sprintf("%ss.%s.interpolation", k.Role, k.Name)
		if pos, ok := p.at[path]; ok {
			return p.errorAt(pos, path, "applies to turned crops only (crops.augment.rotate): without it every voxel is read where it lies")
		}
	}
	return nil
}
