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
)

// TestRuntimeConsts: every dtype, role and priority a plan holds is
// generated as the name of a constant that runtime declares.
func TestRuntimeConsts(t *testing.T) {
	files, err := filepath.Glob("../runtime/*.go")
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
	values := []fmt.Stringer{runtime.Input, runtime.Target, runtime.High, runtime.Normal, runtime.Low}
	for _, d := range runtime.DTypes() {
		values = append(values, d)
	}
	for _, v := range values {
		code := fmt.Sprintf("%#v", new(emitter).rtConst(v))
		if name, ok := strings.CutPrefix(code, "runtime."); !ok || !declared[name] {
			t.Errorf("%T %v is generated as %s, which runtime does not declare", v, v, code)
		}
	}
}
