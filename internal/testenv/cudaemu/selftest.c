/*
 * Self-tests of cudaemu. Each check runs in a child process with its own
 * environment (the emulator reads it at cuInit) and its stderr captured, so
 * checks can read the emulator's reports. Prints one PASS or FAIL line per
 * check; exits 1 if any failed. Timing bounds are loose: CI machines are
 * small and noisy.
 */
#include <cuda.h>

#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- harness ---- */

static const char *check_name;
static FILE *captured_stderr;

static void fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("    %s: ", check_name);
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
}

static void fail_at(int line, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	printf("    %s: line %d: ", check_name, line);
	vprintf(fmt, ap);
	printf("\n");
	va_end(ap);
	fflush(stdout);
}

#define WANT(call, code)                                                                       \
	do {                                                                                   \
		CUresult r_ = (call);                                                          \
		if (r_ != (code)) {                                                            \
			fail("line %d: %s returned %d, want %d", __LINE__, #call, (int)r_,     \
			     (int)(code));                                                     \
			return false;                                                          \
		}                                                                              \
	} while (0)

#define CK(call) WANT(call, CUDA_SUCCESS)

#define EXPECT(cond, ...)                                                                      \
	do {                                                                                   \
		if (!(cond)) {                                                                 \
			fail_at(__LINE__, __VA_ARGS__);                                        \
			return false;                                                          \
		}                                                                              \
	} while (0)

/* Everything the emulator wrote to stderr so far in this check. */
static const char *emu_output(void)
{
	static char buf[1 << 16];
	fflush(captured_stderr);
	size_t n = (size_t)pread(fileno(captured_stderr), buf, sizeof buf - 1, 0);
	buf[n < sizeof buf ? n : 0] = 0;
	return buf;
}

static int count(const char *hay, const char *needle)
{
	int n = 0;
	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle)) {
		n++;
	}
	return n;
}

static int races(void) { return count(emu_output(), "cudaemu: race: "); }

#define EXPECT_NO_RACES() EXPECT(races() == 0, "unexpected report:\n%s", emu_output())

