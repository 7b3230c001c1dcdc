package gen

import (
	"fmt"
	"strings"

	"github.com/dave/jennifer/jen"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/volume/volumespec"
)

// tiles renders the tile source and the prediction writer of a schema
// with tiles: (docs/VOLUMES.md, "Predicting over whole volumes"): its
// tile spec, Open<Name>Tiles with its methods, and
// Create<Name>Predictions with its methods. A schema without crops: gets
// its volume spec here.
func (g *emitter) tiles(f *jen.File) {
	if g.ds.Crops == nil {
		g.volumeSpec(f)
	}
	g.tileSpec(f)
	g.tilesType(f)
	g.openTiles(f)
	g.tilesMethods(f)
	g.predictionsType(f)
	g.createPredictions(f)
	g.predictionsMethods(f)
}

// outputs are the keys predictions are written for: the targets, in plan
// order.
func (g *emitter) outputs() []emitKey {
	var out []emitKey
	for _, k := range g.keys {
		if k.Role == runtime.Target {
			out = append(out, k)
		}
	}
	return out
}

// tileSpec renders
//
//	var cellMapTileSpec = volume.TileSpec{
//		Outputs: []int{1},
//		Bounds:  [][2]float64{{0, 2048}, {0, 8192}, {0, 8192}},
//		Step:    []int{16, 16, 16},
//		Blend:   volume.BlendLast,
//	}
//
// leaving out the fields the schema leaves out.
func (g *emitter) tileSpec(f *jen.File) {
	ts := g.ds.Tiles
	fields := []field{{"Outputs", ints(ts.Outputs)}}
	if ts.Bounds != nil {
		axes := make([]jen.Code, len(ts.Bounds))
		for a, b := range ts.Bounds {
			axes[a] = jen.Values(jen.Lit(b[0]), jen.Lit(b[1]))
		}
		fields = append(fields, field{"Bounds", jen.Index().Index(jen.Lit(2)).Float64().Values(axes...)})
	}
	if ts.Step != nil {
		fields = append(fields, field{"Step", ints(ts.Step)})
	}
	if ts.Blend != volumespec.BlendAverage {
		fields = append(fields, field{"Blend", jen.Qual(volumePath, constName("Blend", ts.Blend))})
	}
	name := g.n.unexported("TileSpec")
	f.Commentf("%s is what the schema says of %s's tiles: the targets are the", name, g.ds.Name)
	f.Comment("outputs, the first sets the grid.")
	f.Var().Id(name).Op("=").Qual(volumePath, "TileSpec").Add(literal(fields...))
}

// tilesType renders
//
//	type CellMapTiles struct {
//		src *volume.Tiles
//	}
func (g *emitter) tilesType(f *jen.File) {
	name := g.n.exported("Tiles")
	f.Commentf("%s reads a fixed grid of tiles of zarr volumes, in order, to predict", name)
	f.Commentf("over: each tile a box of every key, the outputs' abutting or overlapping, the")
	f.Commentf("inputs' around them. It implements %s, read in its order", g.n.exported("Source"))
	f.Comment("(runtime.Sequential): a loader over it neither shuffles nor regroups it.")
	f.Type().Id(name).Struct(jen.Id("src").Op("*").Qual(volumePath, "Tiles"))
}

// openTiles renders
//
//	func OpenCellMapTiles(manifest string) (*CellMapTiles, error) {
//		rows, err := volume.LoadTileManifest(manifest, cellMapVolumeSpec, cellMapTileSpec)
//		if err != nil {
//			return nil, fmt.Errorf("cellmap: OpenCellMapTiles: %w", err)
//		}
//		src, err := volume.OpenTiles(cellMapVolumeSpec, cellMapTileSpec, rows, slog.Default())
//		if err != nil {
//			return nil, fmt.Errorf("cellmap: OpenCellMapTiles: %w", err)
//		}
//		return &CellMapTiles{src: src}, nil
//	}
func (g *emitter) openTiles(f *jen.File) {
	name := g.n.exported("Tiles")
	spec, ts := jen.Id(g.n.unexported("VolumeSpec")), jen.Id(g.n.unexported("TileSpec"))
	fail := jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(jen.Lit(g.errPrefix()+"Open"+name+": %w"), jen.Err())))
	var targets []string
	for _, k := range g.outputs() {
		targets = append(targets, k.Name)
	}
	f.Commentf("Open%s reads the CSV manifest of volumes (a column per key, as for", name)
	f.Commentf("crops; the targets' (%s) may be left out or empty) and opens every array", strings.Join(targets, ", "))
	f.Comment("of every volume. The tiles cover the schema's tiles.bounds, or each volume's")
	f.Comment("first target's array, or where a volume has none its first key's. It logs")
	f.Comment("what it opened with slog's default logger.")
	f.Func().Id("Open"+name).Params(jen.Id("manifest").String()).Params(jen.Op("*").Id(name), jen.Error()).Block(
		jen.List(jen.Id("rows"), jen.Err()).Op(":=").Qual(volumePath, "LoadTileManifest").Call(jen.Id("manifest"), spec, ts),
		fail,
		jen.List(jen.Id("src"), jen.Err()).Op(":=").Qual(volumePath, "OpenTiles").Call(spec, ts, jen.Id("rows"), jen.Qual("log/slog", "Default").Call()),
		fail,
		jen.Return(jen.Op("&").Id(name).Values(jen.Id("src").Op(":").Id("src")), jen.Nil()),
	)
}

