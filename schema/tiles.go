package schema

import (
	"math"
	"slices"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/volume/volumespec"
)

// tileFields are the fields of the tiles section.
var tileFields = []string{"bounds", "step", "blend"}

// Tiles says how whole volumes are cut into a fixed grid of tiles to
// predict over (docs/VOLUMES.md, "Predicting over whole volumes"): the
// output key, the first target, tiles the region; inputs larger than it
// give context.
type Tiles struct {
	// Outputs are the indices in Dataset.Keys of the keys predictions are
	// written for: the targets, in plan order (inputs, then targets); the
	// first is the output key, whose boxes set the grid.
	Outputs []int
	// Bounds is the region per spatial axis, [lo, hi) in physical units;
	// nil when the schema leaves it to each volume's arrays.
	Bounds [][2]float64
	// Step is the grid's step in the output key's voxels; nil means its
	// shape.
	Step  []int
	Blend volumespec.Blend
}

// parseBlend reads tiles.blend as volumespec.Blend spells it: "average" or
// "last".
var parseBlend = named("blend", volumespec.BlendAverage, volumespec.BlendLast)

// tiles reads the tiles section for zarr keys of the given spatial rank.
func (p *parser) tiles(n *yaml.Node, rank int) error {
	r, err := p.mappingOf("tiles", n, tileFields)
	if err != nil {
		return err
	}
	out := slices.IndexFunc(p.ds.Keys, func(k Key) bool { return k.Role == runtime.Target })
	if out < 0 {
		return p.errorf(n, "tiles", "needs a target: the output key, whose boxes the tiles cut and whose predictions are written")
	}
	t := &Tiles{}
	for i, k := range p.ds.Keys {
		if k.Role == runtime.Target {
			t.Outputs = append(t.Outputs, i)
		}
	}
	readOptional(r, "tiles.blend", parsed(parseBlend), &t.Blend)
	if r.err != nil {
		return r.err
	}
	f := r.vals
	if bn, ok := f["bounds"]; ok {
		if t.Bounds, err = p.bounds("tiles.bounds", bn, rank); err != nil {
			return err
		}
	}
	ok := p.ds.Keys[out]
	if sn, has := f["step"]; has {
		steps, err := p.numbers("tiles.step", sn, rank, true, "one per spatial axis: "+strings.Join(runtime.SpatialAxes(rank), ", "))
		if err != nil {
			return err
		}
		t.Step = make([]int, rank)
		for a, s := range steps {
			if s != math.Trunc(s) || s > float64(ok.Shape[a]) {
				return p.errorf(sn, "tiles.step", "is [%s], want whole numbers from 1 to key %s's shape %v (a step below it overlaps the tiles)",
					formatFloats(steps), quote(ok.Name), ok.Shape)
			}
			t.Step[a] = int(s)
		}
	}
	if err := p.tileGrid(n, f["step"], out, t.Step); err != nil {
		return err
	}
	if t.Step != nil && !slices.Equal(t.Step, ok.Shape) && t.Blend == volumespec.BlendAverage {
		for _, k := range p.ds.Keys {
			if k.Role == runtime.Target && k.DType == runtime.Bool {
				return p.errorf(n, "tiles", "overlapping tiles are averaged (blend: average), which target %s, of bool, cannot be: set blend: last", quote(k.Name))
			}
		}
	}
	p.ds.Tiles = t
	return nil
}

// voxel returns key k's voxel size along axis a: its scale, 1 without one.
func voxel(k Key, a int) float64 {
	if k.Scale == nil {
		return 1
	}
	return k.Scale[a]
}