/* Exactly one finding so far, and it contains want. */
#define EXPECT_ONE_REPORT(want)                                                                \
	EXPECT(races() == 1 && strstr(emu_output(), want), "want one report\n  %s\ngot:\n%s", want, emu_output())

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static double thread_cpu(void)
{
	struct timespec t;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* ---- helpers ---- */

static CUcontext ctx;

static bool setup(void)
{
	CK(cuInit(0));
	CK(cuDevicePrimaryCtxRetain(&ctx, 0));
	CK(cuCtxSetCurrent(ctx));
	return true;
}

static void *pinned(size_t n, int byte)
{
	void *p = NULL;
	if (cuMemHostAlloc(&p, n, CU_MEMHOSTALLOC_PORTABLE) != CUDA_SUCCESS) {
		return NULL;
	}
	memset(p, byte, n);
	return p;
}

/* A stream with flags, and n bytes of device memory at *d and of pinned memory filled with byte at *h. */
static bool stream_buffers(CUstream *s, unsigned flags, CUdeviceptr *d, void **h, size_t n, int byte)
{
	CK(cuStreamCreate(s, flags));
	CK(cuMemAlloc(d, n));
	*h = pinned(n, byte);
	EXPECT(*h, "cuMemHostAlloc failed");
	return true;
}

static bool all(const void *p, size_t n, int byte)
{
	const unsigned char *b = p;
	for (size_t i = 0; i < n; i++) {
		if (b[i] != (unsigned char)byte) {
			return false;
		}
	}
	return true;
}

static const char ptx[] = ".version 6.0\n.target sm_50\n.address_size 64\n"
			  "// .entry commented(\n"
			  ".visible .entry spin(\n\t.param .u64 cycles,\n\t.param .u64 src,\n"
			  "\t.param .u64 dst,\n\t.param .u64 n\n)\n{\n\tret;\n}\n"
			  ".visible .entry other(.param .u64 a)\n{\n\tret;\n}\n";

static CUfunction spin_fn;

static bool load_spin(void)
{
	CUmodule m;
	CK(cuModuleLoadData(&m, ptx));
	CK(cuModuleGetFunction(&spin_fn, m, "spin"));
	return true;
}

/*
 * setup and load_spin, then non-blocking streams *s1 and (unless s2 is NULL)
 * *s2, and n bytes of device memory at each of *d1 and *d2.
 */
static bool setup_spin(CUstream *s1, CUstream *s2, CUdeviceptr *d1, CUdeviceptr *d2, size_t n)
{
	if (!setup() || !load_spin()) {
		return false;
	}
	CK(cuStreamCreate(s1, CU_STREAM_NON_BLOCKING));
	if (s2) {
		CK(cuStreamCreate(s2, CU_STREAM_NON_BLOCKING));
	}
	CK(cuMemAlloc(d1, n));
	CK(cuMemAlloc(d2, n));
	return true;
}

static CUresult spin(CUstream s, uint64_t cycles, CUdeviceptr src, CUdeviceptr dst, uint64_t n)
{
	void *args[] = {&cycles, &src, &dst, &n};
	return cuLaunchKernel(spin_fn, 1, 1, 1, 1, 1, 1, 0, s, args, NULL);
}

/* Copies n bytes of device memory back and checks they all equal byte. */
static bool device_is(CUdeviceptr d, size_t n, int byte)
{
	unsigned char *b = malloc(n);
	bool ok = b && cuMemcpyDtoH(b, d, n) == CUDA_SUCCESS && all(b, n, byte);
	free(b);
	return ok;
}

/* ---- checks ---- */

/* Ops of one stream run in order: each copy overwrites the last; event times do not go back. */
static bool check_in_order(void)
{
	enum { N = 8, SIZE = 256 << 10 };
	CUstream s;
	CUdeviceptr d, out;
	CUevent ev[N];
	if (!setup_spin(&s, NULL, &d, &out, SIZE)) {
		return false;
	}
	for (int i = 0; i < N; i++) {
		void *h = pinned(SIZE, 'a' + i);
		EXPECT(h, "cuMemHostAlloc failed");
		CK(cuEventCreate(&ev[i], CU_EVENT_DEFAULT));
		CK(cuMemcpyHtoDAsync(d, h, SIZE, s));
		CK(cuEventRecord(ev[i], s));
	}
	CK(spin(s, 0, d, out, SIZE));
	CK(cuStreamSynchronize(s));
	EXPECT(device_is(out, SIZE, 'a' + N - 1), "the kernel did not see the last copy");
	for (int i = 1; i < N; i++) {
		float ms;
		CK(cuEventElapsedTime(&ms, ev[i - 1], ev[i]));
		EXPECT(ms > 0, "event %d completed %.3f ms after event %d", i, ms, i - 1);
	}
	EXPECT_NO_RACES();
	return true;
}

/*
 * A copy from pinned memory reads it when it runs: rewriting the buffer
 * before the copy runs changes what arrives, and is race (a).
 */
static bool check_reads_at_execution(void)
{
	enum { SLOW = 4 << 20, SIZE = 4096 };
	CUstream s;
	CUdeviceptr slow, d;
	void *big, *h;
	if (!setup() || !stream_buffers(&s, CU_STREAM_NON_BLOCKING, &slow, &big, SLOW, 0)) {
		return false;
	}
	CK(cuMemAlloc(&d, SIZE));
	h = pinned(SIZE, 'A');
	EXPECT(h, "cuMemHostAlloc failed");
	CK(cuMemcpyHtoDAsync(slow, big, SLOW, s)); /* 40 ms at 0.1 GB/s */
	CK(cuMemcpyHtoDAsync(d, h, SIZE, s));
	memset(h, 'B', SIZE);
	CK(cuStreamSynchronize(s));
	EXPECT(device_is(d, SIZE, 'B'), "the device did not get the bytes present when the copy ran");
	char want[300];
	snprintf(want, sizeof want, "host buffer 0x%lx (4096 bytes) changed between cuMemcpyHtoDAsync on stream 0x%lx "
		 "and the end of its copy to device 0x%llx (the device received bytes written after the call)",
		 (unsigned long)h, (unsigned long)s, (unsigned long long)d);
	EXPECT_ONE_REPORT(want);
	return true;
}

/*
 * Device memory holds the old bytes (new memory's 0xa5) until a copy
 * writes them: reading the end of the destination early (cuMemcpyDtoH,
 * which does not wait for non-blocking streams) gives stale bytes, and is
 * race (b).
 */
static bool check_stale_until_complete(void)
{
	enum { SIZE = 2 << 20, TAIL = 4096 };
	CUstream s;
	CUdeviceptr d;
	void *h;
	if (!setup() || !stream_buffers(&s, CU_STREAM_NON_BLOCKING, &d, &h, SIZE, 0x22)) {
		return false;
	}
	CK(cuMemcpyHtoDAsync(d, h, SIZE, s)); /* 210 ms at 0.01 GB/s */
	usleep(20000);                        /* let it start */
	EXPECT(device_is(d + SIZE - TAIL, TAIL, 0xa5), "device memory changed before the copy reached it");
	char want[200];
	snprintf(want, sizeof want, "device 0x%llx+4096: cuMemcpyDtoH on the host reads, but the copy "
		 "(cuMemcpyHtoDAsync) on stream 0x%lx writing it is not ordered before it (missing "
		 "cuStreamSynchronize or cuEventSynchronize?)",
		 (unsigned long long)(d + SIZE - TAIL), (unsigned long)s);
	EXPECT_ONE_REPORT(want);
	CK(cuStreamSynchronize(s));
	EXPECT(device_is(d, SIZE, 0x22), "device memory lacks the copy after cuStreamSynchronize");
	EXPECT(races() == 1, "a synchronized read was reported:\n%s", emu_output());
	return true;
}

/* Record, query, synchronize, elapsed time ~ latency + bytes / bandwidth (0.1 GB/s here). */
static bool check_event_timing(void)
{
	enum { SIZE = 4 << 20 };
	CUstream s;
	CUdeviceptr d;
	void *h;
	CUevent start, end, notime;
	float ms;
	if (!setup() || !stream_buffers(&s, CU_STREAM_NON_BLOCKING, &d, &h, SIZE, 1)) {
		return false;
	}
	CK(cuEventCreate(&start, CU_EVENT_DEFAULT));
	CK(cuEventCreate(&end, CU_EVENT_BLOCKING_SYNC));
	CK(cuEventCreate(&notime, CU_EVENT_DISABLE_TIMING));
	WANT(cuEventElapsedTime(&ms, start, end), CUDA_ERROR_INVALID_HANDLE); /* never recorded */
	CK(cuEventQuery(end));                                                 /* nothing captured */
	CK(cuEventRecord(start, s));
	CK(cuMemcpyHtoDAsync(d, h, SIZE, s));
	CK(cuEventRecord(end, s));
	CK(cuEventRecord(notime, s));
	WANT(cuEventQuery(end), CUDA_ERROR_NOT_READY);
	WANT(cuEventElapsedTime(&ms, start, end), CUDA_ERROR_NOT_READY);
	CK(cuEventSynchronize(end));
	CK(cuEventQuery(end));
	CK(cuEventElapsedTime(&ms, start, end));
	EXPECT(ms > 38 && ms < 150, "elapsed %.2f ms, want about 42 ms (4 MiB at 0.1 GB/s)", ms);
	CK(cuEventSynchronize(notime));
	WANT(cuEventElapsedTime(&ms, start, notime), CUDA_ERROR_INVALID_HANDLE);
	WANT(cuEventElapsedTime(NULL, start, end), CUDA_ERROR_INVALID_VALUE);
	return true;
}

/* A second record supersedes the first for queries and later waits, not for earlier waits. */
static bool check_rerecord(void)
{
	enum { SIZE = 8 << 20 };
	CUstream busy, idle, waiter;
	CUdeviceptr d;
	void *h;
	CUevent e, after, copied;
	if (!setup() || !stream_buffers(&busy, CU_STREAM_NON_BLOCKING, &d, &h, SIZE, 3)) {
		return false;
	}
	CK(cuStreamCreate(&idle, CU_STREAM_NON_BLOCKING));
	CK(cuStreamCreate(&waiter, CU_STREAM_NON_BLOCKING));
	CK(cuEventCreate(&e, CU_EVENT_DEFAULT));
	CK(cuEventCreate(&after, CU_EVENT_DEFAULT));
	CK(cuEventCreate(&copied, CU_EVENT_DEFAULT));
	CK(cuMemcpyHtoDAsync(d, h, SIZE, busy)); /* 80 ms at 0.1 GB/s */
	CK(cuEventRecord(copied, busy));
	CK(cuEventRecord(e, busy));
	CK(cuStreamWaitEvent(waiter, e, 0)); /* waits for the first record */
	CK(cuEventRecord(after, waiter));
	WANT(cuEventQuery(e), CUDA_ERROR_NOT_READY);
	CK(cuEventRecord(e, idle));
	CK(cuStreamSynchronize(idle));
	CK(cuEventQuery(e));
	WANT(cuEventQuery(after), CUDA_ERROR_NOT_READY);
	WANT(cuEventQuery(copied), CUDA_ERROR_NOT_READY);
	CK(cuEventSynchronize(after));
	CK(cuEventQuery(copied));
	return true;
}

/*
 * cuStreamWaitEvent orders a consumer kernel after the loader's copy, and
 * the loader's next copy after the consumer's event: no reports.
 */
static bool check_wait_event_orders(void)
{
	enum { SIZE = 1 << 20 };
	CUstream loader, consumer;
	CUdeviceptr buf, out;
	CUevent ready, done;
	if (!setup_spin(&loader, &consumer, &buf, &out, SIZE)) {
		return false;
	}
	unsigned char *a = pinned(SIZE, 'a'), *b = pinned(SIZE, 'b');
	EXPECT(a && b, "cuMemHostAlloc failed");
	CK(cuEventCreate(&ready, CU_EVENT_DISABLE_TIMING));
	CK(cuEventCreate(&done, CU_EVENT_DISABLE_TIMING));
	CK(cuMemcpyHtoDAsync(buf, a, SIZE, loader)); /* 10 ms at 0.1 GB/s */
	CK(cuEventRecord(ready, loader));
	CK(cuStreamWaitEvent(consumer, ready, 0));
	CK(spin(consumer, 50 * 1000 * 1000, buf, out, SIZE)); /* reads after 50 ms */
	CK(cuEventRecord(done, consumer));
	CK(cuStreamWaitEvent(loader, done, 0));
	CK(cuMemcpyHtoDAsync(buf, b, SIZE, loader));
	CK(cuStreamSynchronize(consumer));
	CK(cuStreamSynchronize(loader));
	EXPECT(device_is(out, SIZE, 'a'), "the consumer saw the loader's second copy");
	EXPECT(device_is(buf, SIZE, 'b'), "the second copy did not land");
	EXPECT_NO_RACES();
	return true;
}

/* Waiting for a never-recorded event is a no-op. */
static bool check_wait_unrecorded(void)
{
	enum { SIZE = 20 << 20 };
	CUstream busy, s;
	CUdeviceptr d;
	void *h;
	CUevent never, mark, copied;
	if (!setup() || !stream_buffers(&busy, CU_STREAM_NON_BLOCKING, &d, &h, SIZE, 0)) {
		return false;
	}
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CK(cuEventCreate(&never, CU_EVENT_DEFAULT));
	CK(cuEventCreate(&mark, CU_EVENT_BLOCKING_SYNC));
	CK(cuEventCreate(&copied, CU_EVENT_DEFAULT));
	CK(cuMemcpyHtoDAsync(d, h, SIZE, busy)); /* 200 ms at 0.1 GB/s */
	CK(cuEventRecord(copied, busy));
	double t0 = now();
	CK(cuStreamWaitEvent(s, never, 0));
	CK(cuEventRecord(mark, s));
	CK(cuEventSynchronize(mark));
	double t = now() - t0;
	EXPECT(t < 0.1, "the stream waited %.3f s on an unrecorded event", t);
	WANT(cuEventQuery(copied), CUDA_ERROR_NOT_READY);
	return true;
}

/* Two streams' copies share CUDAEMU_COPY_ENGINES engines: 1 engine serializes them. */
static bool copy_pair(double *seconds)
{
	enum { SIZE = 4 << 20 };
	CUstream s[2];
	CUdeviceptr d[2];
	void *h[2];
	if (!setup()) {
		return false;
	}
	for (int i = 0; i < 2; i++) {
		if (!stream_buffers(&s[i], CU_STREAM_NON_BLOCKING, &d[i], &h[i], SIZE, i)) {
			return false;
		}
	}
	double t0 = now();
	for (int i = 0; i < 2; i++) {
		CK(cuMemcpyHtoDAsync(d[i], h[i], SIZE, s[i])); /* 42 ms each at 0.1 GB/s */
	}
	CK(cuStreamSynchronize(s[0]));
	CK(cuStreamSynchronize(s[1]));
	*seconds = now() - t0;
	return true;
}

static bool check_one_engine(void)
{
	double t;
	if (!copy_pair(&t)) {
		return false;
	}
	EXPECT(t > 0.075, "two 42 ms copies on one engine took %.3f s, want about 0.084", t);
	return true;
}

static bool check_two_engines(void)
{
	double t;
	if (!copy_pair(&t)) {
		return false;
	}
	EXPECT(t > 0.038 && t < 0.075, "two 42 ms copies on two engines took %.3f s, want about 0.042", t);
	return true;
}

/*
 * cuMemGetInfo accounting with CUDAEMU_MEM_MB=64, out of memory, new
 * memory's 0xa5, bad pointers.
 */
static bool check_memory(void)
{
	size_t avail, total, bytes;
	CUdeviceptr a, b, base;
	if (!setup()) {
		return false;
	}
	CK(cuMemGetInfo(&avail, &total));
	EXPECT(total == 64 << 20 && avail == total, "total %zu, free %zu", total, avail);
	CK(cuMemAlloc(&a, 16 << 20));
	EXPECT(a % 256 == 0, "allocation 0x%llx is not 256-byte aligned", (unsigned long long)a);
	EXPECT(device_is(a, 4096, 0xa5), "new device memory is not filled with 0xa5");
	CK(cuMemGetInfo(&avail, &total));
	EXPECT(avail == 48 << 20, "free %zu after a 16 MiB allocation", avail);
	WANT(cuMemAlloc(&b, 60 << 20), CUDA_ERROR_OUT_OF_MEMORY);
	WANT(cuMemAlloc(&b, 0), CUDA_ERROR_INVALID_VALUE);
	CK(cuMemGetAddressRange(&base, &bytes, a + 100));
	EXPECT(base == a && bytes == 16 << 20, "address range 0x%llx+%zu", (unsigned long long)base, bytes);
	char h[16] = {0};
	WANT(cuMemcpyDtoH(h, a + (16 << 20) - 8, 16), CUDA_ERROR_INVALID_VALUE); /* runs past the end */
	WANT(cuMemFree(a + 256), CUDA_ERROR_INVALID_VALUE);
	CK(cuMemFree(a));
	WANT(cuMemFree(a), CUDA_ERROR_INVALID_VALUE);
	WANT(cuMemGetAddressRange(&base, &bytes, a), CUDA_ERROR_INVALID_VALUE);
	WANT(cuMemcpyDtoH(h, a, 16), CUDA_ERROR_INVALID_VALUE); /* use after free */
	CK(cuMemGetInfo(&avail, &total));
	EXPECT(avail == total, "free %zu of %zu after freeing everything", avail, total);
	void *p;
	CK(cuMemHostAlloc(&p, 100, CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_WRITECOMBINED));
	EXPECT((uintptr_t)p % 4096 == 0, "pinned memory %p is not page-aligned", p);
	WANT(cuMemHostAlloc(&p, 100, 0x80), CUDA_ERROR_INVALID_VALUE);
	WANT(cuMemFreeHost((char *)p + 1), CUDA_ERROR_INVALID_VALUE);
	CK(cuMemFreeHost(p));
	WANT(cuMemFreeHost(p), CUDA_ERROR_INVALID_VALUE);
	return true;
}

/* The primary context lives while retained; the last release frees everything it owns. */
static bool check_primary_refcount(void)
{
	CUcontext again, cur;
	CUdeviceptr d;
	CUstream s;
	size_t avail, total;
	if (!setup()) {
		return false;
	}
	CK(cuDevicePrimaryCtxRetain(&again, 0));
	EXPECT(again == ctx, "a second retain returned another context");
	CK(cuMemAlloc(&d, 1 << 20));
	CK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
	CK(cuDevicePrimaryCtxRelease(0));
	CK(cuMemGetInfo(&avail, &total));
	EXPECT(avail == total - (1 << 20), "the allocation went away early");
	CK(cuDevicePrimaryCtxRelease(0));
	CK(cuCtxGetCurrent(&cur));
	EXPECT(cur == ctx, "the released context is no longer current");
	WANT(cuMemAlloc(&d, 16), CUDA_ERROR_CONTEXT_IS_DESTROYED);
	WANT(cuDevicePrimaryCtxRelease(0), CUDA_ERROR_INVALID_CONTEXT);
	CK(cuDevicePrimaryCtxRetain(&again, 0));
	EXPECT(again == ctx, "the primary context handle changed");
	CK(cuMemGetInfo(&avail, &total));
	EXPECT(avail == total, "memory of the destroyed context was not freed");
	WANT(cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE);
	return true;
}

/* Before cuInit everything fails; after it, calls that need a context fail without one. */
static bool check_no_context(void)
{
	int n;
	CUdeviceptr d;
	CUstream s;
	WANT(cuDeviceGetCount(&n), CUDA_ERROR_NOT_INITIALIZED);
	WANT(cuMemAlloc(&d, 16), CUDA_ERROR_NOT_INITIALIZED);
	WANT(cuInit(1), CUDA_ERROR_INVALID_VALUE);
	CK(cuInit(0));
	WANT(cuMemAlloc(&d, 16), CUDA_ERROR_INVALID_CONTEXT);
	WANT(cuStreamCreate(&s, 0), CUDA_ERROR_INVALID_CONTEXT);
	WANT(cuStreamSynchronize(NULL), CUDA_ERROR_INVALID_CONTEXT);
	WANT(cuCtxSetCurrent((CUcontext)0x1234), CUDA_ERROR_INVALID_CONTEXT);
	return true;
}

/* Devices, names and attributes from the environment (CUDAEMU_DEVICES=2, CLOCK_KHZ, COPY_ENGINES). */
static bool check_devices(void)
{
	int n, v;
	char name[64];
	CUdevice dev;
	CK(cuInit(0));
	CK(cuDeviceGetCount(&n));
	EXPECT(n == 2, "%d devices", n);
	CK(cuDeviceGet(&dev, 1));
	WANT(cuDeviceGet(&dev, 2), CUDA_ERROR_INVALID_DEVICE);
	CK(cuDeviceGetName(name, sizeof name, 1));
	EXPECT(strcmp(name, "cudaemu emulated device 1") == 0, "name %s", name);
	CK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_CLOCK_RATE, 0));
	EXPECT(v == 1500000, "clock rate %d", v);
	CK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE, 0));
	EXPECT(v == 1500000, "memory clock rate %d", v);
	CK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT, 0));
	EXPECT(v == 3, "async engines %d", v);
	CK(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, 0));
	EXPECT(v == 1, "multiprocessors %d", v);
	WANT(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAX, 0), CUDA_ERROR_INVALID_VALUE);
	WANT(cuDeviceGetAttribute(&v, CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH, 0), CUDA_ERROR_NOT_SUPPORTED);
	if (!setup()) {
		return false;
	}
	int least, greatest, prio;
	CUstream s;
	CK(cuCtxGetStreamPriorityRange(&least, &greatest));
	EXPECT(least == 0 && greatest == -5, "priority range %d..%d", least, greatest);
	CK(cuStreamCreateWithPriority(&s, CU_STREAM_NON_BLOCKING, -100));
	CK(cuStreamGetPriority(s, &prio));
	EXPECT(prio == -5, "priority %d, want clamped to -5", prio);
	CK(cuStreamCreateWithPriority(&s, CU_STREAM_DEFAULT, 7));
	CK(cuStreamGetPriority(s, &prio));
	EXPECT(prio == 0, "priority %d, want clamped to 0", prio);
	WANT(cuStreamCreate(&s, 2), CUDA_ERROR_INVALID_VALUE);
	return true;
}

