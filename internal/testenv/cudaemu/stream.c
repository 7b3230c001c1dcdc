/*
 * Streams (a worker thread each, running its ops in order), the NULL
 * stream's implicit synchronization, marks, and events.
 */
#include "emu.h"

#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/prctl.h>

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#endif
}

/* ---- marks ---- */

static struct mark *mark_new(void)
{
	struct mark *m = xcalloc(1, sizeof *m);
	m->refs = 1;
	return m;
}

void mark_put(struct mark *m)
{
	if (m && --m->refs == 0) {
		vc_free(&m->clock);
		free(m);
	}
}

static void mark_complete(struct mark *m, const struct stream *s)
{
	vc_copy(&m->clock, &s->clock);
	m->at_ns = now_ns();
	atomic_store(&m->done, 1);
	pthread_cond_broadcast(&g.progress);
}

/*
 * Waits until m completes. The caller holds a reference, so m stays valid
 * while a spinning wait runs without g.mu.
 */
static void mark_wait(struct mark *m, enum waitmode mode)
{
	if (mode == WAIT_BLOCK) {
		while (!atomic_load(&m->done)) {
			pthread_cond_wait(&g.progress, &g.mu);
		}
		return;
	}
	if (atomic_load(&m->done)) {
		return;
	}
	emu_unlock();
	/* Burns the CPU like a spinning driver, yielding now and then so that
	 * the emulator's own threads still run on a small machine. */
	for (unsigned i = 1; !atomic_load_explicit(&m->done, memory_order_acquire); i++) {
		if (i % 64 == 0) {
			sched_yield();
		} else {
			cpu_relax();
		}
	}
	emu_lock();
}

/* ---- ops and queues ---- */

/* Whether s is its context's NULL (legacy) stream. */
static bool is_legacy(const struct stream *s) { return s->handle == 0; }

struct op *op_new(enum op_kind kind, const char *what)
{
	struct op *o = xcalloc(1, sizeof *o);
	o->kind = kind;
	o->what = what;
	return o;
}

static void op_free(struct op *o)
{
	hsnap_put(o->inherit);
	mark_put(o->mark);
	if (o->kind == OP_COPY && !o->pinned) {
		free(o->host); /* the staged copy of pageable memory */
	}
	free(o);
}

static void push_op(struct stream *s, struct op *o)
{
	o->next = NULL;
	if (s->tail) {
		s->tail->next = o;
	} else {
		s->head = o;
	}
	s->tail = o;
	s->enqueued++;
	pthread_cond_signal(&s->work);
}

/* A mark that completes once everything queued on s so far has run. */
struct mark *stream_tail(struct stream *s)
{
	struct mark *m = mark_new();
	if (s->enqueued == s->completed) {
		mark_complete(m, s);
		return m;
	}
	struct op *o = op_new(OP_RECORD, "stream position");
	o->mark = m;
	m->refs++;
	push_op(s, o);
	return m;
}

/* Queues a wait for m on s, taking over the caller's reference. */
void push_wait(struct stream *s, struct mark *m, const char *what)
{
	struct op *o = op_new(OP_WAIT, what);
	o->mark = m;
	push_op(s, o);
}

/*
 * Queues a user op. The NULL stream waits for all earlier work of blocking
 * streams, and blocking streams wait for all earlier NULL-stream work (the
 * legacy default-stream semantics); non-blocking streams do neither.
 */
void enqueue(struct stream *s, struct op *o)
{
	struct ctx *c = s->ctx;
	if (is_legacy(s)) {
		for (struct stream *b = c->streams; b; b = b->next) {
			if (!(b->flags & CU_STREAM_NON_BLOCKING) && b->enqueued > b->legacy_synced) {
				struct mark *m = stream_tail(b);
				b->legacy_synced = b->enqueued;
				push_wait(s, m, "implicit NULL-stream wait");
			}
		}
	} else if (!(s->flags & CU_STREAM_NON_BLOCKING) && c->legacy->enqueued > s->legacy_seen) {
		struct mark *m = stream_tail(c->legacy);
		s->legacy_seen = c->legacy->enqueued;
		push_wait(s, m, "implicit NULL-stream wait");
	}
	o->inherit = host_snapshot();
	push_op(s, o);
}

