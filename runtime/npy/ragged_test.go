package npy

import (
	"errors"
	"fmt"
	"io/fs"
	"math"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/loadergen/loadergen/runtime"
)

// The ragged fixtures (testdata/npy/make_fixtures.py): csr_tokens.npy holds
// int32 0..12 in samples of 3, 0, 5, 1 and 4 rows; csr_boxes.npy holds
// float32 0..23 as rows of 4, in samples of 2, 1, 0 and 3 rows.
var (
	tokensSpec = Spec{Key: "tokens", DType: runtime.Int32, Sample: []int{5}}
	boxesSpec  = Spec{Key: "boxes", DType: runtime.Float32, Sample: []int{3, 4}}
	tokens     = [][]int32{{0, 1, 2}, {}, {3, 4, 5, 6, 7}, {8}, {9, 10, 11, 12}}
	boxes      = [][]float32{{0, 1, 2, 3, 4, 5, 6, 7}, {8, 9, 10, 11}, {}, {12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}}
)

// fixture returns the path of a file in testdata/npy.
func fixture(name string) string { return filepath.Join(fixtures, name) }

// mustOpenRagged opens a ragged pair or fails the test, closing it at
// cleanup.
func mustOpenRagged(t testing.TB, dataPath, offsetsPath string, spec Spec) *File {
	t.Helper()
	f, err := OpenRagged(dataPath, offsetsPath, spec)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

// writeRagged writes samples of dtype with rows of shape row as a ragged
// pair in dir: name.npy holds data, the rows back to back, and
// name_offsets.npy the row offsets. It returns both paths.
func writeRagged(t testing.TB, dir, name string, dtype runtime.DType, row []int, data []byte, offsets []int64) (dataPath, offsetsPath string) {
	t.Helper()
	dataPath = filepath.Join(dir, name+".npy")
	offsetsPath = filepath.Join(dir, name+"_offsets.npy")
	shape := append([]int{int(offsets[len(offsets)-1])}, row...)
	if err := Write(dataPath, dtype, shape, data); err != nil {
		t.Fatal(err)
	}
	if err := Write(offsetsPath, runtime.Int64, []int{len(offsets)}, runtime.Bytes(offsets)); err != nil {
		t.Fatal(err)
	}
	return dataPath, offsetsPath
}

// checkRagged checks every sample of the ragged file f against want, the
// elements of each sample, with Rows, AppendRows and GatherRows.
func checkRagged[T runtime.Element](t *testing.T, f *File, want [][]T) {
	t.Helper()
	if !f.Ragged() || f.Len() != len(want) {
		t.Fatalf("Ragged, Len = %v, %d, want true, %d", f.Ragged(), f.Len(), len(want))
	}
	slot := f.SampleBytes() / len(runtime.Bytes(make([]T, 1)))
	perRow := slot / f.maxRows
	staging := make([]T, 1, 1+slot)
	staging[0] = 42
	for i, w := range want {
		if got := f.Rows(i); got != len(w)/perRow {
			t.Errorf("Rows(%d) = %d, want %d", i, got, len(w)/perRow)
		}
		got, err := AppendRows(f, i, staging[:1])
		if err != nil {
			t.Fatal(err)
		}
		if d := cmp.Diff(append([]T{42}, w...), got); d != "" {
			t.Errorf("AppendRows(%d) onto [42] (-want +got):\n%s", i, d)
		}
		if &got[0] != &staging[0] {
			t.Errorf("AppendRows(%d) moved dst out of its array", i)
		}
	}
	var indices []int
	for i := range want {
		indices = append(indices, len(want)-1-i, i)
	}
	dst := make([]T, len(indices)*slot)
	for k := range dst {
		dst[k] = 99
	}
	lengths := make([]int32, len(indices))
	if n, err := GatherRows(f, indices, dst, lengths); n != len(indices) || err != nil {
		t.Fatalf("GatherRows = %d, %v", n, err)
	}
	for k, i := range indices {
		wantSlot := append([]T{}, want[i]...)
		for len(wantSlot) < slot {
			wantSlot = append(wantSlot, 99) // the padding is left alone
		}
		if d := cmp.Diff(wantSlot, dst[k*slot:(k+1)*slot]); d != "" {
			t.Errorf("GatherRows slot %d (sample %d) (-want +got):\n%s", k, i, d)
		}
		if int(lengths[k]) != f.Rows(i) {
			t.Errorf("GatherRows lengths[%d] = %d, want %d", k, lengths[k], f.Rows(i))
		}
	}
}

func TestRaggedFixtures(t *testing.T) {
	tests := []struct {
		name, data, offsets string
		spec                Spec
		check               func(*testing.T, *File)
	}{
		{"tokens", "csr_tokens.npy", "csr_tokens_offsets.npy", tokensSpec, func(t *testing.T, f *File) { checkRagged(t, f, tokens) }},
		{"boxes", "csr_boxes.npy", "csr_boxes_offsets.npy", boxesSpec, func(t *testing.T, f *File) { checkRagged(t, f, boxes) }},
		{"boxes as float64", "csr_boxes.npy", "csr_boxes_offsets.npy", boxesSpec,
			func(t *testing.T, f *File) {
				// Any element type whose size divides a row reads its bytes.
				got, err := AppendRows(f, 1, make([]float64, 0, 2))
				if err != nil {
					t.Fatal(err)
				}
				if d := cmp.Diff(boxes[1], runtime.View[float32](runtime.Bytes(got))); d != "" {
					t.Errorf("AppendRows(1) into float64 (-want +got):\n%s", d)
				}
			}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := mustOpenRagged(t, fixture(tc.data), fixture(tc.offsets), tc.spec)
			if f.Path() != fixture(tc.data) {
				t.Errorf("Path() = %q, want %q", f.Path(), fixture(tc.data))
			}
			tc.check(t, f)
		})
	}
}

