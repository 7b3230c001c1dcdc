/*
 * Modules and kernels. cuModuleLoadData reads the .entry declarations of
 * PTX text; a kernel runs only if the table below has a C implementation
 * of it with the same parameters. cuModuleGetFunction returns
 * CUDA_ERROR_NOT_FOUND for names the module does not declare, and
 * CUDA_ERROR_NOT_SUPPORTED for declared kernels the table lacks.
 */
#include "emu.h"

#include <stdlib.h>
#include <string.h>

/* A running kernel's view of its launch; used only by the stream's worker. */
struct launch {
	struct stream *s;
	const struct kernel *k;
	struct alloc *pins[2 * KERNEL_MAX_ARGS]; /* allocations it touches, kept busy */
	int npins;
};

/* A kernel implemented in C: called without g.mu, with its parameter values. */
struct kernel {
	const char *name;  /* the PTX .entry name */
	const char *label; /* names it in reports */
	void (*run)(struct launch *l, const uint64_t *args);
	int nargs;
	unsigned char size[KERNEL_MAX_ARGS]; /* parameter sizes in bytes */
};

/*
 * Device memory [p, p+n) for a kernel to read or write, checked for races
 * and recorded as its access; NULL (and the context fails with
 * CUDA_ERROR_ILLEGAL_ADDRESS) if it is not device memory of the context.
 */
static void *launch_mem(struct launch *l, uint64_t p, uint64_t n, bool write)
{
	struct stream *s = l->s;
	emu_lock();
	struct alloc *a = stream_access(s, p, n, write, l->k->label);
	void *mem = NULL;
	if (a) {
		l->pins[l->npins++] = a;
		mem = a->mem + (p - a->base);
	}
	emu_unlock();
	return mem;
}

/* Waits (sleeping) for that many cycles of the device clock. */
static void launch_cycles(uint64_t cycles)
{
	double ns = (double)cycles * 1e6 / g.cfg.clock_khz;
	sleep_until_ns(now_ns() + (ns < 3.6e12 ? (int64_t)ns : (int64_t)3.6e12));
}

/* spin(u64 cycles, u64 src, u64 dst, u64 n): wait cycles clocks, then copy n bytes src -> dst. */
static void k_spin(struct launch *l, const uint64_t *args)
{
	launch_cycles(args[0]);
	if (args[3] == 0) {
		return;
	}
	const void *src = launch_mem(l, args[1], args[3], false);
	void *dst = src ? launch_mem(l, args[2], args[3], true) : NULL;
	if (dst) {
		memmove(dst, src, args[3]);
	}
}

static const struct kernel kernels[] = {
	{"spin", "kernel spin", k_spin, 4, {8, 8, 8, 8}},
};

static const struct kernel *kernel_find(const char *name)
{
	for (size_t i = 0; i < sizeof kernels / sizeof kernels[0]; i++) {
		if (strcmp(kernels[i].name, name) == 0) {
			return &kernels[i];
		}
	}
	return NULL;
}

/* Runs a queued launch on s's worker (g.mu held, released while the kernel runs). */
void run_kernel(struct stream *s, struct op *o)
{
	struct launch l = {.s = s, .k = o->kernel};
	emu_unlock();
	o->kernel->run(&l, o->args);
	emu_lock();
	for (int i = 0; i < l.npins; i++) {
		alloc_unbusy(l.pins[i]);
	}
}

/* ---- PTX ---- */

/* A .entry of a loaded module. */
struct entry {
	char *name;
	int nparams;                          /* -1: a parameter we cannot size */
	unsigned char size[KERNEL_MAX_ARGS];
	uintptr_t func;                       /* function handle, once asked for */
};

/* Guarded by g.mu. */
struct module {
	uintptr_t handle;
	struct ctx *ctx;
	struct entry *entries;
	int n;
};

/* Guarded by g.mu. */
struct function {
	struct module *mod;
	const struct kernel *kernel;
};

/* A copy of the PTX text with comments blanked out. */
static char *strip_comments(const char *src)
{
	char *t = strdup(src);
	if (!t) {
		return NULL;
	}
	for (char *p = t; *p; p++) {
		if (p[0] == '/' && p[1] == '/') {
			while (*p && *p != '\n') {
				*p++ = ' ';
			}
			if (!*p) {
				break;
			}
		} else if (p[0] == '/' && p[1] == '*') {
			while (*p && !(p[0] == '*' && p[1] == '/')) {
				*p++ = ' ';
			}
			if (!*p) {
				break;
			}
			p[0] = p[1] = ' ';
			p++;
		}
	}
	return t;
}

