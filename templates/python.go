package templates

import (
	"bytes"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"text/template"
)

// The files `loadergen python` writes beside the shared library.
var (
	//go:embed python/core.py
	pythonCore []byte
	//go:embed python/module.py.tmpl
	moduleTmpl string
	//go:embed python/pyproject.toml.tmpl
	pyprojectTmpl string
)

// PythonCore is the _loadergen package's __init__.py: the Python side of
// the library's C ABI, the same for every dataset.
func PythonCore() []byte { return bytes.Clone(pythonCore) }

// PythonKey is one key of a dataset as its Python module shows it.
type PythonKey struct {
	Index int    // the key's place in the plan
	Name  string // as in the schema (a lengths key: "tokens.lengths")
	Attr  string // the batch's attribute: a valid Python identifier
	Role  string // input or target
	DType string
	Shape []int  // one sample's
	Note  string // what else a reader needs: the class axis, a ragged key's lengths
	Doc   string // the attribute's docstring, one line without quotes
}

// PythonModule fills the module of one dataset.
type PythonModule struct {
	Module      string // the Python module: the Go package's name
	ImportPath  string // the Go package
	Schema      string // its schema file, for the header
	Name        string // the schema's name: the classes' prefix
	Fingerprint string // the plan's, which the library holds too
	Source      string // the constructor's source keyword: files, volumes, tiles or records
	SourceDoc   string // what that keyword names
	Crop        bool   // the source says where a sample comes from
	CropDoc     string
	BatchSize   int
	Device      string
	Prefetch    string // "auto" or a number
	Workers     string // "GOMAXPROCS" or a number
	Shuffle     string // Python's True or False
	DropLast    string
	Seed        uint64
	Classes     []string
	Keys        []PythonKey
	// Outputs are the keys a Predictions class writes, for a dataset with
	// tiles; nil for one without, which has no such class.
	Outputs []PythonKey
}

// OutputArgs is the outputs' attributes as the tuple of Predictions.write's
// arguments: (labels,).
func (m PythonModule) OutputArgs() string {
	a := make([]string, len(m.Outputs))
	for i, k := range m.Outputs {
		a[i] = k.Attr
	}
	return pyTuple(a)
}

// OutputSpecs is the outputs as Predictions' _outputs: (("labels",
// "float32", (3, 32, 32, 32)),).
func (m PythonModule) OutputSpecs() string {
	a := make([]string, len(m.Outputs))
	for i, k := range m.Outputs {
		a[i] = fmt.Sprintf("(%q, %q, %s)", k.Attr, k.DType, tuple(k.Shape))
	}
	return pyTuple(a)
}

// Attrs are the keys' attributes, in plan order.
func (m PythonModule) Attrs() []string {
	a := make([]string, len(m.Keys))
	for i, k := range m.Keys {
		a[i] = k.Attr
	}
	return a
}

// Pyproject fills pyproject.toml.
type Pyproject struct {
	Project string   // the distribution's name
	Modules []string // the datasets' modules
}

// RenderPythonModule returns the Python module of one dataset.
func RenderPythonModule(m PythonModule) ([]byte, error) { return render("module.py", moduleTmpl, m) }

// RenderPyproject returns the pyproject.toml of the written folder.
func RenderPyproject(p Pyproject) ([]byte, error) { return render("pyproject.toml", pyprojectTmpl, p) }

func render(name, text string, data any) ([]byte, error) {
	t, err := template.New(name).Funcs(template.FuncMap{"join": strings.Join, "tuple": tuple, "strs": strs}).Parse(text)
	if err != nil {
		return nil, fmt.Errorf("template %s: %w", name, err)
	}
	var buf bytes.Buffer
	if err := t.Execute(&buf, data); err != nil {
		return nil, fmt.Errorf("template %s: %w", name, err)
	}
	return buf.Bytes(), nil
}

// tuple writes ints as a Python tuple: (), (3,) or (3, 4).
func tuple(v []int) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.Itoa(x)
	}
	return pyTuple(parts)
}

// strs writes strings as a Python tuple of string literals.
func strs(v []string) string {
	parts := make([]string, len(v))
	for i, x := range v {
		parts[i] = strconv.Quote(x)
	}
	return pyTuple(parts)
}

func pyTuple(parts []string) string {
	if len(parts) == 1 {
		return "(" + parts[0] + ",)"
	}
	return "(" + strings.Join(parts, ", ") + ")"
}
