package npy

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"

	"github.com/loadergen/loadergen/runtime"
)

// rawNPY returns a .npy file of format version major.0 whose header is hdr,
// exactly as given, followed by data.
func rawNPY(major byte, hdr string, data []byte) []byte {
	b := append([]byte(magic), major, 0)
	if major == 1 {
		b = binary.LittleEndian.AppendUint16(b, uint16(len(hdr)))
	} else {
		b = binary.LittleEndian.AppendUint32(b, uint32(len(hdr)))
	}
	b = append(b, hdr...)
	return append(b, data...)
}

// dict returns a header dict for descr and shape (a Python tuple literal).
func dict(descr, shape string) string {
	return fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': %s, }\n", descr, shape)
}

// writeFile writes b to name in dir and returns its path.
func writeFile(t *testing.T, dir, name string, b []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// randomData returns n elements of dtype d as little-endian bytes. Floats
// are finite values, bools 0 or 1, everything else random bits.
func randomData(r *rand.Rand, d runtime.DType, n int) []byte {
	b := make([]byte, n*d.Size())
	for i := range n {
		e := b[i*d.Size():]
		switch d {
		case runtime.Float32:
			binary.LittleEndian.PutUint32(e, math.Float32bits(float32(r.NormFloat64())))
		case runtime.Float64:
			binary.LittleEndian.PutUint64(e, math.Float64bits(r.NormFloat64()))
		case runtime.Bool:
			e[0] = byte(r.IntN(2))
		default:
			for j := range d.Size() {
				e[j] = byte(r.Uint32())
			}
		}
	}
	return b
}

// readAll reads every sample of f with Read[T] and checks the values
// against data decoded as little-endian T.
func readAll[T runtime.Element](t *testing.T, f *File, data []byte) {
	t.Helper()
	var zero T
	size := int(unsafe.Sizeof(zero))
	want := make([]T, len(data)/size)
	if err := binary.Read(bytes.NewReader(data), binary.LittleEndian, want); err != nil {
		t.Fatal(err)
	}
	got := make([]T, 0, len(want))
	dst := make([]T, f.SampleBytes()/size)
	for i := range f.Len() {
		if err := Read(f, i, dst); err != nil {
			t.Fatal(err)
		}
		got = append(got, dst...)
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("%s: Read (-want +got):\n%s", f.Path(), d)
	}
}

// checkRead reads f with the Go type of dtype d and compares with data.
func checkRead(t *testing.T, f *File, d runtime.DType, data []byte) {
	t.Helper()
	switch d.GoType() {
	case "uint8":
		readAll[uint8](t, f, data)
	case "int8":
		readAll[int8](t, f, data)
	case "uint16":
		readAll[uint16](t, f, data)
	case "int16":
		readAll[int16](t, f, data)
	case "uint32":
		readAll[uint32](t, f, data)
	case "int32":
		readAll[int32](t, f, data)
	case "uint64":
		readAll[uint64](t, f, data)
	case "int64":
		readAll[int64](t, f, data)
	case "float32":
		readAll[float32](t, f, data)
	case "float64":
		readAll[float64](t, f, data)
	default:
		t.Fatalf("no Go type for %v", d)
	}
}

// mustOpen opens path or fails the test, closing the file at cleanup.
func mustOpen(t *testing.T, path string, spec Spec) *File {
	t.Helper()
	f, err := Open(path, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

func TestRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	shapes := [][]int{{7}, {5, 3}, {4, 2, 3, 5}, {0, 3}, {3, 0}, {1, 1, 1}}
	for _, d := range runtime.DTypes() {
		for _, shape := range shapes {
			t.Run(fmt.Sprintf("%v%v", d, shape), func(t *testing.T) {
				sample := 1
				for _, s := range shape[1:] {
					sample *= s
				}
				n := shape[0] * sample
				data := randomData(r, d, n)
				path := filepath.Join(t.TempDir(), "x.npy")
				if err := Write(path, d, shape, data); err != nil {
					t.Fatal(err)
				}
				raw, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if off := len(raw) - len(data); off%64 != 0 || !bytes.Equal(raw[off:], data) {
					t.Errorf("data at offset %d, want a multiple of 64 followed by the data", off)
				}
				f := mustOpen(t, path, Spec{Key: "x", DType: d, Sample: shape[1:]})
				if f.Len() != shape[0] || f.SampleBytes() != sample*d.Size() {
					t.Errorf("Len, SampleBytes = %d, %d for shape %v", f.Len(), f.SampleBytes(), shape)
				}
				if f.Path() != path {
					t.Errorf("Path() = %q, want %q", f.Path(), path)
				}
				for i := range f.Len() {
					s, err := f.Sample(i)
					if err != nil {
						t.Fatal(err)
					}
					sb := f.SampleBytes()
					if !bytes.Equal(s, data[i*sb:(i+1)*sb]) {
						t.Errorf("Sample(%d) = %x, want %x", i, s, data[i*sb:(i+1)*sb])
					}
				}
				checkRead(t, f, d, data)
			})
		}
	}
}

func TestVersions(t *testing.T) {
	data := []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}
	for _, tc := range []struct {
		name  string
		major byte
		hdr   string
		limit int // SetMaxHeaderSize's, as np.load would need max_header_size; 0 for none
	}{
		{"v1", 1, dict("<i2", "(3, 2)"), 0},
		{"v2", 2, dict("<i2", "(3, 2)") + strings.Repeat(" ", 70000), 80000},
		{"v3", 3, `{"shape": (3, 2), "descr": "<i2", "fortran_order": False}` + "\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			SetMaxHeaderSize(tc.limit)
			defer SetMaxHeaderSize(0)
			path := writeFile(t, t.TempDir(), "v.npy", rawNPY(tc.major, tc.hdr, data))
			f := mustOpen(t, path, Spec{Key: "v", DType: runtime.Int16, Sample: []int{2}})
			if f.Len() != 3 || f.SampleBytes() != 4 {
				t.Errorf("Len, SampleBytes = %d, %d, want 3, 4", f.Len(), f.SampleBytes())
			}
			readAll[int16](t, f, data)
		})
	}
}

