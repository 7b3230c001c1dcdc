package npy

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/runtime"
)

// fixtureBytes returns the bytes of a file numpy wrote (testdata/npy).
func fixtureBytes(t *testing.T, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(fixtures, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// readMember reads b as a member of m at offset 7 of a larger buffer, as
// a member lies inside a tar shard.
func readMember(m *Member, b, dst []byte) error {
	archive := slices.Concat([]byte("archive"), b, []byte("next member"))
	return m.ReadAt(bytes.NewReader(archive), 7, int64(len(b)), dst)
}

// TestMember: members numpy wrote are read when their dtype and shape are
// the key's exactly, and refused otherwise with a message saying why.
func TestMember(t *testing.T) {
	u8 := fixtureBytes(t, "u8_4x2x3.npy")
	tests := []struct {
		name   string
		member []byte
		dtype  runtime.DType
		shape  []int
		err    string // "" when the member reads as arange
	}{
		{"uint8", u8, runtime.Uint8, []int{4, 2, 3}, ""},
		{"float32", fixtureBytes(t, "f4_3x2x2x2.npy"), runtime.Float32, []int{3, 2, 2, 2}, ""},
		{"version 2", fixtureBytes(t, "i8_3x2_v2.npy"), runtime.Int64, []int{3, 2}, ""},
		{"version 3", fixtureBytes(t, "u2_2x3_v3.npy"), runtime.Uint16, []int{2, 3}, ""},
		{"bfloat16 words", fixtureBytes(t, "v2_3x2.npy"), runtime.BFloat16, []int{3, 2}, ""},
		{"shape", u8, runtime.Uint8, []int{4, 3, 2}, `shape (4, 2, 3), key "k" expects (4, 3, 2)`},
		{"leading axis", u8, runtime.Uint8, []int{2, 3}, `shape (4, 2, 3), key "k" expects (2, 3)`},
		{"dtype", u8, runtime.Int8, []int{4, 2, 3}, `dtype '|u1' (uint8), schema key "k" expects int8`},
		{"fortran", fixtureBytes(t, "fortran_f4_2x3.npy"), runtime.Float32, []int{2, 3}, "Fortran-ordered array"},
		{"big-endian", fixtureBytes(t, "bigendian_f4_3x2.npy"), runtime.Float32, []int{3, 2}, "big-endian dtype '>f4'"},
		{"truncated", u8[:len(u8)-5], runtime.Uint8, []int{4, 2, 3}, "truncated: the member is 147 bytes, its header and shape (4, 2, 3) need 152"},
		{"trailing bytes", append(slices.Clone(u8), 0, 0), runtime.Uint8, []int{4, 2, 3}, "the member is 154 bytes, 2 more than its header and shape (4, 2, 3) need"},
		{"header cut", u8[:40], runtime.Uint8, []int{4, 2, 3}, "header length 118 runs past the end of the file (40 bytes)"},
		{"bad header", bytes.Replace(slices.Clone(u8), []byte("'shape'"), []byte("'shope'"), 1), runtime.Uint8, []int{4, 2, 3}, "header is not parseable: unknown key 'shope'"},
		{"not npy", []byte("PNG, not an array"), runtime.Uint8, []int{4, 2, 3}, "not a .npy file"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, err := NewMember(Spec{Key: "k", DType: tt.dtype, Sample: tt.shape})
			if err != nil {
				t.Fatal(err)
			}
			dst := make([]byte, m.SampleBytes())
			err = readMember(m, tt.member, dst)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("ReadAt: %v, want %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if want := arange(tt.dtype, m.SampleBytes()/tt.dtype.Size()); !bytes.Equal(dst, want) {
				t.Errorf("read %v, want %v", dst, want)
			}
		})
	}
}

// TestMemberKeepsHeader: a Member compares a member's header with the last
// it accepted, without allocating; a header that differs (another version
// of the format, or another shape of the same size) is parsed again and
// checked.
func TestMemberKeepsHeader(t *testing.T) {
	dir := t.TempDir()
	v1 := filepath.Join(dir, "v1.npy")
	if err := Write(v1, runtime.Int64, []int{3, 2}, arange(runtime.Int64, 6)); err != nil {
		t.Fatal(err)
	}
	transposed := filepath.Join(dir, "t.npy")
	if err := Write(transposed, runtime.Int64, []int{2, 3}, arange(runtime.Int64, 6)); err != nil {
		t.Fatal(err)
	}
	m, err := NewMember(Spec{Key: "k", DType: runtime.Int64, Sample: []int{3, 2}})
	if err != nil {
		t.Fatal(err)
	}
	dst := make([]byte, m.SampleBytes())
	for i, name := range []string{v1, "i8_3x2_v2.npy", v1, transposed} {
		if !filepath.IsAbs(name) {
			name = fixture(name)
		}
		b, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		clear(dst)
		err = readMember(m, b, dst)
		if name == transposed {
			if err == nil || !strings.Contains(err.Error(), `shape (2, 3), key "k" expects (3, 2)`) {
				t.Fatalf("member %d (%s): %v, want a shape error", i, name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("member %d (%s): %v", i, name, err)
		}
		if !bytes.Equal(dst, arange(runtime.Int64, 6)) {
			t.Fatalf("member %d (%s): read %v", i, name, dst)
		}
	}
	b, err := os.ReadFile(v1)
	if err != nil {
		t.Fatal(err)
	}
	r := bytes.NewReader(b)
	if allocs := testing.AllocsPerRun(20, func() {
		if err := m.ReadAt(r, 0, int64(len(b)), dst); err != nil {
			t.Fatal(err)
		}
	}); allocs != 0 {
		t.Errorf("ReadAt of a member with the header it kept allocates %.1f times", allocs)
	}
	if c := m.Clone(); c.header != nil || c.SampleBytes() != m.SampleBytes() {
		t.Errorf("Clone keeps header %q, sample bytes %d", c.header, c.SampleBytes())
	}
}
