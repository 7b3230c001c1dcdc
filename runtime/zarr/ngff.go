package zarr

import (
	"encoding/json"
	"fmt"
	"path"
)

// Multiscale is an OME-NGFF image pyramid: one group whose arrays hold the
// same image at several resolutions.
type Multiscale struct {
	store   *Store  // where Open opens levels; nil in one built to write
	Path    string  // the group's path in its store
	Version string  // "0.4" or "0.5"
	Name    string  // the multiscale's name, when it has one
	Axes    []Axis  // one per array axis
	Levels  []Level // as listed, usually finest first
}

// Axis is one axis of a multiscale image.
type Axis struct {
	Name string // e.g. "z"
	Type string // "space", "time", "channel", or empty
	Unit string // e.g. "nanometer"; empty when not given
}

// Level is one resolution of a multiscale image. Voxel index i along axis k
// lies at Translation[k] + i·Scale[k] in physical units (its centre, as
// OME-NGFF places voxels).
type Level struct {
	Path        string    // the array's path relative to the group
	Scale       []float64 // voxel size along each axis
	Translation []float64 // physical position of voxel 0 along each axis
}

// Multiscale reads the OME-NGFF multiscales metadata of the group at path p:
// version 0.4 in a v2 group's .zattrs, or 0.5 in a v3 group's attributes
// under "ome". Of several multiscales, the first is read, as the
// specification makes it the default.
func (s *Store) Multiscale(p string) (*Multiscale, error) {
	kind, doc, err := s.node(p)
	if err != nil {
		return nil, err
	}
	var attrs *metaDoc
	dir, _ := s.dir(p) // node checked p
	switch kind {
	case v2Group:
		if attrs, err = s.doc(p, ".zattrs"); err != nil {
			return nil, fmt.Errorf("zarr group %s: no .zattrs, so no multiscales: %w", dir, err)
		}
	case v3Group:
		if !doc.has("attributes") {
			return nil, doc.errorf("attributes", "no attributes, so no OME-NGFF multiscales")
		}
		if attrs, err = parseDoc(doc.file, doc.text, doc.fields["attributes"].off); err != nil {
			return nil, err
		}
	default:
		return nil, fmt.Errorf("zarr: %s is an array, not a multiscale group", dir)
	}
	m := &Multiscale{store: s, Path: p}
	msDoc := attrs
	if kind == v3Group {
		if !attrs.has("ome") {
			return nil, attrs.errorf("ome", "no \"ome\" attributes (OME-NGFF 0.5)")
		}
		if msDoc, err = parseDoc(attrs.file, attrs.text, attrs.fields["ome"].off); err != nil {
			return nil, err
		}
		if err := msDoc.get("version", &m.Version, true); err != nil {
			return nil, err
		}
	}
	if err := m.read(msDoc, kind == v3Group); err != nil {
		return nil, err
	}
	return m, nil
}

// read reads the "multiscales" list of doc, in a v3 group's "ome"
// attributes or a v2 group's .zattrs.
func (m *Multiscale) read(doc *metaDoc, v3 bool) error {
	var list []ngffMultiscale
	if err := doc.get("multiscales", &list, true); err != nil {
		return err
	}
	if len(list) == 0 {
		return doc.errorf("multiscales", "multiscales is empty")
	}
	if err := m.fill(list[0]); err != nil {
		return doc.errorf("multiscales", "%v", err)
	}
	if !v3 && m.Version != "0.4" {
		return doc.errorf("multiscales", "version %q in a zarr v2 group (OME-NGFF 0.4 is supported there)", m.Version)
	}
	if v3 && m.Version != "0.5" {
		return doc.errorf("version", "version %q in a zarr v3 group (OME-NGFF 0.5 is supported there)", m.Version)
	}
	return nil
}

// ngffMultiscale is one entry of "multiscales" as OME-NGFF spells it.
type ngffMultiscale struct {
	Version  string          `json:"version"`
	Name     string          `json:"name"`
	Axes     json.RawMessage `json:"axes"`
	Datasets []struct {
		Path       string          `json:"path"`
		Transforms []ngffTransform `json:"coordinateTransformations"`
	} `json:"datasets"`
	Transforms []ngffTransform `json:"coordinateTransformations"`
}

type ngffTransform struct {
	Type        string    `json:"type"`
	Scale       []float64 `json:"scale"`
	Translation []float64 `json:"translation"`
	Path        string    `json:"path"`
}

