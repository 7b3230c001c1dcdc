/*
 * Shared machinery: the global lock, configuration, the handle table,
 * vector clocks and the host clock, reports, hashing and time.
 */
#include "emu.h"

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct emu g = {
	.mu = PTHREAD_MUTEX_INITIALIZER,
	.progress = PTHREAD_COND_INITIALIZER,
};

void emu_lock(void) { pthread_mutex_lock(&g.mu); }

void emu_unlock(void) { pthread_mutex_unlock(&g.mu); }

static void write_stderr(const char *s, size_t n)
{
	while (n > 0) {
		ssize_t k = write(2, s, n);
		if (k <= 0) {
			return;
		}
		s += k;
		n -= (size_t)k;
	}
}

/* Allocation failure inside the emulator is not a CUDA error: give up. */
static void out_of_memory(void)
{
	static const char msg[] = "cudaemu: out of host memory\n";
	write_stderr(msg, sizeof msg - 1);
	_exit(70);
}

void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n ? n : 1, size ? size : 1);
	if (!p) {
		out_of_memory();
	}
	return p;
}

void *xrealloc(void *p, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size) {
		out_of_memory();
	}
	size_t bytes = n * size;
	void *q = realloc(p, bytes ? bytes : 1);
	if (!q) {
		out_of_memory();
	}
	return q;
}

/* ---- configuration ---- */

/* Reads an integer variable in [min, max]; false (with a message) if malformed. */
static bool env_long(const char *name, long def, long min, long max, long *out)
{
	const char *v = getenv(name);
	*out = def;
	if (!v || !*v) {
		return true;
	}
	char *end;
	errno = 0;
	long x = strtol(v, &end, 10);
	if (errno || *end || x < min || x > max) {
		emu_note("%s=%s is not an integer in [%ld, %ld]", name, v, min, max);
		return false;
	}
	*out = x;
	return true;
}

/* Reads a number variable in [min, max]; false (with a message) if malformed. */
static bool env_double(const char *name, double def, double min, double max, double *out)
{
	const char *v = getenv(name);
	*out = def;
	if (!v || !*v) {
		return true;
	}
	char *end;
	errno = 0;
	double x = strtod(v, &end);
	if (errno || *end || !(x >= min && x <= max)) {
		emu_note("%s=%s is not a number in [%g, %g]", name, v, min, max);
		return false;
	}
	*out = x;
	return true;
}

/* The settings of cuInit: README.md, "Environment", lists the variables (check-env.sh keeps it complete). */
CUresult emu_config(struct config *cfg)
{
	long devices, mem_mb, khz, engines;
	double gbps, latency_us;
	bool ok = env_long("CUDAEMU_DEVICES", 1, 0, 64, &devices);
	ok &= env_long("CUDAEMU_MEM_MB", 4096, 1, 1L << 24, &mem_mb);
	ok &= env_long("CUDAEMU_CLOCK_KHZ", 1000000, 1, INT_MAX, &khz);
	ok &= env_long("CUDAEMU_COPY_ENGINES", 1, 1, 64, &engines);
	ok &= env_double("CUDAEMU_COPY_GBPS", 4, 1e-6, 1e6, &gbps);
	ok &= env_double("CUDAEMU_COPY_LATENCY_US", 10, 0, 1e9, &latency_us);
	const char *on_race = getenv("CUDAEMU_ON_RACE");
	if (on_race && *on_race && strcmp(on_race, "log") != 0 && strcmp(on_race, "exit") != 0) {
		emu_note("CUDAEMU_ON_RACE=%s is neither exit nor log", on_race);
		ok = false;
	}
	if (!ok) {
		return CUDA_ERROR_INVALID_VALUE;
	}
	cfg->devices = (int)devices;
	cfg->mem_bytes = (size_t)mem_mb << 20;
	cfg->clock_khz = (int)khz;
	cfg->engines = (int)engines;
	cfg->ns_per_byte = 1.0 / gbps; /* 1 GB/s is one byte per ns */
	cfg->latency_ns = latency_us * 1e3;
	cfg->race_log = on_race && strcmp(on_race, "log") == 0;
	return CUDA_SUCCESS;
}

/* ---- handles ---- */

