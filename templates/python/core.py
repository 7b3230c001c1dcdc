"""The Python side of loadergen's library: written once, for every dataset.

`loadergen python` writes this package as _loadergen beside the shared
library it builds (libloadergen.so, the generated Go loaders and their
runtime) and one module per dataset, which subclasses Loader and Batch with
the dataset's keys. The library is loaded through ctypes; batches reach
torch, numpy or JAX through DLPack, pointing into the loader's staging
slots: no copy. A slot returns to the loader when the batch and every
tensor taken from it are gone, never when the loop moves on.
"""

import ctypes
import gc
import json
import logging
import os
import threading

__all__ = [
    "Batch",
    "Predictions",
    "BusyError",
    "ClosedError",
    "Epoch",
    "ForkedError",
    "Loader",
    "LoaderError",
    "ReadError",
    "SlotsHeldError",
    "Tensor",
    "key",
]


class LoaderError(RuntimeError):
    """An error of the Go loader; its text is the Go error's, whole."""


class ReadError(LoaderError):
    """A sample could not be read: the epoch ends with it.

    batch, index and key name the batch, the sample's dataset index and, when
    the source says, the key.
    """

    def __init__(self, message, batch=None, index=None, key=None):
        super().__init__(message)
        self.batch, self.index, self.key = batch, index, key


class ClosedError(LoaderError):
    """The loader is closed."""


class BusyError(LoaderError):
    """Another epoch of this loader is being iterated: one runs at a time."""


class SlotsHeldError(LoaderError):
    """Every staging slot is held by batches or tensors still referenced."""


class ForkedError(LoaderError):
    """The process was forked after the library loaded: Go cannot run here."""


_ERRORS = {"closed": ClosedError, "busy": BusyError}

_log = logging.getLogger("loadergen")

# lg_next's results (abi.h).
_OK, _END, _TIMEOUT, _HELD = 0, 1, 2, 3

# How long one lg_next call waits, in milliseconds: a Ctrl-C (which Python
# handles only between calls) interrupts a wait within about this long.
_WAIT_MS = 100

_forked = False


def _mark_forked():
    global _forked
    _forked = True


os.register_at_fork(after_in_child=_mark_forked)


def _check_forked():
    if _forked:
        raise ForkedError(
            "this process was forked from one that had loaded the loadergen library: its Go "
            "runtime cannot run in a forked child. Create loaders in the parent only (they run "
            "their own workers: a torch DataLoader around them needs num_workers=0), or start "
            "children with the 'spawn' method (multiprocessing.set_start_method('spawn'), "
            "DataLoader(multiprocessing_context='spawn'))"
        )


class _DLDevice(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DLDataType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _DLTensor(ctypes.Structure):
    _fields_ = [
        ("data", ctypes.c_void_p),
        ("device", _DLDevice),
        ("ndim", ctypes.c_int32),
        ("dtype", _DLDataType),
        ("shape", ctypes.POINTER(ctypes.c_int64)),
        ("strides", ctypes.POINTER(ctypes.c_int64)),
        ("byte_offset", ctypes.c_uint64),
    ]


class _DLManagedTensor(ctypes.Structure):
    _fields_ = [("dl_tensor", _DLTensor), ("manager_ctx", ctypes.c_void_p), ("deleter", ctypes.c_void_p)]


class _Batch(ctypes.Structure):
    _fields_ = [
        ("lease", ctypes.c_void_p),
        ("number", ctypes.c_int64),
        ("n", ctypes.c_int64),
        ("indices", ctypes.POINTER(ctypes.c_int64)),
        ("logs", ctypes.c_int64),
        ("device_type", ctypes.c_int64),
        ("device_id", ctypes.c_int64),
    ]


_LIB_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "libloadergen.so")
# Calls that may wait release the GIL (CDLL); the short ones keep it (PyDLL).
_lib = ctypes.CDLL(_LIB_PATH)
_fast = ctypes.PyDLL(_LIB_PATH)
_err = ctypes.POINTER(ctypes.c_void_p)
_i64 = ctypes.c_int64
for _f, _args, _res in [
    ("lg_open", [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, _err], _i64),
    ("lg_close", [_i64, _err], ctypes.c_int),
    ("lg_len", [_i64], _i64),
    ("lg_epoch", [_i64, _i64, _i64, _err], ctypes.c_int),
    ("lg_stop", [_i64, ctypes.c_int], None),
    ("lg_info", [_i64, ctypes.c_char_p, _i64, _i64, _err], ctypes.c_void_p),
    ("lg_logs", [], ctypes.c_void_p),
    ("lg_predict", [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p, _err], _i64),
    ("lg_predict_loader", [_i64, ctypes.c_char_p, _err], _i64),
    ("lg_predict_write", [_i64, ctypes.POINTER(_i64), _i64, ctypes.POINTER(ctypes.c_void_p), ctypes.POINTER(_i64), _i64, _err], ctypes.c_int),
    ("lg_predict_close", [_i64, _err], ctypes.c_int),
    ("lg_predict_stats", [_i64, _err], ctypes.c_void_p),
    ("lg_datasets", [], ctypes.c_void_p),
    ("lg_free", [ctypes.c_void_p], None),
]:
    getattr(_lib, _f).argtypes, getattr(_lib, _f).restype = _args, _res