// TestAcceptedDescrs opens one file per descr each dtype accepts.
func TestAcceptedDescrs(t *testing.T) {
	dir := t.TempDir()
	for descr, d := range descrDType {
		keys := []runtime.DType{d}
		if descr == "<u2" {
			keys = append(keys, runtime.BFloat16)
		}
		for _, key := range keys {
			data := make([]byte, 2*d.Size())
			path := writeFile(t, dir, "d.npy", rawNPY(1, dict(descr, "(2,)"), data))
			f, err := Open(path, Spec{Key: "k", DType: key})
			if err != nil {
				t.Errorf("descr %q for %v: %v", descr, key, err)
				continue
			}
			if f.Len() != 2 || f.SampleBytes() != key.Size() {
				t.Errorf("descr %q for %v: Len, SampleBytes = %d, %d", descr, key, f.Len(), f.SampleBytes())
			}
			f.Close()
		}
	}
}

func TestOpenRefusals(t *testing.T) {
	raw := Spec{Key: "raw", DType: runtime.Uint8, Sample: []int{64, 64, 64}}
	f4 := Spec{Key: "k", DType: runtime.Float32, Sample: []int{3}}
	big, err := encodeHeader("|u1", []int{100, 64, 64, 64})
	if err != nil {
		t.Fatal(err)
	}
	const rest = "'fortran_order': False, 'shape': (2, 3)"
	tests := []struct {
		name string
		file []byte
		spec Spec
		want string // after "PATH: "
	}{
		{"empty", nil, raw, `not a .npy file: it does not start with "\x93NUMPY"`},
		{"bad magic", []byte("\x93NUMPZ\x01\x00\x00\x00"), raw, `not a .npy file: it does not start with "\x93NUMPY"`},
		{"short preamble", []byte("\x93NUMPY\x01"), raw, "file is 7 bytes, too short for a .npy header"},
		{"version 4", rawNPY(4, dict("|u1", "(1, 64, 64, 64)"), nil), raw,
			"unsupported .npy format version 4.0 (loadergen reads 1.0, 2.0 and 3.0)"},
		{"version 1.1", []byte("\x93NUMPY\x01\x01\x00\x00"), raw,
			"unsupported .npy format version 1.1 (loadergen reads 1.0, 2.0 and 3.0)"},
		{"version 0", []byte("\x93NUMPY\x00\x00\x00\x00"), raw,
			"unsupported .npy format version 0.0 (loadergen reads 1.0, 2.0 and 3.0)"},
		{"short v1 length", []byte("\x93NUMPY\x01\x00\x10"), raw, "file is 9 bytes, too short for a version 1.0 header"},
		{"short v2 length", []byte("\x93NUMPY\x02\x00\x10\x00"), raw, "file is 10 bytes, too short for a version 2.0 header"},
		{"header past end v1", append([]byte("\x93NUMPY\x01\x00\x00\x10"), make([]byte, 70)...), raw,
			"header length 4096 runs past the end of the file (80 bytes)"},
		{"header past end v3", []byte("\x93NUMPY\x03\x00\xff\xff\xff\xff{}"), raw,
			"header length 4294967295 runs past the end of the file (14 bytes)"},
		{"header syntax", rawNPY(1, "{'descr' '<f4'}\n", nil), raw,
			`header is not parseable: expected ':' at offset 9: "{'descr' '<f4'}"`},
		{"header clipped", rawNPY(2, "{'descr': '<f4', 'pad': '"+strings.Repeat("a", 300)+"'}"+strings.Repeat(" ", 100)+"\n", nil), raw,
			`header is not parseable: unknown key 'pad': "{'descr': '<f4', 'pad': '` + strings.Repeat("a", 175) + `"...`},
		{"header unknown key", rawNPY(1, "{'descr': '<f4', "+rest+", 'x': 1}", nil), raw,
			`header is not parseable: unknown key 'x': "{'descr': '<f4', ` + rest + `, 'x': 1}"`},
		{"header missing key", rawNPY(2, "{'descr': '<f4'}", nil), raw,
			`header is not parseable: missing key 'fortran_order': "{'descr': '<f4'}"`},
		{"header shape list", rawNPY(1, "{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3]}", nil), raw,
			`header is not parseable: 'shape' is [2, 3], want a tuple of ints: "{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3]}"`},
		{"dtype mismatch", rawNPY(1, dict("<f4", "(100, 64, 64, 64)"), nil), raw,
			`dtype '<f4' (float32), schema key "raw" expects uint8 ('|u1')`},
		{"void for uint16", rawNPY(1, dict("<V2", "(2,)"), nil), Spec{Key: "k", DType: runtime.Uint16},
			`dtype '<V2' (bfloat16), schema key "k" expects uint16 ('<u2')`},
		{"float16 for bfloat16", rawNPY(1, dict("<f2", "(2,)"), nil), Spec{Key: "k", DType: runtime.BFloat16},
			`dtype '<f2' (float16), schema key "k" expects bfloat16 ('<u2' or '<V2')`},
		{"big-endian", rawNPY(1, dict(">f4", "(2, 3)"), nil), f4,
			"big-endian dtype '>f4': only little-endian files are supported"},
		{"big-endian uint8", rawNPY(1, dict(">u1", "(2, 3)"), nil), raw,
			"big-endian dtype '>u1': only little-endian files are supported"},
		{"complex", rawNPY(1, dict("<c8", "(2, 3)"), nil), f4,
			`dtype '<c8' is not supported, schema key "k" expects float32 ('<f4')`},
		{"wider void", rawNPY(1, dict("|V4", "(2, 3)"), nil), f4,
			`dtype '|V4' is not supported, schema key "k" expects float32 ('<f4')`},
		{"object", rawNPY(1, dict("|O", "(2, 3)"), nil), raw,
			`object dtype '|O' is not supported, schema key "raw" expects uint8 ('|u1')`},
		{"structured", rawNPY(1, "{'descr': [('a', '<f4'), ('b', '<i2')], 'fortran_order': False, 'shape': (3,), }\n", nil), raw,
			`structured dtype (a list of fields) is not supported, schema key "raw" expects uint8 ('|u1')`},
		{"fortran", rawNPY(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }\n", make([]byte, 24)), f4,
			"Fortran-ordered array: loadergen reads C order (re-save with numpy.ascontiguousarray)"},
		{"zero-dim", rawNPY(1, dict("|u1", "()"), []byte{7}), raw,
			`zero-dimensional array (shape ()), key "raw" expects (N, 64, 64, 64)`},
		{"zero-dim no sample", rawNPY(1, dict("<f4", "()"), make([]byte, 4)), Spec{Key: "k", DType: runtime.Float32},
			`zero-dimensional array (shape ()), key "k" expects (N,)`},
		{"shape mismatch", rawNPY(1, dict("|u1", "(100, 32, 32)"), nil), raw,
			`shape (100, 32, 32), key "raw" expects (N, 64, 64, 64)`},
		{"shape too long", rawNPY(1, dict("<f4", "(2, 3, 1)"), nil), f4, `shape (2, 3, 1), key "k" expects (N, 3)`},
		{"shape too short", rawNPY(1, dict("<f4", "(6,)"), nil), f4, `shape (6,), key "k" expects (N, 3)`},
		{"negative", rawNPY(1, dict("<f4", "(-1, 3)"), nil), f4, "shape (-1, 3) has a negative dimension"},
		{"overflow", rawNPY(1, dict("<f8", "(4611686018427387904, 2)"), nil), Spec{Key: "k", DType: runtime.Float64, Sample: []int{2}},
			"shape (4611686018427387904, 2) of float64 overflows int" + strconv.Itoa(strconv.IntSize)},
		{"truncated data", append(big, make([]byte, 1000-len(big))...), raw,
			"file is 1000 bytes, header and shape (100, 64, 64, 64) need 26214528"},
		{"trailing data", rawNPY(1, dict("<f4", "(2, 3)"), make([]byte, 25)), f4,
			"file is 95 bytes, header and shape (2, 3) need 94"},
		{"invalid spec dtype", rawNPY(1, dict("<f4", "(2, 3)"), make([]byte, 24)), Spec{Key: "k", Sample: []int{3}},
			`schema key "k" has invalid dtype DType(0)`},
		{"negative spec sample", rawNPY(1, dict("<f4", "(2, 3)"), make([]byte, 24)), Spec{Key: "k", DType: runtime.Float32, Sample: []int{-3}},
			`schema key "k" has a negative sample dimension (-3,)`},
	}
	dir := t.TempDir()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, dir, "raw.npy", tc.file)
			f, err := Open(path, tc.spec)
			if err == nil {
				f.Close()
				t.Fatalf("Open succeeded, want error %q", tc.want)
			}
			if got, want := err.Error(), path+": "+tc.want; got != want {
				t.Errorf("Open error\n got %s\nwant %s", got, want)
			}
		})
	}
}