/* Runs o on s's worker, with g.mu held (the op may release it meanwhile). */
static void run_op(struct stream *s, struct op *o)
{
	if (o->inherit && o->inherit->version > s->host_seen) {
		vc_join(&s->clock, &o->inherit->vc);
		s->host_seen = o->inherit->version;
	}
	if (o->kind == OP_WAIT) {
		while (!atomic_load(&o->mark->done)) {
			pthread_cond_wait(&g.progress, &g.mu);
		}
		vc_join(&s->clock, &o->mark->clock);
	}
	s->seq++;
	vc_set(&s->clock, (size_t)s->id, s->seq);
	switch (o->kind) {
	case OP_RECORD:
		mark_complete(o->mark, s);
		break;
	case OP_WAIT:
		break;
	case OP_COPY:
		run_copy(s, o);
		break;
	case OP_KERNEL:
		run_kernel(s, o);
		break;
	}
}

static void stream_unlink(struct stream *s)
{
	for (struct stream **p = &s->ctx->streams; *p; p = &(*p)->next) {
		if (*p == s) {
			*p = s->next;
			return;
		}
	}
}

/* The worker: runs the queue in order until the stream dies and drains. */
static void *stream_main(void *arg)
{
	struct stream *s = arg;
	prctl(PR_SET_TIMERSLACK, 1000UL); /* modelled copies and kernels sleep to the microsecond */
	emu_lock();
	for (;;) {
		while (!s->head && !s->dying) {
			pthread_cond_wait(&s->work, &g.mu);
		}
		if (!s->head) {
			break;
		}
		struct op *o = s->head;
		run_op(s, o);
		s->head = o->next;
		if (!s->head) {
			s->tail = NULL;
		}
		s->completed++;
		op_free(o);
		pthread_cond_broadcast(&g.progress);
	}
	if (!is_legacy(s)) {
		stream_unlink(s);
	}
	vc_free(&s->clock);
	pthread_cond_destroy(&s->work);
	free(s);
	emu_unlock();
	return NULL;
}

static int next_stream_id(uintptr_t handle)
{
	if (g.nids == g.capids) {
		g.capids *= 2;
		g.id_handle = xrealloc(g.id_handle, (size_t)g.capids, sizeof *g.id_handle);
	}
	g.id_handle[g.nids] = handle;
	return g.nids++;
}

/* A new stream of c with its worker, or NULL if no thread could be started. */
struct stream *stream_new(struct ctx *c, unsigned flags, int priority, bool legacy)
{
	struct stream *s = xcalloc(1, sizeof *s);
	s->ctx = c;
	s->flags = flags;
	s->priority = priority;
	pthread_cond_init(&s->work, NULL);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 256 << 10);
	/* The worker never handles signals: they belong to the application. */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	pthread_t t;
	int err = pthread_create(&t, &attr, stream_main, s);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	pthread_attr_destroy(&attr);
	if (err) {
		pthread_cond_destroy(&s->work);
		free(s);
		return NULL;
	}
	if (!legacy) {
		s->handle = handle_new(HK_STREAM, s);
		s->next = c->streams;
		c->streams = s;
	}
	s->id = next_stream_id(s->handle);
	return s;
}

/* Destroys s: its worker finishes the queue, then frees it. */
void stream_kill(struct stream *s)
{
	s->dying = true;
	pthread_cond_signal(&s->work);
}

