package zarr

import (
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	lgruntime "github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/npy"
)

// elemType is an array's element type as stored: the dtype and whether the
// stored bytes are big-endian.
type elemType struct {
	dtype     lgruntime.DType
	bigEndian bool
}

// parseV2DType reads a numpy type string such as "<f4", "|u1" or ">i2".
func parseV2DType(raw json.RawMessage) (elemType, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return elemType{}, fmt.Errorf("dtype %s is not supported: only plain numeric and bool type strings are", raw)
	}
	if len(s) < 3 {
		return elemType{}, fmt.Errorf("dtype %q is not a numpy type string", s)
	}
	d, ok := npy.KindDType(s[1:])
	if !ok {
		return elemType{}, fmt.Errorf("dtype %q is not supported (numeric and bool types are: |b1, |i1, <i2 ... <f8)", s)
	}
	switch s[0] {
	case '<', '=': // '=' is the writer's native order, little-endian on every platform zarr-python ships for
		return elemType{dtype: d}, nil
	case '>':
		return elemType{dtype: d, bigEndian: d.Size() > 1}, nil
	case '|':
		if d.Size() == 1 {
			return elemType{dtype: d}, nil
		}
		return elemType{}, fmt.Errorf("dtype %q: a %d-byte type needs a byte order (< or >), not |", s, d.Size())
	}
	return elemType{}, fmt.Errorf("dtype %q: byte order %q is none of <, > and |", s, s[0])
}

// v2DType returns the type string a v2 array of d declares: numpy's, and
// none for bfloat16, which numpy lacks.
func v2DType(d lgruntime.DType) string {
	if d == lgruntime.BFloat16 {
		return ""
	}
	return npy.Descr(d)
}

// parseV3DType reads a v3 data_type. Only the core's numeric and bool types
// (and bfloat16, an extension some writers use) name runtime dtypes.
func parseV3DType(raw json.RawMessage) (lgruntime.DType, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return 0, fmt.Errorf("data_type %s is not supported: only the numeric and bool types are", raw)
	}
	d, err := lgruntime.ParseDType(s)
	if err != nil {
		return 0, fmt.Errorf("data_type %q is not supported (the numeric types and bool are)", s)
	}
	return d, nil
}

// parseFill converts a fill_value to one element of d in little-endian
// order, as chunks are held once decoded. Zarr v2's null means "no fill
// value", which reads as zero here as it does in zarr-python.
func parseFill(raw json.RawMessage, d lgruntime.DType) ([]byte, error) {
	out := make([]byte, d.Size())
	s := strings.TrimSpace(string(raw))
	if s == "" || s == "null" {
		return out, nil
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("fill_value %s: %w", s, err)
	}
	bad := func(why string) error { return fmt.Errorf("fill_value %s for %v: %s", s, d, why) }
	switch v := v.(type) {
	case bool:
		if d != lgruntime.Bool {
			return nil, bad("a boolean fills only bool arrays")
		}
		if v {
			out[0] = 1
		}
		return out, nil
	case json.Number:
		if d == lgruntime.Bool {
			return fillBool(out, v, bad)
		}
		if d.IsFloat() {
			f, err := strconv.ParseFloat(v.String(), 64)
			if err != nil {
				return nil, bad(err.Error())
			}
			copy(out, d.Encode(f))
			return out, nil
		}
		return fillInt(out, d, v, bad)
	case string:
		if !d.IsFloat() {
			return nil, bad("a string fills only float arrays")
		}
		switch v {
		case "NaN":
			copy(out, d.Encode(math.NaN()))
		case "Infinity":
			copy(out, d.Encode(math.Inf(1)))
		case "-Infinity":
			copy(out, d.Encode(math.Inf(-1)))
		default:
			// Zarr v3 writes exact bit patterns as hex: "0x7fc00000".
			hex, ok := strings.CutPrefix(v, "0x")
			bitsv, err := strconv.ParseUint(hex, 16, 64)
			if !ok || err != nil || len(hex) != 2*d.Size() {
				return nil, bad(`want a number, "NaN", "Infinity", "-Infinity" or the element's bits in hex`)
			}
			d.PutBits(out, bitsv)
		}
		return out, nil
	}
	return nil, bad("want a number, a boolean, a string or null")
}

func fillBool(out []byte, v json.Number, bad func(string) error) ([]byte, error) {
	switch v.String() {
	case "0":
	case "1":
		out[0] = 1
	default:
		return nil, bad("a bool fill is 0, 1, true or false")
	}
	return out, nil
}

func fillInt(out []byte, d lgruntime.DType, v json.Number, bad func(string) error) ([]byte, error) {
	lo, hi := d.IntRange()
	if i, err := strconv.ParseInt(v.String(), 10, 64); err == nil {
		if i < lo || (i > 0 && uint64(i) > hi) {
			return nil, bad("out of the type's range")
		}
		d.PutInt(out, i)
		return out, nil
	}
	u, err := strconv.ParseUint(v.String(), 10, 64)
	if err != nil || u > hi {
		return nil, bad("not an integer in the type's range")
	}
	d.PutBits(out, u)
	return out, nil
}