/* CUDAEMU_FAIL_INIT makes cuInit fail with that code. */
static bool check_fail_init(void)
{
	WANT(cuInit(0), CUDA_ERROR_NO_DEVICE);
	return true;
}

/*
 * CUDAEMU_FAIL_COPY=N fails the Nth cuMemcpyHtoDAsync since the value
 * changed or the primary context was activated, once.
 */
static bool check_fail_copy(void)
{
	enum { SIZE = 64 };
	CUdeviceptr d;
	CUstream s;
	void *h, *h2;
	if (!setup() || !stream_buffers(&s, CU_STREAM_NON_BLOCKING, &d, &h, SIZE, 1)) {
		return false;
	}
	setenv("CUDAEMU_FAIL_COPY", "3", 1);
	CK(cuMemcpyHtoDAsync(d, h, SIZE, s));
	CK(cuMemcpyHtoDAsync(d, h, SIZE, s));
	WANT(cuMemcpyHtoDAsync(d, h, SIZE, s), CUDA_ERROR_UNKNOWN);
	CK(cuMemcpyHtoDAsync(d, h, SIZE, s));
	setenv("CUDAEMU_FAIL_COPY", "2", 1);
	CK(cuMemcpyHtoDAsync(d, h, SIZE, s));
	WANT(cuMemcpyHtoDAsync(d, h, SIZE, s), CUDA_ERROR_UNKNOWN);
	setenv("CUDAEMU_FAIL_COPY", "2", 1);
	CK(cuMemcpyHtoDAsync(d, h, SIZE, s));
	unsetenv("CUDAEMU_FAIL_COPY");
	CK(cuMemcpyHtoDAsync(d, h, SIZE, s));
	setenv("CUDAEMU_FAIL_COPY", "1", 1);
	WANT(cuMemcpyHtoDAsync(d, h, SIZE, s), CUDA_ERROR_UNKNOWN);
	CK(cuStreamSynchronize(s));
	/* Activating the primary context again restarts the count, with the same value. */
	CK(cuDevicePrimaryCtxRelease(0));
	CK(cuDevicePrimaryCtxRetain(&ctx, 0));
	if (!stream_buffers(&s, CU_STREAM_NON_BLOCKING, &d, &h2, SIZE, 2)) { /* h went with the context */
		return false;
	}
	WANT(cuMemcpyHtoDAsync(d, h2, SIZE, s), CUDA_ERROR_UNKNOWN);
	CK(cuMemcpyHtoDAsync(d, h2, SIZE, s));
	CK(cuStreamSynchronize(s));
	EXPECT(count(emu_output(), "CUDAEMU_FAIL_COPY=") == 4, "want 4 notes, got:\n%s", emu_output());
	return true;
}

/* spin waits its cycles at the clock rate (2 GHz here), then copies n bytes. */
static bool check_kernel_spin(void)
{
	enum { SIZE = 1000 };
	CUstream s;
	CUdeviceptr src, dst;
	CUevent done;
	if (!setup_spin(&s, NULL, &src, &dst, SIZE)) {
		return false;
	}
	void *h = pinned(SIZE, 0x5a);
	EXPECT(h, "cuMemHostAlloc failed");
	CK(cuMemcpyHtoDAsync(src, h, SIZE, s));
	CK(cuStreamSynchronize(s));
	CK(cuEventCreate(&done, CU_EVENT_DEFAULT));
	double t0 = now();
	CK(spin(s, 200 * 1000 * 1000, src, dst, SIZE));
	CK(cuEventRecord(done, s));
	WANT(cuEventQuery(done), CUDA_ERROR_NOT_READY);
	CK(cuStreamSynchronize(s));
	double t = now() - t0;
	EXPECT(t > 0.095 && t < 0.5, "200M cycles at 2 GHz took %.3f s, want 0.1", t);
	EXPECT(device_is(dst, SIZE, 0x5a), "the kernel did not copy");
	CK(spin(s, 0, src, 0x1000, SIZE)); /* dst is not device memory */
	WANT(cuStreamSynchronize(s), CUDA_ERROR_ILLEGAL_ADDRESS);
	EXPECT(strstr(emu_output(), "CUDA_ERROR_ILLEGAL_ADDRESS"), "no note on the bad address");
	return true;
}

/* Kernels without a C implementation, unknown names, and images that are not PTX. */
static bool check_unknown_kernel(void)
{
	CUmodule m;
	CUfunction f;
	if (!setup()) {
		return false;
	}
	CK(cuModuleLoadData(&m, ptx));
	WANT(cuModuleGetFunction(&f, m, "other"), CUDA_ERROR_NOT_SUPPORTED);
	WANT(cuModuleGetFunction(&f, m, "missing"), CUDA_ERROR_NOT_FOUND);
	WANT(cuModuleGetFunction(&f, m, "commented"), CUDA_ERROR_NOT_FOUND);
	CK(cuModuleUnload(m));
	WANT(cuModuleGetFunction(&f, m, "spin"), CUDA_ERROR_INVALID_HANDLE);
	CK(cuModuleLoadData(&m, ".version 7.0\n.entry spin(.param .u64 a, .param .u32 b) { ret; }"));
	WANT(cuModuleGetFunction(&f, m, "spin"), CUDA_ERROR_NOT_SUPPORTED);
	WANT(cuModuleLoadData(&m, "\x7f" "ELF\x02\x01"), CUDA_ERROR_NOT_SUPPORTED);
	WANT(cuModuleLoadData(&m, "not ptx"), CUDA_ERROR_INVALID_PTX);
	EXPECT(strstr(emu_output(), "kernel other has no C implementation"), "no note on kernel other");
	return true;
}

