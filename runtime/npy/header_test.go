package npy

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParseHeader(t *testing.T) {
	tests := []struct {
		name string
		in   string
		want header
	}{
		{"numpy", "{'descr': '<f4', 'fortran_order': False, 'shape': (10, 3), }      \n",
			header{descr: "<f4", shape: []int64{10, 3}}},
		{"one-tuple", "{'descr': '|u1', 'fortran_order': False, 'shape': (5,), }\n",
			header{descr: "|u1", shape: []int64{5}}},
		{"empty tuple", "{'descr': '<f8', 'fortran_order': False, 'shape': (), }\n",
			header{descr: "<f8", shape: []int64{}}},
		{"double quotes, any order, no trailing comma", `{"shape":(2,3,4),"fortran_order":True,"descr":"<i2"}`,
			header{descr: "<i2", fortran: true, shape: []int64{2, 3, 4}}},
		{"python 2 longs", "{'descr': '<f4', 'fortran_order': False, 'shape': (10L, 3L), }\n",
			header{descr: "<f4", shape: []int64{10, 3}}},
		{"whitespace everywhere", "\n{ 'descr' :\t'<u2' ,\n 'fortran_order' : False ,\n 'shape' : ( 7 , ) ,\n }\n",
			header{descr: "<u2", shape: []int64{7}}},
		{"escaped quote", `{'descr': '<\'f4', 'fortran_order': False, 'shape': (1,)}`,
			header{descr: "<'f4", shape: []int64{1}}},
		{"structured", "{'descr': [('a', '<f4'), ('b', '<i2', (2,))], 'fortran_order': False, 'shape': (3,), }\n",
			header{structured: true, shape: []int64{3}}},
		{"parenthesised scalar in a tuple", "{'descr': '<f4', 'fortran_order': False, 'shape': ((4), +2), }",
			header{descr: "<f4", shape: []int64{4, 2}}},
		{"negative dimension parses", "{'descr': '<f4', 'fortran_order': False, 'shape': (-1,), }",
			header{descr: "<f4", shape: []int64{-1}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseHeader(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(tc.want, got, cmp.AllowUnexported(header{})); d != "" {
				t.Errorf("parseHeader(%q) (-want +got):\n%s", tc.in, d)
			}
		})
	}
}

func TestParseHeaderErrors(t *testing.T) {
	const rest = "'fortran_order': False, 'shape': (1,)"
	tests := []struct{ in, want string }{
		{"", "expected '{' at offset 0"},
		{"[1]", "expected '{' at offset 0"},
		{"{'descr' '<f4'}", "expected ':' at offset 9"},
		{"{'descr': '<f4' " + rest + "}", "expected ',' or '}' at offset 16"},
		{"{'descr': '<f4', " + rest + ", 'foo': 1}", "unknown key 'foo'"},
		{"{'descr': '<f4', 'fortran_order': False}", "missing key 'shape'"},
		{"{'descr': '<f4', 'descr': '<f4', " + rest + "}", "duplicate key 'descr'"},
		{"{1: '<f4'}", "key 1 at offset 1 is not a string"},
		{"{'descr': '<f4', 'fortran_order': 0, 'shape': (1,)}", "'fortran_order' is 0, want True or False"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': [3, 2]}", "'shape' is [3, 2], want a tuple of ints"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (5)}", "'shape' is (5), want a tuple of ints"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (5, '6')}", "'shape' is (5, '6'), want a tuple of ints"},
		{"{'descr': 4, " + rest + "}", "'descr' is 4, want a string"},
		{"{'descr': '<f4", "unterminated string at offset 14"},
		{"{'descr': '<f4\n', " + rest + "}", "newline in string at offset 15"},
		{"{'descr': None, " + rest + "}", "unexpected 'N' at offset 10"},
		{"{'descr': '<f4', " + rest + ", ", "unexpected end of header at offset 56"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}", "integer 99999999999999999999 does not fit in int64 at offset 51"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (-,)}", "expected a digit at offset 52"},
		{"{'descr': '<f4', 'fortran_order': False, 'shape': (1 2)}", "expected ',' or ')' at offset 53"},
		{"{'descr': '<f4', " + rest + "} x", "unexpected text after the dict at offset 56"},
	}
	for _, tc := range tests {
		_, err := parseHeader(tc.in)
		if err == nil || err.Error() != tc.want {
			t.Errorf("parseHeader(%q) = %v, want error %q", tc.in, err, tc.want)
		}
	}
}

func TestFormatShape(t *testing.T) {
	for _, tc := range []struct {
		shape []int
		want  string
	}{{nil, "()"}, {[]int{5}, "(5,)"}, {[]int{10, 3}, "(10, 3)"}} {
		if got := formatShape(tc.shape); got != tc.want {
			t.Errorf("formatShape(%v) = %q, want %q", tc.shape, got, tc.want)
		}
	}
}
