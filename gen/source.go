package gen

import (
	"path/filepath"
	"strconv"
	"strings"
	"unicode"
)

// SourcePath is the schema's path as the header of the generated file at out
// names it: relative to out's directory when possible, slash-separated, so
// the output does not depend on the working directory.
func SourcePath(schemaPath, out string) string {
	s, errS := filepath.Abs(schemaPath)
	o, errO := filepath.Abs(out)
	if errS == nil && errO == nil {
		if rel, err := filepath.Rel(filepath.Dir(o), s); err == nil {
			return filepath.ToSlash(rel)
		}
	}
	return filepath.ToSlash(schemaPath)
}

// commentSafe returns s unchanged when it is plain printable text, and
// Go-quoted otherwise, so that no string can end a comment line early.
func commentSafe(s string) string {
	if strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) || r == '"' }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}
