/*
 * The race detector of device memory (race (b) of the README): every access
 * to an allocation is checked against the accesses before it with the
 * accessors' vector clocks, and recorded; memory.c calls it for each copy
 * and kernel access and for cuMemFree. Races on pinned host memory (race
 * (a)) are checked where copies run, in memory.c.
 */
#include "emu.h"

#include <stdlib.h>

static bool ordered(const struct access *p, int accessor, const struct vclock *clock)
{
	return p->accessor == accessor || p->epoch <= vc_get(clock, (size_t)p->accessor);
}

static void report_unordered(const struct access *p, CUdeviceptr lo, CUdeviceptr hi, bool write,
			     int accessor, const char *what)
{
	char b1[40], b2[40];
	const char *me = accessor_name(accessor, b1, sizeof b1);
	const char *them = accessor_name(p->accessor, b2, sizeof b2);
	unsigned long long at = p->lo > lo ? p->lo : lo;
	size_t len = (size_t)((p->hi < hi ? p->hi : hi) - at);
	const char *sync = "cuStreamSynchronize or cuEventSynchronize";
	if (!write) {
		race_report("device 0x%llx+%zu: %s on %s reads, but the %s on %s writing it is not "
			    "ordered before it (missing %s?)",
			    at, len, what, me, p->what, them, accessor ? "cuStreamWaitEvent" : sync);
	} else if (!p->write) {
		race_report("device 0x%llx+%zu: %s on %s overwrites device memory that %s on %s read "
			    "without an event ordering the two (missing %s?)",
			    at, len, what, me, p->what, them,
			    accessor ? "wait for the consumer's event" : sync);
	} else {
		race_report("device 0x%llx+%zu: %s on %s writes, but the %s on %s writing it is not "
			    "ordered before it (missing %s?)",
			    at, len, what, me, p->what, them, accessor ? "cuStreamWaitEvent" : sync);
	}
}

/*
 * Checks an access to [lo, hi) of a against its history and records it
 * (race (b) of the README). An
 * earlier access that happens before this one and is covered by it is
 * pruned where this one writes or both read: any later access unordered
 * with the pruned one is unordered with this one too.
 */
void race_access(struct alloc *a, CUdeviceptr lo, CUdeviceptr hi, bool write, int accessor,
			const struct vclock *clock, uint64_t epoch, const char *what)
{
	for (struct access **pp = &a->history; *pp;) {
		struct access *p = *pp;
		if (p->hi <= lo || p->lo >= hi) {
			pp = &p->next;
			continue;
		}
		bool ord = ordered(p, accessor, clock);
		if (!ord && (p->write || write)) {
			report_unordered(p, lo, hi, write, accessor, what);
		}
		if (ord && (write || !p->write)) {
			if (p->lo >= lo && p->hi <= hi) {
				*pp = p->next;
				free(p);
				continue;
			}
			if (p->lo < lo && p->hi > hi) {
				struct access *q = xcalloc(1, sizeof *q);
				*q = *p;
				q->lo = hi;
				p->hi = lo;
				p->next = q;
				pp = &q->next;
				continue;
			}
			if (p->lo < lo) {
				p->hi = lo;
			} else {
				p->lo = hi;
			}
		}
		pp = &p->next;
	}
	struct access *n = xcalloc(1, sizeof *n);
	*n = (struct access){.next = a->history, .lo = lo, .hi = hi, .accessor = accessor,
			     .epoch = epoch, .write = write, .what = what};
	a->history = n;
}

/* cuMemFree: every access to a must happen before the host's clock pre (taken before the free synchronized). */
void race_check_free(const struct alloc *a, const struct vclock *pre)
{
	for (const struct access *p = a->history; p; p = p->next) {
		if (p->accessor != 0 && p->epoch > vc_get(pre, (size_t)p->accessor)) {
			char b[40];
			race_report("device 0x%llx+%zu: cuMemFree on the host frees memory that %s on %s %s, "
				    "but that access is not ordered before the free (missing "
				    "cuStreamSynchronize or cuEventSynchronize?)",
				    p->lo, (size_t)(p->hi - p->lo), p->what,
				    accessor_name(p->accessor, b, sizeof b), p->write ? "writes" : "reads");
		}
	}
}