uintptr_t handle_new(enum hkind kind, void *obj)
{
	if (g.nhandles == g.caphandles) {
		g.caphandles = g.caphandles ? 2 * g.caphandles : 64;
		g.hobj = xrealloc(g.hobj, g.caphandles, sizeof *g.hobj);
		g.hkind = xrealloc(g.hkind, g.caphandles, 1);
	}
	size_t i = g.nhandles++;
	g.hobj[i] = obj;
	g.hkind[i] = (unsigned char)kind;
	return (uintptr_t)(i + 1) << 8 | kind;
}

/* The live object of that kind behind a handle, or NULL (bad or destroyed). */
void *handle_get(const void *handle, enum hkind kind)
{
	uintptr_t h = (uintptr_t)handle;
	if ((h & 0xff) != (uintptr_t)kind || (h >> 8) == 0) {
		return NULL;
	}
	return handle_at((h >> 8) - 1, kind);
}

/* The live object in slot index if it is of that kind, else NULL. */
void *handle_at(size_t index, enum hkind kind)
{
	if (index >= g.nhandles || g.hkind[index] != kind) {
		return NULL;
	}
	return g.hobj[index];
}

void handle_drop(uintptr_t handle)
{
	g.hobj[(handle >> 8) - 1] = NULL;
}

/* ---- vector clocks ---- */

uint64_t vc_get(const struct vclock *v, size_t i) { return i < v->n ? v->c[i] : 0; }

static void vc_grow(struct vclock *v, size_t n)
{
	if (n <= v->n) {
		return;
	}
	v->c = xrealloc(v->c, n, sizeof *v->c);
	memset(v->c + v->n, 0, (n - v->n) * sizeof *v->c);
	v->n = n;
}

void vc_set(struct vclock *v, size_t i, uint64_t e)
{
	vc_grow(v, i + 1);
	v->c[i] = e;
}

void vc_join(struct vclock *dst, const struct vclock *src)
{
	vc_grow(dst, src->n);
	for (size_t i = 0; i < src->n; i++) {
		if (src->c[i] > dst->c[i]) {
			dst->c[i] = src->c[i];
		}
	}
}

void vc_copy(struct vclock *dst, const struct vclock *src)
{
	dst->n = 0;
	vc_grow(dst, src->n);
	if (src->n) { /* an empty clock may have no array: memcpy wants pointers */
		memcpy(dst->c, src->c, src->n * sizeof *src->c);
	}
}

void vc_free(struct vclock *v)
{
	free(v->c);
	v->c = NULL;
	v->n = 0;
}

/* ---- the host clock ---- */

static void host_changed(void)
{
	g.host_version++;
	if (g.host_snap) {
		hsnap_put(g.host_snap);
		g.host_snap = NULL;
	}
}

/* The host learned (by a synchronization) that the work of v completed. */
void host_join(const struct vclock *v)
{
	for (size_t i = 0; i < v->n; i++) {
		if (v->c[i] > vc_get(&g.host, i)) {
			vc_join(&g.host, v);
			host_changed();
			return;
		}
	}
}

/* A host access to device memory: the host's next epoch. */
uint64_t host_tick(void)
{
	uint64_t e = vc_get(&g.host, 0) + 1;
	vc_set(&g.host, 0, e);
	host_changed();
	return e;
}

/* A reference to a snapshot of the host clock, for an op being enqueued. */
struct hsnap *host_snapshot(void)
{
	if (!g.host_snap) {
		g.host_snap = xcalloc(1, sizeof *g.host_snap);
		g.host_snap->refs = 1;
		g.host_snap->version = g.host_version;
		vc_copy(&g.host_snap->vc, &g.host);
	}
	g.host_snap->refs++;
	return g.host_snap;
}

void hsnap_put(struct hsnap *s)
{
	if (s && --s->refs == 0) {
		vc_free(&s->vc);
		free(s);
	}
}

/* ---- reports ---- */

/* How reports name an accessor: "the host", "the NULL stream", "stream 0x351". */
const char *accessor_name(int id, char *buf, size_t len)
{
	if (id == 0) {
		return "the host";
	}
	if (id < g.nids && g.id_handle[id] == 0) {
		return "the NULL stream";
	}
	snprintf(buf, len, "stream 0x%lx", (unsigned long)(id < g.nids ? g.id_handle[id] : 0));
	return buf;
}

