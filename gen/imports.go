package gen

import (
	"bytes"
	"fmt"
	"go/format"
	"go/parser"
	"go/token"
	"strings"
)

// groupImports puts the standard library's imports of the gofmt'd file src
// in a group of their own ahead of the others, as goimports does (jennifer
// writes them all in one block).
func groupImports(src []byte) ([]byte, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, parser.ImportsOnly)
	if err != nil {
		return nil, fmt.Errorf("parse generated imports: %w", err)
	}
	if len(f.Decls) == 0 {
		return src, nil
	}
	decl := f.Decls[0]
	var std, other []string
	for _, imp := range f.Imports {
		line := imp.Path.Value
		if imp.Name != nil {
			line = imp.Name.Name + " " + line
		}
		if path := strings.Trim(imp.Path.Value, `"`); strings.Contains(strings.SplitN(path, "/", 2)[0], ".") {
			other = append(other, line)
		} else {
			std = append(std, line)
		}
	}
	if len(std) == 0 || len(other) == 0 {
		return src, nil
	}
	var block bytes.Buffer
	block.WriteString("import (\n")
	for _, line := range std {
		block.WriteString("\t" + line + "\n")
	}
	block.WriteString("\n")
	for _, line := range other {
		block.WriteString("\t" + line + "\n")
	}
	block.WriteString(")")
	start, end := fset.Position(decl.Pos()).Offset, fset.Position(decl.End()).Offset
	out := append(append(append([]byte{}, src[:start]...), block.Bytes()...), src[end:]...)
	return format.Source(out)
}
