package main

import (
	"fmt"
	"io"

	"github.com/loadergen/loadergen/cmd/loadergen/internal/pydist"
)

// python writes the Python package of the loaders in the packages named.
func python(args []string, stdout, stderr io.Writer) error {
	c := newCommand("python", "PKG...", stdout, stderr)
	dir := c.fs.String("o", "", "the folder to write (required): modules, _loadergen, pyproject.toml; a folder written before is replaced")
	tags := c.fs.String("tags", "", "build tags of the shared library, as go build takes them (cuda: the CUDA backend; set the CGO flags first: eval \"$(loadergen cuda-env)\")")
	pkgs, err := c.parseAll(args)
	if err != nil {
		return err
	}
	if *dir == "" {
		fmt.Fprintln(c.fs.Output(), "loadergen python: -o DIR is required")
		c.usage(c.fs.Output())
		return errUsage
	}
	modules, err := pydist.Write(pydist.Options{Dir: *dir, Packages: pkgs, Tags: *tags})
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: modules %v and the library they call; import them with PYTHONPATH=%s, or pip install --no-build-isolation --no-index %s\n", *dir, modules, *dir, *dir)
	return nil
}
