/*
 * Internal declarations of cudaemu, a CPU model of the CUDA driver API
 * (libcuda.so.1). See README.md for what it models.
 *
 * Locking: one mutex, g.mu, guards every shared structure below unless a
 * comment says otherwise. API calls take it on entry and release it on
 * return. Threads release it only while they wait on a condition variable,
 * sleep through a modelled copy or kernel, busy-wait on an atomic flag, or
 * move bytes; the comments at such places say what stays valid meanwhile.
 */
#ifndef CUDAEMU_EMU_H
#define CUDAEMU_EMU_H

#include <cuda.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#define EMU_API __attribute__((visibility("default")))
#define EMU_PRINTF(f, a) __attribute__((format(printf, f, a)))

/* Device addresses: device d allocates upward from DEV_BASE + d * DEV_SPAN. */
#define DEV_BASE 0x200000000000ull
#define DEV_SPAN 0x40000000000ull

/* Stream priorities of every emulated device (cuCtxGetStreamPriorityRange). */
enum { PRIO_LEAST = 0, PRIO_GREATEST = -5 };

/* Kernels take at most this many parameters of at most 8 bytes each. */
enum { KERNEL_MAX_ARGS = 8 };

/* Settings read from the environment by cuInit; constant afterwards. */
struct config {
	int devices;        /* CUDAEMU_DEVICES */
	size_t mem_bytes;   /* CUDAEMU_MEM_MB, per device */
	int clock_khz;      /* CUDAEMU_CLOCK_KHZ */
	int engines;        /* CUDAEMU_COPY_ENGINES, per device */
	double ns_per_byte; /* from CUDAEMU_COPY_GBPS */
	double latency_ns;  /* CUDAEMU_COPY_LATENCY_US */
	bool race_log;      /* CUDAEMU_ON_RACE=log */
};

/*
 * A vector clock. c[i] is the latest epoch of accessor i that the owner is
 * ordered after; entries past n are 0. Accessor 0 is the host; accessor
 * i >= 1 is the stream with id i. The owner's lock is g.mu.
 */
struct vclock {
	uint64_t *c;
	size_t n;
};

/* The state of a buffer hash (core.c): four lanes over 32-byte blocks. */
struct hash {
	uint64_t lane[4];
};

/*
 * An immutable copy of the host clock, shared (refs) by the ops enqueued
 * while it was current: each op is ordered after everything the host knew
 * complete when it was enqueued. Made by an API thread; refs is guarded by
 * g.mu, vc is not written after creation.
 */
struct hsnap {
	int refs;
	uint64_t version; /* g.host_version when taken */
	struct vclock vc;
};

/*
 * A captured stream position: an event's record, or an internal marker used
 * to wait for a stream's tail. The stream's worker completes it (writes
 * at_ns, clock, done) when it reaches the position, or the API thread that
 * makes it does if the stream is idle. Guarded by g.mu, except done, which
 * busy-waiting threads read without the lock (holding a reference).
 */
struct mark {
	int refs;           /* event, queued op and waiters holding it */
	atomic_int done;    /* set once, by the thread that completes it (above) */
	int64_t at_ns;      /* CLOCK_MONOTONIC when completed */
	struct vclock clock; /* the stream's clock at the position */
};

/* OP_COPY is a host-to-device copy: the only asynchronous copy modelled. */
enum op_kind { OP_RECORD, OP_WAIT, OP_COPY, OP_KERNEL };

struct kernel;

/*
 * One queued operation. Written by the enqueuing API call, then owned by
 * the stream: its worker executes and frees it. Fields are read without
 * g.mu only by the worker while it executes the op.
 */
struct op {
	struct op *next;
	enum op_kind kind;
	const char *what;      /* names it in reports: "kernel spin", "copy (cuMemcpyHtoDAsync)" */
	const char *call;      /* OP_COPY: the API call that queued it, for race (a)
	                          reports: "cuMemcpyHtoDAsync" or "cuGraphLaunch" */
	struct hsnap *inherit; /* host clock when enqueued */
	struct mark *mark;     /* OP_RECORD completes it; OP_WAIT waits for it */
	CUdeviceptr dst;       /* OP_COPY: the device address it writes */
	void *host;            /* OP_COPY: the source; a copy from pageable
	                          memory owns it (the staged bytes) */
	size_t bytes;          /* OP_COPY: bytes copied */
	bool pinned;           /* OP_COPY: host lay in pinned memory when queued */
	uint64_t issue_hash;   /* OP_COPY from pinned memory: its hash when queued */
	const struct kernel *kernel;      /* OP_KERNEL */
	uint64_t args[KERNEL_MAX_ARGS];   /* OP_KERNEL: parameter values */
};

