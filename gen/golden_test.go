package gen

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode"

	"github.com/google/go-cmp/cmp"

	"github.com/loadergen/loadergen/internal/outfile"
	"github.com/loadergen/loadergen/schema"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestGolden regenerates golden/<case>/<case>_loader.go from the schema
// next to it, golden/<case>/<case>.yaml, and compares (one directory per
// case, as sqlc keeps them). The golden packages are compiled by go build
// ./... and run by their own hand-written tests.
func TestGolden(t *testing.T) {
	schemas, err := filepath.Glob(filepath.Join("..", "golden", "*", "*.yaml"))
	if err != nil || len(schemas) < 4 {
		t.Fatalf("found %d golden schemas (%v), want at least 4", len(schemas), err)
	}
	for _, path := range schemas {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			ds, err := schema.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			p, err := NewPlan(ds, Overrides{})
			if err != nil {
				t.Fatal(err)
			}
			out := filepath.Join("..", "golden", name, name+"_loader.go")
			got, err := Generate(p, SourcePath(path, out))
			if err != nil {
				t.Fatal(err)
			}
			if *update {
				if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
					t.Fatal(err)
				}
				if _, err := outfile.Write(out, got); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(out)
			if err != nil {
				t.Fatalf("%v (run go test ./gen -update)", err)
			}
			if diff := cmp.Diff(string(want), string(got)); diff != "" {
				t.Errorf("%s is stale (-want +got); run go test ./gen -update:\n%s", out, diff)
			}
		})
	}
}

// TestArticles: generated comments never put "a" before a generated name
// that starts with a vowel ("a EMSource"); golden/streams's EM prefix
// exercises it.
func TestArticles(t *testing.T) {
	outputs, err := filepath.Glob(filepath.Join("..", "golden", "*", "*_loader.go"))
	if err != nil || len(outputs) == 0 {
		t.Fatalf("no golden outputs: %v", err)
	}
	article := regexp.MustCompile(`\ba [AEIOU][A-Za-z]*(Source|Loader|Batch|Files|Sample)\b`)
	for _, path := range outputs {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if m := article.Find(src); m != nil {
			t.Errorf("%s: %q", path, m)
		}
	}
}

// TestErrorStrings: the generated file's error strings start in lower case
// (staticcheck's ST1005), with the package name as Go errors do.
func TestErrorStrings(t *testing.T) {
	outputs, err := filepath.Glob(filepath.Join("..", "golden", "*", "*_loader.go"))
	if err != nil || len(outputs) == 0 {
		t.Fatalf("no golden outputs: %v", err)
	}
	for _, path := range outputs {
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		found := 0
		ast.Inspect(f, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok || len(call.Args) == 0 {
				return true
			}
			sel, ok := call.Fun.(*ast.SelectorExpr)
			lit, isLit := call.Args[0].(*ast.BasicLit)
			if !ok || !isLit || lit.Kind != token.STRING || !(sel.Sel.Name == "New" || sel.Sel.Name == "Errorf") {
				return true
			}
			found++
			if s, _ := strconv.Unquote(lit.Value); s == "" || !unicode.IsLower([]rune(s)[0]) || !strings.HasPrefix(s, f.Name.Name+": ") {
				t.Errorf("%s: error string %s does not start with %q", path, lit.Value, f.Name.Name+": ")
			}
			return true
		})
		if found == 0 {
			t.Errorf("%s: no error strings found", path)
		}
	}
}