static const char *skip_space(const char *p)
{
	while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') {
		p++;
	}
	return p;
}

static bool ident_char(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ||
	       c == '$' || c == '%';
}

/* Bytes of a PTX scalar type such as .u64 or .f32; 0 if unknown. */
static int type_size(const char *p)
{
	if (p[0] != '.' || !p[1] || !strchr("usbf", p[1])) {
		return 0;
	}
	int bits = atoi(p + 2);
	return bits == 8 || bits == 16 || bits == 32 || bits == 64 ? bits / 8 : 0;
}

/* Parses the parameter list after .entry NAME( up to the closing ); returns the end. */
static const char *parse_params(const char *p, struct entry *e)
{
	const char *close = strchr(p, ')');
	if (!close) {
		e->nparams = -1;
		return p + strlen(p);
	}
	for (const char *q = strstr(p, ".param"); q && q < close; q = strstr(q + 6, ".param")) {
		const char *t = skip_space(q + 6);
		if (strncmp(t, ".align", 6) == 0) {
			t = skip_space(t + 6);
			while (*t >= '0' && *t <= '9') {
				t++;
			}
			t = skip_space(t);
		}
		int size = type_size(t);
		while (*t && *t != '[' && *t != ',' && *t != ')') {
			t++;
		}
		if (*t == '[') {
			size *= atoi(t + 1);
		}
		if (e->nparams < 0 || e->nparams == KERNEL_MAX_ARGS || size <= 0 || size > 8) {
			e->nparams = -1;
			continue;
		}
		e->size[e->nparams++] = (unsigned char)size;
	}
	return close + 1;
}

/* Reads the .entry declarations; false if the text is not PTX. */
static bool parse_ptx(const char *image, struct module *m)
{
	char *text = strip_comments(image);
	if (!text || !strstr(text, ".version")) {
		free(text);
		return false;
	}
	const char *p = text;
	while ((p = strstr(p, ".entry")) != NULL) {
		bool token = (p == text || !ident_char(p[-1])) && !ident_char(p[6]);
		p += 6;
		if (!token) {
			continue;
		}
		const char *name = skip_space(p);
		const char *end = name;
		while (ident_char(*end)) {
			end++;
		}
		if (end == name || *skip_space(end) != '(') {
			continue;
		}
		m->entries = xrealloc(m->entries, (size_t)m->n + 1, sizeof *m->entries);
		struct entry *e = &m->entries[m->n++];
		*e = (struct entry){.name = strndup(name, (size_t)(end - name))};
		if (!e->name) {
			m->n--;
			break;
		}
		p = parse_params(skip_space(end) + 1, e);
	}
	free(text);
	return true;
}

/* ---- module API ---- */

static void module_free(struct module *m)
{
	for (int i = 0; i < m->n; i++) {
		if (m->entries[i].func) {
			free(handle_get((void *)m->entries[i].func, HK_FUNC));
			handle_drop(m->entries[i].func);
		}
		free(m->entries[i].name);
	}
	free(m->entries);
	if (m->handle) { /* 0: a module_load that failed before making one */
		handle_drop(m->handle);
	}
	free(m);
}

/* Unloads the modules of a context being destroyed. */
void modules_drop_ctx(const struct ctx *c)
{
	for (size_t i = 0; i < g.nhandles; i++) {
		struct module *m = handle_at(i, HK_MODULE);
		if (m && m->ctx == c) {
			module_free(m);
		}
	}
}

/* Whether image starts with the 4-byte magic (reading no further than a mismatch). */
static bool has_magic(const void *image, const char *magic)
{
	const char *b = image;
	for (int i = 0; i < 4; i++) {
		if (b[i] != magic[i]) {
			return false;
		}
	}
	return true;
}

