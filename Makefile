# loadergen: make test is what CI runs; make demo is the main job.
GO ?= go
# FUZZTIME is each fuzz target's budget, as a count of inputs: Go 1.26's
# fuzzing coordinator can fail a run with "context deadline exceeded" when a
# duration (10s) ends while a worker is busy (golang/go#75804, fixed in Go
# 1.27); a count sets no deadline. 100000 inputs take 2 to 10 s a target here.
FUZZTIME ?= 100000x

.PHONY: build test torch-python python-cuda-test versitygw remote-bench peer-python fmt-check demo demo-predict demo-images peer-images demo-test bench codecs peer predict-bench golden fuzz zarr-python image-python turbojpeg-dev turbojpeg-test zarr-fixtures cudastub cuda-headers cuda-build cuda-emu-test cuda-emu-bench cuda-mutations cuda-test gpu-suite

build:
	$(GO) build ./...

# The fuzz targets of make fuzz, as "package target" (make test runs their seeds).
FUZZ_TARGETS = ./schema:FuzzParse ./gen:FuzzGenerate ./runtime/zarr/blosc:FuzzDecode \
	./runtime/zarr/blosc:FuzzEncode ./runtime/zarr:FuzzV2Metadata ./runtime/zarr:FuzzV3Metadata \
	./runtime/zarr:FuzzMultiscale ./runtime/zarr:FuzzReadLayout ./runtime/internal/jpeg:FuzzDecode \
	./runtime/internal/png:FuzzDecode

## test: format, vet (also with CGO_ENABLED=0), race-enabled tests (goldens included, zstd through libzstd), the zarr reader's, the image loader's and the value augmentations' pure-Go builds (-tags purego), the image loader's steady-state allocation test (without -race) and its decoder through libjpeg-turbo (-tags turbojpeg), stale-output check, the README's install commands run from a clone (.ci/readme-install), the fuzz targets' seed corpora (as tests; make fuzz explores), the demo's and the GoMLX modules, and the cuda-tagged tests on the emulated driver
test: fmt-check demo-test gomlx-test
	$(GO) vet ./... ./gen/testdata/python/library
	LOADERGEN_REQUIRE_VERSITYGW=1 LOADERGEN_REQUIRE_PYTHON=1 $(GO) test -race -count=1 ./...
	$(GO) test -tags purego -count=1 ./runtime/zarr/... ./runtime/images/...
	$(GO) test -tags purego -count=1 -run 'Values|Blur|Convolve' ./runtime/volume
	$(GO) test -count=1 -run SteadyStateAllocatesNothing ./examples/imagenet
	@$(MAKE) --no-print-directory turbojpeg-test
	CGO_ENABLED=0 $(GO) vet ./...
	$(GO) run ./cmd/loadergen check examples/cellmap/dataset.yaml
	.ci/readme-install
	$(MAKE) --no-print-directory cuda-emu-test

fmt-check:
	@out=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$out" ]; then echo "gofmt would change:"; echo "$$out"; exit 1; fi

# The demo command is a module of its own, so that its progress bar's
# dependencies (github.com/schollz/progressbar/v3, golang.org/x/term) stay
# out of the core's go.mod; a replace directive builds it against this tree.
DEMO_MODULE = examples/cellmap/cmd/cellmap-demo

## demo: write a synthetic cellmap dataset if absent, print the plan, run the loader
demo:
	$(GO) run ./cmd/loadergen plan examples/cellmap/dataset.yaml
	$(GO) -C $(DEMO_MODULE) build -o $(CURDIR)/.demo-data/cellmap-demo .
	.demo-data/cellmap-demo -data .demo-data/cellmap -epochs 5 -trace .demo-data/trace.json

## demo-predict: the predict step: a stand-in model (a threshold of the raw) over the tiles of the synthetic volume, its predictions written as OME-NGFF zarr beside it, then checked against numpy with python3-zarr
demo-predict:
	$(GO) -C $(DEMO_MODULE) build -o $(CURDIR)/.demo-data/cellmap-demo .
	.demo-data/cellmap-demo -data .demo-data/cellmap -predict .demo-data/cellmap/predictions.zarr
	/usr/bin/python3 examples/cellmap/check_predictions.py .demo-data/cellmap

## demo-images: write synthetic WebDataset shards of JPEG photos if absent, run the generated image loader (random-resized crops 224, flips, normalised float32) for 3 epochs and print img/s
demo-images:
	$(GO) run ./examples/imagenet/cmd/imagenet-demo -data .demo-data/imagenet -epochs 3

