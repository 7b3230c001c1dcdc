package schema

import (
	"fmt"
	"math"
	"math/big"
	"strings"
	"unicode"

	"gopkg.in/yaml.v3"

	"github.com/loadergen/loadergen/runtime"
)

// Resolved YAML tags of scalar nodes.
const (
	strTag   = "!!str"
	intTag   = "!!int"
	floatTag = "!!float"
	boolTag  = "!!bool"
	nullTag  = "!!null"
)

// deref follows an alias to the node it names. yaml.v3 rejects unknown
// anchors, so an alias always has a target, and that target is never an
// alias itself.
func deref(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode {
		return n.Alias
	}
	return n
}

// describe names what a (dereferenced) node holds, for "found ..." messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a sequence"
	}
	switch tag := n.ShortTag(); tag {
	case strTag:
		return "string " + quote(n.Value)
	case intTag:
		return "integer " + literal(n.Value)
	case floatTag:
		return "float " + literal(n.Value)
	case boolTag:
		return "bool " + literal(n.Value)
	case nullTag:
		return "null"
	default:
		return tag + " " + quote(n.Value)
	}
}

// literal shows a scalar as written when it is a short run of visible
// characters (as plain numbers and bools are), quoted otherwise.
func literal(s string) string {
	if s == "" || len(s) > maxQuoted || strings.ContainsFunc(s, func(r rune) bool {
		return !unicode.IsGraphic(r) || unicode.IsSpace(r)
	}) {
		return quote(s)
	}
	return s
}

// prefix returns "path: " or, at the top level, "".
func prefix(path string) string {
	if path == "" {
		return ""
	}
	return path + ": "
}

// errorf returns an *Error at node n whose message starts with path.
func (p *parser) errorf(n *yaml.Node, path, format string, args ...any) error {
	return p.errorAt(Pos{Line: n.Line, Col: n.Column}, path, format, args...)
}

// errorAt returns an *Error at pos whose message starts with path.
func (p *parser) errorAt(pos Pos, path, format string, args ...any) error {
	return &Error{File: p.file, Line: pos.Line, Col: pos.Col, Msg: prefix(path) + fmt.Sprintf(format, args...)}
}

// mapping returns the mapping n holds.
func (p *parser) mapping(path string, n *yaml.Node) (*yaml.Node, error) {
	v := deref(n)
	if v.Kind != yaml.MappingNode {
		return nil, p.errorf(n, path, "expected a mapping, found %s", describe(v))
	}
	return v, nil
}

// sequence returns the sequence n holds.
func (p *parser) sequence(path string, n *yaml.Node) (*yaml.Node, error) {
	v := deref(n)
	if v.Kind != yaml.SequenceNode {
		return nil, p.errorf(n, path, "expected a sequence, found %s", describe(v))
	}
	return v, nil
}

// fields checks the field names of mapping m against known (no unknown or
// repeated names) and returns the value node of each field present.
func (p *parser) fields(path string, m *yaml.Node, known []string) (map[string]*yaml.Node, error) {
	vals := make(map[string]*yaml.Node, len(m.Content)/2)
	keys := make(map[string]*yaml.Node, len(m.Content)/2)
	for i := 0; i+1 < len(m.Content); i += 2 {
		kn := m.Content[i]
		k := deref(kn)
		if k.Kind != yaml.ScalarNode {
			return nil, p.errorf(kn, path, "expected a field name, found %s", describe(k))
		}
		name := k.Value
		switch {
		case name == "<<":
			return nil, p.errorf(kn, path, `unknown field "<<" (merge keys are not supported)`)
		case !isKnown(name, known):
			return nil, p.errorf(kn, path, "unknown field %s%s", quote(name), hint(name, known))
		}
		if first, dup := keys[name]; dup {
			return nil, p.errorf(kn, path, "duplicate field %s (first at %d:%d)", quote(name), first.Line, first.Column)
		}
		keys[name] = kn
		vals[name] = m.Content[i+1]
		p.at[strings.TrimPrefix(path+"."+name, ".")] = Pos{Line: m.Content[i+1].Line, Col: m.Content[i+1].Column}
	}
	return vals, nil
}

func isKnown(name string, known []string) bool {
	for _, k := range known {
		if k == name {
			return true
		}
	}
	return false
}

// required returns the value of field name, or an error at mapping m when
// the field is missing.
func (p *parser) required(path string, m *yaml.Node, vals map[string]*yaml.Node, name string) (*yaml.Node, error) {
	n, ok := vals[name]
	if !ok {
		return nil, p.errorf(m, path, "missing required field %s", quote(name))
	}
	return n, nil
}

// A valueReader reads the value n of the field at path: one of parser's
// readers, such as (*parser).boolean, or one that atLeast, checked or
// parsed build.
type valueReader[T any] func(p *parser, path string, n *yaml.Node) (T, error)