static CUresult module_load(CUmodule *module, const void *image)
{
	struct ctx *c;
	CUresult r = cur_ctx(&c);
	if (r != CUDA_SUCCESS) {
		return r;
	}
	if (!module || !image) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (has_magic(image, "\x7f" "ELF") || has_magic(image, "\x50\xed\x55\xba") ||
	    has_magic(image, "\xb1\x43\x62\x46")) {
		emu_note("cuModuleLoadData: cubin and fatbin images are not modelled; load PTX text");
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	struct module *m = xcalloc(1, sizeof *m);
	m->ctx = c;
	if (!parse_ptx(image, m)) {
		module_free(m);
		return CUDA_ERROR_INVALID_PTX;
	}
	m->handle = handle_new(HK_MODULE, m);
	*module = (CUmodule)m->handle;
	return CUDA_SUCCESS;
}

EMU_API CUresult CUDAAPI cuModuleLoadData(CUmodule *module, const void *image)
{
	emu_lock();
	CUresult r = module_load(module, image);
	emu_unlock();
	return r;
}

EMU_API CUresult CUDAAPI cuModuleUnload(CUmodule hmod)
{
	emu_lock();
	CUresult r = g.initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
	struct module *m = r == CUDA_SUCCESS ? handle_get(hmod, HK_MODULE) : NULL;
	if (r == CUDA_SUCCESS && !m) {
		r = CUDA_ERROR_INVALID_HANDLE;
	}
	if (r == CUDA_SUCCESS) {
		module_free(m);
	}
	emu_unlock();
	return r;
}

static bool same_params(const struct entry *e, const struct kernel *k)
{
	return e->nparams == k->nargs && memcmp(e->size, k->size, (size_t)k->nargs) == 0;
}

static CUresult get_function(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	struct ctx *c;
	CUresult r = cur_ctx(&c);
	if (r != CUDA_SUCCESS) {
		return r;
	}
	struct module *m = handle_get(hmod, HK_MODULE);
	if (!m) {
		return CUDA_ERROR_INVALID_HANDLE;
	}
	if (!hfunc || !name) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	struct entry *e = NULL;
	for (int i = 0; i < m->n && !e; i++) {
		e = strcmp(m->entries[i].name, name) == 0 ? &m->entries[i] : NULL;
	}
	if (!e) {
		return CUDA_ERROR_NOT_FOUND;
	}
	const struct kernel *k = kernel_find(name);
	if (!k) {
		emu_note("kernel %s has no C implementation in the emulator (internal/testenv/cudaemu/kernel.c)", name);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	if (!same_params(e, k)) {
		emu_note("kernel %s: the PTX parameters differ from the emulator's implementation", name);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	if (!e->func) {
		struct function *f = xcalloc(1, sizeof *f);
		*f = (struct function){.mod = m, .kernel = k};
		e->func = handle_new(HK_FUNC, f);
	}
	*hfunc = (CUfunction)e->func;
	return CUDA_SUCCESS;
}

EMU_API CUresult CUDAAPI cuModuleGetFunction(CUfunction *hfunc, CUmodule hmod, const char *name)
{
	emu_lock();
	CUresult r = get_function(hfunc, hmod, name);
	emu_unlock();
	return r;
}

static CUresult launch(CUfunction fn, const unsigned int dim[6], CUstream h, void **params, void **extra)
{
	struct ctx *c;
	struct stream *s;
	CUresult r = cur_ctx(&c);
	if (r != CUDA_SUCCESS) {
		return r;
	}
	struct function *f = handle_get(fn, HK_FUNC);
	if (!f || f->mod->ctx != c) {
		return CUDA_ERROR_INVALID_HANDLE;
	}
	r = stream_resolve(h, c, &s);
	if (r != CUDA_SUCCESS) {
		return r;
	}
	for (int i = 0; i < 6; i++) {
		if (dim[i] == 0) {
			return CUDA_ERROR_INVALID_VALUE;
		}
	}
	if ((uint64_t)dim[3] * dim[4] * dim[5] > 1024 || (params && extra)) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (extra) {
		emu_note("cuLaunchKernel: parameters through extra are not modelled; use kernelParams");
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	const struct kernel *k = f->kernel;
	if (!params && k->nargs > 0) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	struct op *o = op_new(OP_KERNEL, k->label);
	o->kernel = k;
	for (int i = 0; i < k->nargs; i++) {
		memcpy(&o->args[i], params[i], k->size[i]);
	}
	enqueue(s, o);
	return CUDA_SUCCESS;
}

/* Grid and block shapes are checked, then ignored: each kernel is one C call. */
EMU_API CUresult CUDAAPI cuLaunchKernel(CUfunction f, unsigned int gridDimX, unsigned int gridDimY,
					unsigned int gridDimZ, unsigned int blockDimX, unsigned int blockDimY,
					unsigned int blockDimZ, unsigned int sharedMemBytes, CUstream hStream,
					void **kernelParams, void **extra)
{
	(void)sharedMemBytes;
	const unsigned int dim[6] = {gridDimX, gridDimY, gridDimZ, blockDimX, blockDimY, blockDimZ};
	emu_lock();
	CUresult r = launch(f, dim, hStream, kernelParams, extra);
	emu_unlock();
	return r;
}