struct ctx;

/* A CUDA event. Guarded by g.mu. */
struct event {
	uintptr_t handle;
	struct ctx *ctx;
	unsigned flags;
	struct mark *last; /* latest record, NULL before the first */
};

/*
 * A stream: a FIFO of ops run in order by one POSIX thread, its worker.
 * Guarded by g.mu. The queue is appended to by API calls and popped by the
 * worker; clock, seq and host_seen are written only by the worker.
 */
struct stream {
	int id;              /* vector-clock index, >= 1, never reused */
	uintptr_t handle;    /* 0 for the NULL (legacy) stream */
	struct ctx *ctx;
	unsigned flags;      /* CU_STREAM_DEFAULT or CU_STREAM_NON_BLOCKING */
	int priority;
	struct op *head, *tail;
	uint64_t enqueued, completed; /* ops ever queued / finished */
	bool dying;          /* destroyed: the worker exits once drained; it
	                        stays on ctx->streams until then */
	uint64_t legacy_seen;   /* blocking: NULL-stream ops already waited for */
	uint64_t legacy_synced; /* blocking: own ops the NULL stream waited for */
	struct vclock clock;
	uint64_t seq;        /* epoch of the op being run or last run */
	uint64_t host_seen;  /* version of the last host snapshot joined */
	pthread_cond_t work; /* an op was queued or the stream died */
	struct stream *next; /* ctx->streams */
};

/*
 * One earlier access to device memory, kept for race detection. Guarded by
 * g.mu; written by the thread that makes the access (a stream's worker, or
 * an API thread for cuMemcpyDtoH).
 */
struct access {
	struct access *next;
	CUdeviceptr lo, hi;  /* [lo, hi) */
	int accessor;        /* 0: host; else stream id */
	uint64_t epoch;      /* accessor's epoch at the access */
	bool write;
	const char *what;    /* static string naming the accessing op */
};

/*
 * A device allocation, backed by host memory the emulator owns. Guarded by
 * g.mu: API threads create and free it; any accessing thread updates
 * history and busy. The bytes of mem are moved without g.mu by threads that
 * hold it busy, and it is freed only once busy is 0.
 */
struct alloc {
	CUdeviceptr base;
	size_t size;
	unsigned char *mem;
	struct ctx *ctx;
	struct access *history; /* earlier accesses not yet pruned */
	int busy;               /* ops moving its bytes without g.mu */
};

/*
 * A cuMemHostAlloc allocation (page-locked host memory). Guarded by g.mu:
 * API threads create and free it; copies hold it busy while they move its
 * bytes without g.mu, and it is unmapped only once busy is 0.
 */
struct pinned {
	uintptr_t base;
	size_t size;    /* as requested */
	size_t mapped;  /* page-rounded length of the mapping */
	struct ctx *ctx;
	int busy;       /* copies moving its bytes without g.mu */
};

/*
 * A device's primary context; the struct lives as long as the process.
 * Guarded by g.mu; written by API threads, except sticky, which a stream's
 * worker sets when an op faults, and streams, from which an exiting worker
 * unlinks its stream.
 */
struct ctx {
	uintptr_t handle;
	int ordinal;            /* device */
	int refs;               /* primary-context retains; active while > 0 */
	bool destroying;        /* the last release is freeing its resources */
	struct stream *legacy;  /* NULL stream; NULL while inactive */
	struct stream *streams; /* user streams whose worker still runs */
	size_t used;            /* device bytes allocated */
	CUresult sticky;        /* first asynchronous error, returned by syncs */
};

/*
 * Per-device state besides the context. Guarded by g.mu; next_addr is
 * written by cuMemAlloc, the engine counters by every thread that copies.
 */
struct device {
	struct ctx ctx;
	CUdeviceptr next_addr;    /* bump pointer for device addresses */
	uint64_t engine_next;     /* next copy-engine ticket to hand out */
	uint64_t engine_granted;  /* tickets below this may hold an engine */
};

/*
 * The emulator. Guarded by mu; written by API threads and stream workers
 * alike; cfg and dev are written once, by cuInit.
 */
