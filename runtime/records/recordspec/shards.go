// Package recordspec holds the rules of a records dataset that a schema is
// checked against before any shard is opened: the brace patterns of
// WebDataset shard names (ExpandShards), the names of a sample's members
// (SplitMember, Alternatives, ImageMember, ArrayMember), and why shards
// are plain tar files (ErrCompressed). It does no I/O: the generator
// imports it, and runtime/records, which reads the shards, applies these
// rules.
package recordspec

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// MaxShards is the most shard names a pattern may expand to.
const MaxShards = 1 << 20

// ExpandShards expands the brace groups of a WebDataset shard pattern, in
// order, as Python's braceexpand does for the forms shards use: a range
// {000000..001023} (zero-padded to the wider bound when a bound has a
// leading zero; counting down when the first bound is larger) or a list
// {a,b,c}. Groups do not nest. A pattern without braces is one shard.
func ExpandShards(pattern string) ([]string, error) {
	names := []string{""}
	rest := pattern
	for rest != "" {
		open := strings.IndexAny(rest, "{}")
		if open < 0 {
			names = appendAll(names, []string{rest})
			break
		}
		if rest[open] == '}' {
			return nil, fmt.Errorf("shard pattern %q: '}' at byte %d closes no brace", pattern, len(pattern)-len(rest)+open)
		}
		end := strings.IndexAny(rest[open+1:], "{}")
		if end < 0 || rest[open+1+end] == '{' {
			return nil, fmt.Errorf("shard pattern %q: the brace at byte %d is not closed (braces do not nest)", pattern, len(pattern)-len(rest)+open)
		}
		group := rest[open+1 : open+1+end]
		alts, err := alternatives(group)
		if err != nil {
			return nil, fmt.Errorf("shard pattern %q: {%s}: %w", pattern, group, err)
		}
		if len(names)*len(alts) > MaxShards || len(alts) > MaxShards {
			return nil, fmt.Errorf("shard pattern %q expands to more than %d shards", pattern, MaxShards)
		}
		names = appendAll(names, []string{rest[:open]})
		names = appendAll(names, alts)
		rest = rest[open+1+end+1:]
	}
	return names, nil
}

// appendAll returns every name followed by every suffix, names first.
func appendAll(names, suffixes []string) []string {
	if len(suffixes) == 1 {
		for i := range names {
			names[i] += suffixes[0]
		}
		return names
	}
	out := make([]string, 0, len(names)*len(suffixes))
	for _, n := range names {
		for _, s := range suffixes {
			out = append(out, n+s)
		}
	}
	return out
}

// alternatives returns what one brace group stands for: a list or a range.
func alternatives(group string) ([]string, error) {
	lo, hi, isRange := strings.Cut(group, "..")
	if !isRange {
		if !strings.Contains(group, ",") {
			return nil, fmt.Errorf("a group is a range {a..b} or a list {a,b}")
		}
		return strings.Split(group, ","), nil
	}
	a, errA := strconv.ParseUint(lo, 10, 63)
	b, errB := strconv.ParseUint(hi, 10, 63)
	if errA != nil || errB != nil {
		return nil, fmt.Errorf("a range's bounds are whole numbers")
	}
	n := max(a, b) - min(a, b) + 1
	if n > MaxShards {
		return nil, fmt.Errorf("the range holds %d names, more than %d", n, MaxShards)
	}
	width := 0
	if (len(lo) > 1 && lo[0] == '0') || (len(hi) > 1 && hi[0] == '0') {
		width = max(len(lo), len(hi))
	}
	out := make([]string, 0, n)
	step := uint64(1)
	if b < a {
		step = ^uint64(0) // -1
	}
	for v := a; ; v += step {
		out = append(out, fmt.Sprintf("%0*d", width, v))
		if v == b {
			return out, nil
		}
	}
}

// ErrCompressed says why compressed shards are refused.
var ErrCompressed = errors.New("a shard is indexed and read by seeking to its members (by ranged reads when it is remote), which a compressed stream does not allow; store the shards as plain .tar files (decompress them, with gunzip for .tar.gz: JPEG and PNG members gain little from compression)")
