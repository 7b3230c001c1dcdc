package npy

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/loadergen/loadergen/runtime"
)

// canonicalDescr is the descr Write puts in a header for each dtype. Float16
// and BFloat16 are written as raw 16-bit words; numpy has no bfloat16, so a
// bfloat16 file is written as '<u2'.
var canonicalDescr = [...]string{
	runtime.Uint8:    "|u1",
	runtime.Int8:     "|i1",
	runtime.Uint16:   "<u2",
	runtime.Int16:    "<i2",
	runtime.Uint32:   "<u4",
	runtime.Int32:    "<i4",
	runtime.Uint64:   "<u8",
	runtime.Int64:    "<i8",
	runtime.Float16:  "<f2",
	runtime.BFloat16: "<u2",
	runtime.Float32:  "<f4",
	runtime.Float64:  "<f8",
	runtime.Bool:     "|b1",
}

// descrDType maps every descr Open accepts to the dtype it names. '<u2' names
// uint16 here but is also accepted for a bfloat16 key (see accepts); '<V2' and
// '|V2' (raw 2-byte words, as numpy saves ml_dtypes' bfloat16) name bfloat16.
var descrDType = map[string]runtime.DType{
	"|u1": runtime.Uint8, "<u1": runtime.Uint8,
	"|i1": runtime.Int8, "<i1": runtime.Int8,
	"|b1": runtime.Bool, "<b1": runtime.Bool,
	"<u2": runtime.Uint16, "<i2": runtime.Int16,
	"<u4": runtime.Uint32, "<i4": runtime.Int32,
	"<u8": runtime.Uint64, "<i8": runtime.Int64,
	"<f2": runtime.Float16, "<f4": runtime.Float32, "<f8": runtime.Float64,
	"<V2": runtime.BFloat16, "|V2": runtime.BFloat16,
}

// Descr returns the numpy type string Write declares for d, e.g. "<f4" or
// "|u1"; numpy has no bfloat16, so bfloat16 is "<u2".
func Descr(d runtime.DType) string {
	if !d.Valid() {
		return ""
	}
	return canonicalDescr[d]
}

// KindDType returns the dtype a numpy type string names by its kind and
// size, the part after the byte order ("f4", "u1", "b1"). Raw words ("V2")
// name none.
func KindDType(kindSize string) (runtime.DType, bool) {
	if strings.HasPrefix(kindSize, "V") {
		return 0, false
	}
	d, ok := descrDType["<"+kindSize]
	return d, ok
}

// accepts reports whether a file with descr may back a key of dtype d.
func accepts(d runtime.DType, descr string) bool {
	found, ok := descrDType[descr]
	return ok && (found == d || d == runtime.BFloat16 && descr == "<u2")
}

// expectedDescr spells the descrs a key of dtype d accepts, for messages.
func expectedDescr(d runtime.DType) string {
	if d == runtime.BFloat16 {
		return "'<u2' or '<V2'"
	}
	return "'" + canonicalDescr[d] + "'"
}

// header is the content of a .npy header dict.
type header struct {
	descr      string // empty when structured
	structured bool   // descr was a list of fields
	fortran    bool
	shape      []int64
}

// pyTuple and pyList are parsed Python tuple and list literals.
type (
	pyTuple []any
	pyList  []any
)

// parseHeader parses the Python dict literal of a .npy header, e.g.
// "{'descr': '<f4', 'fortran_order': False, 'shape': (10, 3), }". It accepts
// the subset of Python literals numpy writes: strings in single or double
// quotes, True and False, integers (with Python 2's 'L' suffix), tuples and
// lists, keys in any order, nested no deeper than Python parses them
// (maxNesting). It requires exactly the keys 'descr', 'fortran_order' and
// 'shape'.
func parseHeader(s string) (header, error) {
	p := &parser{s: s, depth: 1}
	var h header
	seen := map[string]bool{}
	p.skipSpace()
	if err := p.expect('{'); err != nil {
		return h, err
	}
	for {
		p.skipSpace()
		if p.peek() == '}' {
			p.pos++
			break
		}
		keyAt := p.pos
		v, err := p.value()
		if err != nil {
			return h, err
		}
		key, ok := v.(string)
		if !ok {
			return h, fmt.Errorf("key %s at offset %d is not a string", s[keyAt:p.pos], keyAt)
		}
		if seen[key] {
			return h, fmt.Errorf("duplicate key '%s'", key)
		}
		seen[key] = true
		p.skipSpace()
		if err := p.expect(':'); err != nil {
			return h, err
		}
		p.skipSpace()
		valAt := p.pos
		if v, err = p.value(); err != nil {
			return h, err
		}
		if err := h.set(key, v, s[valAt:p.pos]); err != nil {
			return h, err
		}
		p.skipSpace()
		if p.peek() == ',' {
			p.pos++
		} else if p.peek() != '}' {
			return h, p.errorf("expected ',' or '}'")
		}
	}
	p.skipSpace()
	if p.pos != len(s) {
		return h, p.errorf("unexpected text after the dict")
	}
	for _, k := range []string{"descr", "fortran_order", "shape"} {
		if !seen[k] {
			return h, fmt.Errorf("missing key '%s'", k)
		}
	}
	return h, nil
}