## peer-images: the image loader against torchvision's ImageFolder + PIL + the same transforms in a DataLoader (workers 0 and 2) on the same JPEGs (needs Debian's python3-torchvision)
peer-images:
	$(GO) run ./examples/imagenet/cmd/imagenet-demo -data .demo-data/imagenet -epochs 3
	/usr/bin/python3 examples/imagenet/peer.py .demo-data/imagenet/folder 3

## demo-test: vet and race-test the demo's module (part of make test)
demo-test:
	cd $(DEMO_MODULE) && $(GO) vet ./... && $(GO) test -race -count=1 ./...

## bench: the benchmarks behind docs/PERFORMANCE.md (5 runs each, for medians), the loaders against their copy loops and the zarr box reads against their ceilings
bench:
	$(GO) test -run '^$$' -bench . -benchmem -count 5 ./golden/large ./golden/tiny ./golden/rows ./golden/tokens ./examples/cellmap >.bench-loaders.txt || { cat .bench-loaders.txt; exit 1; }
	cat .bench-loaders.txt
	.ci/bench-ratios <.bench-loaders.txt
	$(GO) test -run '^$$' -bench 'Bucket|Locality' -benchmem -count 5 ./runtime/loaderimpl ./runtime/volume
	$(GO) test -run '^$$' -bench RingDepth -benchtime 5x -count 5 ./runtime/loaderimpl
	$(GO) test -run '^$$' -bench Generate -count 5 ./gen
	$(GO) test -run '^$$' -bench 'BoxRead|CopyBox' -benchmem -count 5 ./runtime/zarr >.bench-zarr.txt || { cat .bench-zarr.txt; exit 1; }
	cat .bench-zarr.txt
	.ci/bench-ratios <.bench-zarr.txt
	examples/peer/codecs.sh

## codecs: whole-array decode on one thread, the Go reader against zarr-python's a[:] with numcodecs, zstd-6 and blosc-lz4 (needs Debian's python3-zarr; part of make bench)
codecs:
	examples/peer/codecs.sh

## peer: the volume loader against PyTorch's DataLoader over zarr-python on the same crops, then crops turned by any angle against cellmap-data's method (torch's affine_grid and grid_sample) and the cost of turning and of value augmentations (needs Debian's python3-zarr and python3-torch; several minutes)
peer:
	examples/peer/run.sh

## predict-bench: predicting over whole volumes on make peer's store: the loader's tiles/s against its crops/s (cold and warm), and the prediction writer against zarr-python 2.13 writing the same predictions tile by tile (zstd-6 and blosc-lz4, float32 and uint8), with the writer's memory against the partial chunks it reports (needs Debian's python3-zarr; SHAPE=z,y,x for another store, RUNS=n; a few minutes)
predict-bench:
	SHAPE=$(SHAPE) RUNS=$(RUNS) examples/peer/predict.sh

## peer-python: the generated loaders from Python (loadergen python; keys taken with torch.from_dlpack) against the same loaders from Go and PyTorch's DataLoader, on make peer's big stores, make peer-images' JPEGs and tabular rows, and the Python side's cost per key (needs Debian's python3-zarr, python3-torch, python3-torchvision; several minutes)
peer-python:
	examples/peer/python.sh

## remote-bench: the volume loader reading make peer's big stores from versitygw on the loopback against local disk, one epoch per process, medians of 3 (needs make versitygw; several minutes); LATENCY=20ms adds runs through a proxy delaying every request; COLD=1 (root) drops the page cache before each epoch; IMAGES=1 runs the image demo over S3 instead
remote-bench:
	LATENCY=$(LATENCY) COLD=$(COLD) IMAGES=$(IMAGES) examples/peer/remote.sh

## golden: rewrite the golden files and the example's generated loader
golden:
	$(GO) test ./gen -update
	$(GO) generate ./examples/...

## fuzz: every fuzz target for FUZZTIME inputs each, about 3 minutes (make fuzz FUZZTIME=5000000x for a longer run; not in make test, which runs their seeds, to keep it near 10 minutes)
fuzz:
	@set -e; for t in $(FUZZ_TARGETS); do \
		echo "$(GO) test $${t%%:*} -run '^$$' -fuzz '^$${t#*:}$$' -fuzztime $(FUZZTIME)"; \
		$(GO) test $${t%%:*} -run '^$$' -fuzz "^$${t#*:}\$$" -fuzztime $(FUZZTIME); \
	done

