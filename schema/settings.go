package schema

import (
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/loadergen/loadergen/internal/devicename"
)

// MaxStreams is the largest streams.max_streams a schema may set.
const MaxStreams = 64

// Assignments are the key-to-stream assignments streams.assign names.
var Assignments = []string{"round_robin", "balanced"}

// The rules of the settings that flags and the environment may override
// too. The schema parser reports their errors at the offending node, the
// generator's overrides name the flag or variable; both call these.

// ParseDevice reads "cpu", "cuda" or "cuda:N" with the runtime's parser,
// the one that Options.Device goes through too.
func ParseDevice(s string) (Device, error) {
	ordinal, cuda, err := devicename.Parse(s)
	return Device{CUDA: cuda, Ordinal: ordinal}, err
}

// CheckMinBatchSize: streams.min_batch_size must be at least 1.
func CheckMinBatchSize(v int) error {
	if v < 1 {
		return fmt.Errorf("must be >= 1, got %d", v)
	}
	return nil
}

// CheckMinBatchMemoryMB: streams.min_batch_memory_mb must be finite and >= 0.
func CheckMinBatchMemoryMB(v float64) error {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0):
		return fmt.Errorf("must be a finite number, got %v", v)
	case v < 0:
		return fmt.Errorf("must be >= 0, got %s", formatFloat(v))
	}
	return nil
}

// CheckMaxStreams: streams.max_streams must be in [1, MaxStreams].
func CheckMaxStreams(v int) error {
	if v < 1 || v > MaxStreams {
		return fmt.Errorf("must be between 1 and %d, got %d", MaxStreams, v)
	}
	return nil
}

// CheckAssign: streams.assign must name one of Assignments.
func CheckAssign(s string) error {
	for _, a := range Assignments {
		if s == a {
			return nil
		}
	}
	return fmt.Errorf("must be %s, got %s", Alternatives(Assignments), quote(s))
}

// Alternatives joins names as a sentence offers them: "a", "a or b",
// "a, b or c".
func Alternatives(names []string) string {
	if len(names) < 2 {
		return strings.Join(names, "")
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

// CheckMaxStagingMB: loader.max_staging_mb must be finite and > 0.
func CheckMaxStagingMB(v float64) error {
	if !(v > 0 && v <= math.MaxFloat64) {
		return fmt.Errorf("must be > 0, got %s", formatFloat(v))
	}
	return nil
}

func formatFloat(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