// set stores the value v of key, whose source text is text, in h.
func (h *header) set(key string, v any, text string) error {
	switch key {
	case "descr":
		switch v := v.(type) {
		case string:
			h.descr = v
		case pyList:
			h.structured = true
		default:
			return fmt.Errorf("'descr' is %s, want a string", text)
		}
	case "fortran_order":
		b, ok := v.(bool)
		if !ok {
			return fmt.Errorf("'fortran_order' is %s, want True or False", text)
		}
		h.fortran = b
	case "shape":
		t, ok := v.(pyTuple)
		if !ok {
			return fmt.Errorf("'shape' is %s, want a tuple of ints", text)
		}
		h.shape = make([]int64, len(t))
		for i, e := range t {
			n, ok := e.(int64)
			if !ok {
				return fmt.Errorf("'shape' is %s, want a tuple of ints", text)
			}
			h.shape[i] = n
		}
	default:
		return fmt.Errorf("unknown key '%s'", key)
	}
	return nil
}

// parser is a cursor over a header's text.
type parser struct {
	s     string
	pos   int
	depth int // the brackets open at the cursor, the dict's included
}

// errorf reports a syntax error at the cursor.
func (p *parser) errorf(format string, args ...any) error {
	return fmt.Errorf("%s at offset %d", fmt.Sprintf(format, args...), p.pos)
}

// peek returns the byte at the cursor, or 0 at the end.
func (p *parser) peek() byte {
	if p.pos < len(p.s) {
		return p.s[p.pos]
	}
	return 0
}

// skipSpace advances past Python whitespace.
func (p *parser) skipSpace() {
	for p.pos < len(p.s) && strings.IndexByte(" \t\r\n\f\v", p.s[p.pos]) >= 0 {
		p.pos++
	}
}

// expect consumes the byte c or fails.
func (p *parser) expect(c byte) error {
	if p.peek() != c {
		return p.errorf("expected '%c'", c)
	}
	p.pos++
	return nil
}

// value parses one literal: a string, bool, int64, pyTuple or pyList. A
// parenthesised single value without a trailing comma is that value, as in
// Python.
func (p *parser) value() (any, error) {
	switch c := p.peek(); {
	case c == '\'' || c == '"':
		return p.str()
	case c == '(' || c == '[':
		return p.sequence()
	case c == '-' || c == '+' || '0' <= c && c <= '9':
		return p.integer()
	case strings.HasPrefix(p.s[p.pos:], "True"):
		p.pos += len("True")
		return true, nil
	case strings.HasPrefix(p.s[p.pos:], "False"):
		p.pos += len("False")
		return false, nil
	case c == 0:
		return nil, p.errorf("unexpected end of header")
	default:
		return nil, p.errorf("unexpected %q", c)
	}
}

// str parses a quoted string. A backslash takes the next byte literally,
// which is enough for the strings numpy writes.
func (p *parser) str() (string, error) {
	quote := p.s[p.pos]
	p.pos++
	var b strings.Builder
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		p.pos++
		switch {
		case c == quote:
			return b.String(), nil
		case c == '\\' && p.pos < len(p.s):
			b.WriteByte(p.s[p.pos])
			p.pos++
		case c == '\n':
			return "", p.errorf("newline in string")
		default:
			b.WriteByte(c)
		}
	}
	return "", p.errorf("unterminated string")
}

// integer parses a decimal integer that fits in int64.
func (p *parser) integer() (int64, error) {
	start := p.pos
	if c := p.peek(); c == '-' || c == '+' {
		p.pos++
	}
	for '0' <= p.peek() && p.peek() <= '9' {
		p.pos++
	}
	tok := p.s[start:p.pos]
	n, err := strconv.ParseInt(tok, 10, 64)
	if errors.Is(err, strconv.ErrRange) {
		p.pos = start
		return 0, p.errorf("integer %s does not fit in int64", tok)
	}
	if err != nil {
		return 0, p.errorf("expected a digit")
	}
	if c := p.peek(); c == 'L' || c == 'l' {
		p.pos++
	}
	return n, nil
}

// sequence parses a tuple "(...)" or list "[...]" with an optional trailing
// comma.
func (p *parser) sequence() (any, error) {
	open := p.s[p.pos]
	end := byte(')')
	if open == '[' {
		end = ']'
	}
	if p.depth == maxNesting {
		return nil, p.errorf("brackets nested deeper than %d", maxNesting)
	}
	p.depth++
	defer func() { p.depth-- }()
	p.pos++
	var items []any
	comma := false
	for {
		p.skipSpace()
		if p.peek() == end {
			p.pos++
			break
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		items = append(items, v)
		p.skipSpace()
		if p.peek() == ',' {
			p.pos++
			comma = true
		} else if p.peek() != end {
			return nil, p.errorf("expected ',' or '%c'", end)
		}
	}
	switch {
	case open == '[':
		return pyList(items), nil
	case len(items) == 1 && !comma:
		return items[0], nil
	default:
		return pyTuple(items), nil
	}
}

// formatShape spells a shape as Python prints a tuple: "(10, 3)", "(5,)", "()".
func formatShape[I int | int64](shape []I) string {
	var b strings.Builder
	b.WriteByte('(')
	for i, d := range shape {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(strconv.FormatInt(int64(d), 10))
	}
	if len(shape) == 1 {
		b.WriteByte(',')
	}
	b.WriteByte(')')
	return b.String()
}
