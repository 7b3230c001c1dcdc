package gen

import (
	"go/token"
	"unicode"

	"github.com/loadergen/loadergen/schema"
)

// names are the identifiers generated for one dataset.
type names struct {
	prefix string // exported prefix: CellMap
	local  string // unexported prefix: cellMap
}

func newNames(ds *schema.Dataset) names {
	return names{prefix: ds.Name, local: lowerInitialism(ds.Name)}
}

func (n names) exported(suffix string) string   { return n.prefix + suffix }
func (n names) unexported(suffix string) string { return n.local + suffix }

// keyNames are the identifiers generated for one key.
type keyNames struct {
	Go    string // exported: EmRaw (field of the batch, Read<Go>, <Go>Data)
	view  string // unexported field holding the typed view: emRaw
	elems string // constant: elements per sample, cellMapEmRawElems
	read  string // loader method filling one sample: readEmRaw
}

func (n names) key(k schema.Key) keyNames {
	view := lowerInitialism(k.GoName)
	if token.IsKeyword(view) {
		view += "_"
	}
	return keyNames{Go: k.GoName, view: view, elems: n.unexported(k.GoName + "Elems"), read: "read" + k.GoName}
}

// lowerInitialism lowers the leading upper-case run of an exported name, as
// Go style writes initialisms: CellMap -> cellMap, URLSet -> urlSet, ID -> id.
func lowerInitialism(s string) string {
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
