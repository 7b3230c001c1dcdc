package gen

import (
	"fmt"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/schema"
)

// manyKeys is a schema with n input keys of assorted dtypes; names have
// the same length, so every key costs the same bytes of output.
func manyKeys(n int) []byte {
	var b strings.Builder
	b.WriteString("version: 1\npackage: many\nname: Many\nbatch_size: 8\ndevice: cuda\ninputs:\n")
	dtypes := []string{"uint8", "int16", "float32", "float64", "bool", "bfloat16"}
	for i := range n {
		fmt.Fprintf(&b, "  key_%04d: {shape: [%d, 4], dtype: %s, file: k%04d.npy}\n", i, i%7+1, dtypes[i%len(dtypes)], i)
	}
	return []byte(b.String())
}

func generate(tb testing.TB, n int) []byte { return generateSchema(tb, "many.yaml", manyKeys(n)) }

// generateSchema returns the loader generated from the schema text, with
// no overrides; file names it.
func generateSchema(tb testing.TB, file string, text []byte) []byte {
	tb.Helper()
	ds, err := schema.Parse(file, text)
	if err != nil {
		tb.Fatal(err)
	}
	p, err := NewPlan(ds, Overrides{})
	if err != nil {
		tb.Fatal(err)
	}
	src, err := Generate(p, file)
	if err != nil {
		tb.Fatal(err)
	}
	return src
}

// TestOutputGrowsLinearly: the generated code per key is the same for 50
// and 500 keys (within 2%), so output size is linear in the number of keys.
func TestOutputGrowsLinearly(t *testing.T) {
	s50, s100, s500 := len(generate(t, 50)), len(generate(t, 100)), len(generate(t, 500))
	perKeyLow := float64(s100-s50) / 50
	perKeyHigh := float64(s500-s100) / 400
	if r := perKeyHigh / perKeyLow; r < 0.98 || r > 1.02 {
		t.Errorf("bytes per key: %.0f (50->100 keys) vs %.0f (100->500 keys); not linear", perKeyLow, perKeyHigh)
	}
}

// BenchmarkGenerate times parse -> plan -> generate (gofmt included) for a
// schema of 500 keys, and reports the output size per key.
func BenchmarkGenerate(b *testing.B) {
	for _, n := range []int{50, 500} {
		b.Run(fmt.Sprintf("keys=%d", n), func(b *testing.B) {
			var size int
			for b.Loop() {
				size = len(generate(b, n))
			}
			b.ReportMetric(float64(size)/float64(n), "bytes/key")
		})
	}
}
