package npy

import (
	"fmt"

	"github.com/loadergen/loadergen/internal/envlimit"
)

// DefaultMaxHeaderSize is the longest header, in characters, that Open,
// OpenRagged and Member read unless told otherwise: numpy's default
// max_header_size (numpy.lib.format._MAX_HEADER_SIZE), past which np.load
// refuses a header as "large and may not be safe to load securely".
const DefaultMaxHeaderSize = 10000

// MaxHeaderEnv names the environment variable that sets the longest header
// read, in characters, in place of DefaultMaxHeaderSize: for files whose
// headers are legitimately longer (structured dtypes of many fields),
// which np.load reads only with max_header_size raised too.
const MaxHeaderEnv = "LOADERGEN_NPY_MAX_HEADER"

// maxNesting is the deepest that a header's literals may nest, its dict
// counted: 200, the depth of brackets past which Python's parser, and so
// np.load, refuses a literal ("too many nested parentheses").
const maxNesting = 200

// maxHeader is the longest header read: up to 2^30 characters.
var maxHeader = envlimit.New(MaxHeaderEnv, "characters", DefaultMaxHeaderSize, 1<<30)

// SetMaxHeaderSize sets the longest header read, in characters, for every
// file and member opened after it, over MaxHeaderEnv; n < 1 undoes it.
// Values above 2^30 are taken as 2^30.
func SetMaxHeaderSize(n int) { maxHeader.Set(int64(n)) }

// MaxHeaderSize returns the longest header read, in characters:
// SetMaxHeaderSize's value, else MaxHeaderEnv's, else
// DefaultMaxHeaderSize. The error is that of a bad MaxHeaderEnv.
func MaxHeaderSize() (int, error) {
	n, err := maxHeader.Get()
	return int(n), err
}

// headerTooLong is the error of a header of n characters, past limit.
func headerTooLong(n int64, limit int) error {
	return fmt.Errorf("header of %d characters is longer than the %d allowed (numpy's max_header_size; raise it with %s or npy.SetMaxHeaderSize for a file you trust)", n, limit, MaxHeaderEnv)
}
