package gen

import (
	"flag"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
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

// articleErrors are article-name mismatches in prose: "a" before a word
// that starts with a vowel letter ("a EMSource", whatever follows), and
// "an" before a capitalised word that starts with a consonant letter other
// than H ("an CellMapSource"; acronyms such as "an NPY" read as letters,
// and H words such as "an Hour" can be right, so those are not decidable).
var articleErrors = regexp.MustCompile(`\ba [AEIOU]\w*|\ban [B-DF-GJ-NP-TV-Z][a-z]\w*`)

// commentArticles returns the article mismatches in the comments of the Go
// source src: each comment group's text with its line breaks and
// indentation collapsed to single spaces, so that an article at the end of
// one comment line and a name at the start of the next are caught too.
func commentArticles(t *testing.T, name string, src []byte) []string {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), name, src, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, cg := range f.Comments {
		text := strings.Join(strings.Fields(cg.Text()), " ")
		found = append(found, articleErrors.FindAllString(text, -1)...)
	}
	return found
}

// TestArticles: generated comments never put "a" before a generated name
// that starts with a vowel ("a EMSource"), even across a comment's line
// break. It checks the golden outputs (golden/streams's EM prefix) and
// every golden schema renamed to vowel-initial names, so that every
// emitter's comments meet a vowel-initial name and a consonant-initial one.
func TestArticles(t *testing.T) {
	outputs, err := filepath.Glob(filepath.Join("..", "golden", "*", "*_loader.go"))
	if err != nil || len(outputs) == 0 {
		t.Fatalf("no golden outputs: %v", err)
	}
	for _, path := range outputs {
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if m := commentArticles(t, path, src); len(m) > 0 {
			t.Errorf("%s: %q", path, m)
		}
	}
	schemas, err := filepath.Glob(filepath.Join("..", "golden", "*", "*.yaml"))
	if err != nil || len(schemas) == 0 {
		t.Fatalf("no golden schemas: %v", err)
	}
	for _, path := range schemas {
		for _, name := range []string{"EM", "Image", "Ulna"} {
			ds, err := schema.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			ds.Name = name
			p, err := NewPlan(ds, Overrides{})
			if err != nil {
				t.Fatal(err)
			}
			src, err := Generate(p, "x.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if m := commentArticles(t, path, src); len(m) > 0 {
				t.Errorf("%s named %s: %q", path, name, m)
			}
		}
	}
}

// TestArticlesAcrossLines: the check catches an article and a name on two
// comment lines, as "filled in one call by a\n// EMSamplesReader" once
// was, and passes right ones.
func TestArticlesAcrossLines(t *testing.T) {
	for src, want := range map[string][]string{
		"package p\n\n// EMSamples are filled in one call by a\n// EMSamplesReader. Every key.\nvar x int\n": {"a EMSamplesReader"},
		"package p\n\n// An Index is an\n//\tCellMapSource of a Loader.\nvar x int\n":                        {"an CellMapSource"},
		"package p\n\n// It is a CellMapSource, an EMSource, an NPY file or a\n// plain loop.\nvar x int\n":  nil,
	} {
		if got := commentArticles(t, "p.go", []byte(src)); !slices.Equal(got, want) {
			t.Errorf("%q: found %q, want %q", src, got, want)
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
