package gen

import "github.com/loadergen/loadergen/schema"

// names are the identifiers generated for one dataset.
type names struct {
	prefix string // exported prefix: CellMap
	local  string // unexported prefix: cellMap
}

func newNames(ds *schema.Dataset) names {
	return names{prefix: ds.Name, local: schema.Unexport(ds.Name)}
}

func (n names) exported(suffix string) string   { return n.prefix + suffix }
func (n names) unexported(suffix string) string { return n.local + suffix }

// keyNames are the identifiers generated for one key. The schema derives
// and checks the key's names (schema.GoName, schema.ViewName), so that
// they cannot collide.
type keyNames struct {
	Go    string // exported: EmRaw (field of the batch, sample and samples; <Go>Data)
	view  string // unexported field holding the typed view: emRaw
	elems string // constant: elements per sample, cellMapEmRawElems
}

func (n names) key(k schema.Key) keyNames {
	return keyNames{Go: k.GoName, view: schema.ViewName(k.GoName), elems: n.unexported(k.GoName + "Elems")}
}

// lengthsKey are the identifiers of the lengths of ragged key k: the batch
// field TokensLengths, its view tokensLengths, cellMapTokensLengthsElems.
func (n names) lengthsKey(k schema.Key) keyNames {
	g := schema.LengthsName(k.GoName)
	return keyNames{Go: g, view: schema.ViewName(g), elems: n.unexported(g + "Elems")}
}
