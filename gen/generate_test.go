package gen

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/volume/volumespec"
)

// TestRuntimeConsts: every dtype, role and priority a plan holds, a ragged
// key's overflow rule and a volume spec's alignment are generated as the
// name of a constant that their package declares.
func TestRuntimeConsts(t *testing.T) {
	inRuntime, inVolume := constants(t, "../runtime"), constants(t, "../runtime/volume")
	values := []fmt.Stringer{runtime.Input, runtime.Target, runtime.High, runtime.Normal, runtime.Low}
	for _, d := range runtime.DTypes() {
		values = append(values, d)
	}
	for _, v := range values {
		code := fmt.Sprintf("%#v", new(emitter).rtConst(v))
		if name, ok := strings.CutPrefix(code, "runtime."); !ok || !inRuntime[name] {
			t.Errorf("%T %v is generated as %s, which runtime does not declare", v, v, code)
		}
	}
	for _, o := range []runtime.Overflow{runtime.OverflowError, runtime.OverflowTruncate} {
		if name := constName("Overflow", o); !inRuntime[name] {
			t.Errorf("overflow %v is generated as runtime.%s, which runtime does not declare", o, name)
		}
	}
	for _, a := range []volumespec.Align{volumespec.AlignExact, volumespec.AlignNearest} {
		if name := constName("Align", a); !inVolume[name] {
			t.Errorf("align %v is generated as volume.%s, which runtime/volume does not declare", a, name)
		}
	}
}

// constants returns the names of the constants the package in dir
// declares.
func constants(t *testing.T, dir string) map[string]bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	declared := map[string]bool{}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range f.Decls {
			if d, ok := d.(*ast.GenDecl); ok && d.Tok == token.CONST {
				for _, s := range d.Specs {
					for _, id := range s.(*ast.ValueSpec).Names {
						declared[id.Name] = true
					}
				}
			}
		}
	}
	return declared
}
