package gen

import (
	"go/parser"
	"go/token"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/schemaseeds"
	"github.com/loadergen/loadergen/schema"
)

// FuzzGenerate runs the whole pipeline on arbitrary schemas. Every input
// either fails with an error or yields Go source that parses and starts with
// the generated-code header; nothing panics.
func FuzzGenerate(f *testing.F) {
	schemaseeds.Add(f, "..")
	f.Fuzz(func(t *testing.T, data []byte) {
		ds, err := schema.Parse("fuzz.yaml", data)
		if err != nil {
			return
		}
		p, err := NewPlan(ds, Overrides{})
		if err != nil {
			return
		}
		src, err := Generate(p, "fuzz.yaml")
		if err != nil {
			t.Fatalf("a valid plan failed to generate: %v", err)
		}
		if !strings.HasPrefix(string(src), "// "+Header+"\n") {
			t.Fatalf("output does not start with the header:\n%.200s", src)
		}
		if _, err := parser.ParseFile(token.NewFileSet(), "fuzz_loader.go", src, parser.AllErrors); err != nil {
			t.Fatalf("generated code does not parse: %v\n%s", err, src)
		}
	})
}
