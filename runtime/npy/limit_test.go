package npy

import (
	"bytes"
	"strings"
	"testing"

	"github.com/loadergen/loadergen/internal/testenv/bounded"
	"github.com/loadergen/loadergen/runtime"
)

// padded returns header dict d padded with spaces to n characters of
// which the last is a newline, as numpy pads a header.
func padded(d string, n int) string {
	return d[:len(d)-1] + strings.Repeat(" ", n-len(d)) + "\n"
}

// nested returns a header dict whose 'descr' is depth brackets deep, the
// dict's own included.
func nested(depth int) string {
	return "{'descr': " + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + ", 'fortran_order': False, 'shape': (1,)}"
}

// TestHeaderLimits: a header longer than numpy's max_header_size, or
// nested deeper than Python parses, is refused before it is parsed, for a
// file and for a member, whatever its format version says of its length;
// numpy counts characters, so a UTF-8 header of multi-byte characters
// counts each once; SetMaxHeaderSize lets a longer header through.
func TestHeaderLimits(t *testing.T) {
	u8 := dict("|u1", "(2, 3)")
	data := make([]byte, 6)
	multi := u8[:len(u8)-2] + "'é': 1}" // an unknown key, but past the limit's check
	tests := []struct {
		name  string
		file  []byte
		limit int    // SetMaxHeaderSize's, 0 for none
		want  string // "" when the file opens
	}{
		{"at the limit", rawNPY(1, padded(u8, DefaultMaxHeaderSize), data), 0, ""},
		{"one over", rawNPY(1, padded(u8, DefaultMaxHeaderSize+1), data), 0,
			"header of 10001 characters is longer than the 10000 allowed (numpy's max_header_size; raise it with LOADERGEN_NPY_MAX_HEADER or npy.SetMaxHeaderSize for a file you trust)"},
		{"raised", rawNPY(2, padded(u8, 3*DefaultMaxHeaderSize), data), 3 * DefaultMaxHeaderSize, ""},
		{"over the raised", rawNPY(2, padded(u8, 3*DefaultMaxHeaderSize+1), data), 3 * DefaultMaxHeaderSize,
			"header of 30001 characters is longer than the 30000 allowed"},
		{"version 3 counts characters", rawNPY(3, padded(multi, DefaultMaxHeaderSize+1), data), 0,
			"header is not parseable: unknown key 'é'"},
		{"version 3 over", rawNPY(3, padded(multi, DefaultMaxHeaderSize+2), data), 0,
			"header of 10001 characters is longer than the 10000 allowed"},
		{"nesting at Python's depth", rawNPY(1, nested(maxNesting), data), 0,
			"structured dtype (a list of fields) is not supported"},
		{"nesting past it", rawNPY(1, nested(maxNesting+1), data), 0,
			"header is not parseable: brackets nested deeper than 200 at offset 209"},
	}
	spec := Spec{Key: "k", DType: runtime.Uint8, Sample: []int{3}}
	dir := t.TempDir()
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			SetMaxHeaderSize(tc.limit)
			defer SetMaxHeaderSize(0)
			path := writeFile(t, dir, "k.npy", tc.file)
			f, err := Open(path, spec)
			if err == nil {
				f.Close()
			}
			m, merr := NewMember(Spec{Key: "k", DType: runtime.Uint8, Sample: []int{2, 3}})
			if merr != nil {
				t.Fatal(merr)
			}
			merr = m.ReadAt(bytes.NewReader(tc.file), 0, int64(len(tc.file)), make([]byte, 6))
			for what, err := range map[string]error{"Open": err, "Member.ReadAt": merr} {
				switch {
				case tc.want == "" && err != nil:
					t.Errorf("%s: %v", what, err)
				case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
					t.Errorf("%s: %v, want an error with %q", what, err, tc.want)
				}
			}
		})
	}
}

// TestHeaderBomb: a version 2 header of a 'descr' 10 M '[' deep (which
// overflowed the parser's stack, a fatal error) is refused by its length, without being
// read; with the limit raised past it, by its nesting, without
// recursing: both in a child held to the hostile-input bound.
func TestHeaderBomb(t *testing.T) {
	if !bounded.Child(t, bounded.HostileRSS) {
		return
	}
	bomb := rawNPY(2, "{'descr': "+strings.Repeat("[", 10<<20)+"\n", nil)
	dir := t.TempDir()
	path := writeFile(t, dir, "bomb.npy", bomb)
	spec := Spec{Key: "k", DType: runtime.Uint8, Sample: []int{3}}
	for _, tc := range []struct {
		limit int
		want  string
	}{
		{0, "header of 10485771 characters is longer than the 10000 allowed"},
		{20 << 20, "brackets nested deeper than 200"},
	} {
		SetMaxHeaderSize(tc.limit)
		f, err := Open(path, spec)
		if err == nil {
			f.Close()
		}
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("limit %d: %v, want an error with %q", tc.limit, err, tc.want)
		}
	}
	SetMaxHeaderSize(0)
}
