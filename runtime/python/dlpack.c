//go:build cgo

// The C half of the DLPack hand-off: the deleter that a consumer (torch,
// numpy) calls when a tensor dies, the capsule destructor Python calls for
// a capsule no consumer took, and the capsules of a batch's lease and keys
// made here rather than in Python. Destructors and deleters run on
// whatever thread the consumer releases on.
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>

#include "abi.h"
#include "_cgo_export.h"

// forked is set in a child forked after the library loaded: its Go
// runtime has no threads, and calling into it could hang, so the deleter
// does nothing there (the parent still owns the slot).
static volatile int forked;

static void mark_forked(void) { forked = 1; }

__attribute__((constructor)) static void watch_fork(void) {
	pthread_atfork(NULL, NULL, mark_forked);
}

void lg_dl_deleter(DLManagedTensor *t) {
	if (forked || t == NULL) {
		return;
	}
	lg_release(t->manager_ctx);
}

// The Python C API functions this file calls, found in the process (the
// Python interpreter that loaded the library) at first use: the library
// does not link against libpython, so that it builds and its Go tests run
// without one. find_python fills it; every caller holds the GIL (lg_lease
// and lg_capsules are called through ctypes.PyDLL, and Python runs capsule
// destructors with it), which orders the writes before every read.
// lg_dl_deleter, which a consumer may call without the GIL, does not use it.
static struct {
	int found;
	int (*capsule_is_valid)(void *, const char *);
	void *(*capsule_get_pointer)(void *, const char *);
	void *(*capsule_new)(void *, const char *, void (*)(void *));
	void *(*tuple_new)(ssize_t);
	int (*tuple_set_item)(void *, ssize_t, void *);
	void (*decref)(void *);
	void (*incref)(void *);
	void *none;
} py;

static int find_python(void) {
	if (py.found) {
		return 1;
	}
	py.capsule_is_valid = (int (*)(void *, const char *))dlsym(RTLD_DEFAULT, "PyCapsule_IsValid");
	py.capsule_get_pointer = (void *(*)(void *, const char *))dlsym(RTLD_DEFAULT, "PyCapsule_GetPointer");
	py.capsule_new = (void *(*)(void *, const char *, void (*)(void *)))dlsym(RTLD_DEFAULT, "PyCapsule_New");
	py.tuple_new = (void *(*)(ssize_t))dlsym(RTLD_DEFAULT, "PyTuple_New");
	py.tuple_set_item = (int (*)(void *, ssize_t, void *))dlsym(RTLD_DEFAULT, "PyTuple_SetItem");
	py.decref = (void (*)(void *))dlsym(RTLD_DEFAULT, "Py_DecRef");
	py.incref = (void (*)(void *))dlsym(RTLD_DEFAULT, "Py_IncRef");
	py.none = dlsym(RTLD_DEFAULT, "_Py_NoneStruct");
	py.found = py.capsule_is_valid && py.capsule_get_pointer && py.capsule_new && py.tuple_new &&
		   py.tuple_set_item && py.decref && py.incref && py.none;
	return py.found;
}

void lg_capsule_destructor(void *capsule) {
	if (!find_python()) {
		return;
	}
	// A consumer that took the tensor renamed the capsule "used_dltensor"
	// and calls the deleter itself.
	if (!py.capsule_is_valid(capsule, "dltensor")) {
		return;
	}
	DLManagedTensor *t = (DLManagedTensor *)py.capsule_get_pointer(capsule, "dltensor");
	if (t != NULL && t->deleter != NULL) {
		t->deleter(t);
	}
}

static const char lease_name[] = "loadergen.lease";

static void lease_destructor(void *capsule) {
	void *lease = py.capsule_get_pointer(capsule, lease_name);
	if (!forked && lease != NULL) {
		lg_release(lease);
	}
}

// lg_lease returns a capsule that holds lease's batch: its destructor
// releases the hold, so that a Python batch gives its hold back when it
// dies without a Python method or a ctypes call. NULL if Python's C API is
// not found (then Python raises).
void *lg_lease(void *lease) {
	if (!find_python()) {
		return NULL;
	}
	return py.capsule_new(lease, lease_name, lease_destructor);
}

// lg_capsules returns a tuple of DLPack capsules, one per key of lease's
// batch in plan order, each with a hold of its own (lg_take's, with
// stream); on an error, None with *err set, and the holds taken so far
// given back. One call for every key of a batch: what Batch.torch() of a
// host batch pays instead of a ctypes call and a capsule per key.
void *lg_capsules(void *lease, int64_t stream, char **err) {
	lg_slot *s = lease;
	if (!find_python()) {
		return NULL;
	}
	void *tuple = py.tuple_new(s->keys);
	if (tuple == NULL) {
		return NULL;
	}
	for (int64_t k = 0; k < s->keys; k++) {
		DLManagedTensor *t = lg_take(lease, k, stream, err);
		void *c = t == NULL ? NULL : py.capsule_new(t, "dltensor", lg_capsule_destructor);
		if (c == NULL) {
			if (t != NULL) {
				t->deleter(t);
			}
			py.decref(tuple); // its capsules' destructors give their holds back
			if (t == NULL) {
				py.incref(py.none);
				return py.none;
			}
			return NULL;
		}
		py.tuple_set_item(tuple, k, c);
	}
	return tuple;
}