/* Race (b): a consumer kernel reads what a copy on another stream writes, with no event between. */
static bool check_race_unordered_read(void)
{
	enum { SIZE = 4096 };
	CUstream loader, consumer;
	CUdeviceptr buf, out;
	if (!setup_spin(&loader, &consumer, &buf, &out, SIZE)) {
		return false;
	}
	void *h = pinned(SIZE, 1);
	EXPECT(h, "cuMemHostAlloc failed");
	CK(cuMemcpyHtoDAsync(buf, h, SIZE, loader));
	CK(spin(consumer, 50 * 1000 * 1000, buf, out, SIZE)); /* reads after the copy, but unordered */
	CK(cuStreamSynchronize(consumer));
	char want[320];
	snprintf(want, sizeof want, "device 0x%llx+4096: kernel spin on stream 0x%lx reads, but the copy "
		 "(cuMemcpyHtoDAsync) on stream 0x%lx writing it is not ordered before it (missing cuStreamWaitEvent?)",
		 (unsigned long long)buf, (unsigned long)consumer, (unsigned long)loader);
	EXPECT_ONE_REPORT(want);
	return true;
}

/*
 * Race (b) the other way: the loader's next copy overwrites a buffer the
 * consumer's kernel read, without waiting for the consumer's event; with
 * the wait (loader_waits) there is no report.
 */
static bool overwrite(bool loader_waits)
{
	enum { SIZE = 4096, SLOW = 4 << 20 };
	CUstream loader, consumer;
	CUdeviceptr buf, out, other;
	CUevent ready, done;
	if (!setup_spin(&loader, &consumer, &buf, &out, SIZE)) {
		return false;
	}
	CK(cuMemAlloc(&other, SLOW));
	void *h = pinned(SIZE, 1), *big = pinned(SLOW, 2);
	EXPECT(h && big, "cuMemHostAlloc failed");
	CK(cuEventCreate(&ready, CU_EVENT_DISABLE_TIMING));
	CK(cuEventCreate(&done, CU_EVENT_DISABLE_TIMING));
	CK(cuMemcpyHtoDAsync(buf, h, SIZE, loader));
	CK(cuEventRecord(ready, loader));
	CK(cuStreamWaitEvent(consumer, ready, 0));
	CK(spin(consumer, 0, buf, out, SIZE));
	CK(cuEventRecord(done, consumer));
	CK(cuMemcpyHtoDAsync(other, big, SLOW, loader)); /* 40 ms: the kernel reads meanwhile */
	if (loader_waits) {
		CK(cuStreamWaitEvent(loader, done, 0));
	}
	CK(cuMemcpyHtoDAsync(buf, h, SIZE, loader));
	CK(cuStreamSynchronize(loader));
	CK(cuStreamSynchronize(consumer));
	if (loader_waits) {
		EXPECT_NO_RACES();
		return true;
	}
	char want[320];
	snprintf(want, sizeof want, "device 0x%llx+4096: copy (cuMemcpyHtoDAsync) on stream 0x%lx overwrites device "
		 "memory that kernel spin on stream 0x%lx read without an event ordering the two (missing wait for the "
		 "consumer's event?)",
		 (unsigned long long)buf, (unsigned long)loader, (unsigned long)consumer);
	EXPECT_ONE_REPORT(want);
	return true;
}

static bool check_race_overwrite(void) { return overwrite(false); }

static bool check_no_race_with_done_event(void) { return overwrite(true); }

/* In the default mode a finding ends the process with status 66. */
static bool check_race_exits(void)
{
	if (!check_race_unordered_read()) {
		return false;
	}
	fail("still running after a race");
	return false;
}

/* Waiting for a long copy: a default event busy-waits (CPU ~ copy time), a BLOCKING_SYNC one sleeps. */
static bool check_blocking_sync(void)
{
	enum { SIZE = 2 << 20 };
	CUstream s;
	CUdeviceptr d;
	void *h;
	CUevent spinning, blocking;
	if (!setup() || !stream_buffers(&s, CU_STREAM_NON_BLOCKING, &d, &h, SIZE, 0)) {
		return false;
	}
	CK(cuEventCreate(&spinning, CU_EVENT_DEFAULT));
	CK(cuEventCreate(&blocking, CU_EVENT_BLOCKING_SYNC));
	double cpu[2], wall[2];
	CUevent ev[2] = {spinning, blocking};
	for (int i = 0; i < 2; i++) {
		CK(cuMemcpyHtoDAsync(d, h, SIZE, s)); /* 210 ms at 0.01 GB/s */
		CK(cuEventRecord(ev[i], s));
		double c0 = thread_cpu(), w0 = now();
		CK(cuEventSynchronize(ev[i]));
		cpu[i] = thread_cpu() - c0;
		wall[i] = now() - w0;
	}
	EXPECT(wall[0] > 0.15 && cpu[0] > 0.5 * wall[0], "default event: %.3f s CPU in %.3f s, want busy-waiting",
	       cpu[0], wall[0]);
	EXPECT(wall[1] > 0.15 && cpu[1] < 0.05, "BLOCKING_SYNC event: %.3f s CPU in %.3f s, want about 0", cpu[1],
	       wall[1]);
	return true;
}

/* Destroyed handles are refused; a destroyed stream still finishes its work. */
static bool check_destroyed_handles(void)
{
	enum { SIZE = 4 << 20 };
	CUstream s;
	CUevent e, pending;
	CUdeviceptr d;
	void *h;
	if (!setup() || !stream_buffers(&s, CU_STREAM_NON_BLOCKING, &d, &h, SIZE, 9)) {
		return false;
	}
	CK(cuEventCreate(&e, CU_EVENT_DEFAULT));
	CK(cuEventCreate(&pending, CU_EVENT_DEFAULT));
	CK(cuMemcpyHtoDAsync(d, h, SIZE, s)); /* 40 ms */
	CK(cuEventRecord(e, s));
	CK(cuEventRecord(pending, s));
	CK(cuEventDestroy(pending)); /* pending record: allowed */
	CK(cuStreamDestroy(s));      /* returns at once */
	WANT(cuEventQuery(e), CUDA_ERROR_NOT_READY);
	WANT(cuStreamSynchronize(s), CUDA_ERROR_INVALID_HANDLE);
	WANT(cuMemcpyHtoDAsync(d, h, SIZE, s), CUDA_ERROR_INVALID_HANDLE);
	WANT(cuStreamDestroy(s), CUDA_ERROR_INVALID_HANDLE);
	CK(cuEventSynchronize(e));
	EXPECT(device_is(d, SIZE, 9), "the destroyed stream did not finish its copy");
	CK(cuEventDestroy(e));
	WANT(cuEventQuery(e), CUDA_ERROR_INVALID_HANDLE);
	WANT(cuEventRecord(e, NULL), CUDA_ERROR_INVALID_HANDLE);
	WANT(cuEventDestroy(e), CUDA_ERROR_INVALID_HANDLE);
	WANT(cuStreamSynchronize((CUstream)0xdead00), CUDA_ERROR_INVALID_HANDLE);
	return true;
}

/* Race (c): freeing device or pinned memory that queued work still uses. */
static bool check_free_with_queued_work(void)
{
	enum { SIZE = 4 << 20 };
	CUstream s;
	CUdeviceptr d;
	void *h;
	if (!setup() || !stream_buffers(&s, CU_STREAM_NON_BLOCKING, &d, &h, SIZE, 1)) {
		return false;
	}
	CK(cuMemcpyHtoDAsync(d, h, SIZE, s)); /* 40 ms */
	CK(cuMemFree(d));                     /* waits for the copy, then reports it */
	EXPECT_ONE_REPORT("cuMemFree on the host frees memory that copy (cuMemcpyHtoDAsync)");
	CK(cuMemAlloc(&d, SIZE));
	CK(cuMemcpyHtoDAsync(d, h, SIZE, s));
	CK(cuMemFreeHost(h));
	EXPECT(races() == 2 && strstr(emu_output(), "cuMemFreeHost frees it while the copy (cuMemcpyHtoDAsync)"),
	       "want a report on cuMemFreeHost, got:\n%s", emu_output());
	CK(cuStreamSynchronize(s));
	CK(cuMemFree(d));
	EXPECT(races() == 2, "a synchronized free was reported:\n%s", emu_output());
	return true;
}

/*
 * The NULL stream: work on it and on blocking streams is ordered both
 * ways, and cuMemcpyDtoH waits for blocking streams (not for non-blocking
 * ones, see stale_until_complete). Each kernel, which takes no time,
 * copies other bytes over the start of d while a 40 ms copy to d on the
 * other stream is pending: its bytes are there at the end only if it
 * waited for that copy.
 */
static bool check_null_stream(void)
{
	enum { SIZE = 4 << 20, SMALL = 4096 };
	CUstream blocking;
	CUdeviceptr d, eights, nines;
	void *h, *h8 = NULL, *h9 = NULL;
	if (!setup() || !load_spin() || !stream_buffers(&blocking, CU_STREAM_DEFAULT, &d, &h, SIZE, 7)) {
		return false;
	}
	CK(cuMemAlloc(&eights, SMALL));
	CK(cuMemAlloc(&nines, SMALL));
	h8 = pinned(SMALL, 8);
	h9 = pinned(SMALL, 9);
	EXPECT(h8 && h9, "cuMemHostAlloc failed");
	CK(cuMemcpyHtoDAsync(eights, h8, SMALL, blocking));
	CK(cuMemcpyHtoDAsync(nines, h9, SMALL, blocking));
	CK(cuStreamSynchronize(blocking));
	CK(cuMemcpyHtoDAsync(d, h, SIZE, blocking)); /* 40 ms */
	CK(spin(NULL, 0, eights, d, SMALL));         /* NULL stream: waits for the pending copy */
	EXPECT(device_is(d, SMALL, 8), "the NULL-stream kernel ran before the blocking stream's copy");
	CK(cuMemcpyHtoDAsync(d, h, SIZE, NULL));     /* 40 ms */
	CK(spin(blocking, 0, nines, d, SMALL));      /* waits for the pending NULL-stream copy */
	EXPECT(device_is(d, SMALL, 9), "the blocking stream's kernel ran before the NULL-stream copy");
	CK(cuMemcpyHtoDAsync(d, h, SIZE, blocking)); /* 40 ms */
	EXPECT(device_is(d, SIZE, 7), "cuMemcpyDtoH did not wait for the blocking stream");
	EXPECT_NO_RACES();
	return true;
}

