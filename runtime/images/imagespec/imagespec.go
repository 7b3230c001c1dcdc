// Package imagespec holds the words of an image key's transform that a
// schema writes and the generator checks before any image is decoded:
// the output's layout (Layout), the crop (CropMode, with torchvision's
// defaults), the flip and the normalisation (Transform). It does no I/O
// and links no decoder: the generator imports it, and runtime/images,
// which decodes images, names its types (images.Transform, ...) as
// aliases of these.
package imagespec

import (
	"fmt"
	"slices"
)

// Layout is the order of an image key's axes.
type Layout uint8

// The layouts an image key may have.
const (
	CHW Layout = iota // [C, H, W]: planes, as PyTorch's ToTensor gives them
	HWC               // [H, W, C]: interleaved pixels
)

var layoutNames = []string{CHW: "chw", HWC: "hwc"}

// String returns the layout as a schema writes it: "chw" or "hwc".
func (l Layout) String() string {
	if int(l) < len(layoutNames) {
		return layoutNames[l]
	}
	return fmt.Sprintf("Layout(%d)", l)
}

// ParseLayout reads "chw" or "hwc".
func ParseLayout(s string) (Layout, error) {
	if i := slices.Index(layoutNames, s); i >= 0 {
		return Layout(i), nil
	}
	return 0, fmt.Errorf("unknown layout %q (want chw or hwc)", s)
}

// CropMode is how the rectangle of an image that becomes the key's pixels
// is chosen.
type CropMode uint8

// The crop modes.
const (
	// Whole takes the whole image, which must have the key's size.
	Whole CropMode = iota
	// RandomResized is torchvision's RandomResizedCrop: an area fraction
	// in Scale and an aspect ratio in Ratio (log-uniform), ten attempts,
	// then a centre crop of the ratio's range; resampled to the key's size.
	RandomResized
	// Center resizes the shorter side to Size and cuts the key's size out
	// of the centre: torchvision's Resize(Size) then CenterCrop.
	Center
)

var cropNames = []string{Whole: "whole", RandomResized: "random_resized", Center: "center"}

// String returns the mode as a schema writes it: "random_resized".
func (m CropMode) String() string {
	if int(m) < len(cropNames) {
		return cropNames[m]
	}
	return fmt.Sprintf("CropMode(%d)", m)
}

// ParseCropMode reads "random_resized" or "center" (a schema never writes
// "whole": it leaves resize out).
func ParseCropMode(s string) (CropMode, error) {
	switch s {
	case "random_resized":
		return RandomResized, nil
	case "center":
		return Center, nil
	}
	return 0, fmt.Errorf("unknown crop %q (want random_resized or center)", s)
}

// torchvision's RandomResizedCrop defaults.
var (
	DefaultScale = [2]float64{0.08, 1}
	DefaultRatio = [2]float64{3.0 / 4, 4.0 / 3}
)

// Transform is what becomes of an image key's decoded image: the crop, the
// flip and the output's layout and values.
type Transform struct {
	Layout Layout
	Crop   CropMode
	Scale  [2]float64 // RandomResized: the range of the crop's area fraction
	Ratio  [2]float64 // RandomResized: the range of its aspect ratio (width / height)
	Size   int        // Center: the shorter side's length after resizing
	Flip   float64    // probability of a horizontal flip
	// Mean and Std normalise a float key per channel, on the 0..1 scale:
	// (v/255 - Mean[c]) / Std[c]. Nil for a uint8 key, and for a float key
	// that keeps v/255.
	Mean, Std []float64
}
