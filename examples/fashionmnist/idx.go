package fashionmnist

import (
	"bufio"
	"compress/gzip"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/loadergen/loadergen/runtime"
	"github.com/loadergen/loadergen/runtime/npy"
)

// DebianDir is where Debian's dataset-fashion-mnist package installs the
// IDX files (apt-get install dataset-fashion-mnist).
const DebianDir = "/usr/share/datasets/fashion-mnist"

// Side is the width and height of an image, and NumClasses the number of
// labels: T-shirt/top, trouser, pullover, dress, coat, sandal, shirt,
// sneaker, bag and ankle boot.
const (
	Side       = 28
	NumClasses = 10
)

// A split pairs the IDX files of one part of the dataset with the
// directory its .npy files go to.
type split struct {
	name   string // directory under the .npy root
	prefix string // IDX file name prefix
}

// splits are Fashion-MNIST's training and test sets.
var splits = [...]split{{"train", "train"}, {"test", "t10k"}}

// idxFiles returns the gzipped IDX image and label files of s under dir.
func (s split) idxFiles(dir string) (images, labels string) {
	return filepath.Join(dir, s.prefix+"-images-idx3-ubyte.gz"), filepath.Join(dir, s.prefix+"-labels-idx1-ubyte.gz")
}

// Ensure makes sure root/train and root/test hold the .npy files of the
// IDX files in src (at most limit samples of each split; 0 means all),
// converting them when they are missing or hold another number of
// samples. It reports whether it converted.
func Ensure(src, root string, limit int) (bool, error) {
	current := true
	for _, s := range splits {
		images, _ := s.idxFiles(src)
		n, err := idxCount(images)
		if err != nil {
			return false, err
		}
		if limit > 0 {
			n = min(n, limit)
		}
		files, err := OpenFashionMNISTFiles(filepath.Join(root, s.name))
		if errors.Is(err, fs.ErrNotExist) {
			current = false
			continue
		}
		if err != nil {
			return false, fmt.Errorf("existing data in %s: %w (remove it to convert again)", root, err)
		}
		current = current && files.Len() == n
		if err := files.Close(); err != nil {
			return false, err
		}
	}
	if current {
		return false, nil
	}
	return true, Convert(src, root, limit)
}

// Convert reads the gzipped IDX files of Fashion-MNIST in src
// ({train,t10k}-{images-idx3,labels-idx1}-ubyte.gz) and writes, for each
// split, root/<split>/images.npy (uint8 [N, 28, 28]) and labels.npy (int64
// [N]) with runtime/npy. A positive limit keeps the first limit samples of
// each split.
func Convert(src, root string, limit int) error {
	for _, s := range splits {
		imagesPath, labelsPath := s.idxFiles(src)
		images, err := readIDX(imagesPath, []int{-1, Side, Side}, limit)
		if err != nil {
			return err
		}
		labels, err := readIDX(labelsPath, []int{-1}, limit)
		if err != nil {
			return err
		}
		n := len(labels)
		if len(images) != n*Side*Side {
			return fmt.Errorf("%s holds %d images, %s %d labels", imagesPath, len(images)/(Side*Side), labelsPath, n)
		}
		if i := slices.IndexFunc(labels, func(l byte) bool { return int(l) >= NumClasses }); i >= 0 {
			return fmt.Errorf("%s: label %d is %d, not a class 0..9", labelsPath, i, labels[i])
		}
		wide := make([]int64, n)
		for i, l := range labels {
			wide[i] = int64(l)
		}
		dir := filepath.Join(root, s.name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		if err := npy.Write(filepath.Join(dir, "images.npy"), runtime.Uint8, []int{n, Side, Side}, images); err != nil {
			return err
		}
		if err := npy.Write(filepath.Join(dir, "labels.npy"), runtime.Int64, []int{n}, runtime.Bytes(wide)); err != nil {
			return err
		}
	}
	return nil
}

// idxUint8 is the IDX type code of unsigned bytes, the only one
// Fashion-MNIST uses.
const idxUint8 = 0x08

// readIDX reads a gzipped IDX file of unsigned bytes whose dimensions are
// want (-1 matches any size) and returns the data of its first limit items
// (all of them when limit is 0 or more than the file holds). Read whole, the
// file must hold exactly the data its dimensions say.
func readIDX(path string, want []int, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	z, err := gzip.NewReader(bufio.NewReader(f))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	dims, err := idxHeader(z, want)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	item := 1
	for _, d := range dims[1:] {
		item *= d
	}
	whole := limit <= 0 || limit >= dims[0]
	if !whole {
		dims[0] = limit
	}
	data := make([]byte, dims[0]*item)
	if _, err := io.ReadFull(z, data); err != nil {
		return nil, fmt.Errorf("%s: dimensions %v need %d bytes of data: %w", path, dims, len(data), err)
	}
	if !whole {
		return data, nil
	}
	if extra, err := io.Copy(io.Discard, z); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	} else if extra > 0 {
		return nil, fmt.Errorf("%s: %d bytes after the %d of dimensions %v", path, extra, len(data), dims)
	}
	return data, z.Close()
}

// idxCount returns the number of items (the first dimension) of a gzipped
// IDX image file, reading only its header.
func idxCount(path string) (int, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	z, err := gzip.NewReader(f)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	dims, err := idxHeader(z, []int{-1, Side, Side})
	if err != nil {
		return 0, fmt.Errorf("%s: %w", path, err)
	}
	return dims[0], nil
}

// idxHeader reads an IDX header (two zero bytes, the type code, the number
// of dimensions, then each dimension as a big-endian uint32) and checks it
// against want.
func idxHeader(r io.Reader, want []int) ([]int, error) {
	var magic [4]byte
	if _, err := io.ReadFull(r, magic[:]); err != nil {
		return nil, fmt.Errorf("IDX header: %w", err)
	}
	if magic[0] != 0 || magic[1] != 0 {
		return nil, fmt.Errorf("not an IDX file: magic %#x", magic)
	}
	if magic[2] != idxUint8 {
		return nil, fmt.Errorf("IDX type %#02x, want unsigned bytes (0x08)", magic[2])
	}
	if int(magic[3]) != len(want) {
		return nil, fmt.Errorf("IDX file of %d dimensions, want %d", magic[3], len(want))
	}
	raw := make([]uint32, len(want))
	if err := binary.Read(r, binary.BigEndian, raw); err != nil {
		return nil, fmt.Errorf("IDX dimensions: %w", err)
	}
	dims := make([]int, len(raw))
	for i, d := range raw {
		dims[i] = int(d)
		if want[i] >= 0 && dims[i] != want[i] {
			return nil, fmt.Errorf("IDX dimensions %v, want %s", raw, formatDims(want))
		}
	}
	return dims, nil
}

// formatDims writes wanted dimensions as "[N 28 28]", N for any size.
func formatDims(want []int) string {
	parts := make([]string, len(want))
	for i, d := range want {
		parts[i] = "N"
		if d >= 0 {
			parts[i] = strconv.Itoa(d)
		}
	}
	return "[" + strings.Join(parts, " ") + "]"
}
