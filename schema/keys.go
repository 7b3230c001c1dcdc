package schema

import (
	"fmt"
	"go/token"
	"path/filepath"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/loadergen/loadergen/internal/sizes"
	"github.com/loadergen/loadergen/runtime"
)

// reserved are the generated types' own members; no key may take their
// names, as each key is a field of the batch and of the sample.
var reserved = map[string]string{
	"Indices": "the batch's own field Indices",
	"Staged":  "the batch's own method Staged()",
	"Clone":   "the batch's own method Clone()",
	"Index":   "the sample's own field Index",
	"Epoch":   "the sample's own field Epoch",
	"Rand":    "the sample's own field Rand",
}

// reservedViews are the batch's own unexported fields; no key's view
// (ViewName) may take their names, as each view is a batch field too.
var reservedViews = map[string]string{
	"staged": "the batch's own field staged",
}

// member is a generated batch member (or the view of a field), what it is
// to its key, and the key it belongs to.
type member struct {
	key  string
	pos  Pos
	kind memberKind
}

// memberKind is what a generated batch member is to its key.
type memberKind int

const (
	keyField      memberKind = iota // the key's field: its Go name
	dataMethod                      // GoName+"Data"(): the key's typed view
	lengthsField                    // LengthsName(GoName): a ragged key's lengths
	lengthsMethod                   // LengthsName(GoName)+"Data"(): their typed view
)

// name is the Go name of the member of this kind of the key with Go name g.
func (k memberKind) name(g string) string {
	switch k {
	case dataMethod:
		return g + "Data"
	case lengthsField:
		return LengthsName(g)
	case lengthsMethod:
		return LengthsName(g) + "Data"
	}
	return g
}

// field reports whether members of this kind are batch fields, each with
// a view (ViewName), rather than methods.
func (k memberKind) field() bool { return k == keyField || k == lengthsField }

// claims says how key, whose member of this kind is name, takes it: the
// subject of a collision message.
func (k memberKind) claims(key, name string) string {
	switch k {
	case dataMethod:
		return fmt.Sprintf("key %s needs the batch method %s()", quote(key), name)
	case lengthsField:
		return fmt.Sprintf("key %s is ragged and needs the batch field %s for its lengths", quote(key), name)
	case lengthsMethod:
		return fmt.Sprintf("key %s is ragged and needs the batch method %s() for the typed view of its lengths", quote(key), name)
	}
	return fmt.Sprintf("key %s has Go name %s", quote(key), quote(name))
}

// claimsView says how key takes the view name view of its member of this
// (field) kind.
func (k memberKind) claimsView(key, view string) string {
	if k == lengthsField {
		return fmt.Sprintf("key %s is ragged and needs the view name %s (the unexported batch field of its lengths' typed view)", quote(key), quote(view))
	}
	return fmt.Sprintf("key %s has view name %s (the unexported batch field of its typed view)", quote(key), quote(view))
}

// describe names the member m, whose Go name is name, as the object of a
// collision message, with where its key is declared.
func (m member) describe(name string) string {
	var what string
	switch m.kind {
	case keyField:
		what = fmt.Sprintf("the Go name of key %s", quote(m.key))
	case dataMethod:
		what = fmt.Sprintf("the batch method %s() of key %s", name, quote(m.key))
	case lengthsField:
		what = fmt.Sprintf("the batch field %s, the lengths of ragged key %s", name, quote(m.key))
	case lengthsMethod:
		what = fmt.Sprintf("the batch method %s(), the typed view of the lengths of ragged key %s", name, quote(m.key))
	}
	return fmt.Sprintf("%s (declared at %d:%d)", what, m.pos.Line, m.pos.Col)
}

// describeView names the view m as the object of a collision message.
func (m member) describeView() string {
	what := "key " + quote(m.key)
	if m.kind == lengthsField {
		what = "the lengths' view of ragged key " + quote(m.key)
	}
	return fmt.Sprintf("%s (declared at %d:%d)", what, m.pos.Line, m.pos.Col)
}

