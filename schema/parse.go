package schema

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"
)

// MaxFileSize is the size of the largest schema file Load reads (1 MiB).
const MaxFileSize = 1 << 20

// Limits of a schema.
const (
	maxDims = 32 // dimensions of a key's sample shape
)

// The fields of each mapping of a schema, in documentation order.
var (
	topFields = []string{"version", "package", "name", "batch_size", "device", "classes", "inputs", "targets", "records", "crops", "tiles", "loader", "streams"}
	keyFields = []string{"shape", "dtype", "file", "class_axis", "zarr", "scale", "fill", "missing", "array_dtype", "ragged", "pad", "offsets", "overflow",
		"member", "resize", "flip", "normalize", "layout", "geometry", "interpolation", "augment", "binarize"}
	loaderFields = []string{"prefetch", "workers", "shuffle", "seed", "drop_last", "max_staging_mb", "bucket"}
	streamFields = []string{"min_batch_size", "min_batch_memory_mb", "max_streams", "assign", "priority"}
)

// Load reads the schema file and parses it with Parse. Files larger than
// MaxFileSize are refused.
func Load(file string) (*Dataset, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("reading schema: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("reading schema: %w", err)
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("reading schema: %s is larger than %d bytes (1 MiB)", file, MaxFileSize)
	}
	return Parse(file, data)
}

// Parse parses and validates the schema in data; file names it in errors
// and in Dataset.File. Every error it returns is an *Error, the first one
// found, pointing at the offending node.
func Parse(file string, data []byte) (*Dataset, error) {
	p := &parser{
		file:     file,
		keyAt:    make(map[string]int),
		members:  make(map[string]member),
		views:    make(map[string]member),
		geometry: make(map[string]*yaml.Node),
		at:       make(map[string]Pos),
	}
	root, err := p.decode(bytes.TrimPrefix(data, []byte("\ufeff")))
	if err != nil {
		return nil, err
	}
	if err := p.dataset(root); err != nil {
		return nil, err
	}
	p.ds.At = p.at
	return &p.ds, nil
}

// parser holds the state of one Parse call.
type parser struct {
	file    string
	ds      Dataset
	keyAt   map[string]int    // key name -> index in ds.Keys
	members map[string]member // generated batch member name -> key that owns it
	views   map[string]member // unexported view field name -> key that owns it
	// geometry holds each mask key's geometry field, by key name, for
	// records to check once every key is read.
	geometry map[string]*yaml.Node
	total    int64          // batch bytes of the keys declared so far
	at       map[string]Pos // field path -> position of its value (Dataset.At)
}

// syntaxLine matches yaml.v3's syntax errors that carry a line number.
var syntaxLine = regexp.MustCompile(`^yaml: line ([0-9]+): (.*)$`)

// decode returns the content node of the single YAML document in data.
func (p *parser) decode(data []byte) (*yaml.Node, error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, p.empty()
		}
		return nil, p.syntaxError(err)
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case err == nil:
		return nil, p.errorf(&next, "", "a second YAML document starts here; a schema is a single document")
	case !errors.Is(err, io.EOF):
		return nil, p.syntaxError(err)
	}
	root := doc.Content[0]
	if v := deref(root); v.Kind == yaml.ScalarNode && v.ShortTag() == nullTag {
		return nil, p.empty()
	}
	return root, nil
}

// empty is the error for a schema with no content.
func (p *parser) empty() error {
	return &Error{File: p.file, Line: 1, Col: 1, Msg: "the schema is empty (it must be a mapping starting with version: 1)"}
}

// syntaxError turns a yaml.v3 error ("yaml: line N: msg") into an *Error
// at column 1 of that line; yaml.v3 leaves the line out on the first line.
func (p *parser) syntaxError(err error) error {
	e := &Error{File: p.file, Line: 1, Col: 1, Msg: strings.TrimPrefix(err.Error(), "yaml: ")}
	if m := syntaxLine.FindStringSubmatch(err.Error()); m != nil {
		e.Msg = m[2]
		if line, err := strconv.Atoi(m[1]); err == nil {
			e.Line = line
		}
	}
	return e
}

