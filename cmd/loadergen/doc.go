// Command loadergen turns a YAML dataset schema into a Go data loader
// specialised for that dataset. Run it through go generate:
//
//	//go:generate go tool loadergen generate dataset.yaml
//
// Usage:
//
//	loadergen generate [-o FILE] [overrides] SCHEMA
//	loadergen plan [-json] [overrides] SCHEMA
//	loadergen check [-o FILE] [overrides] SCHEMA
//	loadergen init [-name N] [-package P] DIR
//	loadergen python -o DIR [-tags T] PKG...
//	loadergen cuda-env [-include]
//	loadergen version
//	loadergen help
//
// Flags may come before or after the positional arguments (loadergen plan
// dataset.yaml -json); after --, everything is a positional argument.
// loadergen COMMAND -h prints the command's flags, each override with the
// variable and schema field it overrides and its default.
//
// Exit status: 0 on success (and for -h and help), 1 on an error or, for
// check, a stale file, 2 on a bad command line, a flag value of the wrong
// kind included (-max-streams 3x, -assign random).
//
// The schema's fields, the plan arithmetic and the settings are described
// in docs/SCHEMA.md; the generated file's header, check's messages and
// plan's output in docs/CLI.md.
//
// # generate
//
// generate writes the loader of SCHEMA to FILE, through a temporary file
// and a rename, and leaves FILE alone when its bytes are unchanged. A
// failed run leaves no partial file.
//
//	-o FILE    the file to write (default: SCHEMA's base name + _loader.go,
//	           next to SCHEMA: dataset.yaml gives dataset_loader.go)
//
// # plan
//
// plan prints the plan of SCHEMA: each key's role, dtype, sample shape,
// batch bytes, stream and priority, where each setting came from, and the
// stream decision with its reason.
//
//	-json      print the plan as JSON, with the staging layout and the
//	           loader's settings (docs/CLI.md lists the fields)
//
// # check
//
// check generates SCHEMA in memory and compares it with FILE. When they
// differ, it prints a unified diff on stdout (git apply or patch -p1 takes
// it, run where check ran), names on stderr each setting the file was
// generated with that this run gives differently, and exits 1. CI runs it
// on the committed file: loadergen check dataset.yaml.
//
//	-o FILE    the file to compare (default as for generate)
//
// # Overrides
//
// generate, plan and check take flags that override the schema's
// settings. A flag beats the environment variable, which beats the schema,
// which beats the default. All are read when the loader is generated and
// fixed in the generated file: setting a variable when the program runs
// changes nothing (the loader logs a warning naming it).
//
//	-device V
//	    target device: cpu, cuda or cuda:N
//	    (device; default cpu)
//	-min-batch-size N
//	    smallest batch size that uses several streams
//	    ($MIN_BATCH_SIZE_FOR_STREAMS, streams.min_batch_size; default 8)
//	-min-batch-memory-mb N
//	    smallest batch memory (MiB) that uses several streams
//	    ($MIN_BATCH_MEMORY_FOR_STREAMS_MB, streams.min_batch_memory_mb;
//	    default 100)
//	-max-streams N
//	    most CUDA streams to use, 1 to 64
//	    ($MAX_CONCURRENT_CUDA_STREAMS, streams.max_streams; default 1)
//	-assign A
//	    key-to-stream assignment: round_robin or balanced
//	    (streams.assign; default round_robin)
//	-max-staging-mb N
//	    largest staging memory, (prefetch+1) x batch, in MiB
//	    (loader.max_staging_mb; default 16384)
//
// # init
//
// init scaffolds DIR (created if absent) with dataset.yaml, a schema to
// edit, and generate.go, which holds the go:generate line and how to add
// loadergen to the module from a clone. It never overwrites a file: a
// second init in DIR fails. It then says what to run next.
//
//	-name N     exported prefix of the generated identifiers, as in
//	            NewCellMapLoader (default: from the package name, cellmap
//	            gives Cellmap)
//	-package P  Go package name (default: from DIR's base name)
//
// # python
//
// python writes a Python package of the generated loaders in PKG...,
// packages named as go build names them, from inside their module: one
// Python module per dataset, the _loadergen package with one shared library
// for them all (go build -buildmode=c-shared: it needs cgo), and a
// pyproject.toml. It refuses a package without a generated file, one whose
// file is stale (run go generate), one whose dataset has no generated
// source, and two packages of one name. It writes DIR whole through a
// temporary folder beside it, replacing a folder it wrote before and
// refusing any other. docs/PYTHON.md describes the Python API.
//
//	-o DIR     the folder to write (required)
//	-tags T    build tags of the shared library, as go build takes them
//	           (cuda: the CUDA backend; set the CGO flags of cuda-env first)
//
// # cuda-env
//
// cuda-env prints the export lines of CGO_CFLAGS and CGO_LDFLAGS that build
// a module with -tags cuda, to be evaluated by the shell:
//
//	eval "$(go tool loadergen cuda-env)"
//	go build -tags cuda ./...
//
// CGO_CFLAGS names the first directory with a cuda.h older than CUDA 13:
// $CUDA_HOME/include, /usr/local/cuda/include, or Debian's CUDA 11.8
// headers in loadergen's cache, fetched there (with apt-get, from this
// machine's Debian archive) when neither has one. CGO_LDFLAGS names the
// driver stub, built in the same cache for this machine's architecture.
// The cache is $LOADERGEN_CACHE, else $XDG_CACHE_HOME/loadergen, else the
// user cache directory's loadergen. The binary loads the NVIDIA driver when
// it runs; docs/GPU.md has the rest.
//
//	-include   print only the directory of cuda.h
//
// # version and help
//
// version prints the module version loadergen was built from, or
// "(devel)" when the build records none. help (or -h) prints a short form
// of this usage.
package main