// tilesMethods renders Len, Read, Crop, MissingChunks, ReadAhead,
// Sequential and Close of the tile source:
//
//	func (t *CellMapTiles) Read(s *CellMapSample) error {
//		return t.src.Read(s.Ctx, s.Index, runtime.Bytes(s.Raw), runtime.Bytes(s.Labels))
//	}
func (g *emitter) tilesMethods(f *jen.File) {
	recv := func() *jen.Statement { return jen.Func().Params(jen.Id("t").Op("*").Id(g.n.exported("Tiles"))) }
	src := func() *jen.Statement { return jen.Id("t").Dot("src") }
	f.Comment("Len returns the number of tiles: every tile of every volume, or those a")
	f.Comment("resumed prediction left to write.")
	f.Add(recv()).Id("Len").Params().Int().Block(jen.Return(src().Dot("Len").Call()))

	args := g.readArgs(jen.Id("s").Dot("Ctx"), jen.Id("s").Dot("Index"))
	f.Comment("Read copies every key's box of tile s.Index into s; outside an array, and")
	f.Comment("for a target a volume lacks, a key reads as its fill. Remote reads stop")
	f.Comment("once s.Ctx is done.")
	f.Add(recv()).Id("Read").Params(jen.Id("s").Op("*").Id(g.n.exported("Sample"))).Error().Block(
		jen.Return(src().Dot("Read").Call(args...)))

	f.Comment("Crop returns where tile index comes from: its volume and each key's box")
	f.Comment("origin at its level (tiles are not augmented; the epoch does not matter).")
	f.Add(recv()).Id("Crop").Params(jen.List(jen.Id("epoch"), jen.Id("index")).Int()).Add(g.rt("Crop")).Block(
		jen.Return(src().Dot("Crop").Call(jen.Id("epoch"), jen.Id("index"))))

	f.Comment("MissingChunks returns how many chunks the source's reads found not stored.")
	f.Add(recv()).Id("MissingChunks").Params().Int64().Block(jen.Return(src().Dot("MissingChunks").Call()))

	f.Comment("ReadAhead announces the chunks the tiles indices will read.")
	f.Add(recv()).Id("ReadAhead").Params(jen.Id("epoch").Int(), jen.Id("indices").Index().Int()).Block(
		src().Dot("ReadAhead").Call(jen.Id("epoch"), jen.Id("indices")))

	f.Comment("Sequential marks the tiles as read in their order (runtime.Sequential).")
	f.Add(recv()).Id("Sequential").Params().Block()

	f.Comment("Close releases the source.")
	f.Add(recv()).Id("Close").Params().Error().Block(jen.Return(src().Dot("Close").Call()))
}

// predictionsType renders
//
//	type CellMapPredictions struct {
//		w *volume.Predictions
//	}
func (g *emitter) predictionsType(f *jen.File) {
	name := g.n.exported("Predictions")
	var arrays []string
	for _, k := range g.outputs() {
		arrays = append(arrays, k.zarr)
	}
	f.Commentf("%s writes a model's predictions for %s into zarr arrays", name, g.n.exported("Tiles"))
	f.Commentf("beside the raw: at each target's path (%s), an OME-NGFF group whose", strings.Join(arrays, ", "))
	f.Comment("level s0 puts every voxel where its tile came from. Write takes batches in")
	f.Comment("any order from any goroutine; a chunk is stored whole once its tiles are in.")
	f.Type().Id(name).Struct(jen.Id("w").Op("*").Qual(volumePath, "Predictions"))
}