// dataset checks the top-level mapping and fills p.ds. Fields are checked
// in a fixed order (that of topFields), so that the keys exist before
// loader.bucket and streams.priority name them.
func (p *parser) dataset(root *yaml.Node) error {
	m := deref(root)
	if m.Kind != yaml.MappingNode {
		return p.errorf(root, "", "the schema must be a mapping, found %s", describe(m))
	}
	// A present version is checked first, as another version may have
	// other fields; a missing one after the field names, which may hold it
	// misspelt.
	vn := p.versionNode(m)
	if vn != nil {
		if err := p.version(vn); err != nil {
			return err
		}
	}
	vals, err := p.fields("", m, topFields)
	if err != nil {
		return err
	}
	if vn == nil {
		return p.errorf(m, "", "missing required field %q", "version")
	}
	p.ds = Defaults()
	p.ds.File = p.file
	r := &mappingReader{p: p, m: m, vals: vals}
	readRequired(r, "package", checked((*parser).str, CheckPackage), &p.ds.Package)
	readRequired(r, "name", checked((*parser).str, CheckName), &p.ds.Name)
	readRequired(r, PathBatchSize, atLeast(1), &p.ds.BatchSize)
	r.readSettings("") // device
	if r.err != nil {
		return r.err
	}
	steps := []func() error{
		func() error { return p.classes(vals) },
		func() error { return p.allKeys(m, vals) },
		func() error { return p.volumes(vals) },
		func() error { return p.records(vals) },
		func() error { return p.loader(vals) },
		func() error { return p.streams(vals) },
	}
	for _, step := range steps {
		if err := step(); err != nil {
			return err
		}
	}
	return nil
}

// versionNode returns the value of the first version field of the
// top-level mapping m, or nil.
func (p *parser) versionNode(m *yaml.Node) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if k := deref(m.Content[i]); k.Kind == yaml.ScalarNode && k.Value == "version" {
			return m.Content[i+1]
		}
	}
	return nil
}

// version checks that the version field's value n is 1.
func (p *parser) version(n *yaml.Node) error {
	v, err := p.bigInt("version", n)
	if err != nil {
		return err
	}
	if !v.IsInt64() || v.Int64() != Version {
		return p.errorf(n, "", "unsupported schema version %s (this loadergen reads version %d)", literal(v.String()), Version)
	}
	return nil
}

func (p *parser) classes(vals map[string]*yaml.Node) error {
	n, ok := vals["classes"]
	if !ok {
		return nil
	}
	seq, err := p.sequence("classes", n)
	if err != nil {
		return err
	}
	if len(seq.Content) == 0 {
		return p.errorf(n, "classes", "list is empty; omit it for no class axis")
	}
	first := make(map[string]*yaml.Node, len(seq.Content))
	for i, cn := range seq.Content {
		path := fmt.Sprintf("classes[%d]", i)
		c, err := p.str(path, cn)
		if err != nil {
			return err
		}
		switch prev, dup := first[c]; {
		case c == "":
			return p.errorf(cn, path, "class names must not be empty")
		case hasControl(c):
			return p.errorf(cn, path, "class name %s contains a control character", quote(c))
		case dup:
			return p.errorf(cn, path, "duplicate class %s (first at %d:%d)", quote(c), prev.Line, prev.Column)
		}
		first[c] = cn
		p.ds.Classes = append(p.ds.Classes, c)
	}
	return nil
}

func (p *parser) loader(vals map[string]*yaml.Node) error {
	n, ok := vals["loader"]
	if !ok {
		return nil
	}
	r, err := p.mappingOf("loader", n, loaderFields)
	if err != nil {
		return err
	}
	l := &p.ds.Loader
	readOptional(r, PathPrefetch, (*parser).prefetch, &l.Prefetch)
	readOptional(r, "loader.workers", atLeast(0), &l.Workers)
	readOptional(r, "loader.shuffle", (*parser).boolean, &l.Shuffle)
	readOptional(r, "loader.seed", (*parser).uint64Value, &l.Seed)
	readOptional(r, "loader.drop_last", (*parser).boolean, &l.DropLast)
	r.readSettings("loader") // max_staging_mb
	if r.err != nil {
		return r.err
	}
	if n, ok := r.vals["bucket"]; ok {
		return p.bucket(n)
	}
	return nil
}

func (p *parser) streams(vals map[string]*yaml.Node) error {
	n, ok := vals["streams"]
	if !ok {
		return nil
	}
	r, err := p.mappingOf("streams", n, streamFields)
	if err != nil {
		return err
	}
	r.readSettings("streams")
	if r.err != nil {
		return r.err
	}
	if n, ok := r.vals["priority"]; ok {
		return p.priorities("streams.priority", n)
	}
	return nil
}