func TestOpenNotAFile(t *testing.T) {
	dir := t.TempDir()
	spec := Spec{Key: "k", DType: runtime.Uint8}
	if _, err := Open(filepath.Join(dir, "nope.npy"), spec); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open of a missing file = %v, want fs.ErrNotExist", err)
	}
	if _, err := Open(dir, spec); err == nil || !strings.HasPrefix(err.Error(), dir+": reading header: ") {
		t.Errorf("Open of a directory = %v, want a read error", err)
	}
}

// openF4 writes a float32 file of shape (4, 3) holding 0..11 and opens it.
func openF4(t *testing.T) *File {
	t.Helper()
	data := make([]byte, 0, 48)
	for i := range 12 {
		data = binary.LittleEndian.AppendUint32(data, math.Float32bits(float32(i)))
	}
	path := filepath.Join(t.TempDir(), "f.npy")
	if err := Write(path, runtime.Float32, []int{4, 3}, data); err != nil {
		t.Fatal(err)
	}
	return mustOpen(t, path, Spec{Key: "f", DType: runtime.Float32, Sample: []int{3}})
}

func TestSampleAndReadErrors(t *testing.T) {
	f := openF4(t)
	p := f.Path()
	for _, i := range []int{-1, 4} {
		if _, err := f.Sample(i); err == nil || err.Error() != fmt.Sprintf("%s: sample index %d out of range [0, 4)", p, i) {
			t.Errorf("Sample(%d) error = %v", i, err)
		}
		if err := Read(f, i, make([]float32, 3)); err == nil || err.Error() != fmt.Sprintf("%s: sample index %d out of range [0, 4)", p, i) {
			t.Errorf("Read(%d) error = %v", i, err)
		}
	}
	for _, tc := range []struct {
		read func() error
		want string
	}{
		{func() error { return Read(f, 0, make([]float32, 2)) }, "destination is 8 bytes (2 elements of 4 bytes), a sample is 12 bytes"},
		{func() error { return Read(f, 0, make([]float64, 3)) }, "destination is 24 bytes (3 elements of 8 bytes), a sample is 12 bytes"},
		{func() error { return Read[float32](f, 0, nil) }, "destination is 0 bytes (0 elements of 4 bytes), a sample is 12 bytes"},
	} {
		if err := tc.read(); err == nil || err.Error() != p+": "+tc.want {
			t.Errorf("Read error = %v, want %q", err, p+": "+tc.want)
		}
	}
	// Any element type of the right total size reads the raw bytes.
	b := make([]byte, 12)
	if err := Read(f, 1, b); err != nil {
		t.Fatal(err)
	}
	if got := math.Float32frombits(binary.LittleEndian.Uint32(b[8:])); got != 5 {
		t.Errorf("Read into bytes: element 2 of sample 1 = %v, want 5", got)
	}
}

