package npy

import (
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
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

// maxHeaderLimit is the most that MaxHeaderEnv or SetMaxHeaderSize may set.
const maxHeaderLimit = 1 << 30

// maxNesting is the deepest that a header's literals may nest, its dict
// counted: 200, the depth of brackets past which Python's parser, and so
// np.load, refuses a literal ("too many nested parentheses").
const maxNesting = 200

// maxHeaderSet is SetMaxHeaderSize's value, 0 when it was not called (or
// undone). Any goroutine may set it; readers load it for each header.
var maxHeaderSet atomic.Int64

// envMaxHeader is MaxHeaderEnv's value, read once.
var envMaxHeader = sync.OnceValues(func() (int, error) { return maxHeaderFrom(os.Getenv) })

// maxHeaderFrom reads MaxHeaderEnv through getenv: its value, or
// DefaultMaxHeaderSize when it is unset or empty.
func maxHeaderFrom(getenv func(string) string) (int, error) {
	v := getenv(MaxHeaderEnv)
	if v == "" {
		return DefaultMaxHeaderSize, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 || n > maxHeaderLimit {
		return 0, fmt.Errorf("environment %s=%q: want a header size in characters from 1 to %d", MaxHeaderEnv, v, maxHeaderLimit)
	}
	return n, nil
}

// SetMaxHeaderSize sets the longest header read, in characters, for every
// file and member opened after it, over MaxHeaderEnv; n < 1 undoes it.
// Values above 2^30 are taken as 2^30.
func SetMaxHeaderSize(n int) {
	maxHeaderSet.Store(int64(min(max(n, 0), maxHeaderLimit)))
}

// MaxHeaderSize returns the longest header read, in characters:
// SetMaxHeaderSize's value, else MaxHeaderEnv's, else
// DefaultMaxHeaderSize. The error is that of a bad MaxHeaderEnv.
func MaxHeaderSize() (int, error) {
	if n := maxHeaderSet.Load(); n > 0 {
		return int(n), nil
	}
	return envMaxHeader()
}

// headerTooLong is the error of a header of n characters, past limit.
func headerTooLong(n int64, limit int) error {
	return fmt.Errorf("header of %d characters is longer than the %d allowed (numpy's max_header_size; raise it with %s or npy.SetMaxHeaderSize for a file you trust)", n, limit, MaxHeaderEnv)
}
