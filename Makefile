# loadergen: make test is what CI runs; make demo is the main job.
GO ?= go
FUZZTIME ?= 10s

.PHONY: build test fmt-check demo bench golden fuzz cuda-headers cuda-build cuda-test

build:
	$(GO) build ./...

## test: format, vet, race-enabled tests (goldens included), stale-output check, short fuzz runs
test: fmt-check gomlx-test
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...
	$(GO) run ./cmd/loadergen check examples/cellmap/dataset.yaml
	$(GO) test ./schema -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)
	$(GO) test ./gen -run '^$$' -fuzz '^FuzzGenerate$$' -fuzztime $(FUZZTIME)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

## demo: write a synthetic cellmap dataset if absent, print the plan, run the loader
demo:
	$(GO) run ./cmd/loadergen plan examples/cellmap/dataset.yaml
	$(GO) run ./examples/cellmap/cmd/cellmap-demo -data .demo-data/cellmap -samples 128 -epochs 5 -trace .demo-data/trace.json

## bench: the benchmarks behind docs/PERFORMANCE.md (5 runs each, for medians)
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./golden/large ./golden/tiny ./examples/cellmap
	$(GO) test -run '^$$' -bench Generate -count 5 ./gen

## golden: rewrite the golden files and the example's generated loader
golden:
	$(GO) test ./gen -update
	$(GO) generate ./examples/...

fuzz:
	$(GO) test ./schema -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 60s
	$(GO) test ./gen -run '^$$' -fuzz '^FuzzGenerate$$' -fuzztime 60s

## cuda-headers: CUDA 11.8 cuda.h and the libcuda link stub, into a cache outside the repo
cuda-headers:
	@.ci/cuda-headers

# CUDA_ENV points cgo at the cached 11.8 headers and stub. A machine with its
# own CUDA <= 12.x toolkit can instead run: make CUDA_ENV= cuda-build
CUDA_ENV ?= cache=$$(.ci/cuda-headers) && export CGO_CFLAGS="-I$$cache/usr/include" CGO_LDFLAGS="-L$$cache/usr/lib/x86_64-linux-gnu/stubs" &&
CUDA_PKGS = ./runtime $(addprefix ./,$(wildcard golden/*)) ./examples/cellmap

## cuda-build: vet the cuda-tagged build and link its test binaries into .cuda/bin
cuda-build:
	@$(CUDA_ENV) set -e; \
	$(GO) vet -tags cuda ./...; \
	mkdir -p .cuda/bin; \
	for p in $(CUDA_PKGS); do \
		$(GO) test -c -tags cuda -o .cuda/bin/$$(basename $$p).test $$p; \
	done; \
	echo "linked: $$(ls .cuda/bin | tr '\n' ' ')"

## cuda-test: run the cuda-tagged tests (needs an NVIDIA GPU and driver)
cuda-test:
	$(CUDA_ENV) $(GO) test -tags cuda -count=1 -v $(CUDA_PKGS)

include contrib/gomlx/gomlx.mk
