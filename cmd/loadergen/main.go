// Command loadergen turns a YAML dataset schema into a Go data loader
// specialised for that dataset. Run it through go generate:
//
//	//go:generate go tool loadergen generate dataset.yaml
//
// Usage:
//
//	loadergen generate [-o FILE] [overrides] SCHEMA   write the loader
//	loadergen plan [-json] [overrides] SCHEMA         print the plan and its reason
//	loadergen check [-o FILE] [overrides] SCHEMA      exit 1 with a diff if FILE is stale
//	loadergen init [-name N] [-package P] DIR         scaffold a schema and generate.go
//	loadergen version
//
// Overrides: -device -min-batch-size -min-batch-memory-mb -max-streams -assign.
// Precedence: flags > environment > schema > defaults.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/aymanbagabas/go-udiff"

	"github.com/loadergen/loadergen/gen"
	"github.com/loadergen/loadergen/internal/outfile"
	"github.com/loadergen/loadergen/schema"
	"github.com/loadergen/loadergen/templates"
)

const usage = `usage:
  loadergen generate [-o FILE] [overrides] SCHEMA   write the loader (default FILE: SCHEMA's base + _loader.go, next to it)
  loadergen plan [-json] [overrides] SCHEMA         print the plan and the reason for the stream decision
  loadergen check [-o FILE] [overrides] SCHEMA      exit 1 with a unified diff if FILE is stale
  loadergen init [-name N] [-package P] DIR         scaffold dataset.yaml and generate.go in DIR
  loadergen version
overrides: -device -min-batch-size -min-batch-memory-mb -max-streams -assign -max-staging-mb
`

// errStale makes check exit 1 after printing its diff.
var errStale = errors.New("generated file is stale")

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}

// run is the whole command with its environment passed in, for tests.
func run(args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	var err error
	switch cmd, rest := args[0], args[1:]; cmd {
	case "generate":
		err = generate(rest, stdout, stderr, getenv)
	case "plan":
		err = plan(rest, stdout, stderr, getenv)
	case "check":
		err = check(rest, stdout, stderr, getenv)
	case "init":
		err = scaffold(rest, stdout, stderr)
	case "version":
		fmt.Fprintln(stdout, "loadergen", version())
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "loadergen: unknown command %q\n%s", cmd, usage)
		return 2
	}
	switch {
	case err == nil:
		return 0
	case errors.Is(err, flag.ErrHelp):
		return 2
	case errors.Is(err, errStale):
		return 1
	}
	fmt.Fprintln(stderr, "loadergen:", err)
	return 1
}

// overrideFlags registers the stream-plan overrides on fs; gen parses them.
func overrideFlags(fs *flag.FlagSet, o *gen.Overrides) {
	for _, s := range gen.Settings {
		fs.Func(s.Name, s.Help, func(v string) error { return o.Set(s.Name, v) })
	}
}

// planFor runs the first half of the pipeline: schema.Load -> gen.NewPlan,
// with flags over environment over schema.
func planFor(path string, flags gen.Overrides, getenv func(string) string) (*gen.Plan, error) {
	if err := flags.Check(); err != nil {
		return nil, fmt.Errorf("flags: %w", err)
	}
	env, err := gen.EnvOverrides(getenv)
	if err != nil {
		return nil, err
	}
	ds, err := schema.Load(path)
	if err != nil {
		return nil, err
	}
	return gen.NewPlan(ds, flags.Over(env))
}

// parse parses a subcommand's flags and wants exactly one argument after them.
func parse(fs *flag.FlagSet, args []string, stderr io.Writer, what string) (string, error) {
	fs.SetOutput(stderr)
	if err := fs.Parse(args); err != nil {
		return "", flag.ErrHelp // the flag package has printed the error and usage
	}
	if fs.NArg() != 1 {
		fmt.Fprintf(stderr, "loadergen %s: want one %s argument, got %d\n", fs.Name(), what, fs.NArg())
		fs.Usage()
		return "", flag.ErrHelp
	}
	return fs.Arg(0), nil
}