// allKeys reads inputs, then targets, and checks that there is a key.
func (p *parser) allKeys(m *yaml.Node, vals map[string]*yaml.Node) error {
	for _, role := range []runtime.Role{runtime.Input, runtime.Target} {
		field := role.String() + "s"
		if n, ok := vals[field]; ok {
			if err := p.keys(field, n, role); err != nil {
				return err
			}
		}
	}
	if len(p.ds.Keys) > 0 {
		return nil
	}
	at := m
	if n, ok := vals["inputs"]; ok {
		at = n
	} else if n, ok := vals["targets"]; ok {
		at = n
	}
	return p.errorf(at, "", "no keys: declare at least one input or target")
}

// keys reads the ordered mapping of keys n with the given role.
func (p *parser) keys(path string, n *yaml.Node, role runtime.Role) error {
	m, err := p.mapping(path, n)
	if err != nil {
		return err
	}
	for i := 0; i+1 < len(m.Content); i += 2 {
		if err := p.key(path, m.Content[i], m.Content[i+1], role); err != nil {
			return err
		}
	}
	return nil
}

// key reads one key: its name node kn and its value node vn.
func (p *parser) key(path string, kn, vn *yaml.Node, role runtime.Role) error {
	k := deref(kn)
	if k.Kind != yaml.ScalarNode || k.ShortTag() != strTag {
		return p.errorf(kn, path, "expected a key name (a string), found %s", describe(k))
	}
	key := Key{
		Name:   k.Value,
		GoName: GoName(k.Value),
		Role:   role,
		Pos:    Pos{Line: kn.Line, Col: kn.Column},
	}
	if err := p.declare(path, kn, key); err != nil {
		return err
	}
	kp := path + "." + key.Name
	r, err := p.mappingOf(kp, vn, keyFields)
	if err != nil {
		return err
	}
	readRequired(r, kp+".shape", (*parser).shape, &key.Shape)
	readRequired(r, kp+".dtype", (*parser).dtype, &key.DType)
	readOptional(r, kp+".file", (*parser).dataFile, &key.File)
	if r.err != nil {
		return r.err
	}
	f := r.vals
	if key.ClassAxis, err = p.classAxis(kp+".class_axis", f["class_axis"], role); err != nil {
		return err
	}
	if err := p.volumeKey(kp, f, &key); err != nil {
		return err
	}
	if err := p.recordKey(kp, f, &key); err != nil {
		return err
	}
	if err := p.raggedKey(kp, f, &key); err != nil {
		return err
	}
	if key.Ragged {
		if err := p.claim(path, kn, key, lengthsField, lengthsMethod); err != nil {
			return err
		}
	}
	if err := p.size(kn, kp, key); err != nil {
		return err
	}
	p.keyAt[key.Name] = len(p.ds.Keys)
	p.ds.Keys = append(p.ds.Keys, key)
	return nil
}

// declare checks that key's name is new and that its Go name is a valid
// exported identifier, and claims the batch members every key gets: the
// field GoName and the method GoName+"Data". A ragged key's lengths are
// claimed once ragged is read (key).
func (p *parser) declare(path string, kn *yaml.Node, key Key) error {
	if i, dup := p.keyAt[key.Name]; dup {
		prev := p.ds.Keys[i].Pos
		return p.errorf(kn, path, "key %s already declared at %d:%d", quote(key.Name), prev.Line, prev.Col)
	}
	if g := key.GoName; !token.IsIdentifier(g) || !token.IsExported(g) {
		return p.errorf(kn, path, "key %s has Go name %s, which is not a valid exported Go identifier", quote(key.Name), quote(g))
	}
	return p.claim(path, kn, key, keyField, dataMethod)
}