// atLeast reads an int that must be at least lo.
func atLeast(lo int) valueReader[int] {
	return func(p *parser, path string, n *yaml.Node) (int, error) { return p.count(path, n, lo) }
}

// checked reads with read, then applies rule, whose error points at n.
func checked[T any](read valueReader[T], rule func(T) error) valueReader[T] {
	return func(p *parser, path string, n *yaml.Node) (T, error) {
		v, err := read(p, path, n)
		if err == nil {
			if err = rule(v); err != nil {
				err = p.errorf(n, path, "%v", err)
			}
		}
		return v, err
	}
}

// parsed reads a string and parses it with parse, whose error points at n.
func parsed[T any](parse func(string) (T, error)) valueReader[T] {
	return func(p *parser, path string, n *yaml.Node) (T, error) {
		s, err := p.str(path, n)
		if err != nil {
			var zero T
			return zero, err
		}
		v, err := parse(s)
		if err != nil {
			err = p.errorf(n, path, "%v", err)
		}
		return v, err
	}
}

// named returns a parser of values by their names (String): the value
// named s, else an error saying what kind of value s was to be and the
// names: unknown priority "urgent" (want high, normal or low).
func named[T fmt.Stringer](kind string, values ...T) func(string) (T, error) {
	return func(s string) (T, error) {
		names := make([]string, len(values))
		for i, v := range values {
			if names[i] = v.String(); names[i] == s {
				return v, nil
			}
		}
		var zero T
		return zero, fmt.Errorf("unknown %s %q (want %s)", kind, s, alternatives(names))
	}
}

// mappingReader reads the fields of one mapping in turn and keeps the
// first error: once it has one, the reads after it do nothing.
type mappingReader struct {
	p    *parser
	m    *yaml.Node            // the mapping
	vals map[string]*yaml.Node // its fields' values, by name (parser.fields)
	err  error
}

// mappingOf returns a reader of the mapping n holds, whose fields must be
// among known (parser.fields).
func (p *parser) mappingOf(path string, n *yaml.Node, known []string) (*mappingReader, error) {
	m, err := p.mapping(path, n)
	if err != nil {
		return nil, err
	}
	vals, err := p.fields(path, m, known)
	if err != nil {
		return nil, err
	}
	return &mappingReader{p: p, m: m, vals: vals}, nil
}

// readOptional reads the field at path into *dst when the mapping has it.
// path is the mapping's path, a dot and the field's name ("loader.seed"),
// or the name alone at the top level.
func readOptional[T any](r *mappingReader, path string, read valueReader[T], dst *T) {
	n, ok := r.vals[fieldName(path)]
	if r.err != nil || !ok {
		return
	}
	v, err := read(r.p, path, n)
	if err != nil {
		r.err = err
		return
	}
	*dst = v
}

// readRequired is readOptional for a field the mapping must have.
func readRequired[T any](r *mappingReader, path string, read valueReader[T], dst *T) {
	if r.err == nil {
		_, r.err = r.p.required(section(path), r.m, r.vals, fieldName(path))
	}
	readOptional(r, path, read, dst)
}

// fieldName is the last element of a field path: "seed" of "loader.seed".
func fieldName(path string) string { return path[strings.LastIndexByte(path, '.')+1:] }

// section is the path of the mapping that holds the field at path:
// "loader" of "loader.seed", "" of a top-level field.
func section(path string) string { return path[:max(strings.LastIndexByte(path, '.'), 0)] }

// str returns the string scalar n holds.
func (p *parser) str(path string, n *yaml.Node) (string, error) {
	v := deref(n)
	if v.Kind != yaml.ScalarNode || v.ShortTag() != strTag {
		return "", p.errorf(n, path, "expected a string, found %s", describe(v))
	}
	return v.Value, nil
}

// bigInt returns the integer n holds. Integers too large for 64 bits, which
// yaml.v3 tags as floats, count as integers here so that the error can say
// they are out of range.
func (p *parser) bigInt(path string, n *yaml.Node) (*big.Int, error) {
	v := deref(n)
	if v.Kind == yaml.ScalarNode && (v.ShortTag() == intTag || v.ShortTag() == floatTag) {
		if x, ok := new(big.Int).SetString(strings.ReplaceAll(v.Value, "_", ""), 0); ok {
			return x, nil
		}
	}
	return nil, p.errorf(n, path, "expected an integer, found %s", describe(v))
}

// count returns the int n holds, which must be at least lo.
func (p *parser) count(path string, n *yaml.Node, lo int) (int, error) {
	x, err := p.bigInt(path, n)
	if err != nil {
		return 0, err
	}
	switch {
	case x.Cmp(big.NewInt(int64(lo))) < 0:
		return 0, p.errorf(n, path, "must be >= %d, got %s", lo, literal(x.String()))
	case x.Cmp(big.NewInt(math.MaxInt)) > 0:
		return 0, p.errorf(n, path, "%s is out of range (max %d)", literal(x.String()), math.MaxInt)
	}
	return int(x.Int64()), nil
}

