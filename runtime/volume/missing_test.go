package volume

import (
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/loaderimpl"
)

// missingChunk is a chunk a test deletes: key k's array at path under the
// root, chunk idx of shape chunk.
type missingChunk struct {
	k            int
	path         string
	idx, chunk   []int
	name         string // its key, as errors and logs name it
	reads, boxes int    // the reads the test expects to find it missing
}

// hits reports whether key m.k's box of crop c (of shape shape) touches
// the chunk.
func (m *missingChunk) hits(c runtime.Crop, shape []int) bool {
	for a, o := range c.Origin[m.k] {
		lo := m.idx[a] * m.chunk[a]
		if o+shape[a] <= lo || o >= lo+m.chunk[a] {
			return false
		}
	}
	return true
}

// deleteChunks writes testVolume at root and deletes one chunk of the raw
// array (s0) and one of mito's labels (s1).
func deleteChunks(t *testing.T, root string) []*missingChunk {
	t.Helper()
	testVolume(t, root, true)
	chunks := []*missingChunk{
		{k: 0, path: "em/raw/s0", idx: []int{1, 1, 1}, chunk: []int{8, 16, 16}, name: "1/1/1"},
		{k: 1, path: "labels/mito/s1", idx: []int{0, 1, 1}, chunk: []int{4, 4, 4}, name: "0/1/1"},
	}
	for _, m := range chunks {
		if err := os.Remove(filepath.Join(root, m.path, m.name)); err != nil {
			t.Fatal(err)
		}
	}
	return chunks
}

// quietTime drops slog's time attribute, so that lines compare exactly.
func quietTime(groups []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey && len(groups) == 0 {
		return slog.Attr{}
	}
	return a
}

