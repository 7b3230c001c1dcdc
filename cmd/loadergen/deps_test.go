package main

import (
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// generatorLinksNot are the packages the generator (this command, schema
// and gen) must not depend on, by path or path prefix, with why: it reads
// a schema and writes Go source, so it links no storage client, no codec
// and no engine. The words it shares with the runtime live in I/O-free packages
// (runtime, runtime/*/…spec); generated programs link the rest.
var generatorLinksNot = []struct{ path, why string }{
	{"github.com/aws/", "the AWS SDK (runtime/storage/s3's)"},
	{"net/http", "an HTTP client (runtime/storage's remote roots)"},
	{"github.com/loadergen/loadergen/runtime/storage", "runtime I/O"},
	{"github.com/loadergen/loadergen/runtime/zarr", "runtime I/O"},
	{"github.com/loadergen/loadergen/runtime/volume", "runtime I/O"},
	{"github.com/loadergen/loadergen/runtime/images", "runtime I/O"},
	{"github.com/loadergen/loadergen/runtime/records", "runtime I/O"},
	{"github.com/loadergen/loadergen/runtime/npy", "runtime I/O"},
	{"github.com/loadergen/loadergen/runtime/python", "runtime I/O"},
	{"github.com/loadergen/loadergen/runtime/loaderimpl", "the engine, which only generated code calls"},
	{"github.com/loadergen/loadergen/runtime/internal/turbojpeg", "a cgo codec"},
	{"github.com/loadergen/loadergen/runtime/internal/jpeg", "a codec"},
	{"github.com/loadergen/loadergen/runtime/internal/png", "a codec"},
	{"github.com/loadergen/loadergen/runtime/zarr/internal/compress", "a codec (its zstd binding is cgo)"},
	{"github.com/loadergen/loadergen/runtime/zarr/blosc", "a codec"},
	{"github.com/DataDog/zstd", "a cgo codec"},
	{"github.com/klauspost/compress", "a codec"},
	{"github.com/pierrec/lz4", "a codec"},
	{"compress/", "a codec"},
	{"image/jpeg", "a codec"},
	{"image/png", "a codec"},
}

// specPackages are the I/O-free packages that hold the words the
// generator shares with the runtime's I/O packages; the generator links
// them, though their paths lie under those packages'.
var specPackages = []string{
	"github.com/loadergen/loadergen/runtime/images/imagespec",
	"github.com/loadergen/loadergen/runtime/records/recordspec",
	"github.com/loadergen/loadergen/runtime/volume/volumespec",
	"github.com/loadergen/loadergen/runtime/zarr/zarrspec",
}

// TestGeneratorImportsNoIO: go list -deps of the command, schema and gen
// (with and without -tags turbojpeg) holds none of generatorLinksNot, so
// that building the generator links no AWS SDK, no HTTP client and no
// codec (docs/LAYOUT.md's dependency arrow).
func TestGeneratorImportsNoIO(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go command lists the dependencies:", err)
	}
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, tags := range []string{"", "turbojpeg"} {
		cmd := exec.Command(gobin, "list", "-deps", "-tags="+tags, "./cmd/loadergen", "./schema", "./gen")
		cmd.Dir = repo
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps -tags=%s: %v", tags, err)
		}
		deps := strings.Fields(string(out))
		if len(deps) == 0 {
			t.Fatalf("go list -deps -tags=%s listed nothing", tags)
		}
		for _, no := range generatorLinksNot {
			var found []string
			for _, dep := range deps {
				if linked(dep, no.path) && !slices.Contains(specPackages, dep) {
					found = append(found, dep)
				}
			}
			if len(found) > 0 {
				t.Errorf("-tags=%s: the generator depends on %d packages of %s, %s: %s", tags, len(found), no.path, no.why, strings.Join(found[:min(len(found), 3)], ", "))
			}
		}
		for _, spec := range specPackages {
			if !slices.Contains(deps, spec) {
				t.Errorf("-tags=%s: the generator no longer depends on %s: take it out of specPackages", tags, spec)
			}
		}
	}
}

// linked reports whether package dep is path, or lies under it (a path
// ending in "/" is a prefix of the packages under it).
func linked(dep, path string) bool {
	if strings.HasSuffix(path, "/") {
		return strings.HasPrefix(dep, path)
	}
	return dep == path || strings.HasPrefix(dep, path+"/")
}
