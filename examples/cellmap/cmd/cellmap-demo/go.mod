module github.com/loadergen/loadergen/examples/cellmap/cmd/cellmap-demo

go 1.24

replace github.com/loadergen/loadergen => ../../../..

require (
	github.com/loadergen/loadergen v0.0.0-00010101000000-000000000000
	github.com/schollz/progressbar/v3 v3.18.0
	golang.org/x/term v0.28.0
)

require (
	github.com/DataDog/zstd v1.5.7 // indirect
	github.com/google/uuid v1.1.1 // indirect
	github.com/klauspost/compress v1.18.7 // indirect
	github.com/mitchellh/colorstring v0.0.0-20190213212951-d06e56a500db // indirect
	github.com/pierrec/lz4/v4 v4.1.33 // indirect
	github.com/pkg/errors v0.9.1 // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	golang.org/x/sys v0.29.0 // indirect
	gorgonia.org/cu v0.9.6 // indirect
)