for _l in (_lib, _fast):
    _l.lg_next.argtypes, _l.lg_next.restype = [_i64, _i64, ctypes.POINTER(_Batch), _err], ctypes.c_int
_fast.lg_take.argtypes, _fast.lg_take.restype = [ctypes.c_void_p, _i64, _i64, _err], ctypes.c_void_p
_fast.lg_lease.argtypes, _fast.lg_lease.restype = [ctypes.c_void_p], ctypes.py_object
_fast.lg_capsules.argtypes, _fast.lg_capsules.restype = [ctypes.c_void_p, _i64, _err], ctypes.py_object

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_capsule_new.restype = ctypes.py_object
_capsule_destructor = ctypes.cast(_lib.lg_capsule_destructor, ctypes.c_void_p).value


def _string(ptr):
    """The library's C string ptr as str, freed."""
    try:
        return ctypes.string_at(ptr).decode()
    finally:
        _lib.lg_free(ptr)


def _error(err):
    """The exception of the library's error description err."""
    e = json.loads(_string(err.value))
    if e["kind"] == "read":
        return ReadError(e["message"], e.get("batch"), e.get("index"), e.get("key") or None)
    return _ERRORS.get(e["kind"], LoaderError)(e["message"])


def _drain_logs():
    """Hands the library's waiting log records to logging."""
    for r in json.loads(_string(_lib.lg_logs())):
        logging.getLogger(r["logger"]).log(r["level"], "%s", r["message"])


def check_library(module, fingerprint):
    """Fails unless the library holds module's dataset, with the plan the
    module was generated for: a module imported beside another build's
    library would read other data."""
    held = json.loads(_string(_lib.lg_datasets()))
    if module not in held:
        raise ImportError(
            f"{module}: the loadergen library loaded in this process ({_LIB_PATH}) holds {sorted(held)}, "
            f"not {module}: a process holds one Go runtime, so build every dataset it uses into one "
            "library (loadergen python -o DIR PKG...)"
        )
    if held[module] != fingerprint:
        raise ImportError(
            f"{module}: the loadergen library {_LIB_PATH} was built for another plan of {module} "
            "than this module: rebuild both with loadergen python"
        )


def _process():
    """The library's open loaders and goroutines (for leak checks)."""
    err = ctypes.c_void_p()
    return json.loads(_string(_lib.lg_info(0, b"process", 0, 0, ctypes.byref(err))))


