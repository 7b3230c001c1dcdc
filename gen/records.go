package gen

import (
	"fmt"

	"github.com/dave/jennifer/jen"

	"github.com/loadergen/loadergen/runtime/images/imagespec"
)

const (
	recordsPath = "github.com/loadergen/loadergen/runtime/records"
	imagesPath  = "github.com/loadergen/loadergen/runtime/images"
)

// records renders the records source of a schema whose keys read members
// of WebDataset shards or class folders (docs/IMAGES.md): its spec,
// Open<Name>Records and its methods.
func (g *emitter) records(f *jen.File) {
	g.recordSpec(f)
	w := g.recordsWrapper()
	w.typeDecl(f)
	g.openRecords(f, w)
	w.methodDecls(f)
}

// recordSpec renders
//
//	var cellMapRecordSpec = records.Spec{
//		Shards: "train-{000000..001023}.tar",
//		Keys: []records.Key{{
//			Name:   "image",
//			Member: "jpg",
//			DType:  runtime.Float32,
//			Shape:  []int{3, 224, 224},
//			Image: &images.Transform{
//				Crop:  images.RandomResized,
//				Scale: [2]float64{0.08, 1},
//				...
//			},
//		}, {
//			Name:     "mask",
//			...
//			Geometry: "image",
//		}},
//		Seed: cellMapPlan.Loader.Seed,
//	}
//
// leaving out the fields that are zero.
func (g *emitter) recordSpec(f *jen.File) {
	keys := make([]jen.Code, len(g.keys))
	for i, k := range g.keys {
		sk := g.schemaKey(k.Name)
		fields := []field{
			{"Name", jen.Lit(k.Name)},
			{"Member", jen.Lit(sk.Member)},
			{"DType", g.rtConst(k.DType)},
			{"Shape", ints(sk.Shape)},
		}
		if sk.Image != nil {
			fields = append(fields, field{"Image", jen.Op("&").Qual(imagesPath, "Transform").Add(transform(sk.Image))})
		}
		if sk.Geometry != "" {
			fields = append(fields, field{"Geometry", jen.Lit(sk.Geometry)})
		}
		keys[i] = literal(fields...)
	}
	r := g.ds.Records
	fields := []field{{"Shards", jen.Lit(r.Shards)}}
	if r.Folder != "" {
		fields = []field{{"Folder", jen.Lit(r.Folder)}}
	}
	if r.SkipUnknown {
		fields = append(fields, field{"SkipUnknown", jen.True()})
	}
	fields = append(fields,
		field{"Keys", jen.Index().Qual(recordsPath, "Key").Values(keys...)},
		field{"Seed", jen.Id(g.n.unexported("Plan")).Dot("Loader").Dot("Seed")})
	name := g.n.unexported("RecordSpec")
	f.Commentf("%s is what the schema says of %s's records.", name, g.ds.Name)
	f.Var().Id(name).Op("=").Qual(recordsPath, "Spec").Add(literal(fields...))
}

// transform renders an image key's transform as a literal, leaving out
// the fields that are zero.
func transform(t *imagespec.Transform) *jen.Statement {
	var fields []field
	if t.Layout != imagespec.CHW {
		fields = append(fields, field{"Layout", jen.Qual(imagesPath, "HWC")})
	}
	switch t.Crop {
	case imagespec.RandomResized:
		fields = append(fields,
			field{"Crop", jen.Qual(imagesPath, "RandomResized")},
			field{"Scale", pair(t.Scale)},
			field{"Ratio", pair(t.Ratio)})
	case imagespec.Center:
		fields = append(fields,
			field{"Crop", jen.Qual(imagesPath, "Center")},
			field{"Size", jen.Lit(t.Size)})
	}
	if t.Flip != 0 {
		fields = append(fields, field{"Flip", jen.Lit(t.Flip)})
	}
	if t.Mean != nil {
		fields = append(fields, field{"Mean", floats(t.Mean)}, field{"Std", floats(t.Std)})
	}
	return literal(fields...)
}

// pair renders [2]float64{lo, hi}.
func pair(v [2]float64) *jen.Statement {
	return jen.Index(jen.Lit(2)).Float64().Values(jen.Lit(v[0]), jen.Lit(v[1]))
}

