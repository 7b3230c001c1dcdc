/*
 * Device and pinned host memory, copies, the copy engines, and race
 * detection on device memory (vector clocks) and on staged host buffers
 * (hashes).
 */
#include "emu.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

enum {
	ALIGN = 256,         /* device allocation alignment, and the gap between allocations */
	CHUNK = 64 << 10,    /* bytes a copy moves between timing checks */
	SLACK_NS = 20000,    /* a copy only sleeps when this far ahead of its schedule */
	POISON = 0xa5,       /* fresh device memory: cuMemAlloc does not clear it */
};

/* ---- allocation tables ---- */

/* Objects sorted by base address. Guarded by g.mu. */
struct table {
	struct slot {
		uint64_t base;
		void *obj;
	} *v;
	size_t n, cap;
};

static struct table alloc_table;  /* struct alloc */
static struct table pinned_table; /* struct pinned */

/* Device memory an allocation of size bytes takes from cuMemGetInfo's free. */
static size_t charged(size_t size)
{
	return size > SIZE_MAX - ALIGN ? SIZE_MAX : (size + ALIGN - 1) / ALIGN * ALIGN;
}

/* Index of the first slot of t with base > p. */
static size_t table_upper(const struct table *t, uint64_t p)
{
	size_t lo = 0, hi = t->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->v[mid].base <= p) {
			lo = mid + 1;
		} else {
			hi = mid;
		}
	}
	return lo;
}

/* The object of t with the greatest base <= p, or NULL. */
static void *table_floor(const struct table *t, uint64_t p)
{
	size_t i = table_upper(t, p);
	return i ? t->v[i - 1].obj : NULL;
}

static void table_insert(struct table *t, uint64_t base, void *obj)
{
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 64;
		t->v = xrealloc(t->v, t->cap, sizeof *t->v);
	}
	size_t i = table_upper(t, base);
	memmove(t->v + i + 1, t->v + i, (t->n - i) * sizeof *t->v);
	t->v[i] = (struct slot){.base = base, .obj = obj};
	t->n++;
}

/* Removes the object at base, which t holds. */
static void table_remove(struct table *t, uint64_t base)
{
	size_t i = table_upper(t, base) - 1;
	memmove(t->v + i, t->v + i + 1, (t->n - i - 1) * sizeof *t->v);
	t->n--;
}

/* The allocation containing address p, or NULL. */
static struct alloc *alloc_find(CUdeviceptr p)
{
	struct alloc *a = table_floor(&alloc_table, p);
	return a && p - a->base < a->size ? a : NULL;
}

/* The allocation of c holding all of [p, p+n), or NULL. */
static struct alloc *alloc_range(const struct ctx *c, CUdeviceptr p, size_t n)
{
	struct alloc *a = alloc_find(p);
	return a && a->ctx == c && n <= a->size - (p - a->base) ? a : NULL;
}

