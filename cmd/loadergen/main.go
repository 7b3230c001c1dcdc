package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"

	"github.com/loadergen/loadergen/cmd/loadergen/internal/unified"
	"github.com/loadergen/loadergen/gen"
	"github.com/loadergen/loadergen/internal/outfile"
	"github.com/loadergen/loadergen/schema"
	"github.com/loadergen/loadergen/templates"
)

// usage is the command's usage; the override flags come from
// schema.Settings.
var usage = `usage:
  loadergen generate [-o FILE] [overrides] SCHEMA   write the loader (default FILE: SCHEMA's base + _loader.go, next to it)
  loadergen plan [-json] [overrides] SCHEMA         print the plan, where each setting came from, and the stream decision
  loadergen check [-o FILE] [overrides] SCHEMA      exit 1 with a unified diff if FILE is stale
  loadergen init [-name N] [-package P] DIR         scaffold dataset.yaml and generate.go in DIR
  loadergen python -o DIR [-tags T] PKG...          write a Python package of the loaders in PKG... (one shared library)
  loadergen cuda-env [-include]                     print CGO_CFLAGS and CGO_LDFLAGS for go build -tags cuda
  loadergen version
overrides: ` + overrideList() + `
flags may come before or after SCHEMA; -h after a command describes its flags
`

// overrideList lists the override flags: "-device -min-batch-size ...".
func overrideList() string {
	flags := make([]string, len(schema.Settings))
	for i, s := range schema.Settings {
		flags[i] = "-" + s.Flag()
	}
	return strings.Join(flags, " ")
}

// Exit statuses of run besides 0.
var (
	errStale = errors.New("generated file is stale") // check: exit 1 after printing the diff
	errUsage = errors.New("usage")                   // bad command line: exit 2, the message is printed
)

// toolPath is the package a module's tool directive names.
const toolPath = "github.com/loadergen/loadergen/cmd/loadergen"

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
	case "python":
		err = python(rest, stdout, stderr)
	case "cuda-env":
		err = cudaEnv(rest, stdout, stderr, getenv)
	case "version":
		err = printVersion(rest, stdout, stderr)
	case "help", "-h", "-help", "--help":
		fmt.Fprint(stdout, usage)
	default:
		fmt.Fprintf(stderr, "loadergen: unknown command %q\n%s", cmd, usage)
		return 2
	}
	switch {
	case err == nil, errors.Is(err, flag.ErrHelp):
		return 0
	case errors.Is(err, errUsage):
		return 2
	case errors.Is(err, errStale):
		return 1
	}
	fmt.Fprintln(stderr, "loadergen:", err)
	return 1
}

// command is one subcommand's flag set and its positional argument.
type command struct {
	fs     *flag.FlagSet
	what   string    // what the positional argument is: "SCHEMA", "DIR", "PKG..." (one or more); "" for none
	stdout io.Writer // where -h prints the usage; errors go to the flag set's output
}

// newCommand returns the command name taking the positional argument what
// ("" for a command that takes none).
func newCommand(name, what string, stdout, stderr io.Writer) *command {
	c := &command{fs: flag.NewFlagSet(name, flag.ContinueOnError), what: what, stdout: stdout}
	c.fs.SetOutput(stderr)
	c.fs.Usage = func() {} // parse prints it, to stdout for -h
	return c
}

// usage prints the command's usage and flags to w.
func (c *command) usage(w io.Writer) {
	line := "usage: loadergen " + c.fs.Name()
	flags := false
	c.fs.VisitAll(func(*flag.Flag) { flags = true })
	if flags {
		line += " [flags]"
	}
	if c.what != "" {
		line += " " + c.what
	}
	fmt.Fprintln(w, line)
	c.fs.SetOutput(w)
	c.fs.PrintDefaults()
}

