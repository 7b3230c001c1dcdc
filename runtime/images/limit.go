package images

import (
	"fmt"

	"github.com/loadergen/loadergen/internal/envlimit"
)

// DefaultMaxPixels is the most pixels an image may have unless
// MaxPixelsEnv or SetMaxPixels says otherwise: the size past which PIL
// refuses to open an image as a decompression bomb (DecompressionBombError
// above twice Image.MAX_IMAGE_PIXELS, int(1024 * 1024 * 1024 // 4 // 3) =
// 89478485; PIL only warns between the two), so that a dataset that
// torchvision's loaders read, a loader reads too.
const DefaultMaxPixels = 2 * 89478485

// MaxPixelsEnv names the environment variable that sets the most pixels
// an image may have, in place of DefaultMaxPixels.
const MaxPixelsEnv = "LOADERGEN_MAX_IMAGE_PIXELS"

// maxPixels is the most pixels an image may have: up to PNG's largest
// image, 2^31-1 pixels square.
var maxPixels = envlimit.New(MaxPixelsEnv, "pixels", DefaultMaxPixels, (1<<31-1)*(1<<31-1))

// PixelsError is the error of an image whose header gives it more pixels
// than MaxPixels allows.
type PixelsError struct {
	W, H  int   // the image's size
	Limit int64 // the most pixels allowed
}

func (e *PixelsError) Error() string {
	return fmt.Sprintf("image of %d x %d = %d pixels, more than the %d allowed (PIL's decompression bomb limit; raise it with %s or images.SetMaxPixels)",
		e.W, e.H, int64(e.W)*int64(e.H), e.Limit, MaxPixelsEnv)
}

// SetMaxPixels sets the most pixels an image may have, for every image
// decoded after it, over MaxPixelsEnv; n < 1 undoes it. Like PIL's
// Image.MAX_IMAGE_PIXELS it holds for the whole process.
func SetMaxPixels(n int64) { maxPixels.Set(n) }

// MaxPixels returns the most pixels an image may have: SetMaxPixels's
// value, else MaxPixelsEnv's, else DefaultMaxPixels. The error is that of
// a bad MaxPixelsEnv.
func MaxPixels() (int64, error) { return maxPixels.Get() }

// checkPixels refuses an image of w x h pixels, from its header, when it
// has more than MaxPixels: before anything is allocated for it.
func checkPixels(w, h int) error {
	limit, err := MaxPixels()
	if err != nil {
		return err
	}
	if int64(w)*int64(h) > limit {
		return &PixelsError{W: w, H: h, Limit: limit}
	}
	return nil
}
