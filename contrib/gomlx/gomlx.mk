# The GoMLX adapter (contrib/gomlx), the Fashion-MNIST example
# (examples/fashionmnist) and the recipes for other libraries
# (examples/recipes) are modules of their own, which the top-level
# `go test ./...` does not enter. Included by the top-level Makefile; paths
# are relative to the repository root.

GOMLX_MODULES = contrib/gomlx examples/fashionmnist examples/recipes
GOMLX_SCHEMAS = contrib/gomlx/internal/alltypes/alltypes.yaml contrib/gomlx/internal/ragged/ragged.yaml examples/fashionmnist/dataset.yaml
FASHION_MNIST_DEBIAN = /usr/share/datasets/fashion-mnist
FASHION_MNIST_SRC ?= $(FASHION_MNIST_DEBIAN)
FASHION_MNIST_FLAGS ?=

.PHONY: gomlx-test gomlx-generate fashion-mnist fashion-mnist-data

## gomlx-test: vet (with and without cgo) and race-test the modules (a short training run included), and check the loaders are fresh
gomlx-test:
	@set -e; for m in $(GOMLX_MODULES); do \
		echo "== $$m"; \
		(cd $$m && $(GO) vet ./... && CGO_ENABLED=0 $(GO) vet ./... && $(GO) test -race -count=1 ./...); \
	done
	@for s in $(GOMLX_SCHEMAS); do $(GO) run ./cmd/loadergen check $$s || exit 1; done

## gomlx-generate: regenerate the modules' loaders (after a change to loadergen)
gomlx-generate:
	@set -e; for m in $(GOMLX_MODULES); do (cd $$m && $(GO) generate ./...); done

## fashion-mnist-data: install Debian's dataset-fashion-mnist when it is missing (as root), else say what to install
fashion-mnist-data:
	@if [ -f $(FASHION_MNIST_SRC)/train-images-idx3-ubyte.gz ]; then exit 0; fi; \
	if [ "$(FASHION_MNIST_SRC)" = $(FASHION_MNIST_DEBIAN) ] && [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
		export DEBIAN_FRONTEND=noninteractive; \
		apt-get install -y -qq --no-install-recommends dataset-fashion-mnist >/dev/null || \
			{ apt-get update -qq && apt-get install -y -qq --no-install-recommends dataset-fashion-mnist >/dev/null; }; \
	else \
		echo "$(FASHION_MNIST_SRC) has no Fashion-MNIST: install it with 'sudo apt-get install dataset-fashion-mnist'"; \
		echo "(Debian and Ubuntu), or set FASHION_MNIST_SRC to a directory of its four IDX .gz files"; \
		exit 1; \
	fi

## fashion-mnist: train the example's perceptron on all of Fashion-MNIST (10 epochs, about 2 minutes on 2 cores: 1m48s in the run examples/fashionmnist/README.md shows)
fashion-mnist: fashion-mnist-data
	cd examples/fashionmnist && $(GO) run ./cmd/fashionmnist -src $(FASHION_MNIST_SRC) -data $(CURDIR)/.demo-data/fashion-mnist $(FASHION_MNIST_FLAGS)
