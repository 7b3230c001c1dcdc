package zarr

import (
	"os"
	"path/filepath"
	"testing"
)

// metadataSeeds returns every array metadata file of the fixtures and of
// the error corpus.
func metadataSeeds(f *testing.F, name string) [][]byte {
	var seeds [][]byte
	for _, pattern := range []string{"v2/*/" + name, "v3/*/" + name, "v3/*/*/" + name, "errors/*/" + name} {
		paths, _ := filepath.Glob(filepath.Join(fixtures, pattern))
		for _, p := range paths {
			b, err := os.ReadFile(p)
			if err != nil {
				f.Fatal(err)
			}
			seeds = append(seeds, b)
		}
	}
	if len(seeds) == 0 {
		f.Fatalf("no %s seeds", name)
	}
	return seeds
}

// fuzzArray parses metadata text as an array's and, when it is accepted,
// reads one element (every chunk is missing, so the fill value).
func fuzzArray(t *testing.T, text []byte, v3 bool) {
	doc, err := parseDoc("zarr.json", text, 0)
	if err != nil {
		return
	}
	a := &Array{dir: t.TempDir(), cache: NewCache(1)}
	if v3 {
		err = a.parseV3(doc)
	} else {
		err = a.parseV2(doc)
	}
	if err != nil || a.setUnits() != nil {
		return
	}
	for _, n := range a.shape {
		if n == 0 {
			return
		}
	}
	one := make([]int, len(a.shape))
	for i := range one {
		one[i] = 1
	}
	if err := a.Read(make([]byte, a.dtype.Size()), make([]int, len(a.shape)), one); err != nil {
		t.Fatalf("read of a missing chunk: %v", err)
	}
}

// FuzzV2Metadata parses made-up .zarray files: an error or an array, never
// a panic.
func FuzzV2Metadata(f *testing.F) {
	for _, s := range metadataSeeds(f, ".zarray") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text []byte) { fuzzArray(t, text, false) })
}

// FuzzV3Metadata parses made-up zarr.json files.
func FuzzV3Metadata(f *testing.F) {
	for _, s := range metadataSeeds(f, "zarr.json") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text []byte) { fuzzArray(t, text, true) })
}

// FuzzMultiscale parses made-up OME-NGFF 0.4 attributes.
func FuzzMultiscale(f *testing.F) {
	for _, s := range metadataSeeds(f, ".zattrs") {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, attrs []byte) {
		doc, err := parseDoc(".zattrs", attrs, 0)
		if err != nil {
			return
		}
		var m Multiscale
		if m.read(doc, false) != nil {
			return
		}
		for _, l := range m.Levels {
			if len(l.Scale) != len(m.Axes) || len(l.Translation) != len(m.Axes) {
				t.Fatalf("level %+v for %d axes", l, len(m.Axes))
			}
		}
	})
}
