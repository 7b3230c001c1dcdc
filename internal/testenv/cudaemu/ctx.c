/*
 * Initialization, devices, primary contexts and the calling thread's
 * current context.
 */
#include "emu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The calling OS thread's current context (NULL: none). Only that thread uses it. */
static _Thread_local struct ctx *current;

static CUresult get_device(CUdevice d, struct device **out)
{
	if (!g.initialized) {
		return CUDA_ERROR_NOT_INITIALIZED;
	}
	if (d < 0 || d >= g.cfg.devices) {
		return CUDA_ERROR_INVALID_DEVICE;
	}
	*out = &g.dev[d];
	return CUDA_SUCCESS;
}

/* The calling thread's current context, if there is one and it is active. */
CUresult cur_ctx(struct ctx **out)
{
	if (!g.initialized) {
		return CUDA_ERROR_NOT_INITIALIZED;
	}
	if (!current) {
		return CUDA_ERROR_INVALID_CONTEXT;
	}
	if (current->refs == 0) {
		return CUDA_ERROR_CONTEXT_IS_DESTROYED;
	}
	*out = current;
	return CUDA_SUCCESS;
}

/* Records an asynchronous error; synchronizing calls return it from then on. */
void ctx_fail(struct ctx *c, CUresult r)
{
	if (c->sticky == CUDA_SUCCESS) {
		c->sticky = r;
	}
}

/* ---- initialization ---- */

static CUresult init_locked(unsigned int flags)
{
	const char *fail = getenv("CUDAEMU_FAIL_INIT");
	if (fail && *fail) {
		char *end;
		long code = strtol(fail, &end, 10);
		if (*end || code < 0 || code > 0x7fffffff) {
			emu_note("CUDAEMU_FAIL_INIT=%s is not a CUresult number", fail);
			return CUDA_ERROR_INVALID_VALUE;
		}
		if (code != CUDA_SUCCESS) {
			return (CUresult)code;
		}
	}
	if (flags != 0) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	if (g.initialized) {
		return CUDA_SUCCESS;
	}
	CUresult r = emu_config(&g.cfg);
	if (r != CUDA_SUCCESS) {
		return r;
	}
	if (g.cfg.devices == 0) {
		return CUDA_ERROR_NO_DEVICE;
	}
	g.dev = xcalloc((size_t)g.cfg.devices, sizeof *g.dev);
	for (int d = 0; d < g.cfg.devices; d++) {
		struct device *dev = &g.dev[d];
		dev->ctx.ordinal = d;
		dev->ctx.handle = handle_new(HK_CTX, &dev->ctx);
		dev->next_addr = DEV_BASE + (CUdeviceptr)d * DEV_SPAN;
		dev->engine_granted = (uint64_t)g.cfg.engines;
	}
	g.nids = 1; /* id 0 is the host */
	g.capids = 16;
	g.id_handle = xcalloc((size_t)g.capids, sizeof *g.id_handle);
	g.initialized = true;
	return CUDA_SUCCESS;
}

EMU_API CUresult CUDAAPI cuInit(unsigned int Flags)
{
	emu_lock();
	CUresult r = init_locked(Flags);
	emu_unlock();
	return r;
}

/* ---- devices ---- */

EMU_API CUresult CUDAAPI cuDeviceGetCount(int *count)
{
	emu_lock();
	CUresult r = g.initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
	if (r == CUDA_SUCCESS && !count) {
		r = CUDA_ERROR_INVALID_VALUE;
	}
	if (r == CUDA_SUCCESS) {
		*count = g.cfg.devices;
	}
	emu_unlock();
	return r;
}

EMU_API CUresult CUDAAPI cuDeviceGet(CUdevice *device, int ordinal)
{
	emu_lock();
	struct device *d;
	CUresult r = get_device(ordinal, &d);
	if (r == CUDA_SUCCESS && !device) {
		r = CUDA_ERROR_INVALID_VALUE;
	}
	if (r == CUDA_SUCCESS) {
		*device = ordinal;
	}
	emu_unlock();
	return r;
}

EMU_API CUresult CUDAAPI cuDeviceGetName(char *name, int len, CUdevice dev)
{
	emu_lock();
	struct device *d;
	CUresult r = get_device(dev, &d);
	if (r == CUDA_SUCCESS && (!name || len <= 0)) {
		r = CUDA_ERROR_INVALID_VALUE;
	}
	if (r == CUDA_SUCCESS) {
		snprintf(name, (size_t)len, "cudaemu emulated device %d", dev);
	}
	emu_unlock();
	return r;
}

