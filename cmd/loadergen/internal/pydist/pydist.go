// Package pydist writes what `loadergen python` makes of generated loader
// packages: an importable Python folder holding one module per dataset,
// the _loadergen package, a shared library of the loaders (go build
// -buildmode=c-shared, one Go runtime for them all) and a pyproject.toml.
//
// The pipeline: find each package and its generated file (go list), check
// the file is current (its schema, under the settings its header records,
// regenerates it byte for byte), render the Python modules and the
// library's main package (gen), build the library inside the packages'
// module, then put the folder in place at once.
package pydist

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/loadergen/loadergen/gen"
	"github.com/loadergen/loadergen/schema"
	"github.com/loadergen/loadergen/templates"
)

// Options say what to write where.
type Options struct {
	Dir      string   // the folder to write; replaced whole
	Packages []string // Go packages, as go build takes them
	Tags     string   // build tags of the library (cuda), comma-separated
}

// Library is the shared library's file name inside _loadergen.
const Library = "libloadergen.so"

// Write builds the folder o.Dir and returns the modules it holds.
func Write(o Options) ([]string, error) {
	if len(o.Packages) == 0 {
		return nil, errors.New("python: name the generated loader packages (loadergen python -o DIR PKG...)")
	}
	if err := checkTarget(o.Dir); err != nil {
		return nil, err
	}
	pkgs, err := list(o.Packages)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{"_loadergen/__init__.py": templates.PythonCore()}
	var bridged []gen.Bridged
	var modules []string
	for _, p := range pkgs {
		plan, schemaFile, err := currentPlan(p)
		if err != nil {
			return nil, err
		}
		mod, err := gen.PythonModule(plan, p.ImportPath, schemaFile)
		if err != nil {
			return nil, err
		}
		files[p.Name+".py"] = mod
		modules = append(modules, p.Name)
		bridged = append(bridged, gen.Bridged{ImportPath: p.ImportPath, Plan: plan})
	}
	main, err := gen.PythonLibrary(bridged)
	if err != nil {
		return nil, err
	}
	if files["pyproject.toml"], err = templates.RenderPyproject(templates.Pyproject{Project: "loadergen-" + strings.Join(modules, "-"), Modules: modules}); err != nil {
		return nil, err
	}
	stage, err := os.MkdirTemp(filepath.Dir(filepath.Clean(o.Dir)), "."+filepath.Base(o.Dir)+".tmp-")
	if err != nil {
		return nil, fmt.Errorf("python: %w", err)
	}
	defer os.RemoveAll(stage)
	if err := os.Chmod(stage, 0o755); err != nil { // MkdirTemp makes it private
		return nil, fmt.Errorf("python: %w", err)
	}
	for name, data := range files {
		path := filepath.Join(stage, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("python: %w", err)
		}
		if err := os.WriteFile(path, data, 0o644); err != nil {
			return nil, fmt.Errorf("python: %w", err)
		}
	}
	if err := build(pkgs[0].Module.Dir, main, filepath.Join(stage, "_loadergen", Library), o); err != nil {
		return nil, err
	}
	return modules, replace(stage, o.Dir)
}

// pkg is what go list says of a package.
type pkg struct {
	ImportPath string
	Name       string
	Dir        string
	GoFiles    []string
	Module     *struct{ Path, Dir string }
	Error      *struct{ Err string }
}

