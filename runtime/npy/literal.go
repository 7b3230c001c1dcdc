package npy

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// pyTuple and pyList are parsed Python tuple and list literals.
type (
	pyTuple []any
	pyList  []any
)

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
