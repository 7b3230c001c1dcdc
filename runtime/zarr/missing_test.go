package zarr

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"testing"
)

// missingLog is a Layout.Missing that records the names of the chunks it
// is told of and answers err.
type missingLog struct {
	a     *Array
	err   error
	mu    sync.Mutex
	names []string
}

func (m *missingLog) missing(chunk int64) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.names = append(m.names, m.a.ChunkName(chunk))
	return m.err
}

// readTelling reads all of a in C order with Missing set to m.missing (or
// nil when m is nil).
func readTelling(a *Array, m *missingLog) ([]byte, error) {
	n := a.DType().Size()
	for _, s := range a.shape {
		n *= s
	}
	l := Layout{Strides: CStrides(a.shape)}
	if m != nil {
		l.Missing = m.missing
	}
	buf := make([]byte, n)
	return buf, a.ReadLayout(bg, buf, make([]int, len(a.shape)), a.shape, l)
}

// TestMissingChunksReported: Layout.Missing hears of exactly the chunks
// whose files are absent (as the directory lists them), each once a read,
// and the box is the same as without it; an error it returns ends the read
// as a ChunkError naming the first of them.
func TestMissingChunksReported(t *testing.T) {
	dir := filepath.Join(fixtures, "v2/missing_nan_f4")
	a := openDir(t, dir, 16)
	var want []string
	for c := range int64(a.grid[0] * a.grid[1] * a.grid[2]) {
		idx := make([]int, 3)
		unravel(c, a.grid, idx)
		if _, err := os.Stat(filepath.Join(dir, a.key(idx))); os.IsNotExist(err) {
			want = append(want, a.key(idx))
		}
	}
	if len(want) == 0 {
		t.Fatal("the fixture has no missing chunk")
	}
	plain, err := readTelling(a, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := &missingLog{a: a}
	got, err := readTelling(a, m)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, plain) {
		t.Error("a read with Missing differs from one without")
	}
	if !slices.Equal(m.names, want) {
		t.Errorf("Missing heard of %q, want %q", m.names, want)
	}

	refuse := errors.New("refused")
	_, err = readTelling(a, &missingLog{a: a, err: refuse})
	var ce *ChunkError
	if !errors.As(err, &ce) || !errors.Is(err, refuse) || ce.Chunk != want[0] || ce.Array != dir {
		t.Fatalf("read refusing missing chunks: %v, want a ChunkError of chunk %s of %s wrapping %v", err, want[0], dir, refuse)
	}
	if msg := "zarr array " + dir + ": chunk " + want[0] + ": refused"; err.Error() != msg {
		t.Errorf("error %q, want %q", err, msg)
	}
}

// TestMissingInnerChunksReported: in a sharded array, the inner chunks
// its shard's index marks empty, and every inner chunk of a shard whose
// file is absent, are missing and named by shard and inner chunk.
func TestMissingInnerChunksReported(t *testing.T) {
	t.Run("index", func(t *testing.T) {
		a := specShardingArray(t, 2, make([]byte, 32*32)) // inner chunk (1, 0) stored
		m := &missingLog{a: a}
		if _, err := readTelling(a, m); err != nil {
			t.Fatal(err)
		}
		want := []string{"c/0/0 (inner chunk [0 0])", "c/0/0 (inner chunk [0 1])", "c/0/0 (inner chunk [1 1])"}
		if !slices.Equal(m.names, want) {
			t.Errorf("Missing heard of %q, want %q", m.names, want)
		}
	})
	t.Run("shard file", func(t *testing.T) {
		dir := copyStore(t, "v3/sharded_start_u2")
		if err := os.Remove(filepath.Join(dir, "c", "1", "1", "1")); err != nil {
			t.Fatal(err)
		}
		a := openDir(t, dir, 16)
		m := &missingLog{a: a}
		l := Layout{Strides: CStrides([]int{1, 1, 2}), Missing: m.missing}
		// Elements (15, 19, 5) and (15, 19, 6): inner chunks (1, 1, 1) of shards c/1/1/0 and c/1/1/1.
		if err := a.ReadLayout(bg, make([]byte, 4), []int{15, 19, 5}, []int{1, 1, 2}, l); err != nil {
			t.Fatal(err)
		}
		if want := []string{"c/1/1/1 (inner chunk [1 1 0])"}; !slices.Equal(m.names, want) {
			t.Errorf("Missing heard of %q, want %q", m.names, want)
		}
	})
}

// TestUnreadableChunkIsNotMissing: a chunk that exists but cannot be read
// (here a directory where its file should be) is an error whatever
// Missing would say, and Missing does not hear of it.
func TestUnreadableChunkIsNotMissing(t *testing.T) {
	dir := copyStore(t, "v2/missing_nan_f4")
	chunk := filepath.Join(dir, "0.0.1")
	if err := os.Remove(chunk); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(chunk, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, tell := range []bool{false, true} {
		a := openDir(t, dir, 16)
		var m *missingLog
		if tell {
			m = &missingLog{a: a}
		}
		_, err := readTelling(a, m)
		var ce *ChunkError
		if !errors.As(err, &ce) || ce.Chunk != "0.0.1" {
			t.Errorf("Missing set %v: read %v, want a ChunkError of chunk 0.0.1", tell, err)
		}
		if m != nil && slices.Contains(m.names, "0.0.1") {
			t.Errorf("Missing heard of the unreadable chunk: %q", m.names)
		}
	}
}
