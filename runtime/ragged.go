package runtime

import (
	"fmt"
	"math"
)

// LengthsDType is the element type of a ragged key's lengths: one row
// count per sample. Generated code views the lengths as []int32.
const LengthsDType = Int32

// MaxRows is the most rows a ragged key may allow a sample (the first axis
// of its shape): the largest LengthsDType value, as each sample's count is
// stored as one. The schema and npy.OpenRagged both refuse more.
const MaxRows = math.MaxInt32

// LengthsKey is the plan name of the key that holds the row counts of the
// ragged key name: "tokens" -> "tokens.lengths". A schema key cannot take
// it, as its Go name would not be an identifier.
func LengthsKey(name string) string { return name + ".lengths" }

// Overflow is what the loader does with a sample of a ragged key that has
// more rows than the key's maximum (the first axis of its shape): the
// schema's overflow: field of the key.
type Overflow uint8

// The overflow rules. The zero value is OverflowError.
const (
	// OverflowError refuses the sample: a file at open, naming every such
	// sample, and a Source's sample when it is read, ending the epoch.
	OverflowError Overflow = iota
	// OverflowTruncate keeps the sample's first maximum rows and counts it
	// in Stats.Truncated.
	OverflowTruncate
)

// overflowNames are the rules as a schema writes them, by value.
var overflowNames = [...]string{OverflowError: "error", OverflowTruncate: "truncate"}

// String returns "error" or "truncate", as the schema spells the rule.
func (o Overflow) String() string {
	if int(o) < len(overflowNames) {
		return overflowNames[o]
	}
	return fmt.Sprintf("Overflow(%d)", uint8(o))
}

// MarshalText writes the rule's name.
func (o Overflow) MarshalText() ([]byte, error) { return []byte(o.String()), nil }