// prefetch reads loader.prefetch: "auto" (runtime.PrefetchAuto) or a
// depth of at least 1.
func (p *parser) prefetch(path string, n *yaml.Node) (int, error) {
	if v := deref(n); v.Kind == yaml.ScalarNode && v.ShortTag() == strTag {
		if v.Value != "auto" {
			return 0, p.errorf(n, path, "want \"auto\" or a number >= 1, got %s", quote(v.Value))
		}
		return runtime.PrefetchAuto, nil
	}
	return p.count(path, n, 1)
}

// anyInt returns the int n holds, of any sign: for settings whose own rule
// (streams.min_batch_size's, streams.max_streams' in Settings) checks the
// range, so that the rule has one home.
func (p *parser) anyInt(path string, n *yaml.Node) (int, error) {
	x, err := p.bigInt(path, n)
	if err != nil {
		return 0, err
	}
	if x.Cmp(big.NewInt(math.MinInt)) < 0 || x.Cmp(big.NewInt(math.MaxInt)) > 0 {
		return 0, p.errorf(n, path, "%s is out of range (min %d, max %d)", literal(x.String()), math.MinInt, math.MaxInt)
	}
	return int(x.Int64()), nil
}

// uint64Value returns the non-negative 64-bit integer n holds.
func (p *parser) uint64Value(path string, n *yaml.Node) (uint64, error) {
	x, err := p.bigInt(path, n)
	if err != nil {
		return 0, err
	}
	switch {
	case x.Sign() < 0:
		return 0, p.errorf(n, path, "must be >= 0, got %s", literal(x.String()))
	case !x.IsUint64():
		return 0, p.errorf(n, path, "%s is out of range (max %d)", literal(x.String()), uint64(math.MaxUint64))
	}
	return x.Uint64(), nil
}

// number returns the finite number (integer or float) n holds.
func (p *parser) number(path string, n *yaml.Node) (float64, error) {
	v := deref(n)
	var f float64
	if v.Kind != yaml.ScalarNode || (v.ShortTag() != intTag && v.ShortTag() != floatTag) || v.Decode(&f) != nil {
		return 0, p.errorf(n, path, "expected a number, found %s", describe(v))
	}
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, p.errorf(n, path, "must be a finite number, got %s", literal(v.Value))
	}
	return f, nil
}

// element reads one element value of dtype d as a schema writes it (a
// zarr key's fill, a ragged key's pad): a number that d can hold
// (elementFits), or nan (YAML's .nan too) for a float dtype.
func (p *parser) element(path string, n *yaml.Node, d runtime.DType) (float64, error) {
	v := deref(n)
	f := math.NaN()
	isNaN := v.Kind == yaml.ScalarNode && (v.ShortTag() == strTag || v.ShortTag() == floatTag) &&
		strings.EqualFold(strings.TrimPrefix(v.Value, "."), "nan")
	if !isNaN {
		var err error
		if f, err = p.number(path, n); err != nil {
			return 0, p.errorf(n, path, "expected a number or nan, found %s", describe(v))
		}
	}
	if err := elementFits(f, d); err != nil {
		return 0, p.errorf(n, path, "%s %v", literal(v.Value), err)
	}
	return f, nil
}

// elementFits says why the element value f does not fit dtype d (the
// predicate of "VALUE does not fit d"), or returns nil: a float dtype takes
// any value (rounded to it), NaN included; bool 0 or 1; an integer dtype a
// whole number in its range.
func elementFits(f float64, d runtime.DType) error {
	switch {
	case math.IsNaN(f):
		if !d.IsFloat() {
			return fmt.Errorf("does not fit %v (only float dtypes have NaN)", d)
		}
		return nil
	case d.IsFloat():
		return nil
	case d == runtime.Bool:
		if f != 0 && f != 1 {
			return fmt.Errorf("does not fit bool (0 or 1)")
		}
		return nil
	}
	lo, hi := d.IntRange()
	switch {
	case f != math.Trunc(f) || f < float64(lo) || f > float64(hi):
		return fmt.Errorf("does not fit %v (whole numbers from %d to %d)", d, lo, hi)
	case math.Abs(f) >= 1<<53: // 2^53+1 reads as 2^53, so 2^53 itself is not sure either
		return fmt.Errorf("does not fit %v exactly: a schema number is read as a float64, which tells whole numbers apart only below 2^53", d)
	}
	return nil
}

// boolean returns the bool n holds.
func (p *parser) boolean(path string, n *yaml.Node) (bool, error) {
	v := deref(n)
	var b bool
	if v.Kind != yaml.ScalarNode || v.ShortTag() != boolTag || v.Decode(&b) != nil {
		return false, p.errorf(n, path, "expected a bool (true or false), found %s", describe(v))
	}
	return b, nil
}

// hasControl reports whether s contains a control character.
func hasControl(s string) bool {
	return strings.ContainsFunc(s, unicode.IsControl)
}