func TestRaggedRefusals(t *testing.T) {
	tokens, boxes := fixture("csr_tokens.npy"), fixture("csr_boxes.npy")
	type refusal struct {
		name          string
		data, offsets string
		spec          Spec
		at            string // the path the error starts with; "" for the offsets
		want          string // after "PATH: "
	}
	tests := []refusal{
		{"decreasing", tokens, "csr_offsets_decreasing.npy", tokensSpec, "",
			"offsets decrease at index 2: offsets[2] = 2 after offsets[1] = 3"},
		{"last", tokens, "csr_offsets_last.npy", tokensSpec, "",
			"offsets[5] (the last) is 12, but " + tokens + " holds 13 rows"},
		{"first", tokens, "csr_offsets_first.npy", tokensSpec, "", "offsets[0] is 1, want 0"},
		{"int32", tokens, "csr_offsets_i4.npy", tokensSpec, "", "offsets have dtype '<i4' (int32), want int64 ('<i8')"},
		{"float32", tokens, "csr_boxes.npy", tokensSpec, "", "offsets have dtype '<f4' (float32), want int64 ('<i8')"},
		{"2-D", tokens, "csr_offsets_2d.npy", tokensSpec, "",
			"offsets have shape (2, 3), want (N+1,): one dimension, at least 1 entry"},
		{"sample too long", tokens, "csr_tokens_offsets.npy", Spec{Key: "tokens", DType: runtime.Int32, Sample: []int{4}}, "",
			`1 sample has more rows than key "tokens" allows (4): sample 2 (5 rows); set overflow: truncate on the key to keep the first 4 rows of such samples`},
		{"samples too long", tokens, "csr_tokens_offsets.npy", Spec{Key: "tokens", DType: runtime.Int32, Sample: []int{3}}, "",
			`2 samples have more rows than key "tokens" allows (3): sample 2 (5 rows), sample 4 (4 rows); set overflow: truncate on the key to keep the first 3 rows of such samples`},
		{"data dtype", tokens, "csr_tokens_offsets.npy", Spec{Key: "tokens", DType: runtime.Float32, Sample: []int{5}}, tokens,
			`dtype '<i4' (int32), schema key "tokens" expects float32 ('<f4')`},
		{"data row shape", boxes, "csr_boxes_offsets.npy", Spec{Key: "boxes", DType: runtime.Float32, Sample: []int{3, 3}}, boxes,
			`shape (6, 4), key "boxes" expects (rows, 3)`},
		{"data 1-D row", boxes, "csr_boxes_offsets.npy", Spec{Key: "boxes", DType: runtime.Float32, Sample: []int{3}}, boxes,
			`shape (6, 4), key "boxes" expects (rows,)`},
		{"no sample axis", tokens, "csr_tokens_offsets.npy", Spec{Key: "tokens", DType: runtime.Int32}, tokens,
			`ragged key "tokens" has no sample axis: Sample[0] is the most rows of a sample`},
		{"negative sample", tokens, "csr_tokens_offsets.npy", Spec{Key: "tokens", DType: runtime.Int32, Sample: []int{-5}}, tokens,
			`schema key "tokens" has a negative sample dimension (-5,)`},
	}
	if over := math.MaxInt32; strconv.IntSize == 64 {
		over++ // a variable: the constant does not compile where int is 32 bits
		tests = append(tests, refusal{"more rows than int32", tokens, "csr_tokens_offsets.npy", Spec{Key: "tokens", DType: runtime.Int32, Sample: []int{over}}, tokens,
			`ragged key "tokens" allows 2147483648 rows a sample, more than an int32 length holds`})
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			at := tc.at
			if at == "" {
				at = fixture(tc.offsets)
			}
			f, err := OpenRagged(tc.data, fixture(tc.offsets), tc.spec)
			if err == nil {
				f.Close()
				t.Fatalf("OpenRagged succeeded, want error %q", tc.want)
			}
			if got, want := err.Error(), at+": "+tc.want; got != want {
				t.Errorf("OpenRagged error\n got %s\nwant %s", got, want)
			}
		})
	}
}

