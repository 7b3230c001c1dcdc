package folders

import (
	"context"
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"testing"

	"github.com/loadergen/loadergen/internal/fixture/photoshards"
	"github.com/loadergen/loadergen/internal/testenv/goldentest"
	"github.com/loadergen/loadergen/runtime"
)

func TestMain(m *testing.M) { goldentest.Main(m) }

// set is the test's data: 22 photos of 40 x 30 pixels in 3 class folders.
var set = photoshards.Set{Samples: 22, Width: 40, Height: 30, Classes: 3, Quality: 90, Seed: 2}

// cut is the photo whose JPEG is cut short, which does not decode.
const cut = "class-001/000004.jpg"

// writeFolder writes set's class folders under dir/train, with files
// that are not images (skip_unknown skips them) and the photo cut short.
func writeFolder(t *testing.T, dir string) {
	t.Helper()
	train := filepath.Join(dir, "train")
	if err := set.WriteFolder(train); err != nil {
		t.Fatal(err)
	}
	jpg, err := os.ReadFile(filepath.Join(train, cut))
	if err != nil {
		t.Fatal(err)
	}
	for name, data := range map[string][]byte{".DS_Store": nil, "class-000/notes.txt": []byte("notes"), cut: jpg[:len(jpg)/2]} {
		if err := os.WriteFile(filepath.Join(train, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// epoch runs epoch of a loader of workers over r and returns its batches'
// indices and each sample's bytes (image, then label) in batch order.
func epoch(t *testing.T, r *FoldersRecords, workers, e int) (indices [][]int, samples [][]byte, stats runtime.Stats) {
	t.Helper()
	l, err := NewFoldersLoader(r, runtime.Options{Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	for b, err := range l.Epoch(context.Background(), e) {
		if err != nil {
			t.Fatal(err)
		}
		indices = append(indices, slices.Clone(b.Indices))
		img, label := b.ImageData(), runtime.Bytes(b.LabelData())
		for i := range b.Indices {
			samples = append(samples, slices.Concat(img[i*foldersImageElems:][:foldersImageElems], label[8*i:][:8]))
		}
	}
	return indices, samples, l.Stats()
}

// TestFolders: the class folders' photos arrive with their class's index,
// whatever the number of workers; the files that are not images are
// skipped, and the photo that does not decode is replaced in its batch by
// the next sample, its Indices saying so, once per epoch.
func TestFolders(t *testing.T) {
	dir := t.TempDir()
	writeFolder(t, dir)
	r, err := OpenFoldersRecords(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	if r.Len() != set.Samples || !slices.Equal(r.Classes(), []string{"class-000", "class-001", "class-002"}) {
		t.Fatalf("%d samples of classes %v, want %d of class-000 to class-002", r.Len(), r.Classes(), set.Samples)
	}
	bad := -1
	for i := range r.Len() {
		file, key := r.Name(i)
		if file != filepath.Join(dir, "train", filepath.FromSlash(key)) {
			t.Errorf("sample %d: Name gives %s and %s, not its path under the folder", i, file, key)
		}
		if key == cut {
			bad = i
		}
	}
	one, data, stats := epoch(t, r, 1, 0)
	three, data3, _ := epoch(t, r, 3, 0)
	if fmt.Sprint(one) != fmt.Sprint(three) || !slices.EqualFunc(data, data3, slices.Equal) {
		t.Errorf("the epoch differs between 1 and 3 workers: %v and %v", one, three)
	}
	all := slices.Concat(one...)
	if slices.Contains(all, bad) || len(slices.DeleteFunc(slices.Clone(all), func(i int) bool { return i != bad+1 })) != 2 {
		t.Errorf("the epoch's samples %v: want %d (%s) replaced by %d, which appears twice", all, bad, cut, bad+1)
	}
	for k, index := range all {
		_, key := r.Name(index)
		class := slices.Index(r.Classes(), path.Dir(key))
		if label := runtime.View[int64](data[k][foldersImageElems:])[0]; label != int64(class) {
			t.Errorf("sample %d (%s): label %d, want %d", index, key, label, class)
		}
	}
	if stats.Skipped != 1 || stats.Samples != int64(set.Samples) {
		t.Errorf("Stats: %d samples, %d skipped; want %d and 1", stats.Samples, stats.Skipped, set.Samples)
	}
}