class Tensor:
    """One key of a batch, to hand to torch.from_dlpack, numpy.from_dlpack or
    jax.dlpack.from_dlpack: the result points into the loader's staging slot,
    which stays the tensor's until it dies."""

    __slots__ = ("_lease", "_slot", "_key", "name", "dtype", "shape", "_device")

    def __init__(self, batch, key, name, dtype, shape):
        # _lease keeps the batch's hold while the tensor lives; _slot is
        # the lease's address, which lg_take takes.
        self._lease, self._slot, self._device = batch._lease, batch._slot, batch._device
        self._key, self.name, self.dtype, self.shape = key, name, dtype, shape

    def __repr__(self):
        return f"<loadergen tensor {self.name}: {self.dtype} {list(self.shape)} on {self._device_name()}>"

    def _device_name(self):
        return "cpu" if self._device[0] == 1 else f"cuda:{self._device[1]}"

    def __dlpack_device__(self):
        return self._device

    def __dlpack__(self, stream=None):
        """A DLPack capsule of the tensor. On a CUDA device, stream (DLPack's:
        1 or None the legacy default stream, 2 the per-thread one, -1 none)
        waits on the device for the key's copy; the host never blocks."""
        _check_forked()
        if self._device[0] == 1:
            stream = 0
        elif stream is None:
            stream = 1
        err = ctypes.c_void_p()
        ptr = _fast.lg_take(self._slot, self._key, stream, ctypes.byref(err))
        if not ptr:
            raise _error(err)
        return _capsule_new(ptr, b"dltensor", _capsule_destructor)

    def torch(self):
        """The key as a torch tensor, without a copy."""
        import torch

        return torch.from_dlpack(self)

    def numpy(self):
        """The key as a numpy array, without a copy (host keys only)."""
        import numpy

        return numpy.from_dlpack(self)


class key:
    """A batch attribute: key number index of the plan, named name."""

    def __init__(self, index, name, dtype, shape, doc):
        self.index, self.name, self.dtype, self.shape, self.__doc__ = index, name, dtype, tuple(shape), doc

    def __get__(self, batch, owner=None):
        if batch is None:
            return self
        return Tensor(batch, self.index, self.name, self.dtype, (batch._n,) + self.shape)


class Batch:
    """One staged batch. Each key is an attribute (a Tensor); indices are the
    samples' dataset indices. A batch and its tensors stay valid as long as
    they are referenced: the loop moving on does not reuse them."""

    # _lease is a capsule (lg_lease) holding the batch's staging slot: the
    # slot's hold is released when it dies, after the batch and every
    # Tensor of it; _slot is its address.
    __slots__ = ("_lease", "_slot", "_n", "_device", "_indices", "number")
    _keys = ()  # the key attributes, in plan order: set by the dataset's subclass

    @classmethod
    def _make(cls, out):
        b = cls.__new__(cls)
        b._slot = out.lease
        b._lease, b._n, b.number = _fast.lg_lease(b._slot), out.n, out.number
        b._device, b._indices = (out.device_type, out.device_id), out.indices
        return b

    def __len__(self):
        return self._n

    def __repr__(self):
        return f"<{type(self).__name__} {self.number}: {self._n} samples, keys {', '.join(self._keys)}>"

    @property
    def indices(self):
        """The samples' dataset indices, in batch order (an int64 numpy array)."""
        import numpy

        return numpy.ctypeslib.as_array(self._indices, shape=(self._n,)).copy()

    def keys(self):
        """The key attributes' names, in plan order."""
        return self._keys

    def torch(self):
        """Every key as a torch tensor, without a copy: {name: tensor}."""
        import torch

        if self._device[0] != 1:
            # torch.from_dlpack asks each key for a capsule with torch's
            # current stream, which waits for the key's copy.
            return {k: torch.from_dlpack(getattr(self, k)) for k in self._keys}
        return dict(zip(self._keys, map(torch.from_dlpack, self._capsules())))

    def numpy(self):
        """Every key as a numpy array, without a copy: {name: array}."""
        import numpy

        if self._device[0] != 1:
            return {k: numpy.from_dlpack(getattr(self, k)) for k in self._keys}
        return {k: numpy.from_dlpack(_Capsule(c)) for k, c in zip(self._keys, self._capsules())}

    def _capsules(self):
        """Every key's DLPack capsule of a host batch, in plan order, taken
        in one call (lg_capsules)."""
        _check_forked()
        err = ctypes.c_void_p()
        capsules = _fast.lg_capsules(self._slot, 0, ctypes.byref(err))
        if capsules is None:
            raise _error(err)
        return capsules