/* The stream behind a handle: NULL and CU_STREAM_LEGACY are the current context's NULL stream. */
static CUresult stream_lookup(CUstream h, struct stream **out)
{
	if (!g.initialized) {
		return CUDA_ERROR_NOT_INITIALIZED;
	}
	if (h == NULL || h == CU_STREAM_LEGACY) {
		struct ctx *c;
		CUresult r = cur_ctx(&c);
		if (r == CUDA_SUCCESS) {
			*out = c->legacy;
		}
		return r;
	}
	if (h == CU_STREAM_PER_THREAD) {
		emu_note("the per-thread default stream is not modelled");
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	*out = handle_get(h, HK_STREAM);
	return *out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

/* A stream of the current context c to queue work on. */
CUresult stream_resolve(CUstream h, struct ctx *c, struct stream **out)
{
	CUresult r = stream_lookup(h, out);
	if (r == CUDA_SUCCESS && (*out)->ctx != c) {
		r = CUDA_ERROR_INVALID_HANDLE;
	}
	return r;
}

/* Which of its context's other streams a host wait for a stream includes. */
enum others { NO_OTHERS, BLOCKING_OTHERS, ALL_OTHERS };

/*
 * Waits for everything queued so far on s and on the others, and joins
 * their clocks into the host's. The marks are all taken first: streams may
 * die while we wait.
 */
static void sync_streams(struct stream *s, enum others others, enum waitmode mode)
{
	size_t n = 1;
	for (struct stream *b = s->ctx->streams; b; b = b->next) {
		n++;
	}
	struct mark **marks = xcalloc(n, sizeof *marks);
	size_t i = 0;
	marks[i++] = stream_tail(s);
	for (struct stream *b = s->ctx->streams; b; b = b->next) {
		if (others == ALL_OTHERS || (others == BLOCKING_OTHERS && !(b->flags & CU_STREAM_NON_BLOCKING))) {
			marks[i++] = stream_tail(b);
		}
	}
	for (size_t k = 0; k < i; k++) {
		mark_wait(marks[k], mode);
		host_join(&marks[k]->clock);
		mark_put(marks[k]);
	}
	free(marks);
}

/* Waits for everything queued on s (on the NULL stream: and on the blocking streams). */
void stream_sync(struct stream *s, enum waitmode mode)
{
	sync_streams(s, is_legacy(s) ? BLOCKING_OTHERS : NO_OTHERS, mode);
}

/* Waits until every stream of c has drained what was queued before the call. */
void ctx_sync(struct ctx *c, enum waitmode mode) { sync_streams(c->legacy, ALL_OTHERS, mode); }

/* ---- stream API ---- */

static CUresult stream_create(CUstream *ph, unsigned int flags, int priority)
{
	struct ctx *c;
	CUresult r = cur_ctx(&c);
	if (r != CUDA_SUCCESS) {
		return r;
	}
	if (!ph || (flags & ~(unsigned)CU_STREAM_NON_BLOCKING)) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	struct stream *s = stream_new(c, flags, priority, false);
	if (!s) {
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	*ph = (CUstream)s->handle;
	return CUDA_SUCCESS;
}

EMU_API CUresult CUDAAPI cuStreamCreate(CUstream *phStream, unsigned int Flags)
{
	emu_lock();
	CUresult r = stream_create(phStream, Flags, 0);
	emu_unlock();
	return r;
}

EMU_API CUresult CUDAAPI cuStreamCreateWithPriority(CUstream *phStream, unsigned int flags, int priority)
{
	int p = priority < PRIO_GREATEST ? PRIO_GREATEST : priority > PRIO_LEAST ? PRIO_LEAST : priority;
	emu_lock();
	CUresult r = stream_create(phStream, flags, p);
	emu_unlock();
	return r;
}

EMU_API CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream)
{
	emu_lock();
	struct stream *s;
	CUresult r = stream_lookup(hStream, &s);
	if (r == CUDA_SUCCESS && is_legacy(s)) {
		r = CUDA_ERROR_INVALID_HANDLE;
	}
	if (r == CUDA_SUCCESS) {
		handle_drop(s->handle);
		stream_kill(s);
	}
	emu_unlock();
	return r;
}

EMU_API CUresult CUDAAPI cuStreamGetPriority(CUstream hStream, int *priority)
{
	emu_lock();
	struct stream *s;
	CUresult r = stream_lookup(hStream, &s);
	if (r == CUDA_SUCCESS && !priority) {
		r = CUDA_ERROR_INVALID_VALUE;
	}
	if (r == CUDA_SUCCESS) {
		*priority = s->priority;
	}
	emu_unlock();
	return r;
}

EMU_API CUresult CUDAAPI cuStreamSynchronize(CUstream hStream)
{
	emu_lock();
	struct stream *s;
	CUresult r = stream_lookup(hStream, &s);
	if (r == CUDA_SUCCESS) {
		struct ctx *c = s->ctx;
		stream_sync(s, WAIT_SPIN);
		r = c->sticky;
	}
	emu_unlock();
	return r;
}

/* ---- events ---- */

CUresult event_lookup(CUevent h, struct event **out)
{
	if (!g.initialized) {
		return CUDA_ERROR_NOT_INITIALIZED;
	}
	*out = handle_get(h, HK_EVENT);
	return *out ? CUDA_SUCCESS : CUDA_ERROR_INVALID_HANDLE;
}

static void event_free(struct event *e)
{
	mark_put(e->last);
	handle_drop(e->handle);
	free(e);
}

/* Destroys the events of a context being destroyed. */
void events_drop_ctx(const struct ctx *c)
{
	for (size_t i = 0; i < g.nhandles; i++) {
		struct event *e = handle_at(i, HK_EVENT);
		if (e && e->ctx == c) {
			event_free(e);
		}
	}
}

static CUresult stream_wait_event(CUstream hStream, CUevent hEvent, unsigned int flags)
{
	struct ctx *c;
	struct stream *s;
	struct event *e;
	CUresult r = cur_ctx(&c);
	if (r == CUDA_SUCCESS) {
		r = stream_resolve(hStream, c, &s);
	}
	if (r == CUDA_SUCCESS) {
		r = event_lookup(hEvent, &e);
	}
	if (r == CUDA_SUCCESS && flags != 0) {
		r = CUDA_ERROR_INVALID_VALUE;
	}
	if (r == CUDA_SUCCESS && e->last) {
		struct op *o = op_new(OP_WAIT, "cuStreamWaitEvent");
		o->mark = e->last;
		e->last->refs++;
		enqueue(s, o);
	}
	return r;
}

EMU_API CUresult CUDAAPI cuStreamWaitEvent(CUstream hStream, CUevent hEvent, unsigned int Flags)
{
	emu_lock();
	CUresult r = stream_wait_event(hStream, hEvent, Flags);
	emu_unlock();
	return r;
}

static CUresult event_create(CUevent *ph, unsigned int flags)
{
	struct ctx *c;
	CUresult r = cur_ctx(&c);
	if (r != CUDA_SUCCESS) {
		return r;
	}
	unsigned known = CU_EVENT_BLOCKING_SYNC | CU_EVENT_DISABLE_TIMING | CU_EVENT_INTERPROCESS;
	if (!ph || (flags & ~known) ||
	    ((flags & CU_EVENT_INTERPROCESS) && !(flags & CU_EVENT_DISABLE_TIMING))) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	struct event *e = xcalloc(1, sizeof *e);
	e->ctx = c;
	e->flags = flags;
	e->handle = handle_new(HK_EVENT, e);
	*ph = (CUevent)e->handle;
	return CUDA_SUCCESS;
}

EMU_API CUresult CUDAAPI cuEventCreate(CUevent *phEvent, unsigned int Flags)
{
	emu_lock();
	CUresult r = event_create(phEvent, Flags);
	emu_unlock();
	return r;
}

/* A pending record is allowed: its mark lives on until the record runs. */
EMU_API CUresult CUDAAPI cuEventDestroy_v2(CUevent hEvent)
{
	emu_lock();
	struct event *e;
	CUresult r = event_lookup(hEvent, &e);
	if (r == CUDA_SUCCESS) {
		event_free(e);
	}
	emu_unlock();
	return r;
}

/*
 * Queues a record of e on s (of e's context): it supersedes e's earlier
 * records. Returns the record's mark, which e holds a reference to.
 */
struct mark *event_push_record(struct event *e, struct stream *s, const char *what)
{
	struct mark *m = mark_new();
	struct op *o = op_new(OP_RECORD, what);
	o->mark = m;
	m->refs++;
	mark_put(e->last);
	e->last = m;
	enqueue(s, o);
	return m;
}

static CUresult event_record(CUevent hEvent, CUstream hStream)
{
	struct ctx *c;
	struct stream *s;
	struct event *e;
	CUresult r = cur_ctx(&c);
	if (r == CUDA_SUCCESS) {
		r = event_lookup(hEvent, &e);
	}
	if (r == CUDA_SUCCESS) {
		r = stream_resolve(hStream, c, &s);
	}
	if (r == CUDA_SUCCESS && e->ctx != s->ctx) {
		r = CUDA_ERROR_INVALID_HANDLE;
	}
	if (r == CUDA_SUCCESS) {
		event_push_record(e, s, "cuEventRecord");
	}
	return r;
}

EMU_API CUresult CUDAAPI cuEventRecord(CUevent hEvent, CUstream hStream)
{
	emu_lock();
	CUresult r = event_record(hEvent, hStream);
	emu_unlock();
	return r;
}

EMU_API CUresult CUDAAPI cuEventQuery(CUevent hEvent)
{
	emu_lock();
	struct event *e;
	CUresult r = event_lookup(hEvent, &e);
	if (r == CUDA_SUCCESS && e->last) {
		if (atomic_load(&e->last->done)) {
			host_join(&e->last->clock);
		} else {
			r = CUDA_ERROR_NOT_READY;
		}
	}
	emu_unlock();
	return r;
}

/*
 * Blocks on a condition variable for CU_EVENT_BLOCKING_SYNC events and
 * busy-waits otherwise, as cuda.h describes.
 */
EMU_API CUresult CUDAAPI cuEventSynchronize(CUevent hEvent)
{
	emu_lock();
	struct event *e;
	CUresult r = event_lookup(hEvent, &e);
	if (r == CUDA_SUCCESS && e->last) {
		struct ctx *c = e->ctx;
		struct mark *m = e->last;
		m->refs++;
		mark_wait(m, (e->flags & CU_EVENT_BLOCKING_SYNC) ? WAIT_BLOCK : WAIT_SPIN);
		host_join(&m->clock);
		mark_put(m);
		r = c->sticky;
	}
	emu_unlock();
	return r;
}

static CUresult elapsed(float *ms, CUevent hStart, CUevent hEnd)
{
	struct event *a, *b;
	CUresult r = event_lookup(hStart, &a);
	if (r == CUDA_SUCCESS) {
		r = event_lookup(hEnd, &b);
	}
	if (r != CUDA_SUCCESS) {
		return r;
	}
	if (!ms) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	if ((a->flags | b->flags) & CU_EVENT_DISABLE_TIMING || !a->last || !b->last) {
		return CUDA_ERROR_INVALID_HANDLE;
	}
	if (!atomic_load(&a->last->done) || !atomic_load(&b->last->done)) {
		return CUDA_ERROR_NOT_READY;
	}
	*ms = (float)((double)(b->last->at_ns - a->last->at_ns) / 1e6);
	return CUDA_SUCCESS;
}

EMU_API CUresult CUDAAPI cuEventElapsedTime(float *pMilliseconds, CUevent hStart, CUevent hEnd)
{
	emu_lock();
	CUresult r = elapsed(pMilliseconds, hStart, hEnd);
	emu_unlock();
	return r;
}
