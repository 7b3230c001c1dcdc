package records

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// imageExts are the extensions a folder's images may have (case-folded).
var imageExts = []string{".jpg", ".jpeg", ".png"}

// indexFolder indexes a directory of class folders as torchvision's
// ImageFolder does: the classes are the subdirectories, sorted; a class's
// images are every file under it (subdirectories included), walked in
// sorted order; an image's label is its class's index. Each sample has one
// member, the whole file. A file that is not a .jpg, .jpeg or .png is an
// error, not skipped.
func indexFolder(dir string) (*index, []string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("folder %s: %w", dir, err)
	}
	var classes []string
	for _, e := range entries {
		if e.IsDir() {
			classes = append(classes, e.Name())
		}
	}
	if len(classes) == 0 {
		return nil, nil, fmt.Errorf("folder %s has no class directories", dir)
	}
	ix := &index{members: []string{"image"}}
	for c, class := range classes {
		before := len(ix.samples)
		if err := ix.addClass(filepath.Join(dir, class), int32(c)); err != nil {
			return nil, nil, err
		}
		if len(ix.samples) == before {
			return nil, nil, fmt.Errorf("folder %s: class %q has no images", dir, class)
		}
	}
	return ix, classes, nil
}

// addClass adds the images under the class directory dir, in the order of
// Python's sorted(os.walk(dir)): directories by path, files by name.
func (ix *index) addClass(dir string, label int32) error {
	type files struct {
		dir   string
		names []string
	}
	var all []files
	at := map[string]int{} // directory -> its place in all
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			at[p] = len(all)
			all = append(all, files{dir: p})
			return nil
		}
		if !slices.Contains(imageExts, strings.ToLower(filepath.Ext(p))) {
			return fmt.Errorf("%s is not a .jpg, .jpeg or .png image", p)
		}
		fl := &all[at[filepath.Dir(p)]]
		fl.names = append(fl.names, d.Name())
		return nil
	})
	if err != nil {
		return fmt.Errorf("folder: %w", err)
	}
	slices.SortFunc(all, func(a, b files) int { return strings.Compare(a.dir, b.dir) })
	for _, fl := range all {
		slices.Sort(fl.names)
		for _, n := range fl.names {
			p := filepath.Join(fl.dir, n)
			info, err := os.Stat(p)
			if err != nil {
				return fmt.Errorf("folder: %w", err)
			}
			ix.samples = append(ix.samples, sample{file: int32(len(ix.files)), label: label, key: p})
			ix.files = append(ix.files, p)
			ix.spans = append(ix.spans, span{size: info.Size()})
		}
	}
	return nil
}