## zarr-python: install Debian's python3-zarr, python3-numcodecs and python3-scipy when missing (as root), else say what to install; runtime/zarr's tests have them read what it writes, and check its sampled reads against scipy.ndimage.map_coordinates
zarr-python:
	@if /usr/bin/python3 -c 'import zarr, numcodecs, scipy.ndimage' 2>/dev/null; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get install -y -qq --no-install-recommends python3-zarr python3-numcodecs python3-scipy >/dev/null 2>&1 || \
			{ apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-zarr python3-numcodecs python3-scipy >/dev/null 2>&1; }; \
	else \
		echo "runtime/zarr's tests need Debian's python3-zarr and python3-scipy: sudo apt-get install python3-zarr python3-numcodecs python3-scipy"; \
		exit 1; \
	fi

## versitygw: install versitygw v1.8.0, the S3 server the remote-data tests run (go install; 2 to 5 minutes the first time, as it builds the server and its dependencies)
versitygw:
	@command -v versitygw >/dev/null || test -x "$$($(GO) env GOPATH)/bin/versitygw" || $(GO) install github.com/versity/versitygw/cmd/versitygw@v1.8.0

## torch-python: install Debian's python3-numpy, python3-torch and python3-pytest when missing (as root), else say what to install; the Python bridge's tests (runtime/python) run with them
torch-python:
	@if /usr/bin/python3 -c 'import numpy, torch, pytest' 2>/dev/null; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get install -y -qq --no-install-recommends python3-numpy python3-torch python3-pytest >/dev/null 2>&1 || \
			{ apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-numpy python3-torch python3-pytest >/dev/null 2>&1; }; \
	else \
		echo "the Python bridge's tests need Debian's python3-numpy, python3-torch and python3-pytest: sudo apt-get install python3-numpy python3-torch python3-pytest"; \
		exit 1; \
	fi

## image-python: install Debian's python3-pil, python3-sklearn and python3-skimage when missing (as root), else say what to install; runtime/images' tests compare with PIL on their photos
image-python:
	@if /usr/bin/python3 -c 'import PIL' 2>/dev/null && [ -f /usr/lib/python3/dist-packages/sklearn/datasets/images/china.jpg ] && [ -f /usr/lib/python3/dist-packages/skimage/data/rocket.jpg ]; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get install -y -qq --no-install-recommends python3-pil python3-sklearn python3-skimage >/dev/null 2>&1 || \
			{ apt-get update -qq && apt-get install -y -qq --no-install-recommends python3-pil python3-sklearn python3-skimage >/dev/null 2>&1; }; \
	else \
		echo "runtime/images' tests need Debian's python3-pil, python3-sklearn and python3-skimage: sudo apt-get install python3-pil python3-sklearn python3-skimage"; \
		exit 1; \
	fi

## turbojpeg-dev: install Debian's libjpeg62-turbo-dev (libjpeg-turbo's libjpeg API) when missing (as root), else say what to install; the turbojpeg build of runtime/images links against it
turbojpeg-dev:
	@if printf '#include <stdio.h>\n#include <jpeglib.h>\n' | $${CC:-cc} -E -x c - >/dev/null 2>&1; then exit 0; fi; \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get install -y -qq --no-install-recommends libjpeg62-turbo-dev >/dev/null 2>&1 || \
			{ apt-get update -qq && apt-get install -y -qq --no-install-recommends libjpeg62-turbo-dev >/dev/null 2>&1; }; \
	else \
		echo "the turbojpeg build needs Debian's libjpeg62-turbo-dev: sudo apt-get install libjpeg62-turbo-dev"; \
		exit 1; \
	fi

## turbojpeg-test: vet and test the packages that decode images with -tags turbojpeg (libjpeg-turbo through runtime/internal/turbojpeg; part of make test, without -race: the Go code around the decoder is raced in the default build)
turbojpeg-test: turbojpeg-dev
	$(GO) vet -tags turbojpeg ./runtime/internal/turbojpeg ./runtime/images ./runtime/records
	$(GO) test -tags turbojpeg -count=1 ./runtime/internal/turbojpeg ./runtime/images ./runtime/records ./examples/imagenet ./golden/photos ./golden/scenes

