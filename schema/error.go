package schema

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Error is a schema error located at the YAML node that causes it.
type Error struct {
	File string // schema path, as given to Parse or Load
	Line int    // 1-based line of the offending node
	Col  int    // 1-based column of the offending node; 1 when unknown
	Msg  string // what is wrong
}

// Error returns "FILE:LINE:COL: MSG".
func (e *Error) Error() string {
	return where(e.File, Pos{Line: e.Line, Col: e.Col}) + ": " + e.Msg
}

// where is a position as messages show it: "FILE:LINE:COL".
func where(file string, pos Pos) string {
	return fmt.Sprintf("%s:%d:%d", file, pos.Line, pos.Col)
}

// maxQuoted is how many runes of a user-written string a message shows.
const maxQuoted = 40

// quote returns s as a Go string literal, shortened to maxQuoted runes so
// that a message stays one readable line.
func quote(s string) string {
	if utf8.RuneCountInString(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	return strconv.Quote(string([]rune(s)[:maxQuoted])) + "..."
}

// hint returns ` (did you mean "c"?)` for the candidate c closest to name:
// a case-insensitive match wins, then the smallest edit distance of at most
// 2 that is shorter than name itself; ties go to the earlier candidate.
// When none is close, it lists the candidates instead, ` (expected one of:
// a, b, c)`, the first maxListed of them.
func hint(name string, candidates []string) string {
	for _, c := range candidates {
		if strings.EqualFold(c, name) {
			return fmt.Sprintf(" (did you mean %s?)", quote(c))
		}
	}
	best, bestDist := "", 3
	n := []rune(name)
	for _, c := range candidates {
		if d := distance(n, []rune(c), bestDist); d < bestDist && d < len(n) {
			best, bestDist = c, d
		}
	}
	if best != "" {
		return fmt.Sprintf(" (did you mean %s?)", quote(best))
	}
	switch {
	case len(candidates) == 0:
		return ""
	case len(candidates) > maxListed:
		return fmt.Sprintf(" (expected one of: %s, and %d more)", strings.Join(candidates[:maxListed], ", "), len(candidates)-maxListed)
	}
	return fmt.Sprintf(" (expected one of: %s)", strings.Join(candidates, ", "))
}

// maxListed is the most candidates a hint lists.
const maxListed = 16

// distance is the Levenshtein distance between a and b, or limit when it is
// at least limit.
func distance(a, b []rune, limit int) int {
	if abs(len(a)-len(b)) >= limit {
		return limit
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return min(prev[len(b)], limit)
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}