/* The modelled attributes; false for those the emulator does not model. */
static bool attribute(CUdevice_attribute a, int *v)
{
	switch (a) {
	case CU_DEVICE_ATTRIBUTE_CLOCK_RATE: *v = g.cfg.clock_khz; return true;
	case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE: *v = g.cfg.clock_khz; return true;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT: *v = 1; return true;
	case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT: *v = g.cfg.engines; return true;
	case CU_DEVICE_ATTRIBUTE_GPU_OVERLAP: *v = 1; return true;
	case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS: *v = 1; return true;
	case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED: *v = 1; return true;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR: *v = 7; return true;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR: *v = 0; return true;
	case CU_DEVICE_ATTRIBUTE_WARP_SIZE: *v = 32; return true;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK: *v = 1024; return true;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X: *v = 1024; return true;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y: *v = 1024; return true;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z: *v = 64; return true;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X: *v = 0x7fffffff; return true;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y: *v = 65535; return true;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z: *v = 65535; return true;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK: *v = 48 << 10; return true;
	case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY: *v = 64 << 10; return true;
	case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK: *v = 65536; return true;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR: *v = 2048; return true;
	case CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT: *v = 0; return true;
	case CU_DEVICE_ATTRIBUTE_INTEGRATED: *v = 0; return true;
	case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY: *v = 0; return true;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE: *v = CU_COMPUTEMODE_DEFAULT; return true;
	case CU_DEVICE_ATTRIBUTE_ECC_ENABLED: *v = 0; return true;
	case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING: *v = 0; return true;
	case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY: *v = 0; return true;
	case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS: *v = 0; return true;
	case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED: *v = 0; return true;
	case CU_DEVICE_ATTRIBUTE_TCC_DRIVER: *v = 0; return true;
	default: return false;
	}
}

EMU_API CUresult CUDAAPI cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
	emu_lock();
	struct device *d;
	CUresult r = get_device(dev, &d);
	if (r == CUDA_SUCCESS && (!pi || attrib < 1 || attrib >= CU_DEVICE_ATTRIBUTE_MAX)) {
		r = CUDA_ERROR_INVALID_VALUE;
	}
	if (r == CUDA_SUCCESS && !attribute(attrib, pi)) {
		r = CUDA_ERROR_NOT_SUPPORTED;
	}
	emu_unlock();
	return r;
}

/* ---- primary contexts ---- */

/*
 * The first retain: the context gets its NULL stream; false if no thread
 * could be started. CUDAEMU_FAIL_COPY counts afresh, so that tests that
 * each set the same value each get their failure.
 */
static bool ctx_activate(struct ctx *c)
{
	g.fail_copy_calls = 0;
	c->sticky = CUDA_SUCCESS;
	c->legacy = stream_new(c, CU_STREAM_DEFAULT, 0, true);
	return c->legacy != NULL;
}

/* The last release: wait for all work, then free everything c owns. */
static void ctx_destroy(struct ctx *c)
{
	c->destroying = true;
	ctx_sync(c, WAIT_BLOCK);
	for (struct stream *s = c->streams; s; s = s->next) {
		if (!s->dying) {
			handle_drop(s->handle);
			stream_kill(s);
		}
	}
	stream_kill(c->legacy);
	c->legacy = NULL;
	events_drop_ctx(c);
	modules_drop_ctx(c);
	memory_drop_ctx(c);
	c->sticky = CUDA_SUCCESS;
	c->destroying = false;
	pthread_cond_broadcast(&g.progress);
}

EMU_API CUresult CUDAAPI cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
	emu_lock();
	struct device *d;
	CUresult r = get_device(dev, &d);
	if (r == CUDA_SUCCESS && !pctx) {
		r = CUDA_ERROR_INVALID_VALUE;
	}
	if (r == CUDA_SUCCESS) {
		struct ctx *c = &d->ctx;
		while (c->destroying) {
			pthread_cond_wait(&g.progress, &g.mu);
		}
		if (c->refs == 0 && !ctx_activate(c)) {
			r = CUDA_ERROR_OUT_OF_MEMORY;
		} else {
			c->refs++;
			*pctx = (CUcontext)c->handle;
		}
	}
	emu_unlock();
	return r;
}

EMU_API CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
	emu_lock();
	struct device *d;
	CUresult r = get_device(dev, &d);
	if (r == CUDA_SUCCESS && d->ctx.refs == 0) {
		r = CUDA_ERROR_INVALID_CONTEXT;
	}
	if (r == CUDA_SUCCESS && --d->ctx.refs == 0) {
		ctx_destroy(&d->ctx);
	}
	emu_unlock();
	return r;
}

/* ---- the current context ---- */

EMU_API CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
	emu_lock();
	CUresult r = g.initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
	struct ctx *c = ctx ? handle_get(ctx, HK_CTX) : NULL;
	if (r == CUDA_SUCCESS && ctx && !c) {
		r = CUDA_ERROR_INVALID_CONTEXT;
	}
	if (r == CUDA_SUCCESS) {
		current = c;
	}
	emu_unlock();
	return r;
}

EMU_API CUresult CUDAAPI cuCtxGetCurrent(CUcontext *pctx)
{
	emu_lock();
	CUresult r = g.initialized ? CUDA_SUCCESS : CUDA_ERROR_NOT_INITIALIZED;
	if (r == CUDA_SUCCESS && !pctx) {
		r = CUDA_ERROR_INVALID_VALUE;
	}
	if (r == CUDA_SUCCESS) {
		*pctx = current ? (CUcontext)current->handle : NULL;
	}
	emu_unlock();
	return r;
}

EMU_API CUresult CUDAAPI cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
	emu_lock();
	struct ctx *c;
	CUresult r = cur_ctx(&c);
	if (r == CUDA_SUCCESS) {
		if (leastPriority) {
			*leastPriority = PRIO_LEAST;
		}
		if (greatestPriority) {
			*greatestPriority = PRIO_GREATEST;
		}
	}
	emu_unlock();
	return r;
}