// parse reads flags before and after the positional argument, as go vet
// does, and returns it: one for a command with a what, none ("") for one
// without. -h prints the usage to stdout and returns flag.ErrHelp.
func (c *command) parse(args []string) (string, error) {
	pos, err := c.positional(args)
	if err != nil {
		return "", err
	}
	switch {
	case c.what == "" && len(pos) > 0:
		fmt.Fprintf(c.fs.Output(), "loadergen %s: takes no arguments, got %q\n", c.fs.Name(), pos)
	case c.what != "" && len(pos) != 1:
		fmt.Fprintf(c.fs.Output(), "loadergen %s: want one %s argument, got %d\n", c.fs.Name(), c.what, len(pos))
	case c.what == "":
		return "", nil
	default:
		return pos[0], nil
	}
	c.usage(c.fs.Output())
	return "", errUsage
}

// parseAll is parse for a command that takes one or more positional
// arguments (its what ends in "...").
func (c *command) parseAll(args []string) ([]string, error) {
	pos, err := c.positional(args)
	if err == nil && len(pos) == 0 {
		fmt.Fprintf(c.fs.Output(), "loadergen %s: want one or more %s arguments\n", c.fs.Name(), strings.TrimSuffix(c.what, "..."))
		c.usage(c.fs.Output())
		err = errUsage
	}
	return pos, err
}

// positional parses the flags among args and returns the rest in order.
func (c *command) positional(args []string) ([]string, error) {
	var pos, rest []string
	if i := slices.Index(args, "--"); i >= 0 { // everything after -- is positional
		args, rest = args[:i], args[i+1:]
	}
	for {
		if err := c.fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				c.usage(c.stdout)
				return nil, flag.ErrHelp
			}
			c.usage(c.fs.Output()) // after the flag package's error message
			return nil, errUsage
		}
		args = c.fs.Args()
		if len(args) == 0 {
			break
		}
		pos, args = append(pos, args[0]), args[1:]
	}
	return append(pos, rest...), nil
}

// overrideFlags registers the setting overrides on fs; gen parses them.
func overrideFlags(fs *flag.FlagSet, o *gen.Overrides) {
	for _, s := range schema.Settings {
		fs.Func(s.Flag(), flagHelp(s), func(v string) error { return o.Set(s, v, "flag -"+s.Flag()) })
	}
}

// flagHelp is the help of the flag that overrides s: what it sets, what
// it overrides, and the default.
func flagHelp(s schema.Setting) string {
	over := "overrides the schema's " + s.Path
	if s.Env != "" {
		over = "overrides $" + s.Env + " and the schema's " + s.Path
	}
	return fmt.Sprintf("%s; %s (default %s)", s.Help, over, s.Default())
}

