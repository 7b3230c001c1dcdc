package records

import (
	"fmt"
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
// sorted order; an image's label is its class's index. Symlinks are
// followed, as ImageFolder follows them (os.scandir's is_dir for the
// classes, os.walk with followlinks=True below them); one that leads back
// to a directory holding it (a loop) is an error naming it, as is a
// broken one. Each sample has one member, the whole file. A file that is
// not a .jpg, .jpeg or .png is an error, not skipped.
func indexFolder(dir string) (*index, []string, error) {
	up, err := above(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("folder %s: %w", dir, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("folder %s: %w", dir, err)
	}
	var classes []string
	var infos []os.FileInfo
	for _, e := range entries {
		info, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, nil, fmt.Errorf("folder %s: %w", dir, err)
		}
		if info.IsDir() {
			classes, infos = append(classes, e.Name()), append(infos, info)
		}
	}
	if len(classes) == 0 {
		return nil, nil, fmt.Errorf("folder %s has no class directories", dir)
	}
	ix := &index{members: []string{"image"}}
	for c, class := range classes {
		before := len(ix.samples)
		if err := ix.addClass(filepath.Join(dir, class), infos[c], int32(c), up); err != nil {
			return nil, nil, fmt.Errorf("folder: %w", err)
		}
		if len(ix.samples) == before {
			return nil, nil, fmt.Errorf("folder %s: class %q has no images", dir, class)
		}
	}
	return ix, classes, nil
}

// visited is a directory on the way down to the one being walked: a
// symlink must not lead back to it.
type visited struct {
	path string
	info os.FileInfo // os.SameFile tells it
}

// above returns dir and the directories above it, from the root of the
// file system, where they really lie (symlinks resolved).
func above(dir string) ([]visited, error) {
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return nil, err
	}
	if real, err = filepath.Abs(real); err != nil {
		return nil, err
	}
	var up []visited
	for p := real; ; p = filepath.Dir(p) {
		info, err := os.Stat(p)
		if err != nil {
			return nil, err
		}
		up = append(up, visited{p, info})
		if filepath.Dir(p) == p {
			slices.Reverse(up)
			return up, nil
		}
	}
}

// addClass adds the images under the class directory dir (info: its
// os.Stat) in the order of Python's sorted(os.walk(dir,
// followlinks=True)): directories by path, files by name. up holds the
// directories above dir.
func (ix *index) addClass(dir string, info os.FileInfo, label int32, up []visited) error {
	type files struct {
		dir   string
		names []string
		sizes []int64
	}
	var all []files
	var walk func(dir string, info os.FileInfo, up []visited) error
	walk = func(dir string, info os.FileInfo, up []visited) error {
		for _, v := range up {
			if os.SameFile(v.info, info) {
				return fmt.Errorf("%s is a link to %s, a directory that holds it: a loop", dir, v.path)
			}
		}
		entries, err := os.ReadDir(dir) // sorted by name
		if err != nil {
			return err
		}
		fl := files{dir: dir}
		var subdirs []string
		var subinfos []os.FileInfo
		for _, e := range entries {
			p := filepath.Join(dir, e.Name())
			st, err := os.Stat(p) // through a symlink; a broken one fails
			switch {
			case err != nil:
				return err
			case st.IsDir():
				subdirs, subinfos = append(subdirs, p), append(subinfos, st)
			case !slices.Contains(imageExts, strings.ToLower(filepath.Ext(p))):
				return fmt.Errorf("%s is not a .jpg, .jpeg or .png image", p)
			case !st.Mode().IsRegular():
				return fmt.Errorf("%s is not a regular file (%v)", p, st.Mode().Type())
			default:
				fl.names, fl.sizes = append(fl.names, e.Name()), append(fl.sizes, st.Size())
			}
		}
		all = append(all, fl)
		down := append(slices.Clip(up), visited{dir, info})
		for i, sub := range subdirs {
			if err := walk(sub, subinfos[i], down); err != nil {
				return err
			}
		}
		return nil
	}
	if err := walk(dir, info, up); err != nil {
		return err
	}
	slices.SortFunc(all, func(a, b files) int { return strings.Compare(a.dir, b.dir) })
	for _, fl := range all {
		for i, n := range fl.names {
			p := filepath.Join(fl.dir, n)
			ix.samples = append(ix.samples, sample{file: int32(len(ix.files)), label: label, key: p})
			ix.files = append(ix.files, p)
			ix.spans = append(ix.spans, span{size: fl.sizes[i]})
		}
	}
	return nil
}