// TestRaggedOverflowListed: of many samples over the maximum, the error
// lists the first maxListed, in order, and counts them all.
func TestRaggedOverflowListed(t *testing.T) {
	offsets := []int64{0}
	var listed []string
	for i := range 3 * maxListed {
		rows := int64(1)
		if i%2 == 1 { // every other sample has 3 + i rows, over the maximum 2
			rows = int64(3 + i)
			if len(listed) < maxListed {
				listed = append(listed, fmt.Sprintf("sample %d (%d rows)", i, rows))
			}
		}
		offsets = append(offsets, offsets[len(offsets)-1]+rows)
	}
	data, offsetsPath := writeRagged(t, t.TempDir(), "t", runtime.Uint8, nil, make([]byte, offsets[len(offsets)-1]), offsets)
	_, err := OpenRagged(data, offsetsPath, Spec{Key: "t", DType: runtime.Uint8, Sample: []int{2}})
	want := fmt.Sprintf(`%s: %d samples have more rows than key "t" allows (2), the first %d: %s; set overflow: truncate on the key to keep the first 2 rows of such samples`,
		offsetsPath, 3*maxListed/2, maxListed, strings.Join(listed, ", "))
	if err == nil || err.Error() != want {
		t.Fatalf("OpenRagged error\n got %v\nwant %s", err, want)
	}
}

// TestRaggedTruncate: a file opened with OverflowTruncate keeps its samples
// over the maximum: Rows gives their whole count, GatherRows fills their
// slot with their first rows and reports the whole count, and AppendRows
// appends them in full to a grown copy, leaving dst's array alone.
func TestRaggedTruncate(t *testing.T) {
	spec := tokensSpec
	spec.Sample, spec.Overflow = []int{3}, runtime.OverflowTruncate
	f := mustOpenRagged(t, fixture("csr_tokens.npy"), fixture("csr_tokens_offsets.npy"), spec)
	if f.Rows(2) != 5 || f.Rows(4) != 4 {
		t.Errorf("Rows(2), Rows(4) = %d, %d, want 5, 4", f.Rows(2), f.Rows(4))
	}
	dst := slices.Repeat([]int32{-1}, 12)
	lengths := make([]int32, 4)
	if n, err := GatherRows(f, []int{2, 1, 0, 4}, dst, lengths); n != 4 || err != nil {
		t.Fatalf("GatherRows = %d, %v", n, err)
	}
	// Sample 2's last rows go nowhere, not into the slot of sample 1, which
	// has none.
	if want := []int32{3, 4, 5, -1, -1, -1, 0, 1, 2, 9, 10, 11}; !slices.Equal(dst, want) {
		t.Errorf("GatherRows slots %v, want %v", dst, want)
	}
	if want := []int32{5, 0, 3, 4}; !slices.Equal(lengths, want) {
		t.Errorf("GatherRows lengths %v, want %v", lengths, want)
	}
	staging := []int32{-1, -1, -1}
	got, err := AppendRows(f, 2, staging[:0])
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{3, 4, 5, 6, 7}; !slices.Equal(got, want) {
		t.Errorf("AppendRows(2) = %v, want %v", got, want)
	}
	if !slices.Equal(staging, []int32{-1, -1, -1}) {
		t.Errorf("AppendRows(2) wrote %v into dst's array, which has no room for it", staging)
	}
}

