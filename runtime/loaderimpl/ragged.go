package loaderimpl

import (
	"fmt"
	"unsafe"

	"github.com/loadergen/loadergen/runtime"
)

// PadRows finishes one sample of a ragged key after the Source's Read: slot
// is the sample's whole region in the staging slot, room for maxRows rows,
// and got is the key's slice as Read left it. Read appends to slot[:0], so
// got normally starts at slot; a slice of Read's own is copied in. PadRows
// fills the rest of the slot with pad and returns the sample's row count.
// More rows than maxRows, or a length that is not whole rows, is a
// KeyError naming key and the numbers; nothing is truncated (see
// TruncateRows for a key with overflow: truncate).
func PadRows[T runtime.Element](key string, slot, got []T, maxRows int, pad T) (int32, error) {
	rows, _, err := padRows(key, slot, got, maxRows, pad, runtime.OverflowError)
	return rows, err
}

// TruncateRows is PadRows for a key with overflow: truncate: a sample of
// more than maxRows rows (which Read appended past the slot, into an array
// of append's own) keeps its first maxRows rows, and cut reports it.
func TruncateRows[T runtime.Element](key string, slot, got []T, maxRows int, pad T) (rows int32, cut bool, err error) {
	return padRows(key, slot, got, maxRows, pad, runtime.OverflowTruncate)
}

// padRows is PadRows and TruncateRows, as overflow says.
func padRows[T runtime.Element](key string, slot, got []T, maxRows int, pad T, overflow runtime.Overflow) (int32, bool, error) {
	n, rowElems := len(got), len(slot)/maxRows
	if n > len(slot) && overflow != runtime.OverflowTruncate {
		return 0, false, &runtime.KeyError{Key: key, Err: fmt.Errorf("%d rows, more than the maximum %d", ceilDiv(n, rowElems), maxRows)}
	}
	if n%rowElems != 0 {
		return 0, false, &runtime.KeyError{Key: key, Err: fmt.Errorf("%d elements are not whole rows of %d", n, rowElems)}
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
func PadSamples[T runtime.Element](key string, data []T, lengths []int32, maxRows int, pad T) (int, error) {
	n, _, err := padSamples(key, data, lengths, maxRows, pad, runtime.OverflowError)
	return n, err
}

// TruncateSamples is PadSamples for a key with overflow: truncate: a count
// above maxRows says that the sample is longer than its slot, whose
// maxRows rows ReadSamples filled with the sample's first ones; the count
// becomes maxRows, and cut counts such samples. A count below 0 stops it
// as it stops PadSamples.
func TruncateSamples[T runtime.Element](key string, data []T, lengths []int32, maxRows int, pad T) (n, cut int, err error) {
	return padSamples(key, data, lengths, maxRows, pad, runtime.OverflowTruncate)
}

// padSamples is PadSamples and TruncateSamples, as overflow says.
func padSamples[T runtime.Element](key string, data []T, lengths []int32, maxRows int, pad T, overflow runtime.Overflow) (n, cut int, err error) {
	if len(lengths) == 0 {
		return 0, 0, nil
	}
	slot := len(data) / len(lengths)
	rowElems := slot / maxRows
	for i, l := range lengths {
		if int(l) > maxRows && overflow == runtime.OverflowTruncate {
			lengths[i], l = int32(maxRows), int32(maxRows)
			cut++
		}
		if l < 0 || int(l) > maxRows {
			return i, cut, &runtime.KeyError{Key: key, Err: fmt.Errorf("ReadSamples set %d rows, not in [0, %d]", l, maxRows)}
		}
		setAll(data[i*slot+int(l)*rowElems:(i+1)*slot], pad)
	}
	return len(lengths), cut, nil
}

// setAll sets every element of s to v: a memory clear when v's bits are
// all zero (not for -0.0, which has a sign bit), else doubling copies.
func setAll[T runtime.Element](s []T, v T) {
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
func zeroBits[T runtime.Element](v T) bool {
	for _, b := range unsafe.Slice((*byte)(unsafe.Pointer(&v)), unsafe.Sizeof(v)) {
		if b != 0 {
			return false
		}
	}
	return true
}

func ceilDiv(a, b int) int { return (a + b - 1) / b }
