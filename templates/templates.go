// Package templates holds the files the CLI writes from templates: those
// `loadergen init` scaffolds into a new package (a starter schema and a
// generate.go with its //go:generate line), and the Python side of
// `loadergen python` (python/: the _loadergen package, each dataset's
// module, pyproject.toml).
package templates

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"text/template"
)

//go:embed *.tmpl
var files embed.FS

// Data fills the templates.
type Data struct {
	Package string // Go package name
	Name    string // exported prefix of the generated identifiers
	Schema  string // schema file name: dataset.yaml
	Output  string // generated file name: dataset_loader.go
}

// Scaffold writes dataset.yaml and generate.go into dir, creating dir if
// needed. It refuses to overwrite either file and writes nothing then.
func Scaffold(dir string, d Data) ([]string, error) {
	outputs := []struct{ tmpl, name string }{
		{"dataset.yaml.tmpl", d.Schema},
		{"generate.go.tmpl", "generate.go"},
	}
	rendered := make([][]byte, len(outputs))
	for i, o := range outputs {
		path := filepath.Join(dir, o.name)
		if _, err := os.Stat(path); err == nil {
			return nil, fmt.Errorf("%s already exists; init writes only new files", path)
		} else if !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		t, err := template.ParseFS(files, o.tmpl)
		if err != nil {
			return nil, fmt.Errorf("template %s: %w", o.tmpl, err)
		}
		var buf bytes.Buffer
		if err := t.Execute(&buf, d); err != nil {
			return nil, fmt.Errorf("template %s: %w", o.tmpl, err)
		}
		rendered[i] = buf.Bytes()
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	var written []string
	for i, o := range outputs {
		path := filepath.Join(dir, o.name)
		if err := create(path, rendered[i]); err != nil {
			for _, w := range written {
				os.Remove(w)
			}
			return nil, err
		}
		written = append(written, path)
	}
	return written, nil
}

// create writes a new file, failing if it exists.
func create(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(path)
		return fmt.Errorf("write %s: %w", path, err)
	}
	return nil
}
