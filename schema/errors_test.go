package schema

import (
	"errors"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite the .err files of testdata/errors")

// TestErrors parses every testdata/errors/<case>.yaml and compares the error
// with <case>.err. The file name in messages is the path from the
// repository root, so that the expected texts do not depend on the package.
func TestErrors(t *testing.T) {
	paths, err := filepath.Glob("../testdata/errors/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(paths) == 0 {
		t.Fatal("no error cases in ../testdata/errors")
	}
	for _, path := range paths {
		name := strings.TrimSuffix(filepath.Base(path), ".yaml")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			file := "testdata/errors/" + name + ".yaml"
			ds, err := Parse(file, data)
			if err == nil {
				t.Fatalf("Parse succeeded: %+v", ds)
			}
			var se *Error
			if !errors.As(err, &se) {
				t.Fatalf("error %v is a %T, want *Error", err, err)
			}
			if se.File != file || se.Line < 1 || se.Col < 1 {
				t.Errorf("error position %s:%d:%d is not in %s", se.File, se.Line, se.Col, file)
			}
			got := err.Error()
			errPath := strings.TrimSuffix(path, ".yaml") + ".err"
			if *update {
				if err := os.WriteFile(errPath, []byte(got+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(errPath)
			if err != nil {
				t.Fatalf("%v (run go test ./schema -run TestErrors -update to create it)", err)
			}
			if diff := cmp.Diff(strings.TrimSuffix(string(want), "\n"), got); diff != "" {
				t.Errorf("error mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
