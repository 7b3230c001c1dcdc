# cudaemu: a CPU model of the CUDA driver (libcuda.so.1) for running the
# cuda-tagged test binaries without a GPU. See internal/cudaemu/README.md.
#   make cudaemu       builds .cuda/emu/libcuda.so.1 (and libcuda.so)
#   make cudaemu-test  builds and runs the self-tests, and checks that the
#                      library exports every cu* symbol .cuda/bin/*.test import

CUDAEMU_DIR := internal/cudaemu
CUDAEMU_OUT := .cuda/emu
CUDAEMU_LIB := $(CUDAEMU_OUT)/libcuda.so.1
CUDAEMU_SRC := $(addprefix $(CUDAEMU_DIR)/,core.c ctx.c stream.c memory.c kernel.c)
CUDAEMU_CC ?= gcc
CUDAEMU_CFLAGS ?= -std=c11 -D_GNU_SOURCE -O2 -g -pthread -Wall -Wextra -Wshadow -Werror

.PHONY: cudaemu cudaemu-test

# CUDAEMU_OLD is the emulator as a driver too old for the runtime's CUDA
# backend: the same library without cuMemHostAlloc exported (the runtime's
# TestCUDAUnusable loads it through LOADERGEN_CUDA_DRIVER).
CUDAEMU_OLD := .cuda/emu-old/libcuda.so.1

cudaemu: $(CUDAEMU_LIB) $(CUDAEMU_OLD)

# stubs.c: one function per "stub" line of symbols.txt. A stub ignores its
# arguments and returns CUDA_ERROR_NOT_SUPPORTED as an int (the CUresult
# calling convention), so it needs no prototype from cuda.h.
# exports.map: the version script exporting exactly the symbols.txt names.
$(CUDAEMU_LIB): $(CUDAEMU_SRC) $(CUDAEMU_DIR)/emu.h internal/cudastub/symbols.txt $(CUDAEMU_DIR)/cudaemu.mk
	@inc=$$($(GO) run ./cmd/loadergen cuda-env -include) && mkdir -p $(CUDAEMU_OUT) && \
	awk 'BEGIN { print "/* Generated from internal/cudastub/symbols.txt by cudaemu.mk. */"; \
		print "int cudaemu_stub(const char *name);" } \
		/^cu/ && $$2 == "stub" { printf "int %s(void);\n__attribute__((visibility(\"default\"))) int %s(void) { return cudaemu_stub(\"%s\"); }\n", $$1, $$1, $$1 }' \
		internal/cudastub/symbols.txt >$(CUDAEMU_OUT)/stubs.c && \
	awk 'BEGIN { print "{ global:" } /^cu/ { print "  " $$1 ";" } END { print "  local: *;\n};" }' \
		internal/cudastub/symbols.txt >$(CUDAEMU_OUT)/exports.map && \
	$(CUDAEMU_CC) $(CUDAEMU_CFLAGS) -fPIC -fvisibility=hidden -shared -I"$$inc" \
		-Wl,-soname,libcuda.so.1 -Wl,--version-script=$(CUDAEMU_OUT)/exports.map -Wl,-z,defs \
		-o $@ $(CUDAEMU_SRC) $(CUDAEMU_OUT)/stubs.c && \
	ln -sf libcuda.so.1 $(CUDAEMU_OUT)/libcuda.so

$(CUDAEMU_OLD): $(CUDAEMU_LIB)
	@inc=$$($(GO) run ./cmd/loadergen cuda-env -include) && mkdir -p $(dir $@) && \
	grep -v '^  cuMemHostAlloc;$$' $(CUDAEMU_OUT)/exports.map >$(dir $@)exports.map && \
	$(CUDAEMU_CC) $(CUDAEMU_CFLAGS) -fPIC -fvisibility=hidden -shared -I"$$inc" \
		-Wl,-soname,libcuda.so.1 -Wl,--version-script=$(dir $@)exports.map -Wl,-z,defs \
		-o $@ $(CUDAEMU_SRC) $(CUDAEMU_OUT)/stubs.c

$(CUDAEMU_OUT)/selftest: $(CUDAEMU_DIR)/selftest.c $(CUDAEMU_LIB)
	@inc=$$($(GO) run ./cmd/loadergen cuda-env -include) && \
	$(CUDAEMU_CC) $(CUDAEMU_CFLAGS) -I"$$inc" -o $@ $(CUDAEMU_DIR)/selftest.c \
		-L$(CUDAEMU_OUT) -lcuda -Wl,-rpath,'$$ORIGIN'

# Quiet on success (one line); on failure, every check's PASS/FAIL line.
cudaemu-test: $(CUDAEMU_OUT)/selftest $(CUDAEMU_OLD)
	@out=$$($(CUDAEMU_OUT)/selftest 2>&1) || { echo "$$out"; echo "cudaemu-test: self-tests FAILED"; exit 1; }; \
	$(CUDAEMU_DIR)/check-symbols.sh $(CUDAEMU_LIB) internal/cudastub/symbols.txt && \
	echo "cudaemu-test: $$(echo "$$out" | grep -c '^PASS') self-tests passed; symbols checked"
