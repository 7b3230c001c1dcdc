package gen

import "github.com/dave/jennifer/jen"

// wrapper is a generated source type that holds a runtime source
// (records.Source, volume.Source) as its field src: the record and volume
// emitters describe theirs as this table, and render renders the type,
// the end of its opener and its methods, each a call of src's own.
type wrapper struct {
	name    string   // the type, exported: CellMapVolumes
	recv    string   // the methods' receiver: v
	pkg     string   // the import path of the package whose Source src is
	doc     []string // the type's doc comment, a line each
	methods []forward
}

// forward is a method of a wrapper that calls src's method of the same
// name with args and returns what it returns.
type forward struct {
	name    string
	doc     []string
	params  []jen.Code
	results jen.Code // jen.Int(), jen.Params(...) for several; nil for none
	args    []jen.Code
}

// typeDecl renders
//
//	type CellMapVolumes struct {
//		src *volume.Source
//	}
func (w wrapper) typeDecl(f *jen.File) {
	comments(f, w.doc)
	f.Type().Id(w.name).Struct(jen.Id("src").Op("*").Qual(w.pkg, "Source"))
}

// opened renders the end of the opener Open<name>, after what prepares
// the call:
//
//	src, err := volume.Open(cellMapVolumeSpec, rows, slog.Default())
//	if err != nil {
//		return nil, fmt.Errorf("cellmap: OpenCellMapVolumes: %w", err)
//	}
//	return &CellMapVolumes{src: src}, nil
func (w wrapper) opened(errPrefix string, args ...jen.Code) []jen.Code {
	return []jen.Code{
		jen.List(jen.Id("src"), jen.Err()).Op(":=").Qual(w.pkg, "Open").Call(append(args, jen.Qual("log/slog", "Default").Call())...),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(jen.Lit(errPrefix+"Open"+w.name+": %w"), jen.Err()))),
		jen.Return(jen.Op("&").Id(w.name).Values(jen.Id("src").Op(":").Id("src")), jen.Nil()),
	}
}

// methodDecls renders the methods, in order:
//
//	func (v *CellMapVolumes) Len() int {
//		return v.src.Len()
//	}
func (w wrapper) methodDecls(f *jen.File) {
	for _, m := range w.methods {
		comments(f, m.doc)
		call := jen.Id(w.recv).Dot("src").Dot(m.name).Call(m.args...)
		decl := f.Func().Params(jen.Id(w.recv).Op("*").Id(w.name)).Id(m.name).Params(m.params...)
		if m.results == nil {
			decl.Block(call)
			continue
		}
		decl.Add(m.results).Block(jen.Return(call))
	}
}

// comments renders each line as a comment.
func comments(f *jen.File, lines []string) {
	for _, l := range lines {
		f.Comment(l)
	}
}