class _Capsule:
    """A host key's DLPack capsule, for numpy.from_dlpack, which takes an
    object that makes one rather than the capsule itself."""

    __slots__ = ("capsule",)

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack__(self, stream=None):
        return self.capsule

    def __dlpack_device__(self):
        return (1, 0)


class Epoch:
    """The batches of one epoch, in order: iterate it once. len() is the number
    of batches it yields, so tqdm shows progress."""

    def __init__(self, loader, epoch, start):
        self._loader, self._epoch, self._start = loader, epoch, start

    def __len__(self):
        return max(len(self._loader) - self._start, 0)

    def __iter__(self):
        loader = self._loader
        h = loader._handle()
        err = ctypes.c_void_p()
        if _lib.lg_epoch(h, self._epoch, self._start, ctypes.byref(err)) != _OK:
            raise _error(err)
        out, make = _Batch(), loader._batch._make
        wait = 1  # for the epoch's work to stop; not when interrupted
        try:
            held = False
            while True:
                # A ready batch is taken with the GIL held; a wait releases it.
                st = _fast.lg_next(h, 0, ctypes.byref(out), ctypes.byref(err))
                if st == _TIMEOUT:
                    st = _lib.lg_next(h, _WAIT_MS, ctypes.byref(out), ctypes.byref(err))
                if out.logs:
                    _drain_logs()
                if st == _OK:
                    held = False
                    yield make(out)
                elif st == _TIMEOUT:
                    continue
                elif st == _END:
                    return
                elif st == _HELD and not held:
                    gc.collect()  # batches in reference cycles, not yet collected
                    held = True
                elif st == _HELD:
                    raise SlotsHeldError(
                        f"every staging slot ({loader.stats()['prefetch'] + 1}) is held by batches or tensors "
                        "still referenced, so the loader cannot stage the next batch: drop the ones you "
                        "are done with (del), keep a copy instead (tensor.clone(), array.copy()), or "
                        "give the loader more slots (prefetch=)"
                    )
                else:
                    raise _error(err)
        except KeyboardInterrupt:
            wait = 0  # raise it now; the next epoch or close() waits
            raise
        finally:
            _lib.lg_stop(h, wait)
            _drain_logs()


class _Closable:
    """What a loader and a writer share: a with block closes them, and so
    does garbage collection."""

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def _end(close, id):
    """Closes loader or writer id with the library's close, once."""
    if not id or _forked:
        return
    err = ctypes.c_void_p()
    st = close(id, ctypes.byref(err))
    _drain_logs()
    if st != _OK:
        raise _error(err)


def _options(options):
    """A loader's keywords as the library takes them: JSON, with the
    "loadergen" logger's level and the environment."""
    options = dict(options, log_level=_log.getEffectiveLevel(), env=dict(os.environ))
    options["trace"] = "" if options.get("trace") is None else os.fspath(options["trace"])
    return json.dumps(options).encode()


class Loader(_Closable):
    """A generated loader; each dataset's module subclasses it."""

    _module = None  # set by the subclass: the Go package's name
    _fingerprint = None
    _batch = Batch

    def __init__(self, source, location, **options):
        _check_forked()
        self._h = 0
        err = ctypes.c_void_p()
        h = _lib.lg_open(self._module.encode(), source.encode(), os.fspath(location).encode(), _options(options), ctypes.byref(err))
        self._attach(h, err)

    def _attach(self, h, err):
        """Holds loader h, or raises the error of a loader that did not open."""
        self._h = 0
        self._lock = threading.Lock()
        _drain_logs()
        if not h:
            raise _error(err)
        self._h = h
        self._len = _lib.lg_len(h)

    def _handle(self):
        _check_forked()
        if not self._h:
            raise ClosedError("loader is closed")
        return self._h

    def __len__(self):
        """Batches per epoch for this rank."""
        return self._len

    def epoch(self, epoch):
        """The batches of epoch, in order: a pure function of the seed, the epoch
        and the rank, whatever the number of workers."""
        return Epoch(self, epoch, 0)

    def epoch_from(self, epoch, start):
        """Exactly the batches start.. of epoch(epoch): an interrupted epoch resumed."""
        return Epoch(self, epoch, start)

    def _info(self, what, a=0, b=0):
        err = ctypes.c_void_p()
        ptr = _lib.lg_info(self._handle(), what.encode(), a, b, ctypes.byref(err))
        if not ptr:
            raise _error(err)
        return json.loads(_string(ptr))

    def stats(self):
        """The loader's running totals (runtime.Stats in snake case; times in seconds)."""
        return self._info("stats")

    def plan(self):
        """The plan fixed at generation time, as `loadergen plan -json` names its fields."""
        return self._info("plan")

    def close(self):
        """Stops the workers and closes the source. Batches still referenced stay
        valid; their staging is released with the last of them."""
        with self._lock:
            h, self._h = self._h, 0
        _end(_lib.lg_close, h)


