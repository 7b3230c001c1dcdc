module github.com/loadergen/loadergen

go 1.24

require (
	github.com/DataDog/zstd v1.5.7
	github.com/aymanbagabas/go-udiff v0.4.1
	github.com/dave/jennifer v1.7.1
	github.com/google/go-cmp v0.7.0
	github.com/klauspost/compress v1.18.7
	github.com/pierrec/lz4/v4 v4.1.33
	go.uber.org/goleak v1.3.0
	gopkg.in/yaml.v3 v3.0.1
	gorgonia.org/cu v0.9.6
)

require (
	github.com/google/uuid v1.1.1 // indirect
	github.com/kr/text v0.2.0 // indirect
	github.com/pkg/errors v0.9.1 // indirect
)
