// The C ABI that a generated loader's Python module calls through ctypes,
// and DLPack's structures (dlpack.h v0.x, the layout torch 1.13 and numpy
// 1.24 read). Written once, for every dataset: runtime/python implements
// it; docs/PYTHON.md describes it.
#ifndef LOADERGEN_ABI_H
#define LOADERGEN_ABI_H

#include <stdint.h>

// DLPack's device types, as DLDevice.device_type and lg_batch.device_type
// give them.
enum { kDLCPU = 1, kDLCUDA = 2 };

typedef struct {
	int32_t device_type; // kDLCPU or kDLCUDA
	int32_t device_id;
} DLDevice;

typedef struct {
	uint8_t code; // 0 int, 1 uint, 2 float, 4 bfloat, 6 bool
	uint8_t bits;
	uint16_t lanes;
} DLDataType;

typedef struct {
	void *data;
	DLDevice device;
	int32_t ndim;
	DLDataType dtype;
	int64_t *shape;
	int64_t *strides; // NULL: C order
	uint64_t byte_offset;
} DLTensor;

typedef struct DLManagedTensor {
	DLTensor dl_tensor;
	void *manager_ctx;
	void (*deleter)(struct DLManagedTensor *self);
} DLManagedTensor;

// lg_batch is what lg_next fills: where the batch is, and its indices.
typedef struct {
	void *lease;      // the batch's hold on its slot: pass it to lg_take and lg_release
	int64_t number;   // batch number within the epoch
	int64_t n;        // samples in the batch
	int64_t *indices; // n dataset indices, valid until lg_release
	int64_t logs;     // log records waiting for lg_logs
	int64_t device_type; // DLPack's device of the batch's tensors: kDLCPU or kDLCUDA
	int64_t device_id;
} lg_batch;

// lg_slot is the C memory of one staging slot of loader handle, which the
// Go side fills when it hands the slot's batch out (batch.logs and
// batch.lease are lg_next's). It is every DLManagedTensor's manager_ctx
// and every lease. holds counts the batch's lease and its live tensors,
// atomically: the Go side sets it to 1 before queueing the batch, lg_take
// adds one, lg_release and the deleters take one off, and the one that
// takes the last gives the slot back to the Go side.
typedef struct {
	int64_t handle;
	int64_t slot;
	int64_t holds;
	int64_t keys;               // tensors has one per key
	DLManagedTensor *tensors;
	lg_batch batch;
	struct lg_queue *queue; // the loader's, to which a release returns the slot
} lg_slot;

// lg_queue is a loader's queue between the Go side's pump and Python
// (ready.c): batches ready for lg_next, and slots whose last hold Python
// released, both passed without entering Go.
typedef struct lg_queue lg_queue;

lg_queue *lgq_open(int64_t handle);
void lgq_retire(lg_queue *q);
void lgq_start(lg_queue *q, int goal);
void lgq_push(lg_queue *q, lg_slot *s);
lg_slot *lgq_pop(lg_queue *q);
lg_slot *lgq_returned(lg_queue *q);
void lgq_await_returned(lg_queue *q, int64_t timeout_ms);
void lgq_wake(lg_queue *q);
void lgq_finish(lg_queue *q);
void lgq_idle(lg_queue *q);
int64_t lgq_take_waited(lg_queue *q);
void lg_set_pending_logs(int64_t n);

// lg_next's results.
enum { LG_OK = 0, LG_END = 1, LG_TIMEOUT = 2, LG_HELD = 3, LG_ERROR = -1 };

// The calls ready.c implements in C (docs/PYTHON.md describes the ABI).
int lg_next(int64_t h, int64_t timeout_ms, lg_batch *out, char **err);
DLManagedTensor *lg_take(void *lease, int64_t key, int64_t stream, char **err);
void lg_release(void *lease);

// The deleter of every DLManagedTensor the library hands out, and the
// destructor of DLPack capsules Python made that no consumer took.
void lg_dl_deleter(DLManagedTensor *t);
void lg_capsule_destructor(void *capsule);

// Python objects made in C (dlpack.c), through Python's C API found in the
// process: a batch's lease as a capsule whose destructor releases it, and
// the DLPack capsules of every key of a batch at once.
void *lg_lease(void *lease);
void *lg_capsules(void *lease, int64_t stream, char **err);

#endif
