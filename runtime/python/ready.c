//go:build cgo

// The hot path of the ABI, in C so that Python's thread does not enter Go
// for it: a loader's queue of ready batches, which the Go side's pump
// fills (ready.go) and lg_next empties, and the counts of a batch's holds,
// which lg_take, lg_release and the DLPack deleter change; a slot whose
// last hold is released goes back to the pump through the queue too. A
// cgo callback costs Python's thread little, but a goroutine it wakes may
// wait for the scheduler to notice, and a blocked one hands its thread
// over: small batches paid for both more than they take to load. Python's
// thread enters Go only for what is rare: the epoch's end, errors, device
// tensors, releases while no epoch runs.
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <time.h>

#include "abi.h"
#include "_cgo_export.h"

enum { IDLE, RUNNING, DONE };

// fifo is a growable ring of slots.
typedef struct {
	lg_slot **items; // cap of them; len from head
	int cap, head, len;
} fifo;

static void fifo_push(fifo *f, lg_slot *s) {
	if (f->len == f->cap) {
		int cap = f->cap == 0 ? 8 : 2 * f->cap;
		lg_slot **items = malloc(cap * sizeof *items);
		if (items == NULL) {
			abort(); // a few pointers: as Go does when it cannot allocate
		}
		for (int i = 0; i < f->len; i++) {
			items[i] = f->items[(f->head + i) % f->cap];
		}
		free(f->items);
		f->items = items;
		f->cap = cap;
		f->head = 0;
	}
	f->items[(f->head + f->len) % f->cap] = s;
	f->len++;
}

static lg_slot *fifo_pop(fifo *f) {
	if (f->len == 0) {
		return NULL;
	}
	lg_slot *s = f->items[f->head];
	f->head = (f->head + 1) % f->cap;
	f->len--;
	return s;
}

struct lg_queue {
	int64_t handle;
	// mu guards the fields below but the registry's. The pump takes it
	// (push, returned, await_returned, finish, take_waited), lg_next and
	// lg_release on Python's threads, and a stop (pop, wake, idle) on the
	// thread that stops.
	pthread_mutex_t mu;
	pthread_cond_t ready;    // signalled by a push and by finish: lg_next waits
	pthread_cond_t returned; // signalled by a return and by wake: the pump waits
	fifo batches;            // ready for Python, in order
	fifo back;               // slots whose last hold was released while the pump ran
	int state;               // IDLE, RUNNING (lgq_start) or DONE (lgq_finish)
	int held;                // the pump waits for a return and none is queued: LG_HELD
	int woken;               // lgq_wake was called: the pump's waits end
	// A wait ends only when several batches or returns have gathered, so
	// that small batches do not pay a wake-up (a futex call and a thread
	// switch) each: goal is how many (lgq_start sets it from the ring's
	// depth), want_ready and want_back the count that ends lg_next's wait
	// and the pump's, 0 while that side does not wait. A side that starts
	// to wait first wakes the other if that one waits for more than is
	// there but something is: both never sleep on a partial count.
	int goal, want_ready, want_back;
	int64_t waited_ns;       // lg_next's waits since the pump last took them
	// The registry's fields, guarded by registry.mu: lg_next holds a
	// queue as a user while it runs; a retired queue is freed by the
	// last of them.
	int users, retired;
	struct lg_queue *next;
};

// registry lists the open loaders' queues, so that lg_next finds a
// handle's queue, and one that a close retires meanwhile stays whole.
static struct {
	pthread_mutex_t mu;
	lg_queue *first;
} registry = {PTHREAD_MUTEX_INITIALIZER, NULL};

// pending is the number of log records waiting for lg_logs: logs.go sets
// it, lg_next reports it.
static int64_t pending;

void lg_set_pending_logs(int64_t n) { __atomic_store_n(&pending, n, __ATOMIC_RELEASE); }

static int64_t nanos(struct timespec t) { return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec; }

// deadline is the monotonic time ms from now (q->ready and q->returned
// wait on that clock).
static struct timespec deadline(int64_t ms) {
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	int64_t d = nanos(t) + ms * 1000000;
	t.tv_sec = d / 1000000000;
	t.tv_nsec = d % 1000000000;
	return t;
}

static void free_queue(lg_queue *q) {
	pthread_cond_destroy(&q->ready);
	pthread_cond_destroy(&q->returned);
	pthread_mutex_destroy(&q->mu);
	free(q->batches.items);
	free(q->back.items);
	free(q);
}

