# cudaemu: a CPU model of the CUDA driver (libcuda.so.1) for running the
# cuda-tagged test binaries without a GPU. See internal/testenv/cudaemu/README.md.
#   make cudaemu       builds .cuda/emu/libcuda.so.1 (and libcuda.so)
#   make cudaemu-test  builds and runs the self-tests, checks that the
#                      library exports exactly the cu* symbols of
#                      CUDAEMU_SYMBOLS, which the driver stub of the cuda
#                      binaries forwards to it, and that README.md lists
#                      exactly the environment variables it reads
# It compiles against the cuda.h that the Makefile's CUDA_INCLUDE prints.

CUDAEMU_DIR := internal/testenv/cudaemu
CUDAEMU_OUT := .cuda/emu
CUDAEMU_LIB := $(CUDAEMU_OUT)/libcuda.so.1
CUDAEMU_SRC := $(addprefix $(CUDAEMU_DIR)/,core.c ctx.c stream.c memory.c race.c kernel.c graph.c)
CUDAEMU_CC ?= gcc
CUDAEMU_CFLAGS ?= -std=c11 -D_GNU_SOURCE -O2 -g -pthread -Wall -Wextra -Wshadow -Werror
# The driver symbols, each "impl" or "stub" for the emulator.
CUDAEMU_SYMBOLS := internal/cudastub/symbols.txt

.PHONY: cudaemu cudaemu-test

# CUDAEMU_OLD is the emulator as a driver too old for the runtime's CUDA
# backend: the same library without cuMemHostAlloc exported (the runtime's
# TestCUDAUnusable loads it through LOADERGEN_CUDA_DRIVER).
CUDAEMU_OLD := .cuda/emu-old/libcuda.so.1
# CUDAEMU_NOGRAPHS is the emulator as a driver without graphs: the same
# library without the cuGraph* calls exported (the runtime's
# TestCUDAGraphsFallBack loads it through LOADERGEN_CUDA_DRIVER).
CUDAEMU_NOGRAPHS := .cuda/emu-nographs/libcuda.so.1

cudaemu: $(CUDAEMU_LIB) $(CUDAEMU_OLD) $(CUDAEMU_NOGRAPHS)

# $(call cudaemu_link,EXPORTS) links the emulator into $@ as libcuda.so.1,
# exporting what the version script EXPORTS names; the recipe's shell
# variable inc holds the cuda.h directory.
cudaemu_link = $(CUDAEMU_CC) $(CUDAEMU_CFLAGS) -fPIC -fvisibility=hidden -shared -I"$$inc" \
	-Wl,-soname,libcuda.so.1 -Wl,--version-script=$(1) -Wl,-z,defs \
	-o $@ $(CUDAEMU_SRC) $(CUDAEMU_OUT)/stubs.c

# stubs.c: one function per "stub" line of symbols.txt. A stub ignores its
# arguments and returns CUDA_ERROR_NOT_SUPPORTED as an int (the CUresult
# calling convention), so it needs no prototype from cuda.h.
# exports.map: the version script exporting exactly the symbols.txt names.
$(CUDAEMU_LIB): $(CUDAEMU_SRC) $(CUDAEMU_DIR)/emu.h $(CUDAEMU_SYMBOLS) $(CUDAEMU_DIR)/cudaemu.mk
	@inc=$$($(CUDA_INCLUDE)) && mkdir -p $(CUDAEMU_OUT) && \
	awk 'BEGIN { print "/* Generated from $(CUDAEMU_SYMBOLS) by cudaemu.mk. */"; \
		print "int cudaemu_stub(const char *name);" } \
		/^cu/ && $$2 == "stub" { printf "int %s(void);\n__attribute__((visibility(\"default\"))) int %s(void) { return cudaemu_stub(\"%s\"); }\n", $$1, $$1, $$1 }' \
		$(CUDAEMU_SYMBOLS) >$(CUDAEMU_OUT)/stubs.c && \
	awk 'BEGIN { print "{ global:" } /^cu/ { print "  " $$1 ";" } END { print "  local: *;\n};" }' \
		$(CUDAEMU_SYMBOLS) >$(CUDAEMU_OUT)/exports.map && \
	$(call cudaemu_link,$(CUDAEMU_OUT)/exports.map) && \
	ln -sf libcuda.so.1 $(CUDAEMU_OUT)/libcuda.so

# The emulator as older drivers: the library without the exports that
# HIDE (a grep pattern of exports.map's lines) matches.
$(CUDAEMU_OLD): HIDE = ^  cuMemHostAlloc;$$
$(CUDAEMU_NOGRAPHS): HIDE = ^  cuGraph
$(CUDAEMU_OLD) $(CUDAEMU_NOGRAPHS): $(CUDAEMU_LIB)
	@inc=$$($(CUDA_INCLUDE)) && mkdir -p $(dir $@) && \
	grep -v '$(HIDE)' $(CUDAEMU_OUT)/exports.map >$(dir $@)exports.map && \
	$(call cudaemu_link,$(dir $@)exports.map)

$(CUDAEMU_OUT)/selftest: $(CUDAEMU_DIR)/selftest.c $(CUDAEMU_LIB)
	@inc=$$($(CUDA_INCLUDE)) && \
	$(CUDAEMU_CC) $(CUDAEMU_CFLAGS) -I"$$inc" -o $@ $(CUDAEMU_DIR)/selftest.c \
		-L$(CUDAEMU_OUT) -lcuda -Wl,-rpath,'$$ORIGIN'

# Quiet on success (one line); on failure, every check's PASS/FAIL line.
cudaemu-test: $(CUDAEMU_OUT)/selftest $(CUDAEMU_OLD) $(CUDAEMU_NOGRAPHS)
	@out=$$($(CUDAEMU_OUT)/selftest 2>&1) || { echo "$$out"; echo "cudaemu-test: self-tests FAILED"; exit 1; }; \
	$(CUDAEMU_DIR)/check-symbols.sh $(CUDAEMU_LIB) $(CUDAEMU_SYMBOLS) && \
	$(CUDAEMU_DIR)/check-env.sh $(CUDAEMU_DIR)/README.md $(CUDAEMU_SRC) && \
	echo "cudaemu-test: $$(echo "$$out" | grep -c '^PASS') self-tests passed; symbols and environment checked"
