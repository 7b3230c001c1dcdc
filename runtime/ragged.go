package runtime

import (
	"fmt"
	"math"
	"unsafe"
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

// PadRows finishes one sample of a ragged key after the Source's Read: slot
// is the sample's whole region in the staging slot, room for maxRows rows,
// and got is the key's slice as Read left it. Read appends to slot[:0], so
// got normally starts at slot; a slice of Read's own is copied in. PadRows
// fills the rest of the slot with pad and returns the sample's row count.
// More rows than maxRows, or a length that is not whole rows, is a
// KeyError naming key and the numbers; nothing is truncated (see
// TruncateRows for a key with overflow: truncate).
func PadRows[T Element](key string, slot, got []T, maxRows int, pad T) (int32, error) {
	rows, _, err := padRows(key, slot, got, maxRows, pad, OverflowError)
	return rows, err
}

// TruncateRows is PadRows for a key with overflow: truncate: a sample of
// more than maxRows rows (which Read appended past the slot, into an array
// of append's own) keeps its first maxRows rows, and cut reports it.
func TruncateRows[T Element](key string, slot, got []T, maxRows int, pad T) (rows int32, cut bool, err error) {
	return padRows(key, slot, got, maxRows, pad, OverflowTruncate)
}

// padRows is PadRows and TruncateRows, as overflow says.
func padRows[T Element](key string, slot, got []T, maxRows int, pad T, overflow Overflow) (int32, bool, error) {
	n, rowElems := len(got), len(slot)/maxRows
	if n > len(slot) && overflow != OverflowTruncate {
		return 0, false, &KeyError{Key: key, Err: fmt.Errorf("%d rows, more than the maximum %d", ceilDiv(n, rowElems), maxRows)}
	}
	if n%rowElems != 0 {
		return 0, false, &KeyError{Key: key, Err: fmt.Errorf("%d elements are not whole rows of %d", n, rowElems)}
	}
	cut := n > len(slot)
	n = min(n, len(slot))
	if n > 0 && unsafe.SliceData(got) != unsafe.SliceData(slot) {
		copy(slot, got[:n])
	}
	setAll(slot[n:], pad)
	return int32(n / rowElems), cut, nil
}

// PadSamples finishes the samples of a ragged key after a ReadSamples
// call: data holds len(lengths) slots of maxRows rows, back to back, and
// lengths the row counts ReadSamples set. It fills each slot past its rows
// with pad. A count below 0 or above maxRows stops it: it returns the
// position of that sample and a KeyError naming the key and the numbers;
// the samples before it are padded.
func PadSamples[T Element](key string, data []T, lengths []int32, maxRows int, pad T) (int, error) {
	n, _, err := padSamples(key, data, lengths, maxRows, pad, OverflowError)
	return n, err
}

// TruncateSamples is PadSamples for a key with overflow: truncate: a count
// above maxRows says that the sample is longer than its slot, whose
// maxRows rows ReadSamples filled with the sample's first ones; the count
// becomes maxRows, and cut counts such samples. A count below 0 stops it
// as it stops PadSamples.
func TruncateSamples[T Element](key string, data []T, lengths []int32, maxRows int, pad T) (n, cut int, err error) {
	return padSamples(key, data, lengths, maxRows, pad, OverflowTruncate)
}

// padSamples is PadSamples and TruncateSamples, as overflow says.
func padSamples[T Element](key string, data []T, lengths []int32, maxRows int, pad T, overflow Overflow) (n, cut int, err error) {
	if len(lengths) == 0 {
		return 0, 0, nil
	}
	slot := len(data) / len(lengths)
	rowElems := slot / maxRows
	for i, l := range lengths {
		if int(l) > maxRows && overflow == OverflowTruncate {
			lengths[i], l = int32(maxRows), int32(maxRows)
			cut++
		}
		if l < 0 || int(l) > maxRows {
			return i, cut, &KeyError{Key: key, Err: fmt.Errorf("ReadSamples set %d rows, not in [0, %d]", l, maxRows)}
		}
		setAll(data[i*slot+int(l)*rowElems:(i+1)*slot], pad)
	}
	return len(lengths), cut, nil
}

// setAll sets every element of s to v: a memory clear when v's bits are
// all zero (not for -0.0, which has a sign bit), else doubling copies.
func setAll[T Element](s []T, v T) {
	if len(s) == 0 {
		return
	}
	if zeroBits(v) {
		clear(s)
		return
	}
	s[0] = v
	for n := 1; n < len(s); n *= 2 {
		copy(s[n:], s[:n])
	}
}

// zeroBits reports whether every byte of v is zero.
func zeroBits[T Element](v T) bool {
	for _, b := range unsafe.Slice((*byte)(unsafe.Pointer(&v)), unsafe.Sizeof(v)) {
		if b != 0 {
			return false
		}
	}
	return true
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