/* From pageable memory the call waits for the stream, stages the bytes and returns. */
static bool check_pageable(void)
{
	enum { SIZE = 4 << 20, SMALL = 4096 };
	CUstream s;
	CUdeviceptr big, d;
	void *h;
	if (!setup() || !stream_buffers(&s, CU_STREAM_NON_BLOCKING, &big, &h, SIZE, 0)) {
		return false;
	}
	CK(cuMemAlloc(&d, SMALL));
	unsigned char *pageable = malloc(SMALL);
	EXPECT(pageable, "malloc failed");
	memset(pageable, 'p', SMALL);
	CK(cuMemcpyHtoDAsync(big, h, SIZE, s)); /* 40 ms */
	double t0 = now();
	CK(cuMemcpyHtoDAsync(d, pageable, SMALL, s));
	double t = now() - t0;
	memset(pageable, 'q', SMALL); /* the bytes were staged: allowed */
	CK(cuStreamSynchronize(s));
	EXPECT(t > 0.03, "the pageable copy returned after %.3f s, before the stream's earlier copy", t);
	EXPECT(device_is(d, SMALL, 'p'), "the device did not get the staged bytes");
	EXPECT_NO_RACES();
	free(pageable);
	return true;
}

/* Each host-device copy takes at least CUDAEMU_COPY_LATENCY_US (50 ms here), however small. */
static bool check_copy_latency(void)
{
	enum { SIZE = 64 };
	CUstream s;
	CUdeviceptr d;
	void *h;
	CUevent start, end;
	float ms;
	if (!setup() || !stream_buffers(&s, CU_STREAM_NON_BLOCKING, &d, &h, SIZE, 1)) {
		return false;
	}
	double t0 = now();
	CK(cuMemcpyDtoH(h, d, SIZE));
	double t = now() - t0;
	EXPECT(t > 0.045, "a %d-byte cuMemcpyDtoH took %.3f s, want at least 0.05", SIZE, t);
	CK(cuEventCreate(&start, CU_EVENT_DEFAULT));
	CK(cuEventCreate(&end, CU_EVENT_DEFAULT));
	CK(cuEventRecord(start, s));
	CK(cuMemcpyHtoDAsync(d, h, SIZE, s));
	CK(cuEventRecord(end, s));
	CK(cuEventSynchronize(end));
	CK(cuEventElapsedTime(&ms, start, end));
	EXPECT(ms > 45, "a %d-byte cuMemcpyHtoDAsync took %.2f ms, want at least 50", SIZE, ms);
	return true;
}

/*
 * Race (c): a copy from pinned memory that runs after cuMemFreeHost freed
 * it. The free synchronizes only the memory's own context (device 0), so a
 * copy queued on device 1 behind a 168 ms copy runs afterwards.
 */
static bool check_copy_after_free_host(void)
{
	enum { SLOW = 16 << 20, SIZE = 4096 };
	CUcontext other;
	CUstream s;
	CUdeviceptr slow, d;
	void *big, *h;
	if (!setup()) {
		return false;
	}
	h = pinned(SIZE, 1);
	EXPECT(h, "cuMemHostAlloc failed");
	CK(cuDevicePrimaryCtxRetain(&other, 1));
	CK(cuCtxSetCurrent(other));
	if (!stream_buffers(&s, CU_STREAM_NON_BLOCKING, &slow, &big, SLOW, 0)) {
		return false;
	}
	CK(cuMemAlloc(&d, SIZE));
	CK(cuMemcpyHtoDAsync(slow, big, SLOW, s)); /* 168 ms at 0.1 GB/s */
	CK(cuMemcpyHtoDAsync(d, h, SIZE, s));
	CK(cuMemFreeHost(h));
	CK(cuStreamSynchronize(s));
	char want[200];
	snprintf(want, sizeof want, "host buffer 0x%lx (4096 bytes) was freed by cuMemFreeHost before the copy "
		 "(cuMemcpyHtoDAsync) on stream 0x%lx ran",
		 (unsigned long)h, (unsigned long)s);
	EXPECT_ONE_REPORT(want);
	return true;
}

/*
 * A successful cuEventQuery, and cuEventSynchronize, order the host after
 * the work they saw complete: a cuMemcpyDtoH afterwards, which does not
 * wait for non-blocking streams, is no race.
 */
static bool check_host_joins(void)
{
	enum { SIZE = 4096 };
	CUstream s;
	CUdeviceptr d;
	void *h;
	CUevent e;
	CUresult r;
	if (!setup() || !stream_buffers(&s, CU_STREAM_NON_BLOCKING, &d, &h, SIZE, 1)) {
		return false;
	}
	CK(cuEventCreate(&e, CU_EVENT_DEFAULT));
	CK(cuMemcpyHtoDAsync(d, h, SIZE, s));
	CK(cuEventRecord(e, s));
	while ((r = cuEventQuery(e)) == CUDA_ERROR_NOT_READY) {
		usleep(1000);
	}
	CK(r);
	EXPECT(device_is(d, SIZE, 1), "the copy had not landed when cuEventQuery succeeded");
	EXPECT(races() == 0, "the host read after cuEventQuery was reported:\n%s", emu_output());
	memset(h, 2, SIZE);
	CK(cuMemcpyHtoDAsync(d, h, SIZE, s));
	CK(cuEventRecord(e, s));
	CK(cuEventSynchronize(e));
	EXPECT(device_is(d, SIZE, 2), "the copy had not landed when cuEventSynchronize returned");
	EXPECT(races() == 0, "the host read after cuEventSynchronize was reported:\n%s", emu_output());
	return true;
}

/* ---- graphs ---- */

/* The CUDA_MEMCPY3D of a 1-D copy of n bytes from host src to device dst. */
static CUDA_MEMCPY3D htod_params(CUdeviceptr dst, const void *src, size_t n)
{
	CUDA_MEMCPY3D p;
	memset(&p, 0, sizeof p);
	p.srcMemoryType = CU_MEMORYTYPE_HOST;
	p.srcHost = src;
	p.dstMemoryType = CU_MEMORYTYPE_DEVICE;
	p.dstDevice = dst;
	p.WidthInBytes = n;
	p.Height = 1;
	p.Depth = 1;
	return p;
}

/* Appends a copy node to the chain gr whose last node is *last (NULL while empty). */
static CUresult chain_copy(CUgraph gr, CUgraphNode *last, CUdeviceptr dst, const void *src, size_t n)
{
	CUDA_MEMCPY3D p = htod_params(dst, src, n);
	CUgraphNode node;
	CUresult r = cuGraphAddMemcpyNode(&node, gr, last, *last ? 1 : 0, &p, ctx);
	if (r == CUDA_SUCCESS) {
		*last = node;
	}
	return r;
}

/* Appends an event record node to the chain gr whose last node is *last. */
static CUresult chain_record(CUgraph gr, CUgraphNode *last, CUevent e)
{
	CUgraphNode node;
	CUresult r = cuGraphAddEventRecordNode(&node, gr, last, *last ? 1 : 0, e);
	if (r == CUDA_SUCCESS) {
		*last = node;
	}
	return r;
}

/*
 * An executable graph of [record start, copy a to da, record key, copy b
 * to db, record ready], the runtime's per-(slot, stream) chain.
 */
static bool copy_chain(CUgraphExec *x, CUevent ev[3], CUdeviceptr da, const void *a, CUdeviceptr db,
		       const void *b, size_t n)
{
	CUgraph gr;
	CUgraphNode last = NULL;
	for (int i = 0; i < 3; i++) {
		CK(cuEventCreate(&ev[i], CU_EVENT_DEFAULT));
	}
	CK(cuGraphCreate(&gr, 0));
	CK(chain_record(gr, &last, ev[0]));
	CK(chain_copy(gr, &last, da, a, n));
	CK(chain_record(gr, &last, ev[1]));
	CK(chain_copy(gr, &last, db, b, n));
	CK(chain_record(gr, &last, ev[2]));
	CK(cuGraphInstantiateWithFlags(x, gr, 0));
	CK(cuGraphDestroy(gr));
	return true;
}

/*
 * A launch queues the chain on the stream and returns: the copies land,
 * the events complete in node order and time the copies (1 MiB at 0.1
 * GB/s: 10.5 ms each); launches queue behind each other; the copies read
 * the host buffers when they run.
 */
