package volume

import (
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/runtime/loaderimpl"
	"github.com/loadergen/loadergen/runtime/zarr"
)

// cacheChild, set in the environment of the process
// TestStartupLineSizesCache starts, names the volume it opens.
const cacheChild = "LOADERGEN_TEST_CACHE_CHILD"

// TestStartupLineSizesCache starts this test binary as rank 3 of 16, 8 on
// its node, as torchrun would (the shared cache is sized once a process),
// and checks that the source's start-up line gives the cache's share of
// the node and why.
func TestStartupLineSizesCache(t *testing.T) {
	if root := os.Getenv(cacheChild); root != "" {
		if _, err := Open(cellSpec(), []Volume{{Roots: []string{root, root}}}, slog.New(slog.NewTextHandler(os.Stdout, nil))); err != nil {
			t.Fatal(err)
		}
		return
	}
	root := filepath.Join(t.TempDir(), "a.zarr")
	testVolume(t, root, true)
	cmd := exec.Command(os.Args[0], "-test.run=^TestStartupLineSizesCache$")
	cmd.Env = append(withoutLaunchers(os.Environ()), cacheChild+"="+root, "GORACE=atexit_sleep_ms=0",
		"RANK=3", "WORLD_SIZE=16", "LOCAL_RANK=3", "LOCAL_WORLD_SIZE=8")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	want := ` chunk_cache="512 MiB (4 GiB per node / 8 local ranks, torchrun's LOCAL_WORLD_SIZE; grows from 16 MiB as re-reading evicted chunks pays for the memory)"`
	if !strings.Contains(string(out), "level=INFO msg=\"volume source\"") || !strings.Contains(string(out), want) {
		t.Errorf("the start-up line does not say %s:\n%s", want, out)
	}
}

// withoutLaunchers returns env without the launchers' variables, and
// without the cache's size, which would override the share.
func withoutLaunchers(env []string) []string {
	var out []string
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		drop := name == zarr.CacheEnv
		for _, l := range loaderimpl.Launchers {
			drop = drop || name == l.Rank || name == l.World || name == l.LocalEnv || name == l.LocalWorld
		}
		if !drop {
			out = append(out, kv)
		}
	}
	return out
}
