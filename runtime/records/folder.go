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

// otherImageExts are the extensions that torchvision's ImageFolder takes
// for images (IMG_EXTENSIONS) and a folder source does not read.
var otherImageExts = []string{".ppm", ".bmp", ".pgm", ".tif", ".tiff", ".webp"}

// maxListed is the most paths an error or log line lists.
const maxListed = 5

// indexFolder indexes a directory of class folders as torchvision's
// ImageFolder does: the classes are the subdirectories, sorted; a class's
// images are every file under it (subdirectories included), walked in
// sorted order; an image's label is its class's index. Symlinks are
// followed, as ImageFolder follows them (os.scandir's is_dir for the
// classes, os.walk with followlinks=True below them); one that leads back
// to a directory holding it (a loop) is an error naming it, as is a
// broken one. Each sample has one member, the whole file. Files that are
// not .jpg, .jpeg or .png images are skipped when their name starts with
// '.' (.DS_Store) or skipUnknown is set, as ImageFolder skips what is not
// an image, and else an error listing them; other returns those
// skipUnknown skipped.
func indexFolder(dir string, skipUnknown bool) (ix *index, classes, other []string, err error) {
	up, err := above(dir)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("folder %s: %w", dir, err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("folder %s: %w", dir, err)
	}
	var infos []os.FileInfo
	for _, e := range entries {
		info, err := os.Stat(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, nil, nil, fmt.Errorf("folder %s: %w", dir, err)
		}
		if info.IsDir() {
			classes, infos = append(classes, e.Name()), append(infos, info)
		}
	}
	if len(classes) == 0 {
		return nil, nil, nil, fmt.Errorf("folder %s has no class directories", dir)
	}
	ix = &index{members: []string{"image"}}
	for c, class := range classes {
		before := len(ix.samples)
		if err := ix.addClass(filepath.Join(dir, class), infos[c], int32(c), up, &other); err != nil {
			return nil, nil, nil, fmt.Errorf("folder: %w", err)
		}
		if len(ix.samples) == before {
			return nil, nil, nil, fmt.Errorf("folder %s: class %q has no images", dir, class)
		}
		for i := before; i < len(ix.samples); i++ {
			rel, err := filepath.Rel(dir, ix.files[i])
			if err != nil {
				return nil, nil, nil, fmt.Errorf("folder %s: %w", dir, err)
			}
			ix.samples[i].key = filepath.ToSlash(rel)
		}
	}
	if len(other) > 0 && !skipUnknown {
		return nil, nil, nil, fmt.Errorf("folder %s: %s: %s; remove them, or set skip_unknown: true under records: to skip them as ImageFolder skips files that are not images%s",
			dir, count(len(other), "file is not a .jpg, .jpeg or .png image", "files are not .jpg, .jpeg or .png images"), listed(dir, other), imageFolderReads(dir, other))
	}
	return ix, classes, other, nil
}

// count says "1 file is" or "3 files are".
func count(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

// listed lists the first maxListed of paths, relative to dir, and how
// many more there are.
func listed(dir string, paths []string) string {
	names := make([]string, 0, maxListed)
	for _, p := range paths[:min(len(paths), maxListed)] {
		if rel, err := filepath.Rel(dir, p); err == nil {
			p = rel
		}
		names = append(names, p)
	}
	s := strings.Join(names, ", ")
	if len(paths) > maxListed {
		s += fmt.Sprintf(" and %d more", len(paths)-maxListed)
	}
	return s
}

// imageFolderReads warns, of the files skipped or refused (other), of
// those that ImageFolder reads as images (.bmp, .webp, ...): without them
// a folder source's samples are not ImageFolder's.
func imageFolderReads(dir string, other []string) string {
	var images []string
	for _, p := range other {
		if slices.Contains(otherImageExts, strings.ToLower(filepath.Ext(p))) {
			images = append(images, p)
		}
	}
	if len(images) == 0 {
		return ""
	}
	return fmt.Sprintf("; ImageFolder reads %s as images, which loadergen does not decode: convert them to PNG, as without them the samples after them differ from ImageFolder's",
		listed(dir, images))
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
// directories above dir. Files that are not images are skipped when their
// name starts with '.', and else added to other.
func (ix *index) addClass(dir string, info os.FileInfo, label int32, up []visited, other *[]string) error {
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
				if !strings.HasPrefix(e.Name(), ".") || slices.Contains(otherImageExts, strings.ToLower(filepath.Ext(p))) {
					*other = append(*other, p)
				}
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
			ix.samples = append(ix.samples, sample{file: int32(len(ix.files)), label: label})
			ix.files = append(ix.files, p)
			ix.extents = append(ix.extents, extent{size: fl.sizes[i]})
		}
	}
	return nil
}