// TestRaggedOffsetsHeaders: offsets files numpy would not write for
// csr_tokens.npy are refused naming the offsets file.
func TestRaggedOffsetsHeaders(t *testing.T) {
	dir := t.TempDir()
	tokens := fixture("csr_tokens.npy")
	huge := strconv.FormatInt(math.MaxInt64/4, 10)
	tests := []struct {
		name string
		file []byte
		want string // after "PATH: "
	}{
		{"no entries", rawNPY(1, dict("<i8", "(0,)"), nil),
			"offsets have shape (0,), want (N+1,): one dimension, at least 1 entry"},
		{"zero-dim", rawNPY(1, dict("<i8", "()"), make([]byte, 8)),
			"offsets have shape (), want (N+1,): one dimension, at least 1 entry"},
		{"structured", rawNPY(1, "{'descr': [('a', '<i8')], 'fortran_order': False, 'shape': (6,), }\n", make([]byte, 48)),
			"offsets have a structured dtype, want int64 ('<i8')"},
		{"big-endian", rawNPY(1, dict(">i8", "(6,)"), make([]byte, 48)), "offsets have dtype '>i8', want int64 ('<i8')"},
		{"uint64", rawNPY(1, dict("<u8", "(6,)"), make([]byte, 48)), "offsets have dtype '<u8' (uint64), want int64 ('<i8')"},
		{"truncated", rawNPY(1, dict("<i8", "(6,)"), make([]byte, 40)), "file is 108 bytes, header and shape (6,) need 116"},
		{"overflow", rawNPY(1, dict("<i8", "("+huge+",)"), nil),
			"shape (" + huge + ",) of int64 overflows int" + strconv.Itoa(strconv.IntSize)},
		{"not npy", []byte("0,3,3,8,9,13\n"), `not a .npy file: it does not start with "\x93NUMPY"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFile(t, dir, "offsets.npy", tc.file)
			f, err := OpenRagged(tokens, path, tokensSpec)
			if err == nil {
				f.Close()
				t.Fatalf("OpenRagged succeeded, want error %q", tc.want)
			}
			if got, want := err.Error(), path+": "+tc.want; got != want {
				t.Errorf("OpenRagged error\n got %s\nwant %s", got, want)
			}
		})
	}
}

// TestRaggedSlotOverflow: a slot of Sample[0] rows that overflows int is
// refused, although the data file holds no rows.
func TestRaggedSlotOverflow(t *testing.T) {
	dir := t.TempDir()
	row := math.MaxInt / 2
	data := writeFile(t, dir, "d.npy", rawNPY(1, dict("|u1", fmt.Sprintf("(0, %d)", row)), nil))
	_, offsets := writeRagged(t, dir, "o", runtime.Uint8, nil, nil, []int64{0})
	_, err := OpenRagged(data, offsets, Spec{Key: "d", DType: runtime.Uint8, Sample: []int{1 << 20, row}})
	want := fmt.Sprintf("%s: a sample of 1048576 rows of %d bytes overflows int%d", data, row, strconv.IntSize)
	if err == nil || err.Error() != want {
		t.Errorf("OpenRagged = %v, want %q", err, want)
	}
}

// TestRaggedEmpty: offsets of one entry are a file of no samples.
func TestRaggedEmpty(t *testing.T) {
	data, offsets := writeRagged(t, t.TempDir(), "e", runtime.Float32, []int{2}, nil, []int64{0})
	f := mustOpenRagged(t, data, offsets, Spec{Key: "e", DType: runtime.Float32, Sample: []int{3, 2}})
	if !f.Ragged() || f.Len() != 0 || f.SampleBytes() != 24 {
		t.Errorf("Ragged, Len, SampleBytes = %v, %d, %d, want true, 0, 24", f.Ragged(), f.Len(), f.SampleBytes())
	}
	if n, err := GatherRows[float32](f, nil, nil, nil); n != 0 || err != nil {
		t.Errorf("GatherRows of no samples = %d, %v", n, err)
	}
}

// TestWrongKind: fixed-size reads refuse a ragged file, ragged reads a fixed
// one, and Open refuses a ragged spec.
func TestWrongKind(t *testing.T) {
	r := mustOpenRagged(t, fixture("csr_tokens.npy"), fixture("csr_tokens_offsets.npy"), tokensSpec)
	fixed := openF4(t)
	notFixed := r.Path() + ": %s reads fixed-size samples, but the file is ragged (offsets " + fixture("csr_tokens_offsets.npy") + "): use AppendRows or GatherRows"
	notRagged := fixed.Path() + ": %s reads ragged samples, but the file has fixed-size samples (no offsets): use Read or Gather"
	tests := []struct {
		op   string
		call func() error
		want string
	}{
		{"Sample", func() error { _, err := r.Sample(0); return err }, notFixed},
		{"Read", func() error { return Read(r, 0, make([]int32, 5)) }, notFixed},
		{"Gather", func() error { _, err := Gather(r, []int{0}, make([]int32, 5)); return err }, notFixed},
		{"AppendRows", func() error { _, err := AppendRows(fixed, 0, make([]float32, 0, 3)); return err }, notRagged},
		{"GatherRows", func() error { _, err := GatherRows(fixed, []int{0}, make([]float32, 3), make([]int32, 1)); return err }, notRagged},
		{"Open", func() error {
			_, err := Open(fixture("csr_tokens.npy"), Spec{Key: "tokens", Offsets: "csr_tokens_offsets.npy", DType: runtime.Int32, Sample: []int{5}})
			return err
		}, fixture("csr_tokens.npy") + `: schema key "tokens" is ragged (offsets csr_tokens_offsets.npy): open it with OpenRagged`},
	}
	for _, tc := range tests {
		want := tc.want
		if tc.op != "Open" {
			want = fmt.Sprintf(tc.want, tc.op)
		}
		if err := tc.call(); err == nil || err.Error() != want {
			t.Errorf("%s = %v, want %q", tc.op, err, want)
		}
	}
	if fixed.Ragged() || fixed.Rows(0) != 3 {
		t.Errorf("fixed file: Ragged, Rows(0) = %v, %d, want false, 3", fixed.Ragged(), fixed.Rows(0))
	}
	scalars := mustOpen(t, fixture("i2_6.npy"), Spec{Key: "i", DType: runtime.Int16})
	if scalars.Rows(5) != 1 {
		t.Errorf("scalar samples: Rows(5) = %d, want 1", scalars.Rows(5))
	}
}

func TestAppendRows(t *testing.T) {
	f := mustOpenRagged(t, fixture("csr_tokens.npy"), fixture("csr_tokens_offsets.npy"), tokensSpec)
	p := f.Path()
	staging := make([]int32, 0, 5)
	for _, tc := range []struct {
		name string
		i    int
		dst  []int32
		want string
	}{
		{"no room", 2, staging[:0:4], p + ": sample 2 is 5 rows (5 elements), dst has room for 4 elements"},
		{"no room after a prefix", 4, staging[:2], p + ": sample 4 is 4 rows (4 elements), dst has room for 3 elements"},
		{"nil", 0, nil, p + ": sample 0 is 3 rows (3 elements), dst has room for 0 elements"},
		{"index", 5, staging, p + ": sample index 5 out of range [0, 5)"},
		{"negative index", -1, staging, p + ": sample index -1 out of range [0, 5)"},
	} {
		got, err := AppendRows(f, tc.i, tc.dst)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: AppendRows(%d) error = %v, want %q", tc.name, tc.i, err, tc.want)
		}
		if len(got) != len(tc.dst) || cap(got) != cap(tc.dst) {
			t.Errorf("%s: AppendRows returned len %d cap %d, want dst (len %d cap %d)", tc.name, len(got), cap(got), len(tc.dst), cap(tc.dst))
		}
	}
	if _, err := AppendRows(f, 0, make([]int64, 0, 3)); err == nil || err.Error() != p+": a row is 4 bytes, not whole elements of 8 bytes" {
		t.Errorf("AppendRows into int64 = %v", err)
	}
	// An empty sample fits a dst of no room.
	if got, err := AppendRows[int32](f, 1, nil); got != nil || err != nil {
		t.Errorf("AppendRows(1) into nil = %v, %v", got, err)
	}
	var got []int32
	allocs := testing.AllocsPerRun(100, func() {
		var err error
		if got, err = AppendRows(f, 2, staging); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("AppendRows allocates %v times per call", allocs)
	}
	if want := []int32{3, 4, 5, 6, 7}; !cmp.Equal(got, want) {
		t.Errorf("AppendRows(2) = %v, want %v", got, want)
	}
	f.Close()
	if _, err := AppendRows(f, 0, staging); err == nil || err.Error() != p+": read of sample 0 after Close" {
		t.Errorf("AppendRows after Close = %v", err)
	}
	if f.Len() != 5 || !f.Ragged() || f.Rows(2) != 5 {
		t.Errorf("after Close: Len, Ragged, Rows(2) = %d, %v, %d, want 5, true, 5", f.Len(), f.Ragged(), f.Rows(2))
	}
}

func TestGatherRows(t *testing.T) {
	f := mustOpenRagged(t, fixture("csr_tokens.npy"), fixture("csr_tokens_offsets.npy"), tokensSpec)
	p := f.Path()
	for _, tc := range []struct {
		name    string
		indices []int
		dst     []int32
		lengths []int32
		n       int
		want    string
	}{
		{"index", []int{4, 2, 5}, make([]int32, 15), make([]int32, 3), 2, p + ": sample index 5 out of range [0, 5)"},
		{"negative index", []int{-1}, make([]int32, 5), make([]int32, 1), 0, p + ": sample index -1 out of range [0, 5)"},
		{"dst", []int{0, 1}, make([]int32, 9), make([]int32, 2), 0, p + ": destination is 36 bytes, 2 slots of 5 rows are 40"},
		{"lengths", []int{0, 1}, make([]int32, 10), make([]int32, 3), 0, p + ": lengths holds 3 entries for 2 samples"},
	} {
		if n, err := GatherRows(f, tc.indices, tc.dst, tc.lengths); n != tc.n || err == nil || err.Error() != tc.want {
			t.Errorf("%s: GatherRows(%v) = %d, %v; want %d, %q", tc.name, tc.indices, n, err, tc.n, tc.want)
		}
	}
	dst, lengths := make([]int32, 15), make([]int32, 3)
	allocs := testing.AllocsPerRun(100, func() {
		if _, err := GatherRows(f, []int{4, 0, 2}, dst, lengths); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("GatherRows allocates %v times per call", allocs)
	}
	f.Close()
	if _, err := GatherRows(f, []int{1}, dst[:5], lengths[:1]); err == nil || err.Error() != p+": read of sample 1 after Close" {
		t.Errorf("GatherRows after Close = %v", err)
	}
}

// TestOpenAllRagged: OpenAll opens ragged and fixed specs together, and the
// N of a ragged key is its offsets'.
func TestOpenAllRagged(t *testing.T) {
	tokens := Spec{Key: "tokens", File: "csr_tokens.npy", Offsets: "csr_tokens_offsets.npy", DType: runtime.Int32, Sample: []int{5}}
	boxes := Spec{Key: "boxes", File: "csr_boxes.npy", Offsets: "csr_boxes_offsets.npy", DType: runtime.Float32, Sample: []int{3, 4}}
	flags := Spec{Key: "flags", File: "b1_5x2.npy", DType: runtime.Bool, Sample: []int{2}}
	u8 := Spec{Key: "u8", File: "u8_4x2x3.npy", DType: runtime.Uint8, Sample: []int{2, 3}}
	files, err := OpenAll(fixtures, []Spec{flags, tokens})
	if err != nil {
		t.Fatal(err)
	}
	if files[0].Ragged() || !files[1].Ragged() || files[1].Len() != 5 {
		t.Errorf("Ragged, Ragged, Len = %v, %v, %d, want false, true, 5", files[0].Ragged(), files[1].Ragged(), files[1].Len())
	}
	if err := CloseAll(files...); err != nil {
		t.Fatal(err)
	}
	missing := tokens
	missing.Offsets = "nope.npy"
	same := ": every key needs the same N"
	tests := []struct {
		name  string
		specs []Spec
		want  string
	}{
		{"ragged after fixed", []Spec{u8, tokens}, fixture("csr_tokens_offsets.npy") + ` holds 5 samples of key "tokens", but ` +
			fixture("u8_4x2x3.npy") + ` holds 4 of key "u8"` + same},
		{"fixed after ragged", []Spec{tokens, u8}, fixture("u8_4x2x3.npy") + ` holds 4 samples of key "u8", but ` +
			fixture("csr_tokens_offsets.npy") + ` holds 5 of key "tokens"` + same},
		{"two ragged", []Spec{flags, tokens, boxes}, fixture("csr_boxes_offsets.npy") + ` holds 4 samples of key "boxes", but ` +
			fixture("b1_5x2.npy") + ` holds 5 of key "flags"` + same},
		{"bad offsets", []Spec{flags, {Key: "tokens", File: "csr_tokens.npy", Offsets: "csr_offsets_first.npy", DType: runtime.Int32, Sample: []int{5}}},
			fixture("csr_offsets_first.npy") + ": offsets[0] is 1, want 0"},
		{"missing offsets", []Spec{missing}, `key "tokens": open ` + fixture("nope.npy") +
			`: no such file or directory (the schema's file "nope.npy" under the data root ` + fixtures + ")"},
	}
	for _, tc := range tests {
		files, err := OpenAll(fixtures, tc.specs)
		if err == nil {
			CloseAll(files...)
			t.Errorf("%s: OpenAll succeeded, want %q", tc.name, tc.want)
			continue
		}
		if err.Error() != tc.want {
			t.Errorf("%s: OpenAll error\n got %s\nwant %s", tc.name, err, tc.want)
		}
	}
	if _, err := OpenAll(fixtures, []Spec{missing}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("OpenAll with missing offsets = %v, want fs.ErrNotExist", err)
	}
}

// BenchmarkGatherRows gathers batches of 256 int32 token samples of 1 to
// 400 rows (about 200 on average, 512 at most) into padded slots.
func BenchmarkGatherRows(b *testing.B) {
	const samples, batch, maxRows = 1 << 14, 256, 512
	r := rand.New(rand.NewPCG(3, 4))
	offsets := make([]int64, 1, samples+1)
	for range samples {
		offsets = append(offsets, offsets[len(offsets)-1]+1+r.Int64N(400))
	}
	rows := int(offsets[samples])
	data, off := writeRagged(b, b.TempDir(), "tokens", runtime.Int32, nil, randomData(r, runtime.Int32, rows), offsets)
	f := mustOpenRagged(b, data, off, Spec{Key: "tokens", DType: runtime.Int32, Sample: []int{maxRows}})
	indices := make([]int, batch)
	copied := 0
	for k := range indices {
		indices[k] = r.IntN(samples)
		copied += f.Rows(indices[k]) * 4
	}
	dst, lengths := make([]int32, batch*maxRows), make([]int32, batch)
	b.SetBytes(int64(copied))
	for b.Loop() {
		if _, err := GatherRows(f, indices, dst, lengths); err != nil {
			b.Fatal(err)
		}
	}
}