// list runs go list on the patterns.
func list(patterns []string) ([]pkg, error) {
	cmd := exec.Command("go", append([]string{"list", "-e", "-json=ImportPath,Name,Dir,GoFiles,Module,Error", "--"}, patterns...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("python: go list %s: %w\n%s", strings.Join(patterns, " "), err, stderr.Bytes())
	}
	var pkgs []pkg
	for dec := json.NewDecoder(bytes.NewReader(out)); dec.More(); {
		var p pkg
		if err := dec.Decode(&p); err != nil {
			return nil, fmt.Errorf("python: go list: %w", err)
		}
		switch {
		case p.Error != nil:
			return nil, fmt.Errorf("python: %s: %s", p.ImportPath, p.Error.Err)
		case p.Module == nil:
			return nil, fmt.Errorf("python: %s is not in a module: run loadergen python inside the module that holds the loaders", p.ImportPath)
		case len(pkgs) > 0 && p.Module.Dir != pkgs[0].Module.Dir:
			return nil, fmt.Errorf("python: %s is in module %s, %s in %s: the library is built in one module, so list packages of one (or of its dependencies, imported from it)", p.ImportPath, p.Module.Path, pkgs[0].ImportPath, pkgs[0].Module.Path)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) == 0 {
		return nil, fmt.Errorf("python: %s matched no packages", strings.Join(patterns, " "))
	}
	return pkgs, nil
}

// currentPlan finds p's generated file and returns its plan, after
// checking that the schema still generates the file byte for byte.
func currentPlan(p pkg) (*gen.Plan, string, error) {
	file, src, source, err := generatedFile(p)
	if err != nil {
		return nil, "", err
	}
	over, err := gen.HeaderOverrides(gen.HeaderSettings(src), file)
	if err != nil {
		return nil, "", err
	}
	schemaPath := filepath.Join(p.Dir, filepath.FromSlash(source))
	ds, err := schema.Load(schemaPath)
	if err != nil {
		return nil, "", err
	}
	plan, err := gen.NewPlan(ds, over)
	if err != nil {
		return nil, "", err
	}
	want, err := gen.Generate(plan, source)
	if err != nil {
		return nil, "", err
	}
	if !bytes.Equal(want, src) {
		return nil, "", fmt.Errorf("python: %s is stale against %s: run go generate (loadergen check shows the difference)", file, schemaPath)
	}
	return plan, source, nil
}

// generatedFile finds the file of package p that loadergen generated, and
// the schema its header names (relative to the package's directory).
func generatedFile(p pkg) (path string, src []byte, source string, err error) {
	for _, name := range p.GoFiles {
		path = filepath.Join(p.Dir, name)
		src, err = os.ReadFile(path)
		if err != nil {
			return "", nil, "", fmt.Errorf("python: %w", err)
		}
		sc := bufio.NewScanner(bytes.NewReader(src))
		if !sc.Scan() || sc.Text() != "// "+gen.Header {
			continue
		}
		if sc.Scan() {
			if s, ok := strings.CutPrefix(sc.Text(), "// source: "); ok {
				return path, src, s, nil
			}
		}
		return "", nil, "", fmt.Errorf("python: %s: its header names no schema (// source: ...): regenerate it (go generate)", path)
	}
	return "", nil, "", fmt.Errorf("python: %s holds no file generated by loadergen generate", p.ImportPath)
}

// build compiles the library's main package, written into a temporary
// directory of module moduleDir (which holds the packages it imports), into
// the shared library out.
func build(moduleDir string, main []byte, out string, o Options) error {
	tmp, err := os.MkdirTemp(moduleDir, "_loadergen_python_")
	if err != nil {
		return fmt.Errorf("python: %w", err)
	}
	defer os.RemoveAll(tmp)
	if err := os.WriteFile(filepath.Join(tmp, "main.go"), main, 0o644); err != nil {
		return fmt.Errorf("python: %w", err)
	}
	args := []string{"build", "-buildmode=c-shared", "-o", out}
	if o.Tags != "" {
		args = append(args, "-tags", o.Tags)
	}
	cmd := exec.Command("go", append(args, "./"+filepath.Base(tmp))...)
	cmd.Dir = moduleDir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=1")
	var stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("python: go build -buildmode=c-shared (it needs cgo: a C compiler): %w\n%s", err, stderr.Bytes())
	}
	// c-shared may also write a C header, which Python does not read.
	if err := os.Remove(strings.TrimSuffix(out, filepath.Ext(out)) + ".h"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("python: %w", err)
	}
	return nil
}

// replace puts the staged folder at dir. A folder already there must be
// one this command wrote (its pyproject.toml says so), or empty: it is
// replaced whole, and put back if the new one cannot take its place.
// Anything else there is refused, not overwritten.
func replace(stage, dir string) error {
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return rename(stage, dir)
	} else if err != nil {
		return fmt.Errorf("python: %w", err)
	}
	if err := checkTarget(dir); err != nil {
		return err
	}
	trash, err := os.MkdirTemp(filepath.Dir(filepath.Clean(dir)), "."+filepath.Base(dir)+".old-")
	if err != nil {
		return fmt.Errorf("python: %w", err)
	}
	defer os.RemoveAll(trash)
	if err := rename(dir, filepath.Join(trash, "old")); err != nil {
		return err
	}
	if err := rename(stage, dir); err != nil {
		return errors.Join(err, rename(filepath.Join(trash, "old"), dir))
	}
	return nil
}

// checkTarget refuses a dir that exists and is neither empty nor a folder
// this command wrote (its pyproject.toml says so): Write replaces dir
// whole.
func checkTarget(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return fmt.Errorf("python: %w", err)
	case len(entries) == 0:
		return nil
	}
	old, err := os.ReadFile(filepath.Join(dir, "pyproject.toml"))
	if err != nil || !bytes.HasPrefix(old, []byte("# "+gen.PythonHeader)) {
		return fmt.Errorf("python: %s exists and was not written by loadergen python: remove it or choose another -o", dir)
	}
	return nil
}

// rename is os.Rename with the package's error prefix.
func rename(from, to string) error {
	if err := os.Rename(from, to); err != nil {
		return fmt.Errorf("python: %w", err)
	}
	return nil
}