// claim takes the batch members of the given kinds for key, after checking
// that none is reserved or another key's member, and then that the view of
// each field (the unexported field ViewName) is neither reserved nor
// another key's view. Errors are at the key's name kn.
func (p *parser) claim(path string, kn *yaml.Node, key Key, kinds ...memberKind) error {
	for _, kind := range kinds {
		name := kind.name(key.GoName)
		if r := reserved[name]; r != "" {
			return p.errorf(kn, path, "%s, which is reserved for %s", kind.claims(key.Name, name), r)
		}
		if o, ok := p.members[name]; ok {
			if kind == keyField && o.kind == keyField {
				return p.errorf(kn, path, "%s, the same as key %s (declared at %d:%d)", kind.claims(key.Name, name), quote(o.key), o.pos.Line, o.pos.Col)
			}
			return p.errorf(kn, path, "%s, which collides with %s", kind.claims(key.Name, name), o.describe(name))
		}
		p.members[name] = member{key: key.Name, pos: key.Pos, kind: kind}
	}
	for _, kind := range kinds {
		if !kind.field() {
			continue
		}
		view := ViewName(kind.name(key.GoName))
		if r := reservedViews[view]; r != "" {
			return p.errorf(kn, path, "%s, which is reserved for %s", kind.claimsView(key.Name, view), r)
		}
		if o, ok := p.views[view]; ok {
			return p.errorf(kn, path, "%s, the same as %s", kind.claimsView(key.Name, view), o.describeView())
		}
		p.views[view] = member{key: key.Name, pos: key.Pos, kind: kind}
	}
	return nil
}

// onlyFor returns an error at the first of the fields names that the key
// (whose fields f holds) writes: they apply to one kind of key (kind, such
// as "zarr keys"), and this key lacks what makes one (lacks, "zarr:").
func (p *parser) onlyFor(kp string, f map[string]*yaml.Node, names []string, kind, lacks string) error {
	for _, name := range names {
		if n, ok := f[name]; ok {
			return p.errorf(n, kp+"."+name, "applies to %s only (this key has no %s)", kind, lacks)
		}
	}
	return nil
}

// shape reads a sample shape: up to maxDims dimensions, each >= 1; [] is
// a scalar key (one element per sample).
func (p *parser) shape(path string, n *yaml.Node) ([]int, error) {
	seq, err := p.sequence(path, n)
	if err != nil {
		return nil, err
	}
	if l := len(seq.Content); l > maxDims {
		return nil, p.errorf(n, path, "has %d dimensions; at most %d are allowed", l, maxDims)
	}
	shape := make([]int, len(seq.Content))
	for i, d := range seq.Content {
		if shape[i], err = p.count(fmt.Sprintf("%s[%d]", path, i), d, 1); err != nil {
			return nil, err
		}
	}
	return shape, nil
}

// classAxis reads a key's class_axis (n is nil when absent) and says
// whether its samples get the leading class axis: targets do when classes
// are given, unless they opt out.
func (p *parser) classAxis(path string, n *yaml.Node, role runtime.Role) (bool, error) {
	want := role == runtime.Target && len(p.ds.Classes) > 0
	if n == nil {
		return want, nil
	}
	v, err := p.boolean(path, n)
	switch {
	case err != nil:
		return false, err
	case role != runtime.Target:
		return false, p.errorf(n, path, "only targets have a class axis (remove it from this input)")
	case v && len(p.ds.Classes) == 0:
		return false, p.errorf(n, path, "true needs the top-level classes list, which this schema does not have")
	}
	return v && want, nil
}

// dtype reads an element type.
func (p *parser) dtype(path string, n *yaml.Node) (runtime.DType, error) {
	s, err := p.str(path, n)
	if err != nil {
		return 0, err
	}
	d, err := runtime.ParseDType(s)
	if err != nil {
		names := make([]string, 0, len(runtime.DTypes()))
		for _, d := range runtime.DTypes() {
			names = append(names, d.String())
		}
		return 0, p.errorf(n, path, "%v (want one of %s)", err, strings.Join(names, ", "))
	}
	return d, nil
}

// dataFile reads a key's .npy path: a localPath ending in .npy.
func (p *parser) dataFile(path string, n *yaml.Node) (string, error) {
	s, err := p.localPath(path, n)
	if err == nil && !strings.HasSuffix(s, ".npy") {
		err = p.errorf(n, path, "%s must name a .npy file", quote(s))
	}
	return s, err
}

// localPath reads a path relative to the data root: a slashPath that is
// local.
func (p *parser) localPath(path string, n *yaml.Node) (string, error) {
	s, err := p.slashPath(path, n)
	if err == nil && !filepath.IsLocal(s) {
		err = p.errorf(n, path, "%s is not a local path (it must be relative and stay inside the data root)", quote(s))
	}
	return s, err
}