// fill copies one multiscale's axes and levels into m, composing each
// dataset's transformations with the multiscale's own.
func (m *Multiscale) fill(ms ngffMultiscale) error {
	m.Name = ms.Name
	if ms.Version != "" {
		m.Version = ms.Version
	}
	if err := m.readAxes(ms.Axes); err != nil {
		return err
	}
	n := len(m.Axes)
	outerScale, outerShift, err := transforms(ms.Transforms, n, false)
	if err != nil {
		return fmt.Errorf("multiscale coordinateTransformations: %w", err)
	}
	if len(ms.Datasets) == 0 {
		return fmt.Errorf("no datasets")
	}
	for _, ds := range ms.Datasets {
		if ds.Path == "" || path.IsAbs(ds.Path) {
			return fmt.Errorf("dataset path %q", ds.Path)
		}
		scale, shift, err := transforms(ds.Transforms, n, true)
		if err != nil {
			return fmt.Errorf("dataset %q: %w", ds.Path, err)
		}
		lvl := Level{Path: ds.Path, Scale: make([]float64, n), Translation: make([]float64, n)}
		for k := range n {
			lvl.Scale[k] = outerScale[k] * scale[k]
			lvl.Translation[k] = outerScale[k]*shift[k] + outerShift[k]
		}
		m.Levels = append(m.Levels, lvl)
	}
	return nil
}

// readAxes reads axes as 0.4 and 0.5 write them (objects), or as 0.3 did
// (bare names).
func (m *Multiscale) readAxes(raw json.RawMessage) error {
	if err := json.Unmarshal(raw, &m.Axes); err == nil && len(m.Axes) > 0 {
		return nil
	}
	var names []string
	if err := json.Unmarshal(raw, &names); err != nil || len(names) == 0 {
		return fmt.Errorf("axes %s: want a list of {name, type, unit}", raw)
	}
	m.Axes = make([]Axis, len(names))
	for i, name := range names {
		m.Axes[i] = Axis{Name: name}
	}
	return nil
}

// UnmarshalJSON reads an axis object.
func (a *Axis) UnmarshalJSON(b []byte) error {
	var v struct{ Name, Type, Unit string }
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	if v.Name == "" {
		return fmt.Errorf("axis %s has no name", b)
	}
	*a = Axis(v)
	return nil
}

// transforms composes a list of OME-NGFF transformations into one scale and
// translation: a dataset needs exactly one scale, then at most one
// translation; the multiscale's own list may be empty (identity).
func transforms(ts []ngffTransform, n int, needScale bool) (scale, shift []float64, err error) {
	scale, shift = make([]float64, n), make([]float64, n)
	for k := range scale {
		scale[k] = 1
	}
	sawScale, sawShift := false, false
	for _, t := range ts {
		if t.Path != "" {
			return nil, nil, fmt.Errorf("%s transformation stored in a file (%q) is not supported", t.Type, t.Path)
		}
		switch t.Type {
		case "identity":
		case "scale":
			if sawScale || sawShift {
				return nil, nil, fmt.Errorf("a scale must come once, before any translation")
			}
			if len(t.Scale) != n {
				return nil, nil, fmt.Errorf("scale %v for %d axes", t.Scale, n)
			}
			copy(scale, t.Scale)
			sawScale = true
		case "translation":
			if sawShift {
				return nil, nil, fmt.Errorf("more than one translation")
			}
			if len(t.Translation) != n {
				return nil, nil, fmt.Errorf("translation %v for %d axes", t.Translation, n)
			}
			copy(shift, t.Translation)
			sawShift = true
		default:
			return nil, nil, fmt.Errorf("transformation %q is not supported (scale, translation and identity are)", t.Type)
		}
	}
	if needScale && !sawScale {
		return nil, nil, fmt.Errorf("no scale transformation")
	}
	return scale, shift, nil
}

// Open opens level i's array, of a Multiscale that Store.Multiscale read
// (one built to write has no store to open from).
func (m *Multiscale) Open(i int) (*Array, error) {
	if m.store == nil {
		return nil, fmt.Errorf("multiscale %s: not read from a store, so no array to open", m.Path)
	}
	if i < 0 || i >= len(m.Levels) {
		return nil, fmt.Errorf("multiscale %s: level %d of %d", m.Path, i, len(m.Levels))
	}
	return m.store.Array(path.Join(m.Path, m.Levels[i].Path))
}
