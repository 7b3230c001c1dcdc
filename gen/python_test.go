package gen

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loadergen/loadergen/internal/outfile"
	"github.com/loadergen/loadergen/schema"
)

// golden compares got with file, rewriting it first with -update.
func golden(t *testing.T, file string, got []byte) {
	t.Helper()
	if *update {
		if _, err := outfile.Write(file, got); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(file)
	if err != nil {
		t.Fatalf("%v (run go test ./gen -update)", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s is stale (-want +got); run go test ./gen -update:\n%s", file, diff)
	}
}

// TestGoldenPython renders the Python module of every golden case with a
// generated source, golden/<case>/<case>.py, and the main package of the
// library that serves them all, testdata/python/library/main.go (make
// test vets it: a package under testdata, which ./... leaves out); a
// case without a source has no module and says why.
func TestGoldenPython(t *testing.T) {
	schemas, err := filepath.Glob(filepath.Join("..", "golden", "*", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var bridged []Bridged
	for _, path := range schemas {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		ds, err := schema.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		p, err := NewPlan(ds, Overrides{})
		if err != nil {
			t.Fatal(err)
		}
		importPath := "github.com/loadergen/loadergen/golden/" + name
		mod, err := PythonModule(p, importPath, name+".yaml")
		if _, serr := PythonSource(p); serr != nil {
			if err == nil || !strings.Contains(err.Error(), "has no generated source") {
				t.Errorf("%s: PythonModule of a dataset without a source: %v", name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		golden(t, filepath.Join("..", "golden", name, name+".py"), mod)
		bridged = append(bridged, Bridged{ImportPath: importPath, Plan: p})
	}
	if len(bridged) < 4 {
		t.Fatalf("%d golden cases have a source, want at least 4", len(bridged))
	}
	lib, err := PythonLibrary(bridged)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, filepath.Join("testdata", "python", "library", "main.go"), lib)
	if _, err := PythonLibrary(append(bridged, bridged[0])); err == nil || !strings.Contains(err.Error(), "two packages are named") {
		t.Errorf("two datasets of one module name: %v", err)
	}
}

// TestPythonAttr: keys become attributes Python can name.
func TestPythonAttr(t *testing.T) {
	for name, want := range map[string]string{"raw": "raw", "tokens.lengths": "tokens_lengths", "class": "class_", "indices": "indices_", "numpy": "numpy_"} {
		if got := pythonAttr(name); got != want {
			t.Errorf("pythonAttr(%q) = %q, want %q", name, got, want)
		}
	}
}