// planFor runs the first half of the pipeline: schema.Load -> gen.NewPlan,
// with flags over environment over schema.
func planFor(path string, flags gen.Overrides, getenv func(string) string) (*gen.Plan, error) {
	env, err := gen.EnvOverrides(getenv)
	if err != nil {
		return nil, err
	}
	ds, err := schema.Load(path)
	if err != nil {
		return nil, err
	}
	return gen.NewPlan(ds, flags.Over(env)) // NewPlan checks the overrides
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
func render(name string, args []string, stdout, stderr io.Writer, getenv func(string) string) (out string, p *gen.Plan, src []byte, err error) {
	c := newCommand(name, "SCHEMA", stdout, stderr)
	o := c.fs.String("o", "", "output file (default: SCHEMA's base name + _loader.go, next to SCHEMA)")
	var over gen.Overrides
	overrideFlags(c.fs, &over)
	path, err := c.parse(args)
	if err != nil {
		return "", nil, nil, err
	}
	if p, err = planFor(path, over, getenv); err != nil {
		return "", nil, nil, err
	}
	out = output(path, *o)
	src, err = gen.Generate(p, gen.SourcePath(path, out))
	return out, p, src, err
}

func generate(args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	out, _, src, err := render("generate", args, stdout, stderr, getenv)
	if err != nil {
		return err
	}
	_, err = outfile.Write(out, src)
	return err
}

// check prints a unified diff and exits 1 when the file on disk differs
// from what generate would write, naming the settings that differ.
func check(args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	out, p, src, err := render("check", args, stdout, stderr, getenv)
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
	// a/ and b/ prefixes, as git diff writes them: plain git apply (or
	// patch -p1), run where check ran, brings the file up to date.
	label := filepath.ToSlash(out)
	fmt.Fprint(stdout, unified.Diff("a/"+label, "b/"+label, string(old), string(src)))
	fmt.Fprintf(stderr, "loadergen: %s is stale: run loadergen generate (go generate)\n", out)
	for _, d := range p.StaleSettings(gen.HeaderSettings(old)) {
		fmt.Fprintln(stderr, "loadergen:", d)
	}
	return errStale
}

func plan(args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	c := newCommand("plan", "SCHEMA", stdout, stderr)
	asJSON := c.fs.Bool("json", false, "print the plan as JSON")
	var over gen.Overrides
	overrideFlags(c.fs, &over)
	path, err := c.parse(args)
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
	c := newCommand("init", "DIR", stdout, stderr)
	name := c.fs.String("name", "", "exported prefix of generated identifiers (default: from DIR)")
	pkg := c.fs.String("package", "", "Go package name (default: from DIR)")
	dir, err := c.parse(args)
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
	fmt.Fprintln(stdout, "next:", nextStep(dir))
	return nil
}

// scaffoldData derives the package and name from the directory when the
// flags leave them out, and checks them as the schema will, saying which
// is wrong and where it came from.
func scaffoldData(dir, name, pkg string) (templates.Data, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return templates.Data{}, err
	}
	base := filepath.Base(abs)
	// A value the user gave is named by its flag; a derived one says where
	// it came from and which flag sets it instead.
	pkgFrom, pkgHint, nameFrom, nameHint := "-package", "", "-name", ""
	if pkg == "" {
		pkg, pkgFrom, pkgHint = schema.PackageName(base), fmt.Sprintf("the package name derived from %q", base), " (set -package)"
	}
	if name == "" {
		name, nameFrom, nameHint = schema.GoName(pkg), fmt.Sprintf("the name derived from package %q", pkg), " (set -name)"
	}
	var errs []error
	if err := schema.CheckPackage(pkg); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w%s", pkgFrom, err, pkgHint))
	}
	if err := schema.CheckName(name); err != nil {
		errs = append(errs, fmt.Errorf("%s: %w%s", nameFrom, err, nameHint))
	}
	if err := errors.Join(errs...); err != nil {
		return templates.Data{}, fmt.Errorf("init %s: %w", dir, err)
	}
	return templates.Data{Package: pkg, Name: name, Schema: "dataset.yaml", Output: "dataset_loader.go"}, nil
}

// nextStep says what to run after init: go generate, after adding the tool
// to the module when its go.mod lacks the tool directive, then go mod
// tidy, which adds what the loader imports and the generator does not
// (the runtime's codecs and storage drivers). loadergen is not
// published (go get of it answers 403), so the tool comes from a clone,
// as generate.go's comment and the README show.
func nextStep(dir string) string {
	const (
		edit = "edit dataset.yaml, then go generate ./... and go mod tidy (the loader imports the runtime)"
		tool = "add loadergen from a clone as the module's tool (go mod edit -tool=" + toolPath +
			" with -require and -replace, then go mod tidy: see generate.go), "
	)
	mod, err := findGoMod(dir)
	switch {
	case err != nil:
		return "create a module (go mod init), " + tool + edit
	case !hasTool(mod):
		return tool + edit
	}
	return edit
}

// findGoMod returns the go.mod of the module dir is in.
func findGoMod(dir string) (string, error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	for {
		path := filepath.Join(d, "go.mod")
		if _, err := os.Stat(path); err == nil {
			return path, nil
		}
		parent := filepath.Dir(d)
		if parent == d {
			return "", os.ErrNotExist
		}
		d = parent
	}
}

// hasTool reports whether go.mod at path has loadergen's tool directive,
// alone or in a tool block.
func hasTool(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == toolPath || line == "tool "+toolPath {
			return true
		}
	}
	return false
}

// printVersion prints the module version loadergen was built from.
func printVersion(args []string, stdout, stderr io.Writer) error {
	if _, err := newCommand("version", "", stdout, stderr).parse(args); err != nil {
		return err
	}
	fmt.Fprintln(stdout, "loadergen", version())
	return nil
}

func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" {
		return bi.Main.Version
	}
	return "(devel)"
}
