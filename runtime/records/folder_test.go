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
			ix, _, _, err := indexFolder(train, false)
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
	for i, s := range ix.samples {
		rel, err := filepath.Rel(train, ix.files[s.file])
		if err != nil {
			t.Fatal(err)
		}
		if s.file != int32(i) || s.key != filepath.ToSlash(rel) {
			t.Errorf("sample %d: file %d, key %q; want %d, %q", i, s.file, s.key, i, filepath.ToSlash(rel))
		}
		out = append(out, fmt.Sprintf("%d %s", s.label, s.key))
	}
	return out
}

// TestFolderImageFolder: torchvision's ImageFolder (Debian's
// python3-torchvision) finds the same samples, in the same order and with
// the same labels: in the folder of linkedTree, and in strayTree's with
// skip_unknown, dotfiles included where they are images.
func TestFolderImageFolder(t *testing.T) {
	needTorchvision(t)
	for _, tt := range []struct {
		name  string
		files []string
		links [][2]string
		skip  bool
	}{
		{"symlinks", linkedTree.files, linkedTree.links, false},
		{"stray files", strayTree, nil, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			tree(t, dir, tt.files, tt.links)
			train := filepath.Join(dir, "train")
			want := imageFolderSamples(t, train)
			ix, _, _, err := indexFolder(train, tt.skip)
			if err != nil {
				t.Fatal(err)
			}
			if got := folderSamples(t, ix, train); !slices.Equal(got, want) {
				t.Errorf("samples %q, ImageFolder's %q", got, want)
			}
		})
	}
}

// needTorchvision skips a test without Debian's python3-torchvision.
func needTorchvision(t *testing.T) {
	t.Helper()
	if err := exec.Command("/usr/bin/python3", "-c", "import torchvision").Run(); err != nil {
		t.Skip("needs Debian's python3-torchvision: /usr/bin/python3 cannot import torchvision")
	}
}

// imageFolderSamples lists the samples ImageFolder finds in the folder
// dataset at train as folderSamples does.
func imageFolderSamples(t *testing.T, train string) []string {
	t.Helper()
	const list = `import json, sys
from torchvision.datasets.folder import make_dataset, IMG_EXTENSIONS
print(json.dumps(make_dataset(sys.argv[1], extensions=IMG_EXTENSIONS)))`
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
	return want
}

// strayTree is a folder dataset (train/) whose classes hold files that
// are not images: dotfiles, which every open skips, and others. A dotfile
// with an image's extension (macOS's ._a.jpg) is a sample, as it is
// ImageFolder's; so is a hidden class.
var strayTree = []string{
	"train/.DS_Store", "train/cat/.DS_Store", "train/cat/._a.jpg", "train/cat/a.jpg", "train/cat/notes.txt",
	"train/dog/b.JPEG", "train/dog/.hidden/c.jpg", "train/dog/.gitkeep", "train/dog/e.gif", "train/.more/d.png",
}

// TestFolderStrayFiles: dotfiles that are not images are skipped, other
// files that are not images are an error listing them, unless
// skipUnknown; the error says which ImageFolder would read.
func TestFolderStrayFiles(t *testing.T) {
	tests := []struct {
		name   string
		files  []string // strayTree when nil
		extra  []string
		skip   bool
		want   []string // the samples, as folderSamples gives them
		other  int      // files skipped by skipUnknown
		errors string   // or the error, after the folder's path
	}{
		{"refused", nil, nil, false, nil, 0,
			": 2 files are not .jpg, .jpeg or .png images: cat/notes.txt, dog/e.gif; remove them, or set skip_unknown: true under records: to skip them as ImageFolder skips files that are not images"},
		{"skipped", nil, nil, true, []string{"0 .more/d.png", "1 cat/._a.jpg", "1 cat/a.jpg", "2 dog/b.JPEG", "2 dog/.hidden/c.jpg"}, 2, ""},
		{"ImageFolder's images", nil, []string{"train/cat/x.bmp", "train/cat/.y.webp"}, false, nil, 0,
			": 4 files are not .jpg, .jpeg or .png images: cat/.y.webp, cat/notes.txt, cat/x.bmp, dog/e.gif; remove them, or set skip_unknown: true under records: to skip them as ImageFolder skips files that are not images; ImageFolder reads cat/.y.webp, cat/x.bmp as images, which loadergen does not decode: convert them to PNG, as without them the samples after them differ from ImageFolder's"},
		{"many", nil, []string{"train/cat/1.txt", "train/cat/2.txt", "train/cat/3.txt", "train/cat/4.txt"}, false, nil, 0,
			": 6 files are not .jpg, .jpeg or .png images: cat/1.txt, cat/2.txt, cat/3.txt, cat/4.txt, cat/notes.txt and 1 more; remove them"},
		{"one", []string{"train/cat/a.jpg", "train/dog/b.jpg", "train/dog/e.gif"}, nil, false, nil, 0,
			": 1 file is not a .jpg, .jpeg or .png image: dog/e.gif; remove them"},
		{"only dotfiles", nil, []string{"train/cow/.DS_Store"}, true, nil, 0, `: class "cow" has no images`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			files := tt.files
			if files == nil {
				files = strayTree
			}
			tree(t, dir, append(slices.Clip(files), tt.extra...), nil)
			train := filepath.Join(dir, "train")
			ix, _, other, err := indexFolder(train, tt.skip)
			if tt.errors != "" {
				if err == nil || !strings.Contains(err.Error(), train+tt.errors) {
					t.Fatalf("indexFolder: %v\nwant an error with %s%s", err, train, tt.errors)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := folderSamples(t, ix, train); !slices.Equal(got, tt.want) || len(other) != tt.other {
				t.Errorf("samples %q, %d skipped; want %q, %d", got, len(other), tt.want, tt.other)
			}
		})
	}
}