func TestClose(t *testing.T) {
	f := openF4(t)
	for range 2 {
		if err := f.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
	want := f.Path() + ": read of sample 0 after Close"
	if _, err := f.Sample(0); err == nil || err.Error() != want {
		t.Errorf("Sample after Close = %v, want %q", err, want)
	}
	if err := Read(f, 0, make([]float32, 3)); err == nil || err.Error() != want {
		t.Errorf("Read after Close = %v, want %q", err, want)
	}
	if f.Len() != 4 {
		t.Errorf("Len after Close = %d, want 4", f.Len())
	}
}

func TestReadDoesNotAllocate(t *testing.T) {
	f := openF4(t)
	dst := make([]float32, 3)
	allocs := testing.AllocsPerRun(100, func() {
		if err := Read(f, 2, dst); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Read allocates %v times per call", allocs)
	}
	if want := []float32{6, 7, 8}; !cmp.Equal(dst, want) {
		t.Errorf("Read(2) = %v, want %v", dst, want)
	}
}

func TestConcurrentReads(t *testing.T) {
	f := openF4(t)
	var wg sync.WaitGroup
	for w := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			dst := make([]float32, 3)
			for k := range 100 {
				i := (w + k) % f.Len()
				if err := Read(f, i, dst); err != nil {
					t.Error(err)
					return
				}
				if dst[0] != float32(3*i) {
					t.Errorf("sample %d starts with %v", i, dst[0])
					return
				}
			}
		}()
	}
	wg.Wait()
}

