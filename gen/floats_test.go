package gen

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/runtime"
)

// floatDTypes are the float dtypes, the ones floatLit renders.
var floatDTypes = []runtime.DType{runtime.Float32, runtime.Float64, runtime.Float16, runtime.BFloat16}

// floatCases are values whose rendering is easy to get wrong: the zeros
// and NaN, the infinities, subnormals of each float dtype, values that
// round to -0 or to an infinity, and ties, which float32 of the float64
// rounds to even where a constant of the float64's text may not.
var floatCases = []float64{
	0, math.Copysign(0, -1), math.NaN(), math.Inf(1), math.Inf(-1),
	-1e-46, 1e-46, -math.Ldexp(1, -150), math.Ldexp(1, -150), math.Ldexp(3, -150), // float32: to -0, to +0, ties at its smallest subnormal
	1e-40, -1e-40, -1e-8, 1e-6, 1e-39, // subnormals of float32, float16 (-1e-8 rounds to its -0) and bfloat16
	5e-324, -5e-324, math.MaxFloat64, // float64's smallest subnormal and largest
	1 + math.Ldexp(1, -24), -1 - math.Ldexp(1, -24), 1 + math.Ldexp(3, -24), // float32 ties
	1 + math.Ldexp(1, -11), 1 + math.Ldexp(1, -8), // float16 and bfloat16 ties
	-1e39, 3.4028235e38, 65504, 65520, -2.5, 0.1, 255, 1e300,
}

// TestFloatBits: a generated loader holds the bits DType.Encode gives, as
// the Go compiler evaluates the rendered code: a ragged key's pad (a var of
// its dtype's Go type) for every float dtype, and a zarr key's Fill (a
// float64 field, left out for +0) as every float dtype encodes it when a
// crop reaches past the array.
func TestFloatBits(t *testing.T) {
	type rendering struct {
		what string
		v    float64
		d    runtime.DType   // the Go type of the rendered value
		to   []runtime.DType // for a fill, the dtypes it is encoded to
	}
	var rs []rendering
	var vars, prints strings.Builder
	add := func(r rendering, decl string) {
		name := fmt.Sprintf("v%d", len(rs))
		fmt.Fprintf(&vars, "var %s%s\n", name, decl)
		bits := map[runtime.DType]string{runtime.Float32: "math.Float32bits(%s)", runtime.Float64: "math.Float64bits(%s)"}[r.d]
		if bits == "" { // a 16-bit float's value is its bits, a uint16
			bits = "%s"
		}
		fmt.Fprintf(&prints, "\tfmt.Println("+bits+")\n", name)
		rs = append(rs, r)
	}
	for _, v := range floatCases {
		for _, d := range floatDTypes {
			code, _ := padValue(d, v)
			add(rendering{fmt.Sprintf("%v pad %v renders %#v", d, v, code), v, d, nil}, fmt.Sprintf(" = %#v", code))
		}
		fill := floatValue(v)
		decl := " float64" // a field left out
		if fill != nil {
			decl += fmt.Sprintf(" = %#v", fill)
		}
		add(rendering{fmt.Sprintf("fill %v renders%s", v, decl), v, runtime.Float64, floatDTypes}, decl)
	}
	lines := runGo(t, "package main\n\nimport (\n\t\"fmt\"\n\t\"math\"\n)\n\nvar _ = math.NaN\n\n"+
		vars.String()+"\nfunc main() {\n"+prints.String()+"}\n")
	if len(lines) != len(rs) {
		t.Fatalf("the program printed %d lines, want %d", len(lines), len(rs))
	}
	for i, r := range rs {
		u, err := strconv.ParseUint(lines[i], 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", r.what, err)
		}
		got := make([]byte, 8)
		binary.LittleEndian.PutUint64(got, u)
		got = got[:r.d.Size()]
		if r.to == nil {
			if want := r.d.Encode(r.v); !bytes.Equal(got, want) {
				t.Errorf("%s, holding % x; DType.Encode gives % x", r.what, got, want)
			}
			continue
		}
		for _, d := range r.to {
			if g, want := d.Encode(r.d.Value(got)), d.Encode(r.v); !bytes.Equal(g, want) {
				t.Errorf("%s, which %v encodes as % x; DType.Encode of the fill gives % x", r.what, d, g, want)
			}
		}
	}
}

// runGo runs the Go program src and returns the lines it prints.
func runGo(t *testing.T, src string) []string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal("the go command is needed to evaluate rendered code:", err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(gobin, "run", "main.go")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=")
	out, err := cmd.Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			t.Fatalf("go run: %v\n%s\n%s", err, exit.Stderr, src)
		}
		t.Fatalf("go run: %v", err)
	}
	return strings.Fields(string(out))
}
