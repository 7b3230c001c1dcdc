//go:build cgo

package python

/*
#include <stdlib.h>
#include "abi.h"
*/
import "C"

import (
	"encoding/json"
	"unsafe"
)

// The exported functions are the C ABI of abi.h, but for the hot path
// that ready.c implements in C (lg_next, lg_take, lg_release), whose Go
// halves are in ready.go. Errors come back as a JSON object in *err
// (pyError, errors.go), which the caller frees with lg_free; Python
// raises it as an exception.

//export lg_open
func lg_open(module, source, location, options *C.char, errOut **C.char) C.int64_t {
	h, err := open(C.GoString(module), C.GoString(source), C.GoString(location), []byte(C.GoString(options)))
	if err != nil {
		setErr(errOut, err)
		return 0
	}
	return C.int64_t(h.id)
}

//export lg_close
func lg_close(h C.int64_t, errOut **C.char) C.int {
	l, err := lookup(int64(h))
	if err == nil {
		err = l.close()
	}
	if err != nil {
		setErr(errOut, err)
		return C.LG_ERROR
	}
	return C.LG_OK
}

//export lg_len
func lg_len(h C.int64_t) C.int64_t {
	l, err := lookup(int64(h))
	if err != nil {
		return -1
	}
	return C.int64_t(l.loader.Len())
}

//export lg_epoch
func lg_epoch(h C.int64_t, epoch, start C.int64_t, errOut **C.char) C.int {
	l, err := lookup(int64(h))
	if err == nil {
		err = l.startEpoch(int(epoch), int(start))
	}
	if err != nil {
		setErr(errOut, err)
		return C.LG_ERROR
	}
	return C.LG_OK
}

//export lg_stop
func lg_stop(h C.int64_t, wait C.int) {
	if l, err := lookup(int64(h)); err == nil {
		l.stopEpoch(wait != 0)
	}
}

//export lg_info
func lg_info(h C.int64_t, what *C.char, a, b C.int64_t, errOut **C.char) *C.char {
	var v any
	var err error
	if q := C.GoString(what); h == 0 && q == "process" {
		v = processInfo()
	} else if l, lerr := lookup(int64(h)); lerr != nil {
		err = lerr
	} else {
		v, err = l.info(q, int(a), int(b))
	}
	var js []byte
	if err == nil {
		js, err = json.Marshal(v)
	}
	if err != nil {
		setErr(errOut, err)
		return nil
	}
	return C.CString(string(js))
}

//export lg_predict
func lg_predict(module, manifest, root, options *C.char, errOut **C.char) C.int64_t {
	w, err := predict(C.GoString(module), C.GoString(manifest), C.GoString(root), []byte(C.GoString(options)))
	if err != nil {
		setErr(errOut, err)
		return 0
	}
	return C.int64_t(w.id)
}

//export lg_predict_loader
func lg_predict_loader(w C.int64_t, options *C.char, errOut **C.char) C.int64_t {
	wr, err := writerOf(int64(w))
	var h *handle
	if err == nil {
		h, err = wr.loader([]byte(C.GoString(options)))
	}
	if err != nil {
		setErr(errOut, err)
		return 0
	}
	return C.int64_t(h.id)
}

//export lg_predict_write
func lg_predict_write(w C.int64_t, indices *C.int64_t, n C.int64_t, values *unsafe.Pointer, nbytes *C.int64_t, outputs C.int64_t, errOut **C.char) C.int {
	wr, err := writerOf(int64(w))
	if err == nil {
		idx := make([]int, n)
		for i, v := range unsafe.Slice((*int64)(unsafe.Pointer(indices)), n) {
			idx[i] = int(v)
		}
		err = wr.write(idx, unsafe.Slice(values, outputs), unsafe.Slice((*int64)(unsafe.Pointer(nbytes)), outputs))
	}
	if err != nil {
		setErr(errOut, err)
		return C.LG_ERROR
	}
	return C.LG_OK
}

//export lg_predict_close
func lg_predict_close(w C.int64_t, errOut **C.char) C.int {
	wr, err := writerOf(int64(w))
	if err == nil {
		err = wr.close()
	}
	if err != nil {
		setErr(errOut, err)
		return C.LG_ERROR
	}
	return C.LG_OK
}

//export lg_predict_stats
func lg_predict_stats(w C.int64_t, errOut **C.char) *C.char {
	wr, err := writerOf(int64(w))
	if err != nil {
		setErr(errOut, err)
		return nil
	}
	js, _ := json.Marshal(predictStats(wr.p.Stats()))
	return C.CString(string(js))
}

//export lg_logs
func lg_logs() *C.char { return C.CString(string(takeLogs())) }

//export lg_datasets
func lg_datasets() *C.char {
	js, _ := json.Marshal(fingerprints())
	return C.CString(string(js))
}

//export lg_free
func lg_free(p *C.char) { C.free(unsafe.Pointer(p)) }

// setErr hands err to the caller as its JSON description.
func setErr(out **C.char, err error) {
	if out != nil {
		*out = C.CString(string(describeError(err)))
	}
}
