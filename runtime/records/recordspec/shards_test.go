package recordspec

import (
	"slices"
	"strings"
	"testing"
)

func TestExpandShards(t *testing.T) {
	tests := []struct {
		pattern string
		want    []string
		err     string // a part of the error; "" for none
	}{
		{"train.tar", []string{"train.tar"}, ""},
		{"train-{000000..000002}.tar", []string{"train-000000.tar", "train-000001.tar", "train-000002.tar"}, ""},
		{"t-{8..11}.tar", []string{"t-8.tar", "t-9.tar", "t-10.tar", "t-11.tar"}, ""},
		{"t-{08..10}.tar", []string{"t-08.tar", "t-09.tar", "t-10.tar"}, ""},
		{"t-{2..0}", []string{"t-2", "t-1", "t-0"}, ""},
		{"{a,b}/x-{0..1}.tar", []string{"a/x-0.tar", "a/x-1.tar", "b/x-0.tar", "b/x-1.tar"}, ""},
		{"x-{a,,b}", []string{"x-a", "x-", "x-b"}, ""},
		{"x-{0..1", nil, "not closed"},
		{"x-{a,{b}}", nil, "not closed"},
		{"x-}", nil, "closes no brace"},
		{"x-{7}", nil, "a range {a..b} or a list"},
		{"x-{a..b}", nil, "whole numbers"},
		{"x-{-1..2}", nil, "whole numbers"},
		{"x-{0..2000000}", nil, "more than"},
		{"x-{0..2000}-{0..2000}", nil, "more than"},
	}
	for _, tt := range tests {
		got, err := ExpandShards(tt.pattern)
		switch {
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("ExpandShards(%q) = %v, %v; want an error with %q", tt.pattern, got, err, tt.err)
		case tt.err == "" && (err != nil || !slices.Equal(got, tt.want)):
			t.Errorf("ExpandShards(%q) = %q, %v; want %q", tt.pattern, got, err, tt.want)
		}
	}
}
