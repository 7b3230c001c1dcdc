package cudastub

import (
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// TestBuildDefinesEverySymbol: the archive defines every driver symbol of
// symbols.txt, so the cuda build links it in place of libcuda, and leaves
// none undefined but the C library's.
func TestBuildDefinesEverySymbol(t *testing.T) {
	if runtime.GOARCH != "amd64" && runtime.GOARCH != "arm64" {
		t.Skipf("no trampolines for %s", runtime.GOARCH)
	}
	dir := t.TempDir()
	for range 2 { // a second build replaces the first
		if err := Build(dir, runtime.GOARCH, ""); err != nil { // "": gcc
			t.Fatal(err)
		}
	}
	out, err := exec.Command("nm", filepath.Join(dir, "libcuda.a")).CombinedOutput()
	if err != nil {
		t.Fatalf("nm: %v\n%s", err, out)
	}
	defined := map[string]int{}
	var undefined []string
	for _, line := range strings.Split(string(out), "\n") {
		switch f := strings.Fields(line); {
		case len(f) == 3 && f[1] == "T":
			defined[f[2]]++
		case len(f) == 2 && f[0] == "U":
			undefined = append(undefined, f[1])
		}
	}
	for _, s := range Symbols() {
		if defined[s] != 1 {
			t.Errorf("%s is defined %d times, want once", s, defined[s])
		}
	}
	slices.Sort(undefined)
	undefined = slices.Compact(undefined)
	for _, u := range undefined {
		if strings.HasPrefix(u, "cu") && !strings.HasPrefix(u, "cuda") {
			t.Errorf("%s is left undefined", u)
		}
	}
	if len(Symbols()) < 40 || !slices.Contains(Symbols(), "cuMemHostAlloc") {
		t.Errorf("Symbols() = %d names without cuMemHostAlloc: symbols.txt is not read", len(Symbols()))
	}
}

func TestSourcesRefusesOtherArchitectures(t *testing.T) {
	_, err := sources("386")
	if want := "cudastub: no trampolines for 386 (amd64 and arm64 have them)"; err == nil || err.Error() != want {
		t.Errorf("sources(386) = %v, want %s", err, want)
	}
}

// TestWrittenAreResolverDefinitions: written holds exactly the driver
// functions resolver.c defines, each a symbol of symbols.txt.
func TestWrittenAreResolverDefinitions(t *testing.T) {
	var got []string
	for s := range written {
		got = append(got, s)
		if !slices.Contains(Symbols(), s) {
			t.Errorf("resolver.c defines %s, which symbols.txt does not list", s)
		}
	}
	slices.Sort(got)
	if want := []string{"cuDeviceGetCount", "cuInit"}; !slices.Equal(got, want) {
		t.Errorf("written = %v, want %v", got, want)
	}
}
