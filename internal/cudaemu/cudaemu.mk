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

cudaemu: $(CUDAEMU_LIB)

# stubs.c: one function per "stub" line of symbols.txt. A stub ignores its
# arguments and returns CUDA_ERROR_NOT_SUPPORTED as an int (the CUresult
# calling convention), so it needs no prototype from cuda.h.
# exports.map: the version script exporting exactly the symbols.txt names.
$(CUDAEMU_LIB): $(CUDAEMU_SRC) $(CUDAEMU_DIR)/emu.h $(CUDAEMU_DIR)/symbols.txt $(CUDAEMU_DIR)/cudaemu.mk
	@cache=$$(.ci/cuda-headers) && mkdir -p $(CUDAEMU_OUT) && \
	awk 'BEGIN { print "/* Generated from $(CUDAEMU_DIR)/symbols.txt by cudaemu.mk. */"; \
		print "int cudaemu_stub(const char *name);" } \
		/^cu/ && $$2 == "stub" { printf "int %s(void);\n__attribute__((visibility(\"default\"))) int %s(void) { return cudaemu_stub(\"%s\"); }\n", $$1, $$1, $$1 }' \
		$(CUDAEMU_DIR)/symbols.txt >$(CUDAEMU_OUT)/stubs.c && \
	awk 'BEGIN { print "{ global:" } /^cu/ { print "  " $$1 ";" } END { print "  local: *;\n};" }' \
		$(CUDAEMU_DIR)/symbols.txt >$(CUDAEMU_OUT)/exports.map && \
	$(CUDAEMU_CC) $(CUDAEMU_CFLAGS) -fPIC -fvisibility=hidden -shared -I"$$cache/usr/include" \
		-Wl,-soname,libcuda.so.1 -Wl,--version-script=$(CUDAEMU_OUT)/exports.map -Wl,-z,defs \
		-o $@ $(CUDAEMU_SRC) $(CUDAEMU_OUT)/stubs.c && \
	ln -sf libcuda.so.1 $(CUDAEMU_OUT)/libcuda.so

$(CUDAEMU_OUT)/selftest: $(CUDAEMU_DIR)/selftest.c $(CUDAEMU_LIB)
	@cache=$$(.ci/cuda-headers) && \
	$(CUDAEMU_CC) $(CUDAEMU_CFLAGS) -I"$$cache/usr/include" -o $@ $(CUDAEMU_DIR)/selftest.c \
		-L$(CUDAEMU_OUT) -lcuda -Wl,-rpath,'$$ORIGIN'

# Quiet on success (one line); on failure, every check's PASS/FAIL line.
cudaemu-test: $(CUDAEMU_OUT)/selftest
	@out=$$($(CUDAEMU_OUT)/selftest 2>&1) || { echo "$$out"; echo "cudaemu-test: self-tests FAILED"; exit 1; }; \
	$(CUDAEMU_DIR)/check-symbols.sh $(CUDAEMU_LIB) $(CUDAEMU_DIR)/symbols.txt .cuda/bin/*.test && \
	echo "cudaemu-test: $$(echo "$$out" | grep -c '^PASS') self-tests passed; symbols checked"