## zarr-fixtures: rewrite testdata/zarr with python3-zarr, numcodecs and the zstd command (testdata/zarr/make_fixtures.py)
zarr-fixtures: zarr-python
	@command -v zstd >/dev/null || { echo "zarr-fixtures needs the zstd command: sudo apt-get install zstd"; exit 1; }
	/usr/bin/python3 testdata/zarr/make_fixtures.py

# CUDA_INCLUDE prints the directory of the cuda.h the cuda build and the
# emulator compile against: $CUDA_HOME/include, /usr/local/cuda/include, or
# Debian's CUDA 11.8 header, fetched into loadergen's cache when neither
# has one below CUDA 13 (loadergen cuda-env).
CUDA_INCLUDE = $(GO) run ./cmd/loadergen cuda-env -include

## cuda-headers: a cuda.h that gorgonia.org/cu builds against (Debian's CUDA 11.8, fetched into a cache outside the repo when there is none)
cuda-headers:
	@$(CUDA_INCLUDE)

# CUDA_ENV points cgo at that cuda.h and at the driver stub
# (.cuda/stub/libcuda.a, internal/cudastub): the cuda binaries load the
# driver at run time, so they start on machines without one. The stub is
# required, as the runtime calls functions only it defines; a machine with
# its own CUDA 11.x or 12.x toolkit provides only the header (set CUDA_HOME
# when it is not in /usr/local/cuda). A target that uses CUDA_ENV depends
# on cudastub.
CUDA_ENV = inc=$$($(CUDA_INCLUDE)) && export CGO_CFLAGS="-I$$inc" CGO_LDFLAGS="-L$(CURDIR)/.cuda/stub -ldl" &&
# The packages with cuda-tagged tests; each links to .cuda/bin/PATH.test with
# PATH's slashes as underscores (golden/small -> golden_small.test), and its
# -race build to .cuda/race/. Both directories get a file packages, read by
# .ci/cuda-run, with a line "golden_small.test golden/small" per binary.
CUDA_PKGS = runtime/loaderimpl $(wildcard golden/*) examples/cellmap

## cudastub: the CUDA driver stub library the cuda build links, .cuda/stub/libcuda.a (internal/cudastub)
cudastub:
	@$(GO) run ./internal/cudastub/cmd/cudastub .cuda/stub

## cuda-build: vet the cuda-tagged build and link its test binaries, plain into .cuda/bin and -race into .cuda/race
cuda-build: cudastub
	@$(CUDA_ENV) set -e; \
	$(GO) vet -tags cuda ./...; \
	mkdir -p .cuda/bin .cuda/race; \
	: >.cuda/bin/packages; \
	for p in $(CUDA_PKGS); do \
		n=$$(echo $$p | tr / _).test; \
		$(GO) test -c -tags cuda -o .cuda/bin/$$n ./$$p; \
		$(GO) test -c -race -tags cuda -o .cuda/race/$$n ./$$p; \
		echo "$$n $$p" >>.cuda/bin/packages; \
	done; \
	cp .cuda/bin/packages .cuda/race/packages; \
	echo "cuda-build: linked $$(wc -l <.cuda/bin/packages) test binaries, and their -race builds"

include internal/testenv/cudaemu/cudaemu.mk

# The emulator's settings for the overlap benchmark: copy engine at
# 0.42 GB/s, so that the 2.1 MiB batch takes 5 ms, as long as its kernel.
EMU_BENCH_ENV = CUDAEMU_COPY_GBPS=0.42 LOADERGEN_BENCH_BATCH_MB=8
# The GPU benchmarks on the emulated driver; the recipes add the run count.
EMU_BENCH = cd runtime/loaderimpl && $(EMU_BENCH_ENV) LD_LIBRARY_PATH=../../.cuda/emu ../../.cuda/bin/runtime_loaderimpl.test \
	-test.run '^$$' -test.bench CUDA

# CUDA_GRAPHS_ON turns the CUDA backend's graph launches on (Options.CUDAGraphs).
CUDA_GRAPHS_ON = LOADERGEN_CUDA_GRAPHS=1

# CUDA_PYTHON builds golden/tokens' Python package with -tags cuda into
# $(1), for runtime/python/cudatest.
CUDA_PYTHON = $(CUDA_ENV) $(GO) run ./cmd/loadergen python -tags cuda -o $(1) ./golden/tokens >/dev/null

## python-cuda-test: the Python bridge on the CUDA backend (device tensors through DLPack, stream waits, refills after the consumer's kernels) on the emulated driver (part of make cuda-emu-test)
python-cuda-test: cudastub cudaemu torch-python
	@$(call CUDA_PYTHON,.cuda/python)
	LOADERGEN_CUDA_DIST=$(CURDIR)/.cuda/python LOADERGEN_CUDA_DRIVER=$(CURDIR)/.cuda/emu/libcuda.so.1 /usr/bin/python3 -m pytest -q -p no:cacheprovider runtime/python/cudatest

## cuda-emu-test: every cuda-tagged test binary, plain and -race, and one pass of the GPU benchmarks, on the emulated driver, and the Python bridge's CUDA test (part of make test)
cuda-emu-test: cuda-build cudaemu-test python-cuda-test
	@CUDA_LIB=.cuda/emu .ci/cuda-run .cuda/bin/*.test .cuda/race/*.test
	@echo "cuda-emu-test: again with each full batch's copies launched as graphs ($(CUDA_GRAPHS_ON))"
	@$(CUDA_GRAPHS_ON) CUDA_LIB=.cuda/emu .ci/cuda-run .cuda/bin/*.test
	@echo "cuda-emu-test: the GPU benchmarks, once each, for correctness"
	@out=$$($(EMU_BENCH) -test.benchtime 1x 2>&1) || { echo "$$out"; echo "cuda-emu-test: the GPU benchmarks FAILED"; exit 1; }; \
	echo "$$out" | grep -E '^(Benchmark|ok|PASS|FAIL|cudaemu: race:)'

## cuda-emu-bench: the GPU benchmarks on the emulated driver, 5 runs each (figures of the emulator's settings, not of a GPU)
cuda-emu-bench: cuda-build cudaemu
	$(EMU_BENCH) -test.count 5

## cuda-mutations: remove ordering steps from the CUDA backend one at a time; the tests on the emulated driver must catch each
cuda-mutations: cudastub cudaemu
	@$(CUDA_ENV) GO="$(GO)" .ci/cuda-mutations

## cuda-test: run the cuda-tagged tests against the real driver (needs an NVIDIA GPU: without one they fail, LOADERGEN_REQUIRE_GPU=1)
cuda-test: cuda-build
	@LOADERGEN_REQUIRE_GPU=1 .ci/cuda-run .cuda/bin/*.test

## gpu-suite: what a GPU machine without Go needs, in .cuda/suite and packed in .cuda/suite.tar.xz (stripped, and compressed by xz with a window that spans the binaries, which share most of their code, to travel well under 64 MiB): the cuda-tagged test binaries, which hold the GPU benchmarks, the peers image-peer (-tags cuda) and peer-bench, the Python package of golden/tokens built with -tags cuda (for runtime/python/cudatest), and run.sh
gpu-suite: cudastub
	@$(CUDA_ENV) set -e; \
	rm -rf .cuda/suite && mkdir -p .cuda/suite/bin; \
	: >.cuda/suite/bin/packages; \
	for p in $(CUDA_PKGS); do \
		n=$$(echo $$p | tr / _).test; \
		$(GO) test -c -tags cuda -ldflags='-s -w' -o .cuda/suite/bin/$$n ./$$p; \
		echo "$$n $$p" >>.cuda/suite/bin/packages; \
	done; \
	$(GO) build -tags cuda -ldflags='-s -w' -o .cuda/suite/bin/image-peer ./examples/imagepeer/cmd/image-peer; \
	$(GO) build -ldflags='-s -w' -o .cuda/suite/bin/peer-bench ./examples/peer/cmd/peer-bench; \
	cp .ci/gpu-suite .cuda/suite/run.sh; \
	$(call CUDA_PYTHON,.cuda/suite/python); \
	rm -f .cuda/suite.tar .cuda/suite.tar.gz .cuda/suite.tar.xz; \
	tar -C .cuda -cf .cuda/suite.tar suite; \
	xz -T1 --lzma2=preset=6,dict=256MiB .cuda/suite.tar; \
	echo "gpu-suite: .cuda/suite holds $$(ls .cuda/suite/bin/*.test | wc -l) test binaries, the peers and run.sh ($$(du -sm .cuda/suite | cut -f1) MiB), packed in .cuda/suite.tar.xz ($$(du -sm .cuda/suite.tar.xz | cut -f1) MiB); on the GPU machine, from the repository root: python3 -m tarfile -e .cuda/suite.tar.xz .cuda && .cuda/suite/run.sh OUTDIR"

include contrib/gomlx/gomlx.mk