static bool check_graph_launch(void)
{
	enum { SIZE = 1 << 20 };
	CUstream s;
	CUdeviceptr da, db;
	void *ha, *hb;
	CUevent ev[3];
	CUgraphExec x;
	float ms[3];
	if (!setup() || !stream_buffers(&s, CU_STREAM_NON_BLOCKING, &da, &ha, SIZE, 'a')) {
		return false;
	}
	CK(cuMemAlloc(&db, SIZE));
	hb = pinned(SIZE, 'b');
	EXPECT(hb, "cuMemHostAlloc failed");
	if (!copy_chain(&x, ev, da, ha, db, hb, SIZE)) {
		return false;
	}
	double t0 = now();
	CK(cuGraphLaunch(x, s));
	CK(cuGraphLaunch(x, s));
	double issued = now() - t0;
	WANT(cuEventQuery(ev[2]), CUDA_ERROR_NOT_READY);
	CK(cuEventSynchronize(ev[2]));
	double t = now() - t0;
	EXPECT(issued < 0.02, "two launches took %.3f s to return, want at once", issued);
	EXPECT(t > 0.040, "two launches of two 10.5 ms copies completed in %.3f s", t);
	CK(cuEventQuery(ev[0]));
	CK(cuEventQuery(ev[1]));
	CK(cuEventElapsedTime(&ms[0], ev[0], ev[1]));
	CK(cuEventElapsedTime(&ms[1], ev[1], ev[2]));
	CK(cuEventElapsedTime(&ms[2], ev[0], ev[2]));
	EXPECT(ms[0] > 9.5 && ms[1] > 9.5 && ms[2] < 80, "start-key %.2f ms, key-ready %.2f ms, start-ready %.2f ms: "
	       "want about 10.5, 10.5 and 21 (the second launch's records)", ms[0], ms[1], ms[2]);
	EXPECT(device_is(da, SIZE, 'a') && device_is(db, SIZE, 'b'), "the copies did not land");
	memset(ha, 'c', SIZE); /* synchronized: the launches' copies are done */
	memset(hb, 'd', SIZE);
	CK(cuGraphLaunch(x, s));
	for (;;) { /* later records first: a completed one implies the earlier ones completed */
		CUresult ready = cuEventQuery(ev[2]), key = cuEventQuery(ev[1]), start = cuEventQuery(ev[0]);
		EXPECT(ready != CUDA_SUCCESS || key == CUDA_SUCCESS, "ready completed before key");
		EXPECT(key != CUDA_SUCCESS || start == CUDA_SUCCESS, "key completed before start");
		if (ready == CUDA_SUCCESS) {
			break;
		}
		usleep(200);
	}
	EXPECT(device_is(da, SIZE, 'c') && device_is(db, SIZE, 'd'), "the third launch copied stale bytes");
	CK(cuGraphExecDestroy(x));
	EXPECT_NO_RACES();
	return true;
}

/*
 * Arguments are checked at the add as cuMemcpyHtoDAsync and cuEventRecord
 * check theirs; shapes other than a chain of host-to-device 1-D copies and
 * event records, and instantiation flags, are CUDA_ERROR_NOT_SUPPORTED
 * with a note; destroyed handles are refused; a launch whose memory or
 * event went away since the add queues nothing.
 */
static bool check_graph_refusals(void)
{
	enum { SIZE = 4096 };
	CUgraph gr, other, spare;
	CUgraphNode n1, n2, n3, on, deps[2];
	CUgraphExec x;
	CUevent e, gone;
	CUstream s;
	CUdeviceptr d, freed;
	void *h, *hfreed;
	float ms;
	WANT(cuGraphCreate(&gr, 0), CUDA_ERROR_NOT_INITIALIZED);
	if (!setup() || !stream_buffers(&s, CU_STREAM_NON_BLOCKING, &d, &h, SIZE, 1)) {
		return false;
	}
	CK(cuEventCreate(&e, CU_EVENT_DEFAULT));
	CK(cuGraphCreate(&gr, 0));
	CK(cuGraphCreate(&other, 0));
	WANT(cuGraphCreate(NULL, 0), CUDA_ERROR_INVALID_VALUE);
	WANT(cuGraphCreate(&spare, 1), CUDA_ERROR_INVALID_VALUE);
	CUDA_MEMCPY3D p = htod_params(d, h, SIZE);
	CK(cuGraphAddMemcpyNode(&n1, gr, NULL, 0, &p, ctx));
	CK(cuGraphAddEventRecordNode(&n2, gr, &n1, 1, e));
	/* shapes other than a chain */
	deps[0] = n1;
	deps[1] = n2;
	WANT(cuGraphAddEventRecordNode(&n3, gr, deps, 2, e), CUDA_ERROR_NOT_SUPPORTED); /* two dependencies */
	WANT(cuGraphAddEventRecordNode(&n3, gr, NULL, 0, e), CUDA_ERROR_NOT_SUPPORTED); /* a second root */
	WANT(cuGraphAddMemcpyNode(&n3, gr, &n1, 1, &p, ctx), CUDA_ERROR_NOT_SUPPORTED); /* a fork after n1 */
	/* copies other than host-to-device 1-D */
	CUDA_MEMCPY3D q = p;
	q.srcMemoryType = CU_MEMORYTYPE_DEVICE;
	q.srcDevice = d;
	q.dstMemoryType = CU_MEMORYTYPE_HOST;
	q.dstHost = h;
	WANT(cuGraphAddMemcpyNode(&n3, gr, &n2, 1, &q, ctx), CUDA_ERROR_NOT_SUPPORTED); /* device to host */
	q = p;
	q.WidthInBytes = SIZE / 2;
	q.Height = 2;
	q.srcPitch = q.dstPitch = SIZE / 2;
	WANT(cuGraphAddMemcpyNode(&n3, gr, &n2, 1, &q, ctx), CUDA_ERROR_NOT_SUPPORTED); /* 2-D */
	/* invalid arguments */
	q = p;
	q.srcMemoryType = (CUmemorytype)0;
	WANT(cuGraphAddMemcpyNode(&n3, gr, &n2, 1, &q, ctx), CUDA_ERROR_INVALID_VALUE);
	q = htod_params(d + SIZE - 8, h, 16);
	WANT(cuGraphAddMemcpyNode(&n3, gr, &n2, 1, &q, ctx), CUDA_ERROR_INVALID_VALUE); /* runs past the end */
	q = p;
	q.dstXInBytes = 8; /* honoured: the copy runs past the end */
	WANT(cuGraphAddMemcpyNode(&n3, gr, &n2, 1, &q, ctx), CUDA_ERROR_INVALID_VALUE);
	q = htod_params(d, NULL, SIZE);
	WANT(cuGraphAddMemcpyNode(&n3, gr, &n2, 1, &q, ctx), CUDA_ERROR_INVALID_VALUE);
	WANT(cuGraphAddMemcpyNode(&n3, gr, &n2, 1, NULL, ctx), CUDA_ERROR_INVALID_VALUE);
	WANT(cuGraphAddMemcpyNode(NULL, gr, &n2, 1, &p, ctx), CUDA_ERROR_INVALID_VALUE);
	WANT(cuGraphAddMemcpyNode(&n3, gr, NULL, 1, &p, ctx), CUDA_ERROR_INVALID_VALUE);
	WANT(cuGraphAddMemcpyNode(&n3, gr, &n2, 1, &p, (CUcontext)0x1234), CUDA_ERROR_INVALID_CONTEXT);
	WANT(cuGraphAddMemcpyNode(&n3, (CUgraph)0xdead00, &n2, 1, &p, ctx), CUDA_ERROR_INVALID_HANDLE);
	WANT(cuGraphAddEventRecordNode(&n3, gr, &n2, 1, (CUevent)0xdead00), CUDA_ERROR_INVALID_HANDLE);
	WANT(cuGraphAddEventRecordNode(NULL, gr, &n2, 1, e), CUDA_ERROR_INVALID_VALUE);
	CK(cuGraphAddEventRecordNode(&on, other, NULL, 0, e));
	WANT(cuGraphAddEventRecordNode(&n3, gr, &on, 1, e), CUDA_ERROR_INVALID_VALUE); /* another graph's node */
	deps[0] = deps[1] = n2;
	WANT(cuGraphAddEventRecordNode(&n3, gr, deps, 2, e), CUDA_ERROR_INVALID_VALUE); /* duplicates */
	CK(cuGraphAddMemcpyNode(&n3, gr, &n2, 1, &p, ctx)); /* the refused adds left the chain as it was */
	/* instantiation */
	WANT(cuGraphInstantiateWithFlags(&x, gr, CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH),
	     CUDA_ERROR_NOT_SUPPORTED);
	WANT(cuGraphInstantiateWithFlags(&x, gr, 2), CUDA_ERROR_INVALID_VALUE); /* no such flag */
	WANT(cuGraphInstantiateWithFlags(NULL, gr, 0), CUDA_ERROR_INVALID_VALUE);
	WANT(cuGraphInstantiateWithFlags(&x, (CUgraph)0xdead00, 0), CUDA_ERROR_INVALID_HANDLE);
	CK(cuGraphInstantiateWithFlags(&x, gr, 0));
	WANT(cuGraphLaunch((CUgraphExec)0xdead00, s), CUDA_ERROR_INVALID_HANDLE);
	WANT(cuGraphLaunch(x, (CUstream)0xdead00), CUDA_ERROR_INVALID_HANDLE);
	CK(cuCtxSetCurrent(NULL));
	WANT(cuGraphLaunch(x, s), CUDA_ERROR_INVALID_CONTEXT);
	CK(cuCtxSetCurrent(ctx));
	CK(cuGraphLaunch(x, NULL)); /* the NULL stream */
	CK(cuStreamSynchronize(NULL));
	CK(cuEventQuery(e));
	/* destroyed handles */
	CK(cuGraphExecDestroy(x));
	WANT(cuGraphExecDestroy(x), CUDA_ERROR_INVALID_HANDLE);
	WANT(cuGraphLaunch(x, s), CUDA_ERROR_INVALID_HANDLE);
	CK(cuGraphDestroy(gr));
	WANT(cuGraphDestroy(gr), CUDA_ERROR_INVALID_HANDLE);
	WANT(cuGraphAddEventRecordNode(&n3, gr, &n2, 1, e), CUDA_ERROR_INVALID_HANDLE);
	WANT(cuGraphInstantiateWithFlags(&x, gr, 0), CUDA_ERROR_INVALID_HANDLE);
	WANT(cuGraphAddEventRecordNode(&n3, other, &n1, 1, e), CUDA_ERROR_INVALID_VALUE); /* a destroyed node */
	/* memory or events gone since the add: the launch queues nothing (the first node records gone) */
	CK(cuMemAlloc(&freed, SIZE));
	hfreed = pinned(SIZE, 2);
	EXPECT(hfreed, "cuMemHostAlloc failed");
	CUevent ev[3];
	if (!copy_chain(&x, ev, d, h, freed, h, SIZE)) {
		return false;
	}
	CK(cuMemFree(freed));
	WANT(cuGraphLaunch(x, s), CUDA_ERROR_INVALID_VALUE);
	if (!copy_chain(&x, ev, d, h, d, hfreed, SIZE)) {
		return false;
	}
	CK(cuMemFreeHost(hfreed));
	WANT(cuGraphLaunch(x, s), CUDA_ERROR_INVALID_VALUE);
	CK(cuEventCreate(&gone, CU_EVENT_DEFAULT));
	CK(cuGraphCreate(&spare, 0));
	n3 = NULL;
	CK(chain_copy(spare, &n3, d, h, SIZE));
	CK(chain_record(spare, &n3, gone));
	CK(cuGraphInstantiateWithFlags(&x, spare, 0));
	CK(cuEventDestroy(gone));
	WANT(cuGraphLaunch(x, s), CUDA_ERROR_INVALID_HANDLE);
	CK(cuStreamSynchronize(s));
	WANT(cuEventElapsedTime(&ms, ev[0], ev[0]), CUDA_ERROR_INVALID_HANDLE); /* never recorded */
	const char *out = emu_output();
	EXPECT(count(out, "only chains are modelled") == 3 && strstr(out, "only host-to-device copies") &&
	       strstr(out, "only 1-D copies") && strstr(out, "flags 0x1 are not modelled") &&
	       strstr(out, "has been freed since"), "missing notes");
	return true;
}