lg_queue *lgq_open(int64_t handle) {
	lg_queue *q = calloc(1, sizeof *q);
	if (q == NULL) {
		abort();
	}
	q->handle = handle;
	pthread_mutex_init(&q->mu, NULL);
	pthread_condattr_t attr;
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&q->ready, &attr);
	pthread_cond_init(&q->returned, &attr);
	pthread_condattr_destroy(&attr);
	pthread_mutex_lock(&registry.mu);
	q->next = registry.first;
	registry.first = q;
	pthread_mutex_unlock(&registry.mu);
	return q;
}

// lgq_retire takes q out of the registry; it is freed now or by the last
// lg_next still using it.
void lgq_retire(lg_queue *q) {
	pthread_mutex_lock(&registry.mu);
	for (lg_queue **p = &registry.first; *p != NULL; p = &(*p)->next) {
		if (*p == q) {
			*p = q->next;
			break;
		}
	}
	q->retired = 1;
	int unused = q->users == 0;
	pthread_mutex_unlock(&registry.mu);
	if (unused) {
		free_queue(q);
	}
}

static lg_queue *acquire(int64_t handle) {
	pthread_mutex_lock(&registry.mu);
	lg_queue *q = registry.first;
	while (q != NULL && q->handle != handle) {
		q = q->next;
	}
	if (q != NULL) {
		q->users++;
	}
	pthread_mutex_unlock(&registry.mu);
	return q;
}

static void put(lg_queue *q) {
	pthread_mutex_lock(&registry.mu);
	int last = --q->users == 0 && q->retired;
	pthread_mutex_unlock(&registry.mu);
	if (last) {
		free_queue(q);
	}
}

void lgq_start(lg_queue *q, int goal) {
	pthread_mutex_lock(&q->mu);
	q->state = RUNNING;
	q->goal = goal < 1 ? 1 : goal;
	q->held = 0;
	q->woken = 0;
	q->waited_ns = 0;
	pthread_mutex_unlock(&q->mu);
}

// lgq_push queues slot s's batch for lg_next.
void lgq_push(lg_queue *q, lg_slot *s) {
	pthread_mutex_lock(&q->mu);
	fifo_push(&q->batches, s);
	q->held = 0;
	if (q->want_ready > 0 && q->batches.len >= q->want_ready) {
		pthread_cond_signal(&q->ready);
	}
	pthread_mutex_unlock(&q->mu);
}

// lgq_pop takes the first ready batch, or returns NULL: for a stop, which
// releases the batches Python did not take.
lg_slot *lgq_pop(lg_queue *q) {
	pthread_mutex_lock(&q->mu);
	lg_slot *s = fifo_pop(&q->batches);
	pthread_mutex_unlock(&q->mu);
	return s;
}

// lgq_returned takes a slot whose last hold was released, or returns NULL.
lg_slot *lgq_returned(lg_queue *q) {
	pthread_mutex_lock(&q->mu);
	lg_slot *s = fifo_pop(&q->back);
	pthread_mutex_unlock(&q->mu);
	return s;
}

// lgq_await_returned waits up to timeout_ms for a slot's last release, or
// for lgq_wake. While it waits with no batch queued, Python holds every
// slot: lg_next answers LG_HELD.
void lgq_await_returned(lg_queue *q, int64_t timeout_ms) {
	struct timespec until = deadline(timeout_ms);
	pthread_mutex_lock(&q->mu);
	q->held = q->batches.len == 0;
	if (q->want_ready > 0 && q->batches.len > 0) {
		pthread_cond_signal(&q->ready); // Python waits for more than can come
	}
	q->want_back = q->goal;
	while (q->back.len < q->want_back && !q->woken && !(q->want_ready > 0 && q->back.len > 0)) {
		if (pthread_cond_timedwait(&q->returned, &q->mu, &until) == ETIMEDOUT) {
			break;
		}
	}
	q->want_back = 0;
	q->held = 0;
	pthread_mutex_unlock(&q->mu);
}

// lgq_wake ends the pump's waits for a return, for a stop.
void lgq_wake(lg_queue *q) {
	pthread_mutex_lock(&q->mu);
	q->woken = 1;
	pthread_cond_broadcast(&q->returned);
	pthread_mutex_unlock(&q->mu);
}