// output resolves -o: by default the schema's base name + _loader.go, next
// to the schema.
func output(schemaPath, o string) string {
	if o != "" {
		return o
	}
	base := strings.TrimSuffix(filepath.Base(schemaPath), filepath.Ext(schemaPath))
	return filepath.Join(filepath.Dir(schemaPath), base+"_loader.go")
}

// render runs the whole pipeline: schema.Load -> gen.NewPlan -> gen.Generate.
func render(args []string, name string, stderr io.Writer, getenv func(string) string) (out string, src []byte, err error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	o := fs.String("o", "", "output file (default: SCHEMA's base name + _loader.go, next to SCHEMA)")
	var over gen.Overrides
	overrideFlags(fs, &over)
	path, err := parse(fs, args, stderr, "SCHEMA")
	if err != nil {
		return "", nil, err
	}
	p, err := planFor(path, over, getenv)
	if err != nil {
		return "", nil, err
	}
	out = output(path, *o)
	src, err = gen.Generate(p, gen.SourcePath(path, out))
	return out, src, err
}

func generate(args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	out, src, err := render(args, "generate", stderr, getenv)
	if err != nil {
		return err
	}
	_, err = outfile.Write(out, src)
	return err
}

func check(args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	out, src, err := render(args, "check", stderr, getenv)
	if err != nil {
		return err
	}
	old, err := os.ReadFile(out)
	if err != nil {
		return fmt.Errorf("check: %w (run loadergen generate)", err)
	}
	if string(old) == string(src) {
		return nil
	}
	fmt.Fprint(stdout, udiff.Unified(out, out+" (regenerated)", string(old), string(src)))
	fmt.Fprintf(stderr, "loadergen: %s is stale: run loadergen generate (go generate)\n", out)
	return errStale
}

func plan(args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs := flag.NewFlagSet("plan", flag.ContinueOnError)
	asJSON := fs.Bool("json", false, "print the plan as JSON")
	var over gen.Overrides
	overrideFlags(fs, &over)
	path, err := parse(fs, args, stderr, "SCHEMA")
	if err != nil {
		return err
	}
	p, err := planFor(path, over, getenv)
	if err != nil {
		return err
	}
	if *asJSON {
		return p.WriteJSON(stdout)
	}
	return p.WriteTable(stdout)
}

func scaffold(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("init", flag.ContinueOnError)
	name := fs.String("name", "", "exported prefix of generated identifiers (default: from DIR)")
	pkg := fs.String("package", "", "Go package name (default: from DIR)")
	dir, err := parse(fs, args, stderr, "DIR")
	if err != nil {
		return err
	}
	d, err := scaffoldData(dir, *name, *pkg)
	if err != nil {
		return err
	}
	written, err := templates.Scaffold(dir, d)
	if err != nil {
		return err
	}
	for _, w := range written {
		fmt.Fprintln(stdout, "wrote", w)
	}
	fmt.Fprintln(stdout, "next: go get -tool github.com/loadergen/loadergen/cmd/loadergen && go generate ./...")
	return nil
}

// scaffoldData derives the package and name from the directory when the
// flags leave them out, and checks them as the schema will.
func scaffoldData(dir, name, pkg string) (templates.Data, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return templates.Data{}, err
	}
	base := filepath.Base(abs)
	if pkg == "" {
		pkg = schema.PackageName(base)
	}
	if name == "" {
		name = schema.GoName(pkg)
	}
	if err := errors.Join(schema.CheckPackage(pkg), schema.CheckName(name)); err != nil {
		return templates.Data{}, fmt.Errorf("init %s: %w (set -package and -name)", dir, err)
	}
	return templates.Data{Package: pkg, Name: name, Schema: "dataset.yaml", Output: "dataset_loader.go"}, nil
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