// recordsWrapper is the records source type: CellMapRecords, which holds
// a records.Source, and its methods: Len, Read, Crop, Name, Classes (for
// folders), ReadAhead (for shards) and Close, such as
//
//	func (r *CellMapRecords) Read(s *CellMapSample) error {
//		return r.src.Read(s.Ctx, s.Rand, s.Index, runtime.Bytes(s.Image), runtime.Bytes(s.Label))
//	}
func (g *emitter) recordsWrapper() wrapper {
	name, folder := g.n.exported("Records"), g.ds.Records.Folder != ""
	w := wrapper{name: name, recv: "r", pkg: recordsPath}
	if folder {
		w.doc = []string{
			fmt.Sprintf("%s reads the images of the class folders under %s, each with its", name, g.ds.Records.Folder),
			"class's index, cropped as the schema says. It implements " + g.n.exported("Source") + ".",
		}
	} else {
		w.doc = []string{
			fmt.Sprintf("%s reads the samples of the WebDataset shards %s,", name, g.ds.Records.Shards),
			"each key from its member, images cropped as the schema says. It implements",
			g.n.exported("Source") + ".",
		}
	}
	read := []jen.Code{jen.Id("s").Dot("Ctx"), jen.Id("s").Dot("Rand"), jen.Id("s").Dot("Index")}
	for _, k := range g.keys {
		read = append(read, g.rt("Bytes").Call(jen.Id("s").Dot(k.Go)))
	}
	epochIndex := []jen.Code{jen.Id("epoch"), jen.Id("index")}
	w.methods = []forward{
		{name: "Len", doc: []string{"Len returns the number of samples."}, results: jen.Int()},
		{name: "Read", doc: []string{
			"Read decodes sample s.Index's members, draws each image's crop and flip from",
			"s.Rand, and writes every key into s. A remote shard's read stops once",
			"s.Ctx is done.",
		}, params: []jen.Code{jen.Id("s").Op("*").Id(g.n.exported("Sample"))}, results: jen.Error(), args: read},
		{name: "Crop", doc: []string{
			"Crop returns the crop rectangle and flip that Read draws for sample index of",
			"epoch, one per key in plan order (the zero Crop for keys that are no image),",
			"whatever the number of workers or ranks. It reads the images' headers.",
		}, params: []jen.Code{jen.List(jen.Id("epoch"), jen.Id("index")).Int()}, results: jen.Params(jen.Index().Qual(imagesPath, "Crop"), jen.Error()), args: epochIndex},
	}
	name0 := forward{name: "Name", params: []jen.Code{jen.Id("index").Int()}, results: jen.Params(jen.List(jen.Id("file"), jen.Id("key")).String()), args: []jen.Code{jen.Id("index")}}
	closer := forward{name: "Close", results: jen.Error()}
	if folder {
		name0.doc = []string{
			"Name returns where sample index (in [0, Len())) comes from: the image's path,",
			"as ImageFolder's samples[index][0], and its path under the folder.",
		}
		closer.doc = []string{"Close does nothing: the folder's images are opened as each is read."}
		w.methods = append(w.methods, name0, forward{name: "Classes",
			doc:     []string{"Classes returns the class folders' names, sorted: label i is Classes()[i]."},
			results: jen.Index().String()})
	} else {
		name0.doc = []string{
			"Name returns where sample index (in [0, Len())) comes from: its shard (its",
			"URL when remote) and its key there, WebDataset's __url__ and __key__.",
		}
		closer.doc = []string{"Close closes the shards, and stops what is read ahead of remote ones."}
		w.methods = append(w.methods, name0, forward{name: "ReadAhead", doc: []string{
			"ReadAhead starts fetching samples indices of epoch from shards on S3 or a",
			"web server, each by one ranged request; Read then finds them fetched. The",
			"loader calls it for the batches after the ones being filled.",
		}, params: []jen.Code{jen.Id("epoch").Int(), jen.Id("indices").Index().Int()}, args: []jen.Code{jen.Id("epoch"), jen.Id("indices")}})
	}
	w.methods = append(w.methods, closer)
	return w
}

// openRecords renders
//
//	func OpenCellMapRecords(root string) (*CellMapRecords, error) {
//		src, err := records.Open(cellMapRecordSpec, root, slog.Default())
//		if err != nil {
//			return nil, fmt.Errorf("cellmap: OpenCellMapRecords: %w", err)
//		}
//		return &CellMapRecords{src: src}, nil
//	}
func (g *emitter) openRecords(f *jen.File, w wrapper) {
	if g.ds.Records.Folder != "" {
		f.Commentf("Open%s lists the class folders under root: the classes are the", w.name)
		f.Comment("directories, sorted, and a sample is a .jpg, .jpeg or .png file under one")
		if r := g.ds.Records; r.SkipUnknown {
			f.Comment("(other files are skipped). It logs what it found with slog's default logger.")
		} else {
			f.Comment("(other files are an error, but for dotfiles such as .DS_Store, which are")
			f.Comment("skipped). It logs what it found with slog's default logger.")
		}
	} else {
		f.Commentf("Open%s indexes the shards under root from their tar headers: a", w.name)
		f.Comment("sample is the adjacent members sharing a key, and each must hold every member")
		f.Comment("the keys read, once. It logs what it found with slog's default logger.")
	}
	f.Func().Id("Open"+w.name).Params(jen.Id("root").String()).Params(jen.Op("*").Id(w.name), jen.Error()).Block(
		w.opened(g.errPrefix(), jen.Id(g.n.unexported("RecordSpec")), jen.Id("root"))...)
}
