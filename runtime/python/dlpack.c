//go:build cgo

// The C half of the DLPack hand-off: the deleter that a consumer (torch,
// numpy) calls when a tensor dies, and the capsule destructor Python
// calls for a capsule no consumer took. Both run on whatever thread the
// consumer releases on.
#include <dlfcn.h>
#include <pthread.h>
#include <stddef.h>

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

// The Python C API functions the destructor needs, found in the process
// (the Python interpreter that loaded the library) at first use.
static int (*capsule_is_valid)(void *, const char *);
static void *(*capsule_get_pointer)(void *, const char *);

void lg_capsule_destructor(void *capsule) {
	if (capsule_is_valid == NULL) {
		capsule_is_valid = (int (*)(void *, const char *))dlsym(RTLD_DEFAULT, "PyCapsule_IsValid");
		capsule_get_pointer = (void *(*)(void *, const char *))dlsym(RTLD_DEFAULT, "PyCapsule_GetPointer");
		if (capsule_is_valid == NULL || capsule_get_pointer == NULL) {
			return;
		}
	}
	// A consumer that took the tensor renamed the capsule "used_dltensor"
	// and calls the deleter itself.
	if (!capsule_is_valid(capsule, "dltensor")) {
		return;
	}
	DLManagedTensor *t = (DLManagedTensor *)capsule_get_pointer(capsule, "dltensor");
	if (t != NULL && t->deleter != NULL) {
		t->deleter(t);
	}
}