/*
 * An executable graph is a snapshot: nodes added later do not run,
 * destroying the graph does not affect it, and destroying it with a
 * launch queued lets the launch finish. srcXInBytes and dstXInBytes offset
 * the copy.
 */
static bool check_graph_exec_snapshot(void)
{
	enum { SIZE = 4 << 20, SMALL = 4096 };
	CUstream s;
	CUdeviceptr da, db, dc;
	void *ha, *hb;
	CUgraph gr;
	CUgraphExec x;
	CUgraphNode last = NULL;
	CUevent launched;
	if (!setup() || !stream_buffers(&s, CU_STREAM_NON_BLOCKING, &da, &ha, SIZE, 'a')) {
		return false;
	}
	CK(cuMemAlloc(&db, SIZE));
	CK(cuMemAlloc(&dc, SMALL));
	CK(cuEventCreate(&launched, CU_EVENT_DEFAULT));
	hb = pinned(SIZE, 'b');
	unsigned char *hc = pinned(SMALL, 0);
	EXPECT(hb && hc, "cuMemHostAlloc failed");
	for (int i = 0; i < SMALL; i++) {
		hc[i] = (unsigned char)(i * 7 + 1);
	}
	CK(cuGraphCreate(&gr, 0));
	CK(chain_copy(gr, &last, da, ha, SIZE)); /* 42 ms */
	CUDA_MEMCPY3D p = htod_params(dc, hc, 1000);
	p.srcXInBytes = 100;
	p.dstXInBytes = 200;
	CK(cuGraphAddMemcpyNode(&last, gr, &last, 1, &p, ctx));
	CK(cuGraphInstantiateWithFlags(&x, gr, 0));
	CK(chain_copy(gr, &last, db, hb, SIZE)); /* after the instantiation */
	CK(cuGraphDestroy(gr));
	CK(cuGraphLaunch(x, s));
	CK(cuEventRecord(launched, s));
	CK(cuGraphExecDestroy(x));
	WANT(cuEventQuery(launched), CUDA_ERROR_NOT_READY);
	CK(cuStreamSynchronize(s));
	EXPECT(device_is(da, SIZE, 'a'), "the launch of the destroyed executable graph did not copy");
	EXPECT(device_is(db, SIZE, 0xa5), "a node added after the instantiation ran");
	unsigned char back[SMALL];
	CK(cuMemcpyDtoH(back, dc, SMALL));
	for (int i = 0; i < SMALL; i++) {
		int want = i >= 200 && i < 1200 ? hc[i - 100] : 0xa5;
		EXPECT(back[i] == want, "device byte %d is %d, want %d (srcXInBytes 100, dstXInBytes 200)", i, back[i],
		       want);
	}
	EXPECT_NO_RACES();
	return true;
}

/* Race (a) on a graph's copy: its pinned source rewritten before the copy ran. */
static bool check_graph_race_staged(void)
{
	enum { SLOW = 4 << 20, SIZE = 4096 };
	CUstream s;
	CUdeviceptr slow, d;
	void *big, *h;
	CUgraph gr;
	CUgraphExec x;
	CUgraphNode last = NULL;
	if (!setup() || !stream_buffers(&s, CU_STREAM_NON_BLOCKING, &slow, &big, SLOW, 0)) {
		return false;
	}
	CK(cuMemAlloc(&d, SIZE));
	h = pinned(SIZE, 'A');
	EXPECT(h, "cuMemHostAlloc failed");
	CK(cuGraphCreate(&gr, 0));
	CK(chain_copy(gr, &last, d, h, SIZE));
	CK(cuGraphInstantiateWithFlags(&x, gr, 0));
	CK(cuMemcpyHtoDAsync(slow, big, SLOW, s)); /* 40 ms at 0.1 GB/s */
	CK(cuGraphLaunch(x, s));
	memset(h, 'B', SIZE);
	CK(cuStreamSynchronize(s));
	EXPECT(device_is(d, SIZE, 'B'), "the device did not get the bytes present when the copy ran");
	char want[300];
	snprintf(want, sizeof want, "host buffer 0x%lx (4096 bytes) changed between cuGraphLaunch on stream 0x%lx "
		 "and the end of its copy to device 0x%llx (the device received bytes written after the call)",
		 (unsigned long)h, (unsigned long)s, (unsigned long long)d);
	EXPECT_ONE_REPORT(want);
	return true;
}

/* Race (b) on a graph's copy: a kernel on another stream reads its destination without an event between. */
static bool check_graph_race_unordered(void)
{
	enum { SIZE = 4096 };
	CUstream loader, consumer;
	CUdeviceptr buf, out;
	CUgraph gr;
	CUgraphExec x;
	CUgraphNode last = NULL;
	if (!setup_spin(&loader, &consumer, &buf, &out, SIZE)) {
		return false;
	}
	void *h = pinned(SIZE, 1);
	EXPECT(h, "cuMemHostAlloc failed");
	CK(cuGraphCreate(&gr, 0));
	CK(chain_copy(gr, &last, buf, h, SIZE));
	CK(cuGraphInstantiateWithFlags(&x, gr, 0));
	CK(cuGraphLaunch(x, loader));
	CK(spin(consumer, 50 * 1000 * 1000, buf, out, SIZE));
	CK(cuStreamSynchronize(consumer));
	char want[320];
	snprintf(want, sizeof want, "device 0x%llx+4096: kernel spin on stream 0x%lx reads, but the copy "
		 "(graph node of cuGraphLaunch) on stream 0x%lx writing it is not ordered before it (missing "
		 "cuStreamWaitEvent?)",
		 (unsigned long long)buf, (unsigned long)consumer, (unsigned long)loader);
	EXPECT_ONE_REPORT(want);
	return true;
}

/*
 * CUDAEMU_FAIL_COPY counts a graph's copies as cuMemcpyHtoDAsync calls:
 * the launch returns CUDA_ERROR_UNKNOWN with the nodes before the failing
 * copy queued, and none after it.
 */
static bool check_graph_fail_copy(void)
{
	enum { SIZE = 64 };
	CUstream s;
	CUdeviceptr da, db;
	void *ha, *hb;
	CUevent ev[3];
	CUgraphExec x;
	float ms;
	if (!setup() || !stream_buffers(&s, CU_STREAM_NON_BLOCKING, &da, &ha, SIZE, 1)) {
		return false;
	}
	CK(cuMemAlloc(&db, SIZE));
	hb = pinned(SIZE, 2);
	EXPECT(hb, "cuMemHostAlloc failed");
	if (!copy_chain(&x, ev, da, ha, db, hb, SIZE)) {
		return false;
	}
	setenv("CUDAEMU_FAIL_COPY", "2", 1);
	WANT(cuGraphLaunch(x, s), CUDA_ERROR_UNKNOWN); /* copy b is call 2 */
	CK(cuStreamSynchronize(s));
	EXPECT(device_is(da, SIZE, 1), "the copy before the failing one did not run");
	EXPECT(device_is(db, SIZE, 0xa5), "the failing copy ran");
	CK(cuEventElapsedTime(&ms, ev[0], ev[1]));                             /* start and key recorded */
	WANT(cuEventElapsedTime(&ms, ev[0], ev[2]), CUDA_ERROR_INVALID_HANDLE); /* ready never recorded */
	CK(cuGraphLaunch(x, s));                                                /* calls 3 and 4 */
	CK(cuStreamSynchronize(s));
	EXPECT(device_is(db, SIZE, 2), "the next launch did not copy");
	CK(cuEventElapsedTime(&ms, ev[0], ev[2]));
	setenv("CUDAEMU_FAIL_COPY", "3", 1);
	CK(cuMemcpyHtoDAsync(da, ha, SIZE, s));        /* call 1 */
	WANT(cuGraphLaunch(x, s), CUDA_ERROR_UNKNOWN); /* calls 2 (a) and 3 (b, fails) */
	CK(cuStreamSynchronize(s));
	EXPECT(count(emu_output(), "(a memcpy node of cuGraphLaunch) fails with CUDA_ERROR_UNKNOWN") == 2,
	       "want 2 notes");
	return true;
}

/*
 * Launches of one executable graph are ordered even on two streams (the
 * second waits for the first: no race on the buffer both write, and with
 * two engines twice a copy's time); launches of two instantiations of one
 * graph are not.
 */
