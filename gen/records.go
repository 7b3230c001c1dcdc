package gen

import (
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
	g.recordsType(f)
	g.openRecords(f)
	g.recordsMethods(f)
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

// recordsType renders
//
//	type CellMapRecords struct {
//		src *records.Source
//	}
func (g *emitter) recordsType(f *jen.File) {
	name := g.n.exported("Records")
	r := g.ds.Records
	if r.Folder != "" {
		f.Commentf("%s reads the images of the class folders under %s, each with its", name, r.Folder)
		f.Comment("class's index, cropped as the schema says. It implements " + g.n.exported("Source") + ".")
	} else {
		f.Commentf("%s reads the samples of the WebDataset shards %s,", name, r.Shards)
		f.Comment("each key from its member, images cropped as the schema says. It implements")
		f.Comment(g.n.exported("Source") + ".")
	}
	f.Type().Id(name).Struct(jen.Id("src").Op("*").Qual(recordsPath, "Source"))
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
func (g *emitter) openRecords(f *jen.File) {
	name := g.n.exported("Records")
	if g.ds.Records.Folder != "" {
		f.Commentf("Open%s lists the class folders under root: the classes are the", name)
		f.Comment("directories, sorted, and a sample is a .jpg, .jpeg or .png file under one")
		if r := g.ds.Records; r.SkipUnknown {
			f.Comment("(other files are skipped). It logs what it found with slog's default logger.")
		} else {
			f.Comment("(other files are an error, but for dotfiles such as .DS_Store, which are")
			f.Comment("skipped). It logs what it found with slog's default logger.")
		}
	} else {
		f.Commentf("Open%s indexes the shards under root from their tar headers: a", name)
		f.Comment("sample is the adjacent members sharing a key, and each must hold every member")
		f.Comment("the keys read, once. It logs what it found with slog's default logger.")
	}
	f.Func().Id("Open"+name).Params(jen.Id("root").String()).Params(jen.Op("*").Id(name), jen.Error()).Block(
		jen.List(jen.Id("src"), jen.Err()).Op(":=").Qual(recordsPath, "Open").Call(jen.Id(g.n.unexported("RecordSpec")), jen.Id("root"), jen.Qual("log/slog", "Default").Call()),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(jen.Lit(g.errPrefix()+"Open"+name+": %w"), jen.Err()))),
		jen.Return(jen.Op("&").Id(name).Values(jen.Id("src").Op(":").Id("src")), jen.Nil()),
	)
}

// recordsMethods renders Len, Read, Crop, Name, Classes (for folders),
// ReadAhead (for shards) and Close of the records source:
//
//	func (r *CellMapRecords) Read(s *CellMapSample) error {
//		return r.src.Read(s.Ctx, s.Rand, s.Index, runtime.Bytes(s.Image), runtime.Bytes(s.Label))
//	}
func (g *emitter) recordsMethods(f *jen.File) {
	recv := func() *jen.Statement { return jen.Func().Params(jen.Id("r").Op("*").Id(g.n.exported("Records"))) }
	f.Comment("Len returns the number of samples.")
	f.Add(recv()).Id("Len").Params().Int().Block(jen.Return(jen.Id("r").Dot("src").Dot("Len").Call()))

	args := []jen.Code{jen.Id("s").Dot("Ctx"), jen.Id("s").Dot("Rand"), jen.Id("s").Dot("Index")}
	for _, k := range g.keys {
		args = append(args, g.rt("Bytes").Call(jen.Id("s").Dot(k.Go)))
	}
	f.Comment("Read decodes sample s.Index's members, draws each image's crop and flip from")
	f.Comment("s.Rand, and writes every key into s. A remote shard's read stops once")
	f.Comment("s.Ctx is done.")
	f.Add(recv()).Id("Read").Params(jen.Id("s").Op("*").Id(g.n.exported("Sample"))).Error().Block(
		jen.Return(jen.Id("r").Dot("src").Dot("Read").Call(args...)))

	f.Comment("Crop returns the crop rectangle and flip that Read draws for sample index of")
	f.Comment("epoch, one per key in plan order (the zero Crop for keys that are no image),")
	f.Comment("whatever the number of workers or ranks. It reads the images' headers.")
	f.Add(recv()).Id("Crop").Params(jen.List(jen.Id("epoch"), jen.Id("index")).Int()).Params(jen.Index().Qual(imagesPath, "Crop"), jen.Error()).Block(
		jen.Return(jen.Id("r").Dot("src").Dot("Crop").Call(jen.Id("epoch"), jen.Id("index"))))

	if g.ds.Records.Folder != "" {
		f.Comment("Name returns where sample index (in [0, Len())) comes from: the image's path,")
		f.Comment("as ImageFolder's samples[index][0], and its path under the folder.")
	} else {
		f.Comment("Name returns where sample index (in [0, Len())) comes from: its shard (its")
		f.Comment("URL when remote) and its key there, WebDataset's __url__ and __key__.")
	}
	f.Add(recv()).Id("Name").Params(jen.Id("index").Int()).Params(jen.List(jen.Id("file"), jen.Id("key")).String()).Block(
		jen.Return(jen.Id("r").Dot("src").Dot("Name").Call(jen.Id("index"))))

	if g.ds.Records.Folder != "" {
		f.Comment("Classes returns the class folders' names, sorted: label i is Classes()[i].")
		f.Add(recv()).Id("Classes").Params().Index().String().Block(jen.Return(jen.Id("r").Dot("src").Dot("Classes").Call()))
	} else {
		f.Comment("ReadAhead starts fetching samples indices of epoch from shards on S3 or a")
		f.Comment("web server, each by one ranged request; Read then finds them fetched. The")
		f.Comment("loader calls it for the batches after the ones being filled.")
		f.Add(recv()).Id("ReadAhead").Params(jen.Id("epoch").Int(), jen.Id("indices").Index().Int()).Block(
			jen.Id("r").Dot("src").Dot("ReadAhead").Call(jen.Id("epoch"), jen.Id("indices")))
	}

	if g.ds.Records.Folder != "" {
		f.Comment("Close does nothing: the folder's images are opened as each is read.")
	} else {
		f.Comment("Close closes the shards, and stops what is read ahead of remote ones.")
	}
	f.Add(recv()).Id("Close").Params().Error().Block(jen.Return(jen.Id("r").Dot("src").Dot("Close").Call()))
}