// createPredictions renders
//
//	func CreateCellMapPredictions(root string, tiles *CellMapTiles, opts volume.PredictOptions) (*CellMapPredictions, error) {
//		w, err := volume.CreatePredictions(root, tiles.src, opts)
//		if err != nil {
//			return nil, fmt.Errorf("cellmap: CreateCellMapPredictions: %w", err)
//		}
//		return &CellMapPredictions{w: w}, nil
//	}
func (g *emitter) createPredictions(f *jen.File) {
	name := g.n.exported("Predictions")
	f.Commentf("Create%s starts writing predictions for tiles at root (a directory or", name)
	f.Comment("s3://bucket/prefix; with several volumes, volume i's under root/volume<i>):")
	f.Comment("it writes the arrays' metadata first, so that a run stopped halfway leaves")
	f.Comment("readable arrays of whole chunks. With opts.Resume it keeps the chunks there")
	f.Comment("and narrows tiles to those left to write: make the loader after it.")
	f.Func().Id("Create"+name).Params(jen.Id("root").String(), jen.Id("tiles").Op("*").Id(g.n.exported("Tiles")), jen.Id("opts").Qual(volumePath, "PredictOptions")).
		Params(jen.Op("*").Id(name), jen.Error()).Block(
		jen.List(jen.Id("w"), jen.Err()).Op(":=").Qual(volumePath, "CreatePredictions").Call(jen.Id("root"), jen.Id("tiles").Dot("src"), jen.Id("opts")),
		jen.If(jen.Err().Op("!=").Nil()).Block(jen.Return(jen.Nil(), jen.Qual("fmt", "Errorf").Call(jen.Lit(g.errPrefix()+"Create"+name+": %w"), jen.Err()))),
		jen.Return(jen.Op("&").Id(name).Values(jen.Id("w").Op(":").Id("w")), jen.Nil()),
	)
}

// predictionsMethods renders Write, WriteTensors, Stats and Close:
//
//	func (p *CellMapPredictions) Write(indices []int, labels []float32) error {
//		return p.w.Write(indices, runtime.Tensor{DType: runtime.Float32, Shape: []int{len(indices), 3, 32, 32, 32}, Data: runtime.Bytes(labels)})
//	}
func (g *emitter) predictionsMethods(f *jen.File) {
	recv := func() *jen.Statement { return jen.Func().Params(jen.Id("p").Op("*").Id(g.n.exported("Predictions"))) }
	outs := g.outputs()
	var params, tensors, names []jen.Code
	var docs []string
	for _, k := range outs {
		shape := append([]jen.Code{jen.Len(jen.Id("indices"))}, intsCode(k.Shape)...)
		param := outputParam(k)
		params = append(params, jen.Id(param).Index().Add(k.elemType()))
		tensors = append(tensors, g.rt("Tensor").Values(jen.Dict{
			jen.Id("DType"): g.rtConst(k.DType),
			jen.Id("Shape"): jen.Index().Int().Values(shape...),
			jen.Id("Data"):  g.rt("Bytes").Call(jen.Id(param)),
		}))
		names = append(names, jen.Id(param).Add(g.rt("Tensor")))
		docs = append(docs, fmt.Sprintf("%s: len(indices) x %v %v", param, k.Shape, k.DType))
	}
	f.Comment("Write writes the predictions of tiles indices (a batch's Indices), one slice")
	f.Commentf("per target in C order (%s), copying them: the", strings.Join(docs, "; "))
	f.Comment("slices may be reused once it returns. A tile written twice, slices of")
	f.Comment("another length, and a Write after Close are errors that write nothing.")
	f.Add(recv()).Id("Write").Params(append([]jen.Code{jen.Id("indices").Index().Int()}, params...)...).Error().Block(
		jen.Return(jen.Id("p").Dot("w").Dot("Write").Call(append([]jen.Code{jen.Id("indices")}, tensors...)...)))

	args := []jen.Code{jen.Id("indices")}
	for _, k := range outs {
		args = append(args, jen.Id(outputParam(k)))
	}
	f.Comment("WriteTensors is Write of tensors whose dtype and shape are checked against")
	f.Comment("the targets': [len(indices), (C,) S...], as a model's output holds them.")
	f.Add(recv()).Id("WriteTensors").Params(append([]jen.Code{jen.Id("indices").Index().Int()}, names...)...).Error().Block(
		jen.Return(jen.Id("p").Dot("w").Dot("Write").Call(args...)))

	f.Comment("Stats returns the writer's totals: tiles, chunks written, and the peak of")
	f.Comment("the chunks held partly written against its bound.")
	f.Add(recv()).Id("Stats").Params().Qual(volumePath, "PredictStats").Block(jen.Return(jen.Id("p").Dot("w").Dot("Stats").Call()))

	f.Comment("Close waits for the writes under way and stores the chunks left; chunks")
	f.Comment("whose tiles were not all written are left out, and reported.")
	f.Add(recv()).Id("Close").Params().Error().Block(jen.Return(jen.Id("p").Dot("w").Dot("Close").Call()))
}

// intsCode renders the values of shape.
func intsCode(shape []int) []jen.Code {
	out := make([]jen.Code, len(shape))
	for i, d := range shape {
		out[i] = jen.Lit(d)
	}
	return out
}

// outputParam is the name of output key k's parameter of Write: its view's
// name, with a "_" after one that would hide a name the method uses.
func outputParam(k emitKey) string {
	switch k.view {
	case "p", "indices", "runtime":
		return k.view + "_"
	}
	return k.view
}
