package gen

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/schema"
)

// FuzzGenerate runs the whole pipeline on arbitrary schemas. Every input
// either fails with an error or yields Go source that parses and starts with
// the generated-code header; nothing panics.
func FuzzGenerate(f *testing.F) {
	for _, glob := range []string{"../golden/*/*.yaml", "../testdata/errors/*.yaml"} {
		paths, err := filepath.Glob(glob)
		if err != nil {
			f.Fatal(err)
		}
		for _, p := range paths {
			data, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
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