// tileGrid checks that the grid of step voxels of key out (the tiles
// section at n, its step at sn; a nil step is the key's shape) moves every
// key's box by whole voxels of its own, and that every target's box spans
// what the output key's does, so that the tiles tile each of them.
func (p *parser) tileGrid(n, sn *yaml.Node, out int, step []int) error {
	o := p.ds.Keys[out]
	what := "a step of"
	if step == nil {
		step, sn, what = o.Shape, n, "the default step (its shape) of"
	}
	axes := runtime.SpatialAxes(len(step))
	for _, k := range p.ds.Keys {
		for a := range step {
			move := float64(step[a]) * voxel(o, a) / voxel(k, a)
			if math.Abs(move-math.Round(move)) > 1e-6*move {
				return p.errorf(sn, "tiles.step", "along %s %s %d voxels of key %s (%g each) moves key %s's box by %g of its voxels (%g each): it must move every key by whole voxels",
					axes[a], what, step[a], quote(o.Name), voxel(o, a), quote(k.Name), move, voxel(k, a))
			}
			span, ospan := float64(k.Shape[a])*voxel(k, a), float64(o.Shape[a])*voxel(o, a)
			if k.Role == runtime.Target && math.Abs(span-ospan) > 1e-6*ospan {
				return p.errorAt(k.Pos, "", "target %s spans %g along %s (%d voxels of %g), but the output key %s spans %g: the tiles' targets span one box",
					quote(k.Name), span, axes[a], k.Shape[a], voxel(k, a), quote(o.Name), ospan)
			}
		}
	}
	return nil
}

// bounds reads tiles.bounds: for every spatial axis, [lo, hi] with lo <
// hi, finite.
func (p *parser) bounds(path string, n *yaml.Node, rank int) ([][2]float64, error) {
	m, err := p.mapping(path, n)
	if err != nil {
		return nil, err
	}
	axes := runtime.SpatialAxes(rank)
	out := make([][2]float64, rank)
	seen := map[string]*yaml.Node{}
	for i := 0; i+1 < len(m.Content); i += 2 {
		a, err := p.axis(path, m.Content[i], axes, seen)
		if err != nil {
			return nil, err
		}
		vp := path + "." + axes[a]
		v, err := p.numbers(vp, m.Content[i+1], 2, false, "[lo, hi]")
		if err != nil {
			return nil, err
		}
		if !(v[0] < v[1]) || math.IsInf(v[0], 0) || math.IsInf(v[1], 0) {
			return nil, p.errorf(m.Content[i+1], vp, "is [%s], want [lo, hi] with lo < hi, both finite", formatFloats(v))
		}
		out[a] = [2]float64{v[0], v[1]}
	}
	var missing []string
	for _, a := range axes {
		if seen[a] == nil {
			missing = append(missing, a)
		}
	}
	if len(missing) > 0 {
		return nil, p.errorf(n, path, "gives no range along %s: give every axis (%s), or leave bounds out for each volume's array", strings.Join(missing, ", "), strings.Join(axes, ", "))
	}
	return out, nil
}

// formatFloats joins values as a schema writes them.
func formatFloats(v []float64) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = formatFloat(x)
	}
	return strings.Join(s, ", ")
}

// tilesOrCrops checks that zarr keys have a crops: or a tiles: section,
// or both, and that other keys have neither, and reads them.
func (p *parser) tilesOrCrops(vals map[string]*yaml.Node, first *Key) error {
	cn, hasCrops := vals["crops"]
	tn, hasTiles := vals["tiles"]
	zarrKeys := first != nil && first.Zarr != ""
	switch {
	case zarrKeys && !hasCrops && !hasTiles:
		return p.errorAt(first.Pos, "", "zarr keys need a crops: section (at least per_epoch) saying how samples are cut from the volumes, or a tiles: section to predict over them")
	case hasCrops && !zarrKeys:
		return p.errorf(cn, "crops", "applies to zarr keys only (no key has zarr:)")
	case hasTiles && !zarrKeys:
		return p.errorf(tn, "tiles", "applies to zarr keys only (no key has zarr:)")
	case !zarrKeys:
		return nil
	}
	rank := len(first.Shape)
	if hasCrops {
		if err := p.crops(cn, rank); err != nil {
			return err
		}
	}
	if hasTiles {
		return p.tiles(tn, rank)
	}
	return nil
}
