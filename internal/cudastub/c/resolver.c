/*
 * The run-time half of loadergen's CUDA driver stub (internal/cudastub).
 *
 * A cuda build links this and the generated trampolines (one per driver
 * symbol, each a jump through loadergen_cuda_table) as its libcuda: the
 * binary names no libcuda.so in its dynamic section and starts on any
 * machine. Before main, load() opens the driver with dlopen, libcuda.so.1
 * or the file LOADERGEN_CUDA_DRIVER names (never plain libcuda.so, which can
 * be the toolkit's link stub), and fills the table with its functions. A
 * function the driver lacks, or every function when there is no driver,
 * returns an error code the Go binding knows, at the call.
 *
 * cuInit and cuDeviceGetCount are written here (cudastub.go finds them as
 * the lines that start "int cu"): cuInit records the driver's result and
 * reports success, so that gorgonia.org/cu, which exits the process when
 * cuInit fails, starts; cuDeviceGetCount then says 0 devices.
 * loadergen_cuda_state tells the runtime what happened.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The generated part: the symbols in order, and the table the trampolines
 * jump through. */
extern const char *const loadergen_cuda_names[];
extern const int loadergen_cuda_count;
extern void *loadergen_cuda_table[];

/* CUresult codes, as cuda.h numbers them (this file needs no cuda.h). */
enum {
	SUCCESS = 0,
	ERROR_SHARED_OBJECT_INIT_FAILED = 303,
	ERROR_NOT_FOUND = 500,
};

/* What load found, written once before main and read after. */
static int loaded;          /* the driver was opened */
static char load_error[512]; /* dlerror's text when it was not */
static int init_result = -1; /* the driver's cuInit result; -1 before cuInit */
static int (*real_init)(unsigned int);
static int (*real_device_count)(int *);

/* The functions the table points to for what cannot be called. They ignore
 * their arguments: every driver function returns a CUresult (an int). */
static int no_driver(void) { return ERROR_SHARED_OBJECT_INIT_FAILED; }
static int no_symbol(void) { return ERROR_NOT_FOUND; }

__attribute__((constructor)) static void load(void)
{
	const char *path = getenv("LOADERGEN_CUDA_DRIVER");
	if (!path || !*path) {
		path = "libcuda.so.1";
	}
	void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		const char *e = dlerror();
		snprintf(load_error, sizeof load_error, "%s", e ? e : path);
		for (int i = 0; i < loadergen_cuda_count; i++) {
			loadergen_cuda_table[i] = (void *)no_driver;
		}
		return;
	}
	loaded = 1;
	for (int i = 0; i < loadergen_cuda_count; i++) {
		void *f = dlsym(h, loadergen_cuda_names[i]);
		loadergen_cuda_table[i] = f ? f : (void *)no_symbol;
	}
	real_init = (int (*)(unsigned int))dlsym(h, "cuInit");
	real_device_count = (int (*)(int *))dlsym(h, "cuDeviceGetCount");
}

int cuInit(unsigned int flags)
{
	if (!loaded || !real_init) {
		return SUCCESS;
	}
	int r = real_init(flags);
	if (init_result <= 0) { /* keep the first failure; a later success is fine */
		init_result = r;
	}
	return SUCCESS;
}

int cuDeviceGetCount(int *count)
{
	if (!count) {
		return real_device_count ? real_device_count(count) : no_driver();
	}
	if (!loaded || !real_device_count || init_result != SUCCESS) {
		*count = 0;
		return SUCCESS;
	}
	return real_device_count(count);
}

/* loadergen_cuda_state says what load and cuInit found: 0 when the driver
 * loaded and initialized, 1 when there is no driver (why: *detail, dlerror's
 * text), 2 when cuInit failed (its code in *code), 3 before cuInit. */
int loadergen_cuda_state(int *code, const char **detail)
{
	*code = init_result;
	*detail = load_error;
	if (!loaded) {
		return 1;
	}
	if (init_result < 0) {
		return 3;
	}
	return init_result == SUCCESS ? 0 : 2;
}

/* loadergen_cuda_has reports whether the driver provides symbol name. */
int loadergen_cuda_has(const char *name)
{
	for (int i = 0; i < loadergen_cuda_count; i++) {
		if (strcmp(loadergen_cuda_names[i], name) == 0) {
			return loadergen_cuda_table[i] != (void *)no_symbol && loadergen_cuda_table[i] != (void *)no_driver;
		}
	}
	return 0;
}
