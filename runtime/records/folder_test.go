package records

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// tree makes, under dir, the files (each a small JPEG) and the symlinks
// (path -> target, as the link holds it) of a folder dataset.
func tree(t *testing.T, dir string, files []string, links [][2]string) {
	t.Helper()
	jpg := testJPEG(t, 4, 4)
	for _, f := range files {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, jpg, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, l := range links {
		p := filepath.Join(dir, l[0])
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(l[1], p); err != nil {
			t.Fatal(err)
		}
	}
}

// linkedTree is a folder dataset (train/) whose class dog is a symlink to
// a directory elsewhere, whose class cat holds a symlinked subdirectory,
// two links to one directory (no loop) and a symlinked image.
var linkedTree = struct {
	files []string
	links [][2]string
}{
	files: []string{"train/cat/y.jpg", "train/cat/z/1.jpg", "elsewhere/dog/b.jpg", "elsewhere/dog/a.jpg", "extra/m.jpg"},
	links: [][2]string{
		{"train/dog", "../elsewhere/dog"},
		{"train/cat/more", "../../extra"},
		{"train/cat/same", "../../extra"},
		{"train/cat/link.jpg", "../../elsewhere/dog/a.jpg"},
	},
}

// TestFolderSymlinks: symlinks in class folders are followed as
// torchvision's ImageFolder follows them (os.scandir's is_dir for the
// classes, os.walk(followlinks=True) below them), so that the samples and
// their labels are ImageFolder's; a link that leads back to a directory
// holding it is an error naming the link, as is a broken one.
func TestFolderSymlinks(t *testing.T) {
	tests := []struct {
		name  string
		files []string
		links [][2]string
		want  []string // the samples, as class index and path under train/
		err   string   // or the error, naming the path under train/ that follows it
	}{
		{"followed", linkedTree.files, linkedTree.links, []string{
			"0 cat/link.jpg", "0 cat/y.jpg", "0 cat/more/m.jpg", "0 cat/same/m.jpg", "0 cat/z/1.jpg",
			"1 dog/a.jpg", "1 dog/b.jpg",
		}, ""},
		{"link to the class", []string{"train/cat/y.jpg"}, [][2]string{{"train/cat/again", "."}},
			nil, "cat/again is a link to "},
		{"link to the folder", []string{"train/cat/y.jpg"}, [][2]string{{"train/cat/z/up", "../.."}},
			nil, "cat/z/up is a link to "},
		{"class linked to the folder", []string{"train/cat/y.jpg"}, [][2]string{{"train/all", "."}},
			nil, "all is a link to "},
		{"link above the folder", []string{"train/cat/y.jpg"}, [][2]string{{"train/cat/top", "../.."}},
			nil, "cat/top is a link to "},
		{"loop through two links", []string{"train/cat/y.jpg", "train/dog/b.jpg"},
			[][2]string{{"train/cat/d", "../dog"}, {"train/dog/c", "../cat"}},
			nil, "cat/d/c is a link to "},
		{"broken image link", []string{"train/cat/y.jpg"}, [][2]string{{"train/cat/gone.jpg", "nowhere.jpg"}},
			nil, "cat/gone.jpg"},
		{"broken class link", []string{"train/cat/y.jpg"}, [][2]string{{"train/dog", "../nowhere"}},
			nil, "dog"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tree(t, dir, tt.files, tt.links)
			train := filepath.Join(dir, "train")
			ix, _, err := indexFolder(train)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), filepath.Join(train, tt.err)) {
					t.Fatalf("indexFolder: %v, want an error naming %s", err, filepath.Join(train, tt.err))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := folderSamples(t, ix, train); !slices.Equal(got, tt.want) {
				t.Errorf("samples %q, want %q", got, tt.want)
			}
		})
	}
}

// folderSamples lists the samples of index ix of the folder dataset at
// train as "LABEL PATH", PATH relative to train.
func folderSamples(t *testing.T, ix *index, train string) []string {
	t.Helper()
	var out []string
	for _, s := range ix.samples {
		rel, err := filepath.Rel(train, s.key)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%d %s", s.label, filepath.ToSlash(rel)))
	}
	return out
}

// TestFolderSymlinksImageFolder: torchvision's ImageFolder (Debian's
// python3-torchvision) finds the same samples, in the same order and with
// the same labels, in the folder of linkedTree.
func TestFolderSymlinksImageFolder(t *testing.T) {
	const list = `import json, sys
from torchvision.datasets.folder import make_dataset, IMG_EXTENSIONS
print(json.dumps(make_dataset(sys.argv[1], extensions=IMG_EXTENSIONS)))`
	if err := exec.Command("/usr/bin/python3", "-c", "import torchvision").Run(); err != nil {
		t.Skip("needs Debian's python3-torchvision: /usr/bin/python3 cannot import torchvision")
	}
	dir := t.TempDir()
	tree(t, dir, linkedTree.files, linkedTree.links)
	train := filepath.Join(dir, "train")
	out, err := exec.Command("/usr/bin/python3", "-c", list, train).Output()
	if err != nil {
		t.Fatalf("ImageFolder's make_dataset: %v", err)
	}
	var samples [][2]any // [path, class index]
	if err := json.Unmarshal(out, &samples); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	var want []string
	for _, s := range samples {
		rel, err := filepath.Rel(train, s[0].(string))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprintf("%v %s", s[1], filepath.ToSlash(rel)))
	}
	ix, _, err := indexFolder(train)
	if err != nil {
		t.Fatal(err)
	}
	if got := folderSamples(t, ix, train); !slices.Equal(got, want) {
		t.Errorf("samples %q, ImageFolder's %q", got, want)
	}
}
