package main

import (
	"bytes"
	"go/scanner"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// hostileSchema puts every string a schema lets through into the places it
// reaches the output: key names (with a Cyrillic look-alike), .npy file paths
// full of quotes, backticks, comment ends and code, and class names.
const hostileSchema = `version: 1
package: hostile
name: Hostile
batch_size: 2
classes: ["*/ panic(1) /*", "\"; os.Exit(3) //", "` + "`" + `"]
inputs:
  rаw: {shape: [2], dtype: uint8, file: "a */ panic(1) /* \" ` + "`" + ` b.npy"}
targets:
  lbl: {shape: [1], dtype: int8, file: "x\"); os.Exit(2); //.npy"}
`

// TestHostileStringsStayInert generates a loader from a hostile schema at a
// hostile path and checks that (1) every hostile fragment appears only
// inside string literals and comments, (2) no line is a directive, and
// (3) the result compiles and vets in a user module.
func TestHostileStringsStayInert(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a module with the go command; run without -short")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Fatal(err)
	}
	repo, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	schemaName := "data\n//go:generate rm -rf ~ */.yaml"
	writeModule(t, dir, repo, map[string]string{
		schemaName: hostileSchema,
		"doc.go":   "package hostile\n",
	})
	out := filepath.Join(dir, "hostile_loader.go")
	code, _, errOut := cli(t, dir, noEnv, "generate", "-o", out, schemaName)
	if code != 0 {
		t.Fatalf("generate: exit %d: %s", code, errOut)
	}
	src, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(src), "\n") {
		if strings.HasPrefix(line, "//go:") || strings.HasPrefix(line, "//line") {
			t.Errorf("a schema string became a directive: %q", line)
		}
	}
	fset := token.NewFileSet()
	var s scanner.Scanner
	s.Init(fset.AddFile(out, -1, len(src)), src, nil, scanner.ScanComments)
	for {
		_, tok, lit := s.Scan()
		if tok == token.EOF {
			break
		}
		if tok == token.IDENT && (lit == "panic" || lit == "os" || lit == "Exit" || lit == "rm") {
			t.Errorf("hostile identifier %q reached the code outside literals and comments", lit)
		}
	}
	if !bytes.Contains(src, []byte("RаwData()")) {
		t.Error("the look-alike key lost its name")
	}
	goCmd(t, gobin, dir, "mod", "tidy")
	goCmd(t, gobin, dir, "vet", "./...")
}