// lgq_finish marks the pump's end: once the ready batches are taken,
// lg_next asks the Go side how the epoch ended, and releases go to Go
// directly (the pump takes those returned before with lgq_returned).
void lgq_finish(lg_queue *q) {
	pthread_mutex_lock(&q->mu);
	q->state = DONE;
	pthread_cond_broadcast(&q->ready);
	pthread_mutex_unlock(&q->mu);
}

void lgq_idle(lg_queue *q) {
	pthread_mutex_lock(&q->mu);
	q->state = IDLE;
	pthread_cond_broadcast(&q->ready);
	pthread_mutex_unlock(&q->mu);
}

int64_t lgq_take_waited(lg_queue *q) {
	pthread_mutex_lock(&q->mu);
	int64_t w = q->waited_ns;
	q->waited_ns = 0;
	pthread_mutex_unlock(&q->mu);
	return w;
}

// lg_next hands out the next ready batch, waiting up to timeout_ms for one
// (0: not at all). When no epoch runs, or its pump has ended and every
// batch is taken, the Go side answers (lgNextSlow): the end, the error.
int lg_next(int64_t h, int64_t timeout_ms, lg_batch *out, char **err) {
	lg_queue *q = acquire(h);
	if (q == NULL) {
		return lgNextSlow(h, out, err);
	}
	int st = LG_TIMEOUT, slow = 0, waiting = 0;
	struct timespec t0, until;
	pthread_mutex_lock(&q->mu);
	for (;;) {
		lg_slot *s = fifo_pop(&q->batches);
		if (s != NULL) {
			*out = s->batch;
			out->lease = s;
			st = LG_OK;
			break;
		}
		if (q->state != RUNNING) {
			slow = 1;
			break;
		}
		if (waiting > 1 || timeout_ms <= 0) {
			st = waiting > 1 && q->held ? LG_HELD : LG_TIMEOUT;
			break;
		}
		if (!waiting) {
			clock_gettime(CLOCK_MONOTONIC, &t0);
			until = deadline(timeout_ms);
			waiting = 1;
		}
		q->want_ready = q->goal;
		if (q->want_back > 0 && q->back.len > 0) {
			pthread_cond_signal(&q->returned); // the pump waits for more than can come
		}
		int timedout = pthread_cond_timedwait(&q->ready, &q->mu, &until) == ETIMEDOUT;
		q->want_ready = 0;
		if (timedout) {
			waiting = 2; // look once more, then give up
		}
	}
	if (waiting) {
		struct timespec t1;
		clock_gettime(CLOCK_MONOTONIC, &t1);
		q->waited_ns += nanos(t1) - nanos(t0);
	}
	pthread_mutex_unlock(&q->mu);
	put(q);
	if (slow) {
		return lgNextSlow(h, out, err);
	}
	out->logs = __atomic_load_n(&pending, __ATOMIC_ACQUIRE);
	return st;
}

// lg_take adds a hold on lease's batch for a tensor of key, and returns the
// key's DLManagedTensor; device tensors, whose consumer's stream must wait
// for their copy, and bad keys go through the Go side.
DLManagedTensor *lg_take(void *lease, int64_t key, int64_t stream, char **err) {
	lg_slot *s = lease;
	if (key < 0 || key >= s->keys || s->tensors[key].dl_tensor.device.device_type != kDLCPU) {
		return lgTakeSlow(s->handle, s->slot, key, stream, err);
	}
	__atomic_add_fetch(&s->holds, 1, __ATOMIC_ACQ_REL);
	return &s->tensors[key];
}

// lg_release ends one hold of lease's batch. The last gives the slot back:
// to the pump through the queue while it runs, else to Go directly.
void lg_release(void *lease) {
	lg_slot *s = lease;
	if (__atomic_sub_fetch(&s->holds, 1, __ATOMIC_ACQ_REL) != 0) {
		return;
	}
	lg_queue *q = s->queue;
	pthread_mutex_lock(&q->mu);
	if (q->state == RUNNING) {
		fifo_push(&q->back, s);
		if (q->want_back > 0 && (q->back.len >= q->want_back || q->want_ready > 0)) {
			pthread_cond_signal(&q->returned);
		}
		pthread_mutex_unlock(&q->mu);
		return;
	}
	pthread_mutex_unlock(&q->mu);
	lgSlotReleased(s->handle, s->slot);
}
