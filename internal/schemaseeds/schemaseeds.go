// Package schemaseeds gives the fuzz targets that read schemas (schema's
// FuzzParse, gen's FuzzGenerate) their shared seed corpus: every golden
// schema and every case of the schema error corpus.
package schemaseeds

import (
	"os"
	"path/filepath"
	"testing"
)

// Add adds each schema under root's golden/*/ and testdata/errors/ to f's
// seed corpus; root is the repository root, relative to the test's
// package directory ("..").
func Add(f *testing.F, root string) {
	f.Helper()
	for _, pattern := range []string{"golden/*/*.yaml", "testdata/errors/*.yaml"} {
		paths, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			f.Fatal(err)
		}
		if len(paths) == 0 {
			f.Fatalf("no seed schemas match %s under %s", pattern, root)
		}
		for _, path := range paths {
			data, err := os.ReadFile(path)
			if err != nil {
				f.Fatal(err)
			}
			f.Add(data)
		}
	}
}
