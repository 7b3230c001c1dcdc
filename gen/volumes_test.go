package gen

import (
	"fmt"
	"math"
	"regexp"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/schema"
)

// TestFloatValue: a zarr key's fill (and its Normalize's terms) keeps its
// bits in the generated spec, -0 included (a Go constant -0.0 is +0).
func TestFloatValue(t *testing.T) {
	for _, c := range []struct {
		fill float64
		code string
	}{
		{0, "<nil>"},
		{math.Copysign(0, -1), "math.Float64frombits(0x8000000000000000)"},
		{math.NaN(), "math.NaN()"},
		{-1.5, "-1.5"},
		{255, "255.0"},
	} {
		code := floatValue(c.fill)
		got := "<nil>"
		if code != nil {
			got = fmt.Sprintf("%#v", code)
		}
		if got != c.code {
			t.Errorf("floatValue(%v) = %s, want %s", c.fill, got, c.code)
		}
	}
}

// TestLocalityPlan: crops.locality reaches the plan's loader, on by
// default; "off" leaves it zero. A volume loader starts its engine with
// NewLocalityEngine either way, so that Options.Locality can turn it on.
func TestLocalityPlan(t *testing.T) {
	const keys = "  raw: {shape: [8, 8], dtype: uint8, zarr: em/raw}\n"
	for _, c := range []struct {
		name, crops string
		want        runtime.Locality
	}{
		{"default", "", runtime.Locality{Window: schema.DefaultLocalityWindow}},
		{"window", "  locality: {window: 4}\n", runtime.Locality{Window: 4}},
		{"off", "  locality: off\n", runtime.Locality{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ds, err := schema.Parse("p.yaml", []byte("version: 1\npackage: p\nname: P\nbatch_size: 2\ninputs:\n"+keys+"crops:\n  per_epoch: 10\n"+c.crops))
			if err != nil {
				t.Fatal(err)
			}
			p, err := NewPlan(ds, Overrides{})
			if err != nil {
				t.Fatal(err)
			}
			if p.Runtime.Loader.Locality != c.want {
				t.Errorf("plan locality %+v, want %+v", p.Runtime.Loader.Locality, c.want)
			}
			src, err := Generate(p, "p.yaml")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(src), "loaderimpl.NewLocalityEngine(pPlan, src.Len(), keys, opts, fill)") {
				t.Error("the loader does not start its engine with NewLocalityEngine")
			}
			if has := strings.Contains(string(src), "runtime.Locality{Window: "); has != (c.want.Window > 0) {
				t.Errorf("the plan literal has a Locality field: %v, want %v", has, c.want.Window > 0)
			}
		})
	}
}

// TestAlignSpec: crops.align: nearest reaches the generated volume spec;
// exact, the zero value, leaves the field out.
func TestAlignSpec(t *testing.T) {
	for _, c := range []struct {
		line string
		want bool
	}{{"", false}, {"  align: exact\n", false}, {"  align: nearest\n", true}} {
		src := generateSchema(t, "p.yaml", []byte("version: 1\npackage: p\nname: P\nbatch_size: 2\ninputs:\n"+
			"  raw: {shape: [8, 8], dtype: uint8, zarr: em/raw}\ncrops:\n  per_epoch: 10\n"+c.line))
		if has := regexp.MustCompile(`\bAlign: +volume\.AlignNearest,`).Match(src); has != c.want {
			t.Errorf("%q: the spec has Align: volumespec.AlignNearest: %v, want %v", c.line, has, c.want)
		}
	}
}