func TestWriteErrors(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "w.npy")
	tests := []struct {
		dtype runtime.DType
		shape []int
		data  []byte
		want  string // after "writing PATH: "
	}{
		{0, []int{1}, []byte{0}, "invalid dtype DType(0)"},
		{runtime.Uint8, []int{2, -1}, nil, "shape (2, -1) has a negative dimension"},
		{runtime.Float32, []int{2, 3}, make([]byte, 23), "data is 23 bytes, shape (2, 3) of float32 needs 24"},
		{runtime.Uint8, []int{1}, nil, "data is 0 bytes, shape (1,) of uint8 needs 1"},
		{runtime.Int16, []int{math.MaxInt, 1}, nil, fmt.Sprintf("shape (%d, 1) of int16 overflows int%d", math.MaxInt, strconv.IntSize)},
		{runtime.Uint8, make([]int, 30000), nil, "header of shape with 30000 dimensions is 90102 bytes, more than version 1.0 allows"},
	}
	for _, tc := range tests {
		err := Write(path, tc.dtype, tc.shape, tc.data)
		if want := "writing " + path + ": " + tc.want; err == nil || err.Error() != want {
			t.Errorf("Write(%v, shape of %d dims) = %v, want %q", tc.dtype, len(tc.shape), err, want)
		}
	}
	err := Write(filepath.Join(dir, "missing", "w.npy"), runtime.Uint8, []int{1}, []byte{1})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Write into a missing directory = %v, want fs.ErrNotExist", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 0 {
		t.Errorf("failed writes left %v behind", ents)
	}
}

