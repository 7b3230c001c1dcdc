# loadergen: make test is what CI runs; make demo is the main job.
GO ?= go
FUZZTIME ?= 10s

.PHONY: build test fmt-check demo bench golden fuzz

build:
	$(GO) build ./...

## test: format, vet, race-enabled tests (goldens included), stale-output check, short fuzz
test: fmt-check
	$(GO) vet ./...
	$(GO) test -race -count=1 ./...
	$(GO) run ./cmd/loadergen check examples/cellmap/dataset.yaml
	$(GO) test ./schema -run '^$$' -fuzz '^FuzzParse$$' -fuzztime $(FUZZTIME)

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

## demo: write a synthetic cellmap dataset if absent, print the plan, run the loader
demo:
	$(GO) run ./cmd/loadergen plan examples/cellmap/dataset.yaml
	$(GO) run ./examples/cellmap/cmd/cellmap-demo -data .demo-data/cellmap -samples 128 -epochs 5

## bench: the benchmarks behind docs/PERFORMANCE.md (5 runs each, for medians)
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./examples/cellmap ./runtime

## golden: rewrite the golden files and the example's generated loader
golden:
	$(GO) test ./gen -update
	$(GO) generate ./examples/...

fuzz:
	$(GO) test ./schema -run '^$$' -fuzz '^FuzzParse$$' -fuzztime 60s
