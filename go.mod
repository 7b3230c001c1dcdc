module github.com/loadergen/loadergen

go 1.24

require (
	github.com/aymanbagabas/go-udiff v0.4.1
	github.com/dave/jennifer v1.7.1
	github.com/google/go-cmp v0.7.0
	go.uber.org/goleak v1.3.0
	gopkg.in/yaml.v3 v3.0.1
)

require (
	github.com/kr/text v0.2.0 // indirect
	github.com/stretchr/testify v1.9.0 // indirect
)