struct emu {
	pthread_mutex_t mu;
	pthread_cond_t progress; /* an op or mark completed, an engine freed */
	bool initialized;
	struct config cfg;
	struct device *dev;
	/* handle table: handle = (index + 1) << 8 | kind; slots never reused */
	void **hobj;
	unsigned char *hkind;
	size_t nhandles, caphandles;
	/* vector-clock accessors: handle of stream id i (0: NULL stream) */
	uintptr_t *id_handle;
	int nids, capids;
	struct vclock host;      /* the host's clock (all host threads) */
	uint64_t host_version;   /* bumped when host changes */
	struct hsnap *host_snap; /* cached snapshot of host, or NULL */
	char *fail_copy_value;   /* CUDAEMU_FAIL_COPY as last seen */
	long fail_copy_calls;    /* cuMemcpyHtoDAsync calls since it changed or
	                            a primary context was activated */
	long races;              /* findings reported */
};

extern struct emu g;

enum hkind {
	HK_CTX = 0xc1, HK_STREAM = 0x51, HK_EVENT = 0xe1, HK_MODULE = 0x3d, HK_FUNC = 0xf1,
	HK_GRAPH = 0x9a, HK_GNODE = 0x9b, HK_GEXEC = 0x9e,
};

/* core.c */
void emu_lock(void);
void emu_unlock(void);
CUresult emu_config(struct config *cfg);
uintptr_t handle_new(enum hkind kind, void *obj);
void *handle_get(const void *handle, enum hkind kind);
void handle_drop(uintptr_t handle);
void *handle_at(size_t index, enum hkind kind);
void *xcalloc(size_t n, size_t size);
void *xrealloc(void *p, size_t n, size_t size);
uint64_t vc_get(const struct vclock *v, size_t i);
void vc_set(struct vclock *v, size_t i, uint64_t e);
void vc_join(struct vclock *dst, const struct vclock *src);
void vc_copy(struct vclock *dst, const struct vclock *src);
void vc_free(struct vclock *v);
void host_join(const struct vclock *v);
uint64_t host_tick(void);
struct hsnap *host_snapshot(void);
void hsnap_put(struct hsnap *s);
const char *accessor_name(int id, char *buf, size_t len);
void race_report(const char *fmt, ...) EMU_PRINTF(1, 2);
/* race.c: device memory's race detector. */
void race_access(struct alloc *a, CUdeviceptr lo, CUdeviceptr hi, bool write, int accessor,
		 const struct vclock *clock, uint64_t epoch, const char *what);
void race_check_free(const struct alloc *a, const struct vclock *pre);
void emu_note(const char *fmt, ...) EMU_PRINTF(1, 2);
void hash_init(struct hash *h);
void hash_update(struct hash *h, const void *p, size_t n);
uint64_t hash_final(const struct hash *h);
uint64_t hash_bytes(const void *p, size_t n);
int cudaemu_stub(const char *name);
int64_t now_ns(void);
void sleep_until_ns(int64_t t);

/* How a host thread waits for the device: busy-spinning or blocked. */
enum waitmode { WAIT_SPIN, WAIT_BLOCK };

/* ctx.c */
CUresult cur_ctx(struct ctx **out);
void ctx_fail(struct ctx *c, CUresult r);

/* stream.c */
CUresult stream_resolve(CUstream h, struct ctx *c, struct stream **out);
struct stream *stream_new(struct ctx *c, unsigned flags, int priority, bool legacy);
void stream_kill(struct stream *s);
struct op *op_new(enum op_kind kind, const char *what);
void enqueue(struct stream *s, struct op *o);
struct mark *stream_tail(struct stream *s);
void push_wait(struct stream *s, struct mark *m, const char *what);
void mark_put(struct mark *m);
void stream_sync(struct stream *s, enum waitmode mode);
void ctx_sync(struct ctx *c, enum waitmode mode);
void events_drop_ctx(const struct ctx *c);
CUresult event_lookup(CUevent h, struct event **out);
struct mark *event_push_record(struct event *e, struct stream *s, const char *what);

/* memory.c */
struct alloc *stream_access(struct stream *s, CUdeviceptr p, size_t n, bool write, const char *what);
void alloc_unbusy(struct alloc *a);
void run_copy(struct stream *s, struct op *o);
void memory_drop_ctx(struct ctx *c);
bool host_pinned(const void *p, size_t n);
bool fail_copy_now(const char *call);
CUresult htod_check(const struct ctx *c, CUdeviceptr dst, const void *src, size_t n);
void htod_enqueue(struct stream *s, CUdeviceptr dst, const void *src, size_t n, const char *what,
		  const char *call);

/* kernel.c */
void run_kernel(struct stream *s, struct op *o);
void modules_drop_ctx(const struct ctx *c);

#endif
