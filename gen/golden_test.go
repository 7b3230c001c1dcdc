package gen

import (
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loadergen/loadergen/internal/outfile"
	"github.com/loadergen/loadergen/schema"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// TestGolden regenerates golden/<case>/<case>_loader.go from every
// testdata/<case>.yaml and compares. The golden packages are compiled by
// go build ./... and run by their own hand-written tests.
func TestGolden(t *testing.T) {
	schemas, err := filepath.Glob(filepath.Join("..", "testdata", "*.yaml"))
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
