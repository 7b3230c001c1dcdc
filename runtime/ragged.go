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

// PadRows finishes one sample of a ragged key after the Source's Read: slot
// is the sample's whole region in the staging slot, room for maxRows rows,
// and got is the key's slice as Read left it. Read appends to slot[:0], so
// got normally starts at slot; a slice of Read's own is copied in. PadRows
// fills the rest of the slot with pad and returns the sample's row count.
// More rows than maxRows, or a length that is not whole rows, is a
// KeyError naming key and the numbers; nothing is truncated.
func PadRows[T Element](key string, slot, got []T, maxRows int, pad T) (int32, error) {
	n, rowElems := len(got), len(slot)/maxRows
	if n > len(slot) {
		return 0, &KeyError{Key: key, Err: fmt.Errorf("%d rows, more than the maximum %d", ceilDiv(n, rowElems), maxRows)}
	}
	if n%rowElems != 0 {
		return 0, &KeyError{Key: key, Err: fmt.Errorf("%d elements are not whole rows of %d", n, rowElems)}
	}
	if n > 0 && unsafe.SliceData(got) != unsafe.SliceData(slot) {
		copy(slot, got)
	}
	setAll(slot[n:], pad)
	return int32(n / rowElems), nil
}

// PadSamples finishes the samples of a ragged key after a ReadSamples
// call: data holds len(lengths) slots of maxRows rows, back to back, and
// lengths the row counts ReadSamples set. It fills each slot past its rows
// with pad. A count below 0 or above maxRows stops it: it returns the
// position of that sample and a KeyError naming the key and the numbers;
// the samples before it are padded.
func PadSamples[T Element](key string, data []T, lengths []int32, maxRows int, pad T) (int, error) {
	if len(lengths) == 0 {
		return 0, nil
	}
	slot := len(data) / len(lengths)
	rowElems := slot / maxRows
	for i, l := range lengths {
		if l < 0 || int(l) > maxRows {
			return i, &KeyError{Key: key, Err: fmt.Errorf("ReadSamples set %d rows, not in [0, %d]", l, maxRows)}
		}
		setAll(data[i*slot+int(l)*rowElems:(i+1)*slot], pad)
	}
	return len(lengths), nil
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