class Predictions(_Closable):
    """A writer of a model's predictions for the tiles of a dataset with
    tiles; each such dataset's module subclasses it. It opens the tiles
    itself (Open<Name>Tiles) and the writer over them
    (Create<Name>Predictions); loader() reads those tiles. Close the
    loaders before the writer: a with block for each does."""

    _module = None
    _loader = None  # the dataset's Loader subclass
    _outputs = ()  # (name, dtype, sample shape) of each output, in plan order

    def __init__(self, tiles, root, **options):
        _check_forked()
        self._w = 0
        err = ctypes.c_void_p()
        w = _lib.lg_predict(
            self._module.encode(), os.fspath(tiles).encode(), os.fspath(root).encode(), json.dumps(options).encode(), ctypes.byref(err)
        )
        _drain_logs()
        if not w:
            raise _error(err)
        self._w = w

    def _writer(self):
        _check_forked()
        if not self._w:
            raise ClosedError("predictions are closed")
        return self._w

    def loader(self, **options):
        """A loader over the writer's tiles, with the loader's keywords
        (workers, prefetch, device, ...)."""
        err = ctypes.c_void_p()
        h = _lib.lg_predict_loader(self._writer(), _options(options), ctypes.byref(err))
        loader = self._loader.__new__(self._loader)
        loader._attach(h, err)
        return loader

    def _write(self, tiles, values):
        """Writes the predictions values (one per output) of tiles: a batch
        of the tiles' loader, or its indices."""
        import numpy

        indices = numpy.ascontiguousarray(tiles.indices if isinstance(tiles, Batch) else tiles, dtype=numpy.int64)
        arrays = []
        for (name, dtype, shape), v in zip(self._outputs, values):
            if hasattr(v, "detach"):  # a torch tensor, wherever it is
                v = v.detach().cpu().numpy()
            a = numpy.ascontiguousarray(v)
            want = (len(indices),) + tuple(shape)
            if a.dtype != numpy.dtype(dtype) or a.shape != want:
                raise ValueError(f"{name}: {a.dtype} {list(a.shape)}, want {dtype} {list(want)}")
            arrays.append(a)
        n = len(arrays)
        data = (ctypes.c_void_p * n)(*[a.ctypes.data for a in arrays])
        sizes = (ctypes.c_int64 * n)(*[a.nbytes for a in arrays])
        err = ctypes.c_void_p()
        st = _lib.lg_predict_write(
            self._writer(), indices.ctypes.data_as(ctypes.POINTER(ctypes.c_int64)), len(indices), data, sizes, n, ctypes.byref(err)
        )
        if st != _OK:
            raise _error(err)

    def stats(self):
        """The writer's totals: tiles, chunks written and skipped, and the
        bound and peak of the chunks held partly written."""
        err = ctypes.c_void_p()
        ptr = _lib.lg_predict_stats(self._writer(), ctypes.byref(err))
        if not ptr:
            raise _error(err)
        return json.loads(_string(ptr))

    def close(self):
        """Stores the chunks left and closes the tiles; chunks whose tiles
        were not all written are left out, and reported."""
        w, self._w = self._w, 0
        _end(_lib.lg_predict_close, w)