// slashPath reads a path as a schema writes one (a key's file or zarr
// path): a string without control characters, separated by forward
// slashes only, so that it reads the same on every system.
func (p *parser) slashPath(path string, n *yaml.Node) (string, error) {
	s, err := p.str(path, n)
	switch {
	case err != nil:
		return "", err
	case hasControl(s):
		return "", p.errorf(n, path, "%s contains a control character", quote(s))
	case strings.Contains(s, `\`):
		return "", p.errorf(n, path, "%s must use forward slashes", quote(s))
	}
	return s, nil
}

// size checks that a full batch of key (with its lengths when it is
// ragged), and of all keys so far, has a byte size that fits in an int64
// (runtime.KeyBytes and sizes.Add, which the generator lays the keys out
// with).
func (p *parser) size(kn *yaml.Node, path string, key Key) error {
	desc := fmt.Sprintf("batch_size %d", p.ds.BatchSize)
	if key.ClassAxis {
		desc += fmt.Sprintf(" x %d classes", len(p.ds.Classes))
	}
	_, bytes, ok := runtime.KeyBytes(key.DType, p.ds.SampleShape(key), p.ds.BatchSize)
	if !ok {
		return p.errorf(kn, path, "batch bytes overflow int64 (%s x shape %v x %d-byte %s)", desc, key.Shape, key.DType.Size(), key.DType)
	}
	if key.Ragged {
		var lengths int64
		if _, lengths, ok = runtime.KeyBytes(runtime.LengthsDType, nil, p.ds.BatchSize); !ok {
			return p.errorf(kn, path, "batch bytes of its lengths overflow int64 (batch_size %d x %d-byte %s)", p.ds.BatchSize, runtime.LengthsDType.Size(), runtime.LengthsDType)
		}
		bytes, ok = sizes.Add(bytes, lengths)
	}
	if ok {
		p.total, ok = sizes.Add(p.total, bytes)
	}
	if !ok {
		return p.errorf(kn, path, "total batch bytes of all keys overflow int64")
	}
	return nil
}

// keyIndex returns the index in ds.Keys of the key named name, or an error
// at n saying that no key has that name.
func (p *parser) keyIndex(path string, n *yaml.Node, name string) (int, error) {
	if i, ok := p.keyAt[name]; ok {
		return i, nil
	}
	names := make([]string, len(p.ds.Keys))
	for i, k := range p.ds.Keys {
		names[i] = k.Name
	}
	return 0, p.errorf(n, path, "unknown key %s%s", quote(name), hint(name, names))
}

// priorities reads streams.priority into the declared keys.
func (p *parser) priorities(path string, n *yaml.Node) error {
	m, err := p.mapping(path, n)
	if err != nil {
		return err
	}
	first := make(map[string]*yaml.Node, len(m.Content)/2)
	for i := 0; i+1 < len(m.Content); i += 2 {
		kn := m.Content[i]
		k := deref(kn)
		if k.Kind != yaml.ScalarNode || k.ShortTag() != strTag {
			return p.errorf(kn, path, "expected a key name (a string), found %s", describe(k))
		}
		idx, err := p.keyIndex(path, kn, k.Value)
		if err != nil {
			return err
		}
		if prev, dup := first[k.Value]; dup {
			return p.errorf(kn, path, "duplicate key %s (first at %d:%d)", quote(k.Value), prev.Line, prev.Column)
		}
		first[k.Value] = kn
		vp := path + "." + k.Value
		s, err := p.str(vp, m.Content[i+1])
		if err != nil {
			return err
		}
		pr, err := parsePriority(s)
		if err != nil {
			return p.errorf(m.Content[i+1], vp, "%v", err)
		}
		p.ds.Keys[idx].Priority = pr
	}
	return nil
}

// parsePriority reads a stream priority as runtime.Priority spells it:
// "high", "normal" or "low".
var parsePriority = named("priority", runtime.High, runtime.Normal, runtime.Low)