// TestMissingChunksFill: under missing: fill, a deleted chunk reads as the
// fill value, every read that finds it is counted, and the first of each
// array is logged once, naming the key, the volume, the array and the
// chunk.
func TestMissingChunksFill(t *testing.T) {
	root := filepath.Join(t.TempDir(), "a.zarr")
	chunks := deleteChunks(t, root)
	var log strings.Builder
	s, err := Open(cellSpec(), []Volume{{Roots: []string{root, root}}}, slog.New(slog.NewTextHandler(&log, &slog.HandlerOptions{ReplaceAttr: quietTime})))
	if err != nil {
		t.Fatal(err)
	}
	log.Reset() // the start-up line
	var want int64
	for i := range s.Len() {
		c := s.Crop(0, i)
		for _, m := range chunks {
			if m.hits(c, s.spec.Keys[m.k].Shape) {
				m.reads++
				want++
			}
		}
		var pcg rand.PCG
		loaderimpl.SeedSample(&pcg, loaderimpl.EpochSeed(s.spec.Seed, 0), i)
		if err := s.Read(bg, rand.New(&pcg), 0, i, sampleBufs(s)...); err != nil {
			t.Fatalf("sample %d: %v", i, err)
		}
	}
	for _, m := range chunks {
		if m.reads < 2 {
			t.Fatalf("the epoch's crops touch chunk %s of %s %d times: too few to tell one log line from one a read", m.name, m.path, m.reads)
		}
	}
	if got := s.MissingChunks(); got != want {
		t.Errorf("MissingChunks() = %d, want %d", got, want)
	}
	var lines []string
	for _, m := range chunks {
		lines = append(lines, fmt.Sprintf(`level=WARN msg="volume source: a chunk is not stored and reads as the array's fill value (missing: fill); further missing chunks of this array are counted in Stats().MissingChunks, not logged" key=%s volume=0 array=%s chunk=%s`,
			s.spec.Keys[m.k].Name, filepath.Join(root, m.path), m.name))
	}
	got := strings.Split(strings.TrimSpace(log.String()), "\n")
	slices.Sort(got)
	slices.Sort(lines)
	if !slices.Equal(got, lines) {
		t.Errorf("log:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(lines, "\n"))
	}
}

// TestMissingChunksError: under missing: error, a sample whose box touches
// a deleted chunk fails naming the key, the volume, the box origin, the
// array and the chunk; the others read, and nothing is logged of the key
// (labels, under missing: fill, still log theirs).
func TestMissingChunksError(t *testing.T) {
	root := filepath.Join(t.TempDir(), "a.zarr")
	chunks := deleteChunks(t, root)
	spec := cellSpec()
	spec.Keys[0].Missing = MissingError
	var log strings.Builder
	s, err := Open(spec, []Volume{{Roots: []string{root, root}}}, slog.New(slog.NewTextHandler(&log, nil)))
	if err != nil {
		t.Fatal(err)
	}
	log.Reset()
	raw := chunks[0]
	failed := 0
	for i := range s.Len() {
		c := s.Crop(0, i)
		var pcg rand.PCG
		loaderimpl.SeedSample(&pcg, loaderimpl.EpochSeed(s.spec.Seed, 0), i)
		err := s.Read(bg, rand.New(&pcg), 0, i, sampleBufs(s)...)
		if !raw.hits(c, spec.Keys[0].Shape) {
			if err != nil {
				t.Errorf("sample %d, whose raw box misses the deleted chunk: %v", i, err)
			}
			continue
		}
		failed++
		want := fmt.Sprintf(`key "raw": volume 0 (%s), box origin %v: zarr array %s: chunk 1/1/1: not stored (the key's missing: error refuses it; missing: fill reads the array's fill value)`,
			root, c.Origin[0], filepath.Join(root, raw.path))
		if err == nil || err.Error() != want {
			t.Fatalf("sample %d: %v\nwant %s", i, err, want)
		}
		if !errors.Is(err, ErrMissingChunk) {
			t.Errorf("sample %d: the error does not wrap ErrMissingChunk", i)
		}
	}
	if failed == 0 {
		t.Fatal("no crop touched the deleted raw chunk")
	}
	if strings.Contains(log.String(), "key=raw") {
		t.Errorf("missing: error logged:\n%s", log.String())
	}
}

// TestMissingChunksErrorShards: in a sharded v3 array, the inner chunks
// of a deleted shard, and those its shard's index marks empty, are
// missing; under missing: error the error names the shard and the inner
// chunk.
func TestMissingChunksErrorShards(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "sharded")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(fixtures, "v3/sharded_start_u2"))); err != nil {
		t.Fatal(err)
	}
	if err := os.Remove(filepath.Join(dir, "c", "1", "1", "1")); err != nil {
		t.Fatal(err)
	}
	// The fixture is 16 x 20 x 12 uint16 in shards of 8 x 10 x 6, each of
	// inner chunks of 4 x 5 x 3; make_fixtures.py leaves out inner chunks
	// that hold only the fill value, and the index of shard c/0/0/0 marks
	// its first one empty.
	spec := Spec{Keys: []Key{{Name: "raw", Path: "sharded", DType: runtime.Uint16, Shape: []int{2, 2, 2}, Missing: MissingError}}, PerEpoch: 1}
	s, err := Open(spec, []Volume{{Roots: []string{root}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		origin []int
		chunk  string // "" for a box whose chunks are all stored
	}{
		{[]int{14, 18, 10}, "c/1/1/1 (inner chunk [1 1 1])"}, // the deleted shard
		{[]int{0, 0, 0}, "c/0/0/0 (inner chunk [0 0 0])"},    // marked empty in the index
		{[]int{4, 5, 3}, ""},
	} {
		c := runtime.Crop{Origin: [][]int{tt.origin}, Mirror: make([]bool, 3), Transpose: []int{0, 1, 2}}
		err := readCrop(s, c, sampleBufs(s))
		if tt.chunk == "" {
			if err != nil {
				t.Errorf("box at %v: %v", tt.origin, err)
			}
			continue
		}
		want := fmt.Sprintf(`key "raw": volume 0 (%s), box origin %v: zarr array %s: chunk %s: not stored (the key's missing: error refuses it; missing: fill reads the array's fill value)`, root, tt.origin, dir, tt.chunk)
		if err == nil || err.Error() != want {
			t.Errorf("box at %v: %v\nwant %s", tt.origin, err, want)
		}
	}
}
