package storage

import (
	"fmt"
	"strings"
	"sync"
)

// An Opener opens the root at URL loc, configured by o, as its driver
// reads it: without the process's layers (the disk cache, the
// read-ahead), which Open adds. A root that can be written is a Writable
// (OpenWritable).
type Opener func(loc string, o Options) (Root, error)

// drivers are the Openers of the URL schemes, by scheme (lower case), as
// their packages registered them.
var drivers struct {
	mu sync.RWMutex // guards m: Register writes it (in init), Open reads it
	m  map[string]Opener
}

// Register makes open the driver of URL scheme (lower case, without
// "://"): Open and OpenWritable hand it the locations of that scheme.
// A storage driver's package registers its schemes in its init, as
// TensorStore's kvstore drivers and database/sql's drivers do, so that a
// program reads the remote roots of the drivers it links:
// runtime/storage/s3 registers s3, runtime/storage/https https and http.
// Generated loaders link both. Register panics when the scheme has a
// driver already.
func Register(scheme string, open Opener) {
	drivers.mu.Lock()
	defer drivers.mu.Unlock()
	if _, dup := drivers.m[scheme]; dup || open == nil || scheme != strings.ToLower(scheme) {
		panic(fmt.Sprintf("storage: Register(%q): a second driver, no driver, or a scheme not in lower case", scheme))
	}
	if drivers.m == nil {
		drivers.m = map[string]Opener{}
	}
	drivers.m[scheme] = open
}

// driverImports are the packages of this module that register the
// schemes they name: what a program imports to read their roots.
var driverImports = map[string]string{
	"s3":    "github.com/loadergen/loadergen/runtime/storage/s3",
	"https": "github.com/loadergen/loadergen/runtime/storage/https",
	"http":  "github.com/loadergen/loadergen/runtime/storage/https",
}

// openRemote opens the root at URL loc with o through the driver of its
// scheme, without the process's layers (Open adds them).
func openRemote(loc string, o Options) (Root, error) {
	open, err := driver(loc)
	if err != nil {
		return nil, err
	}
	return open(loc, o)
}

// driver returns the driver of URL loc's scheme, or an error naming the
// scheme, and the import that registers its driver when this module has
// one.
func driver(loc string) (Opener, error) {
	s := scheme(loc)
	drivers.mu.RLock()
	open, ok := drivers.m[s]
	drivers.mu.RUnlock()
	if ok {
		return open, nil
	}
	if imp, known := driverImports[s]; known {
		return nil, fmt.Errorf("%s: no storage driver for %s:// is linked into this program: import _ %q (generated loaders do)", Redact(loc), s, imp)
	}
	return nil, fmt.Errorf("%s: unknown scheme %q (use a local path, s3://bucket/prefix or https://host/path)", Redact(loc), s)
}