static bool check_graph_two_streams(void)
{
	enum { SIZE = 4 << 20 };
	CUstream s1, s2;
	CUdeviceptr d;
	void *h;
	CUgraph gr;
	CUgraphExec x, y;
	CUgraphNode last = NULL;
	CUevent first;
	if (!setup() || !stream_buffers(&s1, CU_STREAM_NON_BLOCKING, &d, &h, SIZE, 5)) {
		return false;
	}
	CK(cuStreamCreate(&s2, CU_STREAM_NON_BLOCKING));
	CK(cuEventCreate(&first, CU_EVENT_DEFAULT));
	CK(cuGraphCreate(&gr, 0));
	CK(chain_copy(gr, &last, d, h, SIZE)); /* 42 ms at 0.1 GB/s */
	CK(cuGraphInstantiateWithFlags(&x, gr, 0));
	CK(cuGraphInstantiateWithFlags(&y, gr, 0));
	double t0 = now();
	CK(cuGraphLaunch(x, s1));
	CK(cuEventRecord(first, s1));
	CK(cuGraphLaunch(x, s2));
	CK(cuStreamSynchronize(s2));
	double t = now() - t0;
	CK(cuEventQuery(first));
	EXPECT(t > 0.080, "the second launch of one executable graph completed after %.3f s, want after the "
	       "first (2 x 42 ms)", t);
	EXPECT_NO_RACES();
	t0 = now();
	CK(cuGraphLaunch(x, s1));
	CK(cuGraphLaunch(y, s2));
	CK(cuStreamSynchronize(s1));
	CK(cuStreamSynchronize(s2));
	t = now() - t0;
	EXPECT(t < 0.080, "launches of two executable graphs took %.3f s, want them concurrent (42 ms)", t);
	EXPECT_ONE_REPORT("copy (graph node of cuGraphLaunch) on stream");
	return true;
}

/* A copy node from pageable memory stages it at the launch, which first waits for the stream. */
static bool check_graph_pageable(void)
{
	enum { SIZE = 4 << 20, SMALL = 4096 };
	CUstream s;
	CUdeviceptr big, d;
	void *h;
	CUgraph gr;
	CUgraphExec x;
	CUgraphNode last = NULL;
	if (!setup() || !stream_buffers(&s, CU_STREAM_NON_BLOCKING, &big, &h, SIZE, 0)) {
		return false;
	}
	CK(cuMemAlloc(&d, SMALL));
	unsigned char *pageable = malloc(SMALL);
	EXPECT(pageable, "malloc failed");
	memset(pageable, 'p', SMALL);
	CK(cuGraphCreate(&gr, 0));
	CK(chain_copy(gr, &last, d, pageable, SMALL));
	CK(cuGraphInstantiateWithFlags(&x, gr, 0));
	CK(cuMemcpyHtoDAsync(big, h, SIZE, s)); /* 40 ms */
	double t0 = now();
	CK(cuGraphLaunch(x, s));
	double t = now() - t0;
	memset(pageable, 'q', SMALL); /* the bytes were staged: allowed */
	CK(cuStreamSynchronize(s));
	EXPECT(t > 0.03, "the launch returned after %.3f s, before the stream's earlier copy", t);
	EXPECT(device_is(d, SMALL, 'p'), "the device did not get the staged bytes");
	EXPECT_NO_RACES();
	free(pageable);
	return true;
}

/* ---- driver ---- */

struct check {
	const char *name;
	const char *env; /* space-separated NAME=VALUE settings */
	bool (*run)(void);
	int want_exit;   /* the child's exit status when it passes */
};

#define SLOW_COPIES "CUDAEMU_COPY_GBPS=0.1 CUDAEMU_ON_RACE=log"

static const struct check checks[] = {
	{"in_order", SLOW_COPIES, check_in_order, 0},
	{"reads_at_execution", SLOW_COPIES, check_reads_at_execution, 0},
	{"stale_until_complete", "CUDAEMU_COPY_GBPS=0.01 CUDAEMU_COPY_ENGINES=2 CUDAEMU_ON_RACE=log",
	 check_stale_until_complete, 0},
	{"event_timing", "CUDAEMU_COPY_GBPS=0.1", check_event_timing, 0},
	{"rerecord", SLOW_COPIES, check_rerecord, 0},
	{"wait_event_orders", SLOW_COPIES, check_wait_event_orders, 0},
	{"wait_unrecorded", SLOW_COPIES, check_wait_unrecorded, 0},
	{"one_engine", "CUDAEMU_COPY_GBPS=0.1 CUDAEMU_COPY_ENGINES=1", check_one_engine, 0},
	{"two_engines", "CUDAEMU_COPY_GBPS=0.1 CUDAEMU_COPY_ENGINES=2", check_two_engines, 0},
	{"memory", "CUDAEMU_MEM_MB=64", check_memory, 0},
	{"primary_refcount", "", check_primary_refcount, 0},
	{"no_context", "", check_no_context, 0},
	{"devices", "CUDAEMU_DEVICES=2 CUDAEMU_CLOCK_KHZ=1500000 CUDAEMU_COPY_ENGINES=3", check_devices, 0},
	{"fail_init", "CUDAEMU_FAIL_INIT=100", check_fail_init, 0},
	{"fail_copy", "", check_fail_copy, 0},
	{"kernel_spin", "CUDAEMU_CLOCK_KHZ=2000000", check_kernel_spin, 0},
	{"unknown_kernel", "", check_unknown_kernel, 0},
	{"race_unordered_read", "CUDAEMU_ON_RACE=log", check_race_unordered_read, 0},
	{"race_overwrite", SLOW_COPIES, check_race_overwrite, 0},
	{"no_race_with_done_event", SLOW_COPIES, check_no_race_with_done_event, 0},
	{"race_exits_66", "", check_race_exits, 66},
	{"blocking_sync_cpu", "CUDAEMU_COPY_GBPS=0.01", check_blocking_sync, 0},
	{"destroyed_handles", SLOW_COPIES, check_destroyed_handles, 0},
	{"free_with_queued_work", SLOW_COPIES, check_free_with_queued_work, 0},
	{"null_stream", SLOW_COPIES, check_null_stream, 0},
	{"pageable", SLOW_COPIES, check_pageable, 0},
	{"copy_latency", "CUDAEMU_COPY_LATENCY_US=50000", check_copy_latency, 0},
	{"copy_after_free_host", "CUDAEMU_DEVICES=2 " SLOW_COPIES, check_copy_after_free_host, 0},
	{"host_joins", "CUDAEMU_ON_RACE=log", check_host_joins, 0},
	{"graph_launch", SLOW_COPIES, check_graph_launch, 0},
	{"graph_refusals", "", check_graph_refusals, 0},
	{"graph_exec_snapshot", SLOW_COPIES, check_graph_exec_snapshot, 0},
	{"graph_race_staged", SLOW_COPIES, check_graph_race_staged, 0},
	{"graph_race_unordered", "CUDAEMU_ON_RACE=log", check_graph_race_unordered, 0},
	{"graph_fail_copy", "", check_graph_fail_copy, 0},
	{"graph_two_streams", "CUDAEMU_COPY_GBPS=0.1 CUDAEMU_COPY_ENGINES=2 CUDAEMU_ON_RACE=log",
	 check_graph_two_streams, 0},
	{"graph_pageable", SLOW_COPIES, check_graph_pageable, 0},
};

static void set_env(const char *settings)
{
	char *copy = strdup(settings);
	for (char *tok = strtok(copy, " "); tok; tok = strtok(NULL, " ")) {
		char *eq = strchr(tok, '=');
		*eq = 0;
		setenv(tok, eq + 1, 1);
	}
	free(copy);
}

/* Runs one check in a child process; true if it passed. */
static bool run(const struct check *c)
{
	fflush(stdout);
	double t0 = now();
	pid_t pid = fork();
	if (pid == 0) {
		check_name = c->name;
		set_env(c->env);
		captured_stderr = tmpfile();
		if (!captured_stderr || dup2(fileno(captured_stderr), 2) < 0) {
			_exit(2);
		}
		alarm(30);
		bool ok = c->run();
		fflush(stdout);
		if (!ok) {
			fprintf(stdout, "    %s: emulator output:\n%s", c->name, emu_output());
			fflush(stdout);
		}
		_exit(ok ? 0 : 1);
	}
	int status;
	waitpid(pid, &status, 0);
	bool ok = WIFEXITED(status) && WEXITSTATUS(status) == c->want_exit;
	if (ok) {
		printf("PASS %s (%.2fs)\n", c->name, now() - t0);
	} else if (WIFSIGNALED(status)) {
		printf("FAIL %s: killed by signal %d%s\n", c->name, WTERMSIG(status),
		       WTERMSIG(status) == SIGALRM ? " (timed out)" : "");
	} else {
		printf("FAIL %s: exit status %d, want %d\n", c->name, WEXITSTATUS(status), c->want_exit);
	}
	return ok;
}

/* Unsets every CUDAEMU_ variable (README.md, "Environment", lists them), so that each check sees only its own. */
static void clear_settings(void)
{
	extern char **environ;
	for (char **e = environ; *e;) {
		if (strncmp(*e, "CUDAEMU_", 8) != 0) {
			e++;
			continue;
		}
		char *name = strndup(*e, strcspn(*e, "="));
		if (!name) {
			exit(2);
		}
		unsetenv(name);
		free(name);
		e = environ; /* unsetenv moved the entries */
	}
}

int main(int argc, char **argv)
{
	clear_settings();
	int failed = 0, ran = 0;
	for (size_t i = 0; i < sizeof checks / sizeof checks[0]; i++) {
		bool selected = argc < 2;
		for (int a = 1; a < argc; a++) {
			selected |= strcmp(argv[a], checks[i].name) == 0;
		}
		if (selected) {
			ran++;
			failed += !run(&checks[i]);
		}
	}
	printf("%s: %d of %d checks passed\n", failed ? "FAIL" : "ok", ran - failed, ran);
	return failed ? 1 : 0;
}
