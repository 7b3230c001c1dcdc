//go:build !unix

package hostmem

import "errors"

// Map is not available outside unix systems, where the Python bridge is
// not built.
func Map(n int64) ([]byte, func() error, error) {
	return nil, nil, errors.New("staging outside the Go heap needs a unix system")
}
