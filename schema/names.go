package schema

import (
	"fmt"
	"go/token"
	"strings"
	"unicode"
	"unicode/utf8"
)

// GoName is the CamelCase form of a key name: the name is split at '_',
// empty parts are dropped, and each part's first rune is upper-cased
// (em_raw -> EmRaw).
func GoName(name string) string {
	var b strings.Builder
	for _, part := range strings.Split(name, "_") {
		if part == "" {
			continue
		}
		r, size := utf8.DecodeRuneInString(part)
		b.WriteRune(unicode.ToUpper(r))
		b.WriteString(part[size:])
	}
	return b.String()
}

// Unexport is the unexported form of the exported Go name s, as Go style
// writes initialisms: its leading upper-case run is lowered (CellMap ->
// cellMap, URLSet -> urlSet, ID -> id). The generated code names its
// unexported identifiers with it.
func Unexport(s string) string {
	rs := []rune(s)
	i := 0
	for i < len(rs) && unicode.IsUpper(rs[i]) {
		i++
	}
	switch {
	case i == 0:
		return s
	case i == 1 || i == len(rs):
		// One capital, or all capitals: lower them all.
	default:
		// The last capital of a run starts the next word: URLSet -> urlSet.
		i--
	}
	for j := range i {
		rs[j] = unicode.ToLower(rs[j])
	}
	return string(rs)
}

// ViewName is the unexported batch field that holds the typed view of the
// key with Go name goName (and the file source's field of its .npy file):
// Unexport(goName), with "_" after a Go keyword (Type -> type_).
func ViewName(goName string) string {
	v := Unexport(goName)
	if token.IsKeyword(v) {
		v += "_"
	}
	return v
}

// LengthsName is the Go name of a ragged key's lengths, the batch field of
// its int32 row counts (and, with "Data", their typed view): Tokens ->
// TokensLengths.
func LengthsName(goName string) string {
	return goName + "Lengths"
}

// CheckPackage reports why s cannot be the package clause of a Go file.
func CheckPackage(s string) error {
	switch {
	case token.IsKeyword(s):
		return fmt.Errorf("%s is a Go keyword", quote(s))
	case !token.IsIdentifier(s):
		return fmt.Errorf("%s is not a valid Go identifier", quote(s))
	case s == "_":
		return fmt.Errorf(`"_" is not a valid package name`)
	}
	return nil
}

// CheckName reports why s cannot prefix the exported generated identifiers.
func CheckName(s string) error {
	switch {
	case token.IsKeyword(s):
		return fmt.Errorf("%s is a Go keyword", quote(s))
	case !token.IsIdentifier(s):
		return fmt.Errorf("%s is not a valid Go identifier", quote(s))
	case !token.IsExported(s):
		return fmt.Errorf("%s is not exported (it must start with an upper-case letter)", quote(s))
	}
	return nil
}

// PackageName derives a Go package name from a directory name: lower-case
// letters and digits only (my-data.v2 -> mydatav2). The result may still be
// invalid (say, all digits); CheckPackage tells.
func PackageName(dir string) string {
	return strings.Map(func(r rune) rune {
		r = unicode.ToLower(r)
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return r
		}
		return -1
	}, dir)
}
