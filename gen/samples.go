package gen

import (
	"fmt"
	"slices"

	"github.com/dave/jennifer/jen"
)

// samples renders
//
//	type CellMapSamples struct {
//		Epoch   int   // epoch the samples are loaded for
//		Indices []int // dataset indices of the samples, in batch order
//		// Ctx is done once ...
//		Ctx context.Context
//
//		Raw    []uint8   // key "raw": len(Indices) x [64 64 64] uint8
//		Labels []float32 // key "labels": len(Indices) x [3 64 64 64] float32
//
//		rand *rand.Rand // what Rand returns, over pcg
//		pcg  rand.PCG
//	}
func (g *emitter) samples(f *jen.File) {
	fields := []jen.Code{
		jen.Id("Epoch").Int().Comment("epoch the samples are loaded for"),
		jen.Id("Indices").Index().Int().Comment("dataset indices of the samples, in batch order"),
	}
	fields = append(fields, ctxField()...)
	fields = append(fields, jen.Line())
	for _, k := range g.keys {
		comment := fmt.Sprintf("key %q: len(Indices) x %s", k.Name, describe(k.Key))
		switch {
		case k.Ragged:
			comment += ", each sample's rows at the start of its slot"
		case k.LengthsOf != "":
			comment = fmt.Sprintf("rows of each sample of key %q: ReadSamples sets them", k.LengthsOf)
		}
		fields = append(fields, jen.Id(k.Go).Index().Add(k.elemType()).Comment(comment))
	}
	fields = append(fields, jen.Line(),
		jen.Id("rand").Op("*").Qual(randPath, "Rand").Comment("what Rand returns, over pcg"),
		jen.Id("pcg").Qual(randPath, "PCG"),
	)
	name := g.n.exported("Samples")
	f.Commentf("%s are consecutive samples of one batch, filled in one ReadSamples", name)
	f.Comment("call. Every key's slice holds len(Indices) samples back to back in C")
	f.Comment("order and points into the staging buffer: write every element, it holds")
	f.Comment("an older batch.")
	if len(g.raggedKeys()) > 0 {
		f.Comment("")
		f.Comment("A ragged key's slice holds each sample's slot of its most rows: write")
		f.Comment("a sample's rows at the start of its slot and their count in the key's")
		f.Comment("lengths; the loader pads the rest of the slot.")
		if slices.ContainsFunc(g.raggedKeys(), truncates) {
			f.Comment("A key with overflow: truncate takes a count above the maximum for a")
			f.Comment("longer sample whose first rows fill its slot: the loader records the")
			f.Comment("maximum and counts the sample in Stats.Truncated.")
		}
	}
	f.Type().Id(name).Struct(fields...)
}

// samplesRand renders
//
//	func (s *CellMapSamples) Rand(i int) *rand.Rand {
//		loaderimpl.SeedSample(&s.pcg, loaderimpl.EpochSeed(cellMapPlan.Loader.Seed, s.Epoch), s.Indices[i])
//		return s.rand
//	}
func (g *emitter) samplesRand(f *jen.File) {
	f.Comment("Rand returns the Rand of the i-th sample, seeded as Read's s.Rand is for")
	f.Comment("dataset index Indices[i], so it makes the same draws. It reseeds one")
	f.Comment("generator: finish one sample's draws before asking for another's.")
	f.Func().Params(jen.Id("s").Op("*").Id(g.n.exported("Samples"))).Id("Rand").Params(jen.Id("i").Int()).Op("*").Qual(randPath, "Rand").Block(
		g.impl("SeedSample").Call(jen.Op("&").Id("s").Dot("pcg"), g.epochSeed(jen.Id("s").Dot("Epoch")), jen.Id("s").Dot("Indices").Index(jen.Id("i"))),
		jen.Return(jen.Id("s").Dot("rand")),
	)
}

// epochSeed renders the seed that the samples of epoch share:
//
//	loaderimpl.EpochSeed(cellMapPlan.Loader.Seed, epoch)
func (g *emitter) epochSeed(epoch jen.Code) *jen.Statement {
	return g.impl("EpochSeed").Call(jen.Id(g.n.unexported("Plan")).Dot("Loader").Dot("Seed"), epoch)
}

// samplesReader renders
//
//	type CellMapSamplesReader interface {
//		ReadSamples(s *CellMapSamples) (n int, err error)
//	}
func (g *emitter) samplesReader(f *jen.File) {
	name := g.n.exported("SamplesReader")
	f.Commentf("%s is optional for sources of %s, as io.WriterTo sits beside", name, g.ds.Name)
	f.Commentf("io.Writer: when the %s implements it, the loader calls ReadSamples", g.n.exported("Source"))
	f.Comment("instead of Read, for runs of samples sized so that tiny samples cost about")
	f.Comment("a plain copy loop, and concurrently for different runs.")
	f.Type().Id(name).Interface(
		jen.Comment("ReadSamples fills every sample of s. When it fails it returns how many"),
		jen.Comment("samples, from the first, it filled in full: the loader's error then"),
		jen.Comment("names the dataset index s.Indices[n]."),
		jen.Id("ReadSamples").Params(jen.Id("s").Op("*").Id(g.n.exported("Samples"))).Params(jen.Id("n").Int(), jen.Err().Error()),
	)
}
