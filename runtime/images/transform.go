// Package images turns encoded images (JPEG, PNG) into a key's pixels in a
// staging buffer: it decodes, draws torchvision's crops from a sample's
// Rand, resamples as PIL does (antialiased bilinear for images, nearest for
// masks), flips, and writes uint8 or normalised float32 in CHW or HWC
// order, with no allocation per image once its buffers have grown.
package images

import "github.com/loadergen/loadergen/runtime/images/imagespec"

// The words of an image key's transform that a schema writes are declared
// in runtime/images/imagespec, which links no decoder, so that the
// generator checks them without linking this package; these are their
// names here, which generated code spells.
type (
	Layout    = imagespec.Layout    // the order of an image key's axes
	CropMode  = imagespec.CropMode  // how the rectangle that becomes the key's pixels is chosen
	Transform = imagespec.Transform // what becomes of an image key's decoded image
)

// The values of the words above, as imagespec declares them.
const (
	CHW           = imagespec.CHW
	HWC           = imagespec.HWC
	Whole         = imagespec.Whole
	RandomResized = imagespec.RandomResized
	Center        = imagespec.Center
)
