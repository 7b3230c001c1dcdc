package images

import (
	"image"
	"math"
	"math/rand/v2"
)

// Crop is where a key's pixels come from in an image, and whether they are
// flipped: what a sample's Rand drew for it.
type Crop struct {
	Width  int `json:"width"` // the image's size in pixels
	Height int `json:"height"`
	// Region is the part of the image the resampling reads, which it
	// treats as an image of its own (its edges clamp the filter): the
	// crop rectangle for random_resized and whole, the image for center
	// (resized whole, then cropped).
	Region image.Rectangle `json:"region"`
	// Box is the rectangle resampled to the key's size, in image pixels:
	// Region itself but for center, whose box has fractional edges.
	X0   float64 `json:"x0"`
	Y0   float64 `json:"y0"`
	X1   float64 `json:"x1"`
	Y1   float64 `json:"y1"`
	Flip bool    `json:"flip"` // mirror left and right after resampling

	grid       grid // center: the resized image's size and the crop's place in it
	outW, outH int  // the key's size, which the box is resampled to
}

// Draw draws the crop and flip of transform t for an image of w x h pixels
// and a key of outW x outH pixels from r: torchvision's RandomResizedCrop
// (random_resized) or Resize then CenterCrop (center), then
// RandomHorizontalFlip, in that order of draws.
func Draw(r *rand.Rand, t *Transform, w, h, outW, outH int) Crop {
	c := Crop{Width: w, Height: h, outW: outW, outH: outH}
	switch t.Crop {
	case RandomResized:
		c.Region = randomResized(r, w, h, t.Scale, t.Ratio)
	case Center:
		c.Region = image.Rect(0, 0, w, h)
		c.grid = centerGrid(w, h, t.Size, outW, outH)
		c.X0, c.Y0, c.X1, c.Y1 = c.grid.box(w, h, outW, outH)
	default:
		c.Region = image.Rect(0, 0, w, h)
	}
	if t.Crop != Center {
		c.grid = grid{fullW: outW, fullH: outH}
		c.X0, c.Y0 = float64(c.Region.Min.X), float64(c.Region.Min.Y)
		c.X1, c.Y1 = float64(c.Region.Max.X), float64(c.Region.Max.Y)
	}
	c.Flip = t.Flip > 0 && r.Float64() < t.Flip
	return c
}

// randomResized is torchvision's RandomResizedCrop.get_params: ten
// attempts at an area fraction in scale and a log-uniform aspect ratio in
// ratio that fit the image, then a centre crop clamped to ratio.
func randomResized(r *rand.Rand, w, h int, scale, ratio [2]float64) image.Rectangle {
	area := float64(w * h)
	logLo, logHi := math.Log(ratio[0]), math.Log(ratio[1])
	for range 10 {
		target := area * uniform(r, scale[0], scale[1])
		aspect := math.Exp(uniform(r, logLo, logHi))
		cw := int(math.RoundToEven(math.Sqrt(target * aspect)))
		ch := int(math.RoundToEven(math.Sqrt(target / aspect)))
		if 0 < cw && cw <= w && 0 < ch && ch <= h {
			y := r.IntN(h - ch + 1)
			x := r.IntN(w - cw + 1)
			return image.Rect(x, y, x+cw, y+ch)
		}
	}
	cw, ch := w, h
	switch in := float64(w) / float64(h); {
	case in < ratio[0]:
		ch = int(math.RoundToEven(float64(cw) / ratio[0]))
	case in > ratio[1]:
		cw = int(math.RoundToEven(float64(ch) * ratio[1]))
	}
	x, y := (w-cw)/2, (h-ch)/2
	return image.Rect(x, y, x+cw, y+ch)
}

// uniform is a draw in [lo, hi).
func uniform(r *rand.Rand, lo, hi float64) float64 { return lo + (hi-lo)*r.Float64() }

// centerGrid is where torchvision's Resize(size) (the shorter side to
// size, the longer truncated) then CenterCrop(outH, outW) take a w x h
// image: the resized size and the crop's corner in it.
func centerGrid(w, h, size, outW, outH int) grid {
	rw, rh := size, size
	if w <= h {
		rh = int(float64(size) * float64(h) / float64(w))
	} else {
		rw = int(float64(size) * float64(w) / float64(h))
	}
	top := int(math.RoundToEven(float64(rh-outH) / 2))
	left := int(math.RoundToEven(float64(rw-outW) / 2))
	return grid{fullW: rw, fullH: rh, left: left, top: top}
}

// box is the rectangle of a w x h image that the grid's crop of outW x
// outH pixels covers, in the image's pixels.
func (g grid) box(w, h, outW, outH int) (x0, y0, x1, y1 float64) {
	sx, sy := float64(w)/float64(g.fullW), float64(h)/float64(g.fullH)
	return float64(g.left) * sx, float64(g.top) * sy, float64(g.left+outW) * sx, float64(g.top+outH) * sy
}
