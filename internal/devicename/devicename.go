// Package devicename reads device names: cpu, cuda and cuda:N.
package devicename

import (
	"fmt"
	"strconv"
	"strings"
)

// Parse reads "cpu", "cuda" or "cuda:N" (N >= 0); cuda reports whether
// d names a CUDA device and ordinal is N, or -1 for "cuda" without one (the
// local rank's GPU). It is the one parser of device names: the schema, the
// CLI's -device flag and Options.Device all go through it.
func Parse(d string) (ordinal int, cuda bool, err error) {
	switch d {
	case "cpu":
		return 0, false, nil
	case "cuda":
		return -1, true, nil
	}
	if n, ok := strings.CutPrefix(d, "cuda:"); ok && n != "" && strings.Trim(n, "0123456789") == "" {
		i, err := strconv.Atoi(n)
		if err != nil {
			return 0, false, fmt.Errorf("CUDA device ordinal %s is out of range", n)
		}
		return i, true, nil
	}
	return 0, false, fmt.Errorf("unknown device %q (want cpu, cuda or cuda:N with N >= 0)", d)
}
