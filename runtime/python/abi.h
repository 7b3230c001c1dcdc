// The C ABI that a generated loader's Python module calls through ctypes,
// and DLPack's structures (dlpack.h v0.x, the layout torch 1.13 and numpy
// 1.24 read). Written once, for every dataset: runtime/python implements
// it; docs/PYTHON.md describes it.
#ifndef LOADERGEN_ABI_H
#define LOADERGEN_ABI_H

#include <stdint.h>

typedef struct {
	int32_t device_type; // 1 CPU, 2 CUDA
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

// lg_ctx is a DLManagedTensor's manager_ctx: the loader and the slot
// whose staging the tensor points into.
typedef struct {
	int64_t handle;
	int64_t slot;
} lg_ctx;

// lg_batch is what lg_next fills: where the batch is, and its indices.
typedef struct {
	int64_t slot;     // the staging slot: pass it to lg_take and lg_release
	int64_t number;   // batch number within the epoch
	int64_t n;        // samples in the batch
	int64_t *indices; // n dataset indices, valid until lg_release
	int64_t logs;     // log records waiting for lg_logs
	int64_t device_type; // DLPack's device of the batch's tensors: 1 CPU, 2 CUDA
	int64_t device_id;
} lg_batch;

// lg_next's results.
enum { LG_OK = 0, LG_END = 1, LG_TIMEOUT = 2, LG_HELD = 3, LG_ERROR = -1 };

// The deleter of every DLManagedTensor the library hands out, and the
// destructor of DLPack capsules Python made that no consumer took.
void lg_dl_deleter(DLManagedTensor *t);
void lg_capsule_destructor(void *capsule);

#endif
