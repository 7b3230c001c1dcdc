package fashionmnist

import (
	"bytes"
	"compress/gzip"
	"encoding/binary"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// writeIDX writes a gzipped IDX file: the header for type code typ and
// dims, then data.
func writeIDX(t *testing.T, path string, typ byte, dims []int, data []byte) {
	t.Helper()
	var raw bytes.Buffer
	raw.Write([]byte{0, 0, typ, byte(len(dims))})
	for _, d := range dims {
		binary.Write(&raw, binary.BigEndian, uint32(d))
	}
	raw.Write(data)
	var z bytes.Buffer
	w := gzip.NewWriter(&z)
	w.Write(raw.Bytes())
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, z.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// synthetic is what writeSynthetic wrote for one split: the images, 784
// bytes each, and the labels.
type synthetic struct {
	images, labels []byte
}

// writeSynthetic writes the four IDX files of a learnable stand-in for
// Fashion-MNIST into dir: class c's images are noise with a bright band on
// rows 2c+4 and 2c+5. It returns what it wrote, split by split in the
// order of splits.
func writeSynthetic(t *testing.T, dir string, nTrain, nTest int) [len(splits)]synthetic {
	t.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	var wrote [len(splits)]synthetic
	for k, s := range splits {
		n := nTrain
		if s.name == "test" {
			n = nTest
		}
		images := make([]byte, n*Side*Side)
		labels := make([]byte, n)
		for i := range n {
			c := rng.IntN(NumClasses)
			labels[i] = byte(c)
			for p := range Side * Side {
				v := rng.IntN(96)
				if y := p / Side; y == 2*c+4 || y == 2*c+5 {
					v += 150
				}
				images[i*Side*Side+p] = byte(v)
			}
		}
		imagesPath, labelsPath := s.idxFiles(dir)
		writeIDX(t, imagesPath, idxUint8, []int{n, Side, Side}, images)
		writeIDX(t, labelsPath, idxUint8, []int{n}, labels)
		wrote[k] = synthetic{images, labels}
	}
	return wrote
}

// TestConvert converts synthetic IDX files and reads every sample back
// through the generated file source, against what was written.
func TestConvert(t *testing.T) {
	src, root := t.TempDir(), t.TempDir()
	written := writeSynthetic(t, src, 40, 12)
	wrote, err := Ensure(src, root, 0)
	if err != nil || !wrote {
		t.Fatalf("Ensure = %v, %v; want a conversion", wrote, err)
	}
	for k, s := range splits {
		images, labels := written[k].images, written[k].labels
		files, err := OpenFashionMNISTFiles(filepath.Join(root, s.name))
		if err != nil {
			t.Fatal(err)
		}
		defer files.Close()
		if files.Len() != len(labels) {
			t.Fatalf("%s: %d samples, want %d", s.name, files.Len(), len(labels))
		}
		smp := FashionMNISTSample{Image: make([]uint8, Side*Side), Label: make([]int64, 1)}
		for i := range files.Len() {
			smp.Index = i
			if err := files.Read(&smp); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(smp.Image, images[i*Side*Side:][:Side*Side]) || smp.Label[0] != int64(labels[i]) {
				t.Fatalf("%s sample %d differs from the one written", s.name, i)
			}
		}
	}
	if wrote, err := Ensure(src, root, 0); err != nil || wrote {
		t.Errorf("Ensure on converted data = %v, %v; want no conversion", wrote, err)
	}
	if wrote, err := Ensure(src, root, 10); err != nil || !wrote {
		t.Errorf("Ensure with another limit = %v, %v; want a conversion", wrote, err)
	}
	files, err := OpenFashionMNISTFiles(filepath.Join(root, "test"))
	if err != nil {
		t.Fatal(err)
	}
	defer files.Close()
	if files.Len() != 10 {
		t.Errorf("limit 10: the test split holds %d samples", files.Len())
	}
}

func TestConvertErrors(t *testing.T) {
	images := make([]byte, 2*Side*Side)
	tests := []struct {
		name   string
		typ    byte
		dims   []int
		data   []byte
		labels []byte
		want   string
	}{
		{"type", 0x0D, []int{2, Side, Side}, images, []byte{0, 1}, "IDX type 0x0d, want unsigned bytes (0x08)"},
		{"rank", idxUint8, []int{2, Side * Side}, images, []byte{0, 1}, "IDX file of 2 dimensions, want 3"},
		{"side", idxUint8, []int{2, Side, 27}, images, []byte{0, 1}, "IDX dimensions [2 28 27], want [N 28 28]"},
		{"truncated", idxUint8, []int{2, Side, Side}, images[:1000], []byte{0, 1}, "dimensions [2 28 28] need 1568 bytes of data: unexpected EOF"},
		{"trailing", idxUint8, []int{2, Side, Side}, append(images, 7), []byte{0, 1}, "1 bytes after the 1568 of dimensions [2 28 28]"},
		{"count", idxUint8, []int{2, Side, Side}, images, []byte{0, 1, 2}, "holds 2 images, "},
		{"class", idxUint8, []int{2, Side, Side}, images, []byte{0, 10}, "label 1 is 10, not a class 0..9"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := t.TempDir()
			imagesPath, labelsPath := splits[0].idxFiles(src)
			writeIDX(t, imagesPath, tt.typ, tt.dims, tt.data)
			writeIDX(t, labelsPath, idxUint8, []int{len(tt.labels)}, tt.labels)
			err := Convert(src, t.TempDir(), 0)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want it to contain %q", err, tt.want)
			}
		})
	}
	if err := Convert(t.TempDir(), t.TempDir(), 0); err == nil || !strings.Contains(err.Error(), "train-images-idx3-ubyte.gz: no such file") {
		t.Errorf("missing files: error %v", err)
	}
}