/* Writes "cudaemu: <prefix><message>\n" to stderr in one write. */
static void vnote(const char *prefix, const char *fmt, va_list ap)
{
	char line[1024];
	int n = snprintf(line, sizeof line, "cudaemu: %s", prefix);
	int m = vsnprintf(line + n, sizeof line - (size_t)n - 1, fmt, ap);
	size_t len = (size_t)n + (m < 0 ? 0 : (size_t)m);
	if (len > sizeof line - 2) {
		len = sizeof line - 2;
	}
	line[len++] = '\n';
	write_stderr(line, len);
}

void emu_note(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vnote("", fmt, ap);
	va_end(ap);
}

static void report_total(void)
{
	if (g.races) {
		emu_note("%ld race finding(s) reported (CUDAEMU_ON_RACE=log)", g.races);
	}
}

/* One finding: a line on stderr, then exit 66 unless CUDAEMU_ON_RACE=log. */
void race_report(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vnote("race: ", fmt, ap);
	va_end(ap);
	if (!g.cfg.race_log) {
		_exit(66);
	}
	if (g.races++ == 0) {
		atexit(report_total);
	}
}

/*
 * ---- hashing: a fast 64-bit hash of host buffers, four independent
 * lanes over 32-byte blocks ----
 */

static const uint64_t K = 0x9e3779b97f4a7c15ull;

static uint64_t mix(uint64_t lane, uint64_t w)
{
	lane = (lane ^ w) * K;
	return lane ^ lane >> 29;
}

void hash_init(struct hash *h)
{
	for (int i = 0; i < 4; i++) {
		h->lane[i] = 0x243f6a8885a308d3ull + (uint64_t)i;
	}
}

/* Feeds n bytes; every call but the last must pass a multiple of 32. */
void hash_update(struct hash *h, const void *p, size_t n)
{
	const unsigned char *b = p;
	size_t i = 0;
	for (; i + 32 <= n; i += 32) {
		uint64_t w[4];
		memcpy(w, b + i, 32);
		for (int l = 0; l < 4; l++) {
			h->lane[l] = mix(h->lane[l], w[l]);
		}
	}
	for (int l = 0; i < n; l++, i += 8) {
		uint64_t w = 0;
		memcpy(&w, b + i, n - i < 8 ? n - i : 8);
		h->lane[l] = mix(h->lane[l], w ^ (uint64_t)(n - i) << 56);
	}
}

uint64_t hash_final(const struct hash *h)
{
	uint64_t x = 0;
	for (int l = 0; l < 4; l++) {
		x = mix(x, h->lane[l]);
	}
	return x;
}

uint64_t hash_bytes(const void *p, size_t n)
{
	struct hash h;
	hash_init(&h);
	hash_update(&h, p, n);
	return hash_final(&h);
}

/* ---- time ---- */

int64_t now_ns(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

void sleep_until_ns(int64_t t)
{
	struct timespec ts = {.tv_sec = (time_t)(t / 1000000000), .tv_nsec = (long)(t % 1000000000)};
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
	}
}

/* ---- stubs ---- */

/* Names of unmodelled functions already reported; guarded by g.mu. */
struct stub_seen {
	struct stub_seen *next;
	const char *name;
};
static struct stub_seen *stubs_seen;

/*
 * Every generated stub (stubs.c) returns this: CUDA_ERROR_NOT_SUPPORTED as
 * an int, which is how a CUresult is returned; the first call of each stub
 * is noted on stderr.
 */
int cudaemu_stub(const char *name)
{
	emu_lock();
	struct stub_seen *s = stubs_seen;
	while (s && strcmp(s->name, name) != 0) {
		s = s->next;
	}
	if (!s) {
		s = xcalloc(1, sizeof *s);
		*s = (struct stub_seen){.next = stubs_seen, .name = name};
		stubs_seen = s;
		emu_note("%s is not modelled by the emulator: CUDA_ERROR_NOT_SUPPORTED", name);
	}
	emu_unlock();
	return (int)CUDA_ERROR_NOT_SUPPORTED;
}
