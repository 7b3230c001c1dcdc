module github.com/loadergen/loadergen/contrib/gomlx

go 1.24.3

replace github.com/loadergen/loadergen => ../..

require (
	github.com/gomlx/gomlx v0.26.0
	github.com/loadergen/loadergen v0.0.0-00010101000000-000000000000
	github.com/pkg/errors v0.9.1
	github.com/x448/float16 v0.8.4
	go.uber.org/goleak v1.3.0
)

require (
	github.com/DataDog/zstd v1.5.7 // indirect
	github.com/aymanbagabas/go-udiff v0.4.1 // indirect
	github.com/dave/jennifer v1.7.1 // indirect
	github.com/dustin/go-humanize v1.0.1 // indirect
	github.com/go-logr/logr v1.4.3 // indirect
	github.com/google/uuid v1.6.0 // indirect
	github.com/klauspost/compress v1.18.7 // indirect
	github.com/pierrec/lz4/v4 v4.1.33 // indirect
	golang.org/x/exp v0.0.0-20250819193227-8b4c13bb791b // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
	gorgonia.org/cu v0.9.6 // indirect
	k8s.io/klog/v2 v2.130.1 // indirect
)

tool github.com/loadergen/loadergen/cmd/loadergen