func TestWriteReplaces(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "w.npy")
	for _, v := range []byte{1, 2} {
		if err := Write(path, runtime.Uint8, []int{2}, []byte{v, v}); err != nil {
			t.Fatal(err)
		}
	}
	f := mustOpen(t, path, Spec{Key: "w", DType: runtime.Uint8})
	readAll[uint8](t, f, []byte{2, 2})
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 1 {
		t.Errorf("directory holds %d entries, want only w.npy", len(ents))
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o644 {
		t.Errorf("Stat = %v, %v; want mode 0644", st, err)
	}
}

func TestEncodeHeaderAlignment(t *testing.T) {
	// Dicts whose natural length would end exactly on 64 get a whole 64
	// bytes of padding, as numpy pads them.
	for dims := range 40 {
		shape := make([]int, dims)
		for i := range shape {
			shape[i] = i + 1
		}
		b, err := encodeHeader("<f4", shape)
		if err != nil {
			t.Fatal(err)
		}
		h, err := parseHeader(string(b[10:]))
		if err != nil {
			t.Fatal(err)
		}
		if len(b)%64 != 0 || b[len(b)-1] != '\n' || len(h.shape) != dims || int(binary.LittleEndian.Uint16(b[8:])) != len(b)-10 {
			t.Errorf("encodeHeader with %d dims: %d bytes, parsed shape %v", dims, len(b), h.shape)
		}
	}
}

func TestGather(t *testing.T) {
	f := openF4(t) // 4 samples of 3 float32: sample i holds 3i, 3i+1, 3i+2
	p := f.Path()
	dst := make([]float32, 9)
	if n, err := Gather(f, []int{2, 0, 2}, dst); n != 3 || err != nil {
		t.Fatalf("Gather = %d, %v", n, err)
	}
	if want := []float32{6, 7, 8, 0, 1, 2, 6, 7, 8}; !cmp.Equal(dst, want) {
		t.Errorf("Gather = %v, want %v", dst, want)
	}
	for _, tc := range []struct {
		indices []int
		dst     []float32
		n       int
		want    string
	}{
		{[]int{1, 3, 4}, make([]float32, 9), 2, p + ": sample index 4 out of range [0, 4)"},
		{[]int{-1}, make([]float32, 3), 0, p + ": sample index -1 out of range [0, 4)"},
		{[]int{1, 2}, make([]float32, 3), 0, p + ": destination is 12 bytes, 2 samples are 24"},
	} {
		if n, err := Gather(f, tc.indices, tc.dst); n != tc.n || err == nil || err.Error() != tc.want {
			t.Errorf("Gather(%v) = %d, %v; want %d, %q", tc.indices, n, err, tc.n, tc.want)
		}
	}
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := Gather(f, []int{3, 1, 0}, dst); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("Gather allocates %v times per call", allocs)
	}
	f.Close()
	if _, err := Gather(f, []int{1}, dst[:3]); err == nil || err.Error() != p+": read of sample 1 after Close" {
		t.Errorf("Gather after Close = %v", err)
	}
}

func TestData(t *testing.T) {
	f := openF4(t)
	if got := runtime.View[float32](f.Data()); len(got) != 12 || got[0] != 0 || got[11] != 11 {
		t.Errorf("Data() = %v, want 0..11", got)
	}
}
