// Command cudastub builds the CUDA driver stub library into a directory:
//
//	go run ./internal/cudastub/cmd/cudastub DIR
//
// DIR/libcuda.a is then what a cuda build links in place of the driver
// (CGO_LDFLAGS=-LDIR), for GOARCH, with the C compiler $CC (default gcc).
package main

import (
	"fmt"
	"os"
	"runtime"

	"github.com/loadergen/loadergen/internal/cudastub"
)

func main() {
	if len(os.Args) != 2 {
		fmt.Fprintln(os.Stderr, "usage: cudastub DIR")
		os.Exit(2)
	}
	arch := os.Getenv("GOARCH")
	if arch == "" {
		arch = runtime.GOARCH
	}
	if err := cudastub.Build(os.Args[1], arch, os.Getenv("CC")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