/* CUDA_SUCCESS if [p, p+n) lies in one allocation of c (or n is 0). */
static CUresult check_device_range(const struct ctx *c, CUdeviceptr p, size_t n)
{
	return n == 0 || alloc_range(c, p, n) ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Removes a from the table, waits until no op moves its bytes, and frees it. */
static void alloc_free(struct alloc *a)
{
	table_remove(&alloc_table, a->base);
	while (a->busy) {
		pthread_cond_wait(&g.progress, &g.mu);
	}
	a->ctx->used -= charged(a->size);
	while (a->history) {
		struct access *p = a->history;
		a->history = p->next;
		free(p);
	}
	free(a->mem);
	free(a);
}

void alloc_unbusy(struct alloc *a)
{
	a->busy--;
	pthread_cond_broadcast(&g.progress);
}

/* The pinned region holding all of [p, p+n), or NULL. */
static struct pinned *pinned_find(const void *p, size_t n)
{
	uintptr_t a = (uintptr_t)p;
	struct pinned *r = table_floor(&pinned_table, a);
	return r && a - r->base < r->size && n <= r->size - (a - r->base) ? r : NULL;
}

/* Removes r from the table, waits until no copy moves its bytes, and unmaps it. */
static void pinned_free(struct pinned *r)
{
	table_remove(&pinned_table, r->base);
	while (r->busy) {
		pthread_cond_wait(&g.progress, &g.mu);
	}
	munmap((void *)r->base, r->mapped);
	free(r);
}

/* Frees the memory of a context being destroyed (freeing may wait, so each search starts over). */
void memory_drop_ctx(struct ctx *c)
{
	for (size_t i = 0; i < alloc_table.n;) {
		struct alloc *a = alloc_table.v[i].obj;
		if (a->ctx == c) {
			alloc_free(a);
			i = 0;
		} else {
			i++;
		}
	}
	for (size_t i = 0; i < pinned_table.n;) {
		struct pinned *r = pinned_table.v[i].obj;
		if (r->ctx == c) {
			pinned_free(r);
			i = 0;
		} else {
			i++;
		}
	}
	c->used = 0;
}

/* ---- device memory accesses (race.c checks them) ---- */

/*
 * An access by accessor (epoch, clock) to [p, p+n) of c's device memory:
 * checked for races and recorded. Returns the allocation, marked busy (the
 * caller calls alloc_unbusy after moving the bytes), or NULL if the range
 * is not device memory of c.
 */
static struct alloc *device_access(struct ctx *c, CUdeviceptr p, size_t n, bool write, int accessor,
				   const struct vclock *clock, uint64_t epoch, const char *what)
{
	struct alloc *a = alloc_range(c, p, n);
	if (!a) {
		return NULL;
	}
	race_access(a, p, p + n, write, accessor, clock, epoch, what);
	a->busy++;
	return a;
}

/* ---- copy engines and timing ---- */

/* Waits for a free copy engine of the device; engines are granted in FIFO order. */
static void engine_acquire(struct device *d)
{
	uint64_t ticket = d->engine_next++;
	while (ticket >= d->engine_granted) {
		pthread_cond_wait(&g.progress, &g.mu);
	}
}

static void engine_release(struct device *d)
{
	d->engine_granted++;
	pthread_cond_broadcast(&g.progress);
}

/* What a copy from pinned memory hashes, for race (a). */
struct copy_hashes {
	uint64_t copied; /* the bytes as they arrived at the destination */
	uint64_t after;  /* the source when the copy completed */
};

/*
 * Moves n bytes as a DMA copy: it takes the configured latency plus n
 * bytes at the configured bandwidth, and the bytes move in chunks at the
 * pace of that schedule. Called without g.mu. If hs is not NULL, it
 * receives the hashes race (a) compares.
 */
static void dma(unsigned char *dst, const unsigned char *src, size_t n, struct copy_hashes *hs)
{
	int64_t t0 = now_ns() + (int64_t)g.cfg.latency_ns;
	struct hash h;
	hash_init(&h);
	for (size_t done = 0; done < n;) {
		size_t k = n - done < CHUNK ? n - done : CHUNK;
		int64_t due = t0 + (int64_t)((double)done * g.cfg.ns_per_byte);
		if (due - now_ns() > SLACK_NS) {
			sleep_until_ns(due);
		}
		memcpy(dst + done, src + done, k);
		if (hs) {
			hash_update(&h, dst + done, k);
		}
		done += k;
	}
	sleep_until_ns(t0 + (int64_t)((double)n * g.cfg.ns_per_byte));
	if (hs) {
		hs->copied = hash_final(&h);
		hs->after = hash_bytes(src, n);
	}
}

/* A DMA copy through one of the device's copy engines; called and returns with g.mu held. */
static void engine_copy(struct device *d, void *dst, const void *src, size_t n, struct copy_hashes *hs)
{
	engine_acquire(d);
	emu_unlock();
	dma(dst, src, n, hs);
	emu_lock();
	engine_release(d);
}

/* ---- executing queued copies (on the stream's worker, g.mu held) ---- */

/*
 * device_access for the op on s that runs now. If [p, p+n) is not device
 * memory of s's context, the context fails (CUDA_ERROR_ILLEGAL_ADDRESS,
 * noted on stderr) and the result is NULL.
 */
struct alloc *stream_access(struct stream *s, CUdeviceptr p, size_t n, bool write, const char *what)
{
	struct alloc *a = device_access(s->ctx, p, n, write, s->id, &s->clock, s->seq, what);
	if (!a) {
		char b[40];
		emu_note("%s on %s: device 0x%llx+%zu is not (any more) memory of this context: "
			 "CUDA_ERROR_ILLEGAL_ADDRESS",
			 what, accessor_name(s->id, b, sizeof b), p, n);
		ctx_fail(s->ctx, CUDA_ERROR_ILLEGAL_ADDRESS);
	}
	return a;
}

/* Pins the source of a copy from pinned memory; false (reported) if it was freed. */
static bool pin_host(struct stream *s, const struct op *o, struct pinned **out)
{
	*out = NULL;
	if (!o->pinned) {
		return true;
	}
	*out = pinned_find(o->host, o->bytes);
	if (!*out) {
		char b[40];
		race_report("host buffer 0x%lx (%zu bytes) was freed by cuMemFreeHost before the %s on %s "
			    "ran",
			    (unsigned long)o->host, o->bytes, o->what, accessor_name(s->id, b, sizeof b));
		return false;
	}
	(*out)->busy++;
	return true;
}

static void unpin_host(struct pinned *r)
{
	if (r) {
		r->busy--;
		pthread_cond_broadcast(&g.progress);
	}
}

/* Race (a): the pinned source of a copy changed while the copy was pending. */
static void check_staged(struct stream *s, const struct op *o, const struct copy_hashes *hs)
{
	if (hs->copied == o->issue_hash && hs->after == o->issue_hash) {
		return;
	}
	char b[40];
	race_report("host buffer 0x%lx (%zu bytes) changed between %s on %s and the end "
		    "of its copy to device 0x%llx (%s)",
		    (unsigned long)o->host, o->bytes, o->call, accessor_name(s->id, b, sizeof b), o->dst,
		    hs->copied != o->issue_hash ? "the device received bytes written after the call"
					    : "it was rewritten while the copy was still in flight");
}

void run_copy(struct stream *s, struct op *o)
{
	struct alloc *a = stream_access(s, o->dst, o->bytes, true, o->what);
	if (!a) {
		return;
	}
	struct pinned *r;
	if (pin_host(s, o, &r)) {
		struct copy_hashes hs;
		engine_copy(&g.dev[s->ctx->ordinal], a->mem + (o->dst - a->base), o->host, o->bytes,
			    o->pinned ? &hs : NULL);
		if (o->pinned) {
			check_staged(s, o, &hs);
		}
		unpin_host(r);
	}
	alloc_unbusy(a);
}

/* ---- allocation API ---- */

static CUresult mem_alloc(CUdeviceptr *dptr, size_t bytesize)
{
	struct ctx *c;
	CUresult r = cur_ctx(&c);
	if (r != CUDA_SUCCESS) {
		return r;
	}
	if (!dptr || bytesize == 0) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	struct device *d = &g.dev[c->ordinal];
	size_t take = charged(bytesize);
	CUdeviceptr end = DEV_BASE + (CUdeviceptr)(c->ordinal + 1) * DEV_SPAN;
	CUdeviceptr room = end - d->next_addr; /* address space left: never reused */
	if (take > g.cfg.mem_bytes - c->used || room < ALIGN || take > room - ALIGN) {
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	unsigned char *mem = malloc(bytesize);
	if (!mem) {
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	memset(mem, POISON, bytesize);
	struct alloc *a = xcalloc(1, sizeof *a);
	*a = (struct alloc){.base = d->next_addr, .size = bytesize, .mem = mem, .ctx = c};
	d->next_addr += take + ALIGN;
	c->used += take;
	table_insert(&alloc_table, a->base, a);
	*dptr = a->base;
	return CUDA_SUCCESS;
}

EMU_API CUresult CUDAAPI cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
	emu_lock();
	CUresult r = mem_alloc(dptr, bytesize);
	emu_unlock();
	return r;
}

/* Synchronizes the allocation's context first, as cudaFree does in practice. */
static CUresult mem_free(CUdeviceptr dptr)
{
	struct ctx *c;
	CUresult r = cur_ctx(&c);
	if (r != CUDA_SUCCESS) {
		return r;
	}
	struct alloc *a = alloc_find(dptr);
	if (!a || a->base != dptr) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	struct vclock pre = {0};
	vc_copy(&pre, &g.host);
	ctx_sync(a->ctx, WAIT_SPIN);
	if (alloc_find(dptr) != a) {
		vc_free(&pre);
		return CUDA_ERROR_INVALID_VALUE; /* another thread freed it meanwhile */
	}
	race_check_free(a, &pre);
	vc_free(&pre);
	alloc_free(a);
	return CUDA_SUCCESS;
}

EMU_API CUresult CUDAAPI cuMemFree_v2(CUdeviceptr dptr)
{
	emu_lock();
	CUresult r = mem_free(dptr);
	emu_unlock();
	return r;
}

EMU_API CUresult CUDAAPI cuMemGetInfo_v2(size_t *free, size_t *total)
{
	emu_lock();
	struct ctx *c;
	CUresult r = cur_ctx(&c);
	if (r == CUDA_SUCCESS && (!free || !total)) {
		r = CUDA_ERROR_INVALID_VALUE;
	}
	if (r == CUDA_SUCCESS) {
		*total = g.cfg.mem_bytes;
		*free = g.cfg.mem_bytes - c->used;
	}
	emu_unlock();
	return r;
}

EMU_API CUresult CUDAAPI cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
	emu_lock();
	struct ctx *c;
	CUresult r = cur_ctx(&c);
	struct alloc *a = r == CUDA_SUCCESS ? alloc_find(dptr) : NULL;
	if (r == CUDA_SUCCESS && !a) {
		r = CUDA_ERROR_INVALID_VALUE;
	}
	if (r == CUDA_SUCCESS) {
		if (pbase) {
			*pbase = a->base;
		}
		if (psize) {
			*psize = a->size;
		}
	}
	emu_unlock();
	return r;
}

static CUresult host_alloc(void **pp, size_t bytesize, unsigned int flags)
{
	struct ctx *c;
	CUresult r = cur_ctx(&c);
	if (r != CUDA_SUCCESS) {
		return r;
	}
	unsigned known = CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP | CU_MEMHOSTALLOC_WRITECOMBINED;
	if (!pp || bytesize == 0 || (flags & ~known)) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	if (bytesize > SIZE_MAX - page) {
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	size_t mapped = (bytesize + page - 1) / page * page;
	void *p = mmap(NULL, mapped, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED) {
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	struct pinned *reg = xcalloc(1, sizeof *reg);
	*reg = (struct pinned){.base = (uintptr_t)p, .size = bytesize, .mapped = mapped, .ctx = c};
	table_insert(&pinned_table, reg->base, reg);
	*pp = p;
	return CUDA_SUCCESS;
}

EMU_API CUresult CUDAAPI cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
	emu_lock();
	CUresult r = host_alloc(pp, bytesize, Flags);
	emu_unlock();
	return r;
}

/* Race (c): copies queued or running on s that use r's memory, which is being freed. */
static void check_free_host_on(const struct pinned *r, const struct stream *s)
{
	for (const struct op *o = s->head; o; o = o->next) {
		uintptr_t h = (uintptr_t)o->host;
		if (o->kind != OP_COPY || !o->pinned || h >= r->base + r->size || h + o->bytes <= r->base) {
			continue;
		}
		char b[40];
		race_report("host buffer 0x%lx (%zu bytes): cuMemFreeHost frees it while the %s on %s "
			    "still reads it (missing cuStreamSynchronize or cuEventSynchronize?)",
			    (unsigned long)r->base, r->size, o->what, accessor_name(s->id, b, sizeof b));
	}
}

static void check_free_host(const struct pinned *r)
{
	check_free_host_on(r, r->ctx->legacy);
	for (const struct stream *s = r->ctx->streams; s; s = s->next) {
		check_free_host_on(r, s);
	}
}

static CUresult free_host(void *p)
{
	if (!g.initialized) {
		return CUDA_ERROR_NOT_INITIALIZED;
	}
	struct pinned *r = p ? pinned_find(p, 1) : NULL;
	if (!r || r->base != (uintptr_t)p) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	check_free_host(r);
	ctx_sync(r->ctx, WAIT_SPIN);
	if (pinned_find(p, 1) != r) {
		return CUDA_ERROR_INVALID_VALUE; /* another thread freed it meanwhile */
	}
	pinned_free(r);
	return CUDA_SUCCESS;
}

EMU_API CUresult CUDAAPI cuMemFreeHost(void *p)
{
	emu_lock();
	CUresult r = free_host(p);
	emu_unlock();
	return r;
}

/* ---- copy API ---- */

/* Whether all of [p, p+n) lies in one cuMemHostAlloc allocation. */
bool host_pinned(const void *p, size_t n) { return pinned_find(p, n) != NULL; }

/*
 * CUDAEMU_FAIL_COPY=N: the Nth cuMemcpyHtoDAsync call since the variable
 * last changed (or a primary context was activated) fails. Read on every
 * call: tests change it mid-process. A memcpy node of a cuGraphLaunch
 * counts as a call; call names it in the note (NULL: a plain call).
 */
bool fail_copy_now(const char *call)
{
	const char *v = getenv("CUDAEMU_FAIL_COPY");
	if (!v) {
		v = "";
	}
	if (!g.fail_copy_value || strcmp(v, g.fail_copy_value) != 0) {
		free(g.fail_copy_value);
		g.fail_copy_value = strdup(v);
		if (!g.fail_copy_value) {
			return false;
		}
		g.fail_copy_calls = 0;
	}
	g.fail_copy_calls++;
	char *end;
	long n = strtol(v, &end, 10);
	if (!*v || *end || n <= 0 || g.fail_copy_calls != n) {
		return false;
	}
	emu_note("CUDAEMU_FAIL_COPY=%ld: cuMemcpyHtoDAsync call %ld%s%s%s fails with CUDA_ERROR_UNKNOWN", n, n,
		 call ? " (" : "", call ? call : "", call ? ")" : "");
	return true;
}

/* The arguments of a host-to-device copy into c's memory, as cuMemcpyHtoDAsync checks them. */
CUresult htod_check(const struct ctx *c, CUdeviceptr dst, const void *src, size_t n)
{
	if (!src) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	return check_device_range(c, dst, n);
}

/*
 * Queues a checked host-to-device copy on s (nothing if n is 0); what
 * names the op, call the API call, in reports. From pinned memory the copy
 * reads the host buffer when it runs. From pageable memory this waits for
 * the stream's earlier work (releasing g.mu), stages the bytes and
 * returns; the DMA then proceeds from the staging copy.
 */
void htod_enqueue(struct stream *s, CUdeviceptr dst, const void *src, size_t n, const char *what,
		  const char *call)
{
	if (n == 0) {
		return;
	}
	struct op *o = op_new(OP_COPY, what);
	o->call = call;
	o->dst = dst;
	o->bytes = n;
	if (pinned_find(src, n)) {
		o->host = (void *)src;
		o->pinned = true;
		o->issue_hash = hash_bytes(src, n);
	} else {
		stream_sync(s, WAIT_SPIN);
		o->host = xcalloc(1, n);
		memcpy(o->host, src, n);
	}
	enqueue(s, o);
}

static CUresult htod_async(CUdeviceptr dst, const void *src, size_t n, CUstream h)
{
	struct ctx *c;
	struct stream *s;
	CUresult r = cur_ctx(&c);
	if (r == CUDA_SUCCESS && fail_copy_now(NULL)) {
		r = CUDA_ERROR_UNKNOWN;
	}
	if (r == CUDA_SUCCESS) {
		r = stream_resolve(h, c, &s);
	}
	if (r == CUDA_SUCCESS) {
		r = htod_check(c, dst, src, n);
	}
	if (r == CUDA_SUCCESS) {
		htod_enqueue(s, dst, src, n, "copy (cuMemcpyHtoDAsync)", "cuMemcpyHtoDAsync");
	}
	return r;
}

EMU_API CUresult CUDAAPI cuMemcpyHtoDAsync_v2(CUdeviceptr dstDevice, const void *srcHost, size_t ByteCount,
					      CUstream hStream)
{
	emu_lock();
	CUresult r = htod_async(dstDevice, srcHost, ByteCount, hStream);
	emu_unlock();
	return r;
}

/*
 * cuMemcpyDtoH: the NULL stream and the blocking streams drain first, then
 * the calling thread copies through a copy engine, as a host access
 * ordered after everything it synchronized with.
 */
static CUresult dtoh(void *host, CUdeviceptr dptr, size_t n)
{
	struct ctx *c;
	CUresult r = cur_ctx(&c);
	if (r == CUDA_SUCCESS && !host) {
		r = CUDA_ERROR_INVALID_VALUE;
	}
	if (r == CUDA_SUCCESS) {
		r = check_device_range(c, dptr, n);
	}
	if (r != CUDA_SUCCESS || n == 0) {
		return r;
	}
	stream_sync(c->legacy, WAIT_SPIN);
	uint64_t epoch = host_tick();
	struct alloc *a = device_access(c, dptr, n, false, 0, &g.host, epoch, "cuMemcpyDtoH");
	if (!a) {
		return CUDA_ERROR_INVALID_VALUE; /* freed by another thread meanwhile */
	}
	engine_copy(&g.dev[c->ordinal], host, a->mem + (dptr - a->base), n, NULL);
	alloc_unbusy(a);
	return c->sticky;
}

EMU_API CUresult CUDAAPI cuMemcpyDtoH_v2(void *dstHost, CUdeviceptr srcDevice, size_t ByteCount)
{
	emu_lock();
	CUresult r = dtoh(dstHost, srcDevice, ByteCount);
	emu_unlock();
	return r;
}
