"""The Python bridge on the CUDA backend: device tensors through DLPack, the
consumer's stream waiting on the batch's copy, and the slot refilled only
after the consumer's work on that stream. make cuda-emu-test runs it on the
emulated driver (LOADERGEN_CUDA_DRIVER), whose race checker fails the
process (exit 66) on a read that no event orders after the copy, or a
refill that overwrites memory a kernel may still read; a GPU machine runs
it against the real driver (make gpu-suite).

LOADERGEN_CUDA_DIST names the package `loadergen python -tags cuda` wrote of
golden/tokens; numpy is the only other import, so that the same test runs
where torch is not installed.
"""

import ctypes
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

DIST = os.environ.get("LOADERGEN_CUDA_DIST", "")
DRIVER = os.environ.get("LOADERGEN_CUDA_DRIVER", "libcuda.so.1")
PTX = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "loaderimpl", "testdata", "spin.ptx")
pytestmark = pytest.mark.skipif(not DIST, reason="LOADERGEN_CUDA_DIST names no cuda-built package")
ROWS = 300


@pytest.fixture(scope="module")
def root(tmp_path_factory):
    """Token files: sample i has 1 + i*37 % 512 tokens i*1000 + j."""
    d = tmp_path_factory.mktemp("tokens")
    lengths = [1 + (i * 37) % 512 for i in range(ROWS)]
    offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
    tokens = np.concatenate([i * 1000 + np.arange(n, dtype=np.int32) for i, n in enumerate(lengths)])
    np.save(d / "tokens.npy", tokens)
    np.save(d / "offsets.npy", offsets)
    np.save(d / "label.npy", np.arange(ROWS, dtype=np.int64) % 7)
    return str(d)


# The consumer's side of the driver API, through ctypes: a context, a stream
# and the spin kernel (runtime/loaderimpl/testdata/spin.ptx), which copies device bytes
# on the stream, where the race checker sees the read.
CONSUMER = """
import ctypes
cu = ctypes.CDLL(DRIVER)

def check(r, what):
    if r != 0:
        raise RuntimeError(f"{what}: CUresult {r}")

def consumer():
    dev, ctx, s, mod, fn = ctypes.c_int(), ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
    check(cu.cuInit(0), "cuInit")
    check(cu.cuDeviceGet(ctypes.byref(dev), 0), "cuDeviceGet")
    check(cu.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
    check(cu.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")
    check(cu.cuStreamCreate(ctypes.byref(s), 1), "cuStreamCreate")
    check(cu.cuModuleLoadData(ctypes.byref(mod), open(PTX, "rb").read() + b"\\0"), "cuModuleLoadData")
    check(cu.cuModuleGetFunction(ctypes.byref(fn), mod, b"spin"), "cuModuleGetFunction")
    return s, fn

def launch(s, fn, src, n, cycles):
    # spin(cycles, src, dst, n) on stream s: a kernel that reads the batch
    # late; returns dst.
    dst = ctypes.c_uint64()
    check(cu.cuMemAlloc_v2(ctypes.byref(dst), ctypes.c_size_t(n)), "cuMemAlloc")
    args = [ctypes.c_uint64(cycles), ctypes.c_uint64(src), ctypes.c_uint64(dst.value), ctypes.c_uint64(n)]
    ptrs = (ctypes.c_void_p * 4)(*[ctypes.cast(ctypes.byref(a), ctypes.c_void_p) for a in args])
    check(cu.cuLaunchKernel(fn, 1, 1, 1, 1, 1, 1, 0, s, ptrs, None), "cuLaunchKernel")
    return dst

def fetch(s, dst, n):
    # The n bytes at dst once stream s is done, freeing dst.
    check(cu.cuStreamSynchronize(s), "cuStreamSynchronize")
    host = ctypes.create_string_buffer(n)
    check(cu.cuMemcpyDtoH_v2(host, dst, ctypes.c_size_t(n)), "cuMemcpyDtoH")
    check(cu.cuMemFree_v2(dst), "cuMemFree")
    return host.raw

def expected(indices):
    # The tokens key of a batch of these samples: rows padded with 0.
    import numpy as np
    out = np.zeros((len(indices), 512), dtype=np.int32)
    for r, i in enumerate(indices):
        n = 1 + (i * 37) % 512
        out[r, :n] = i * 1000 + np.arange(n)
    return out

def dlpack(tensor, stream):
    # The key's capsule for stream, and its DLTensor.
    import _loadergen
    capsule = tensor.__dlpack__(stream=stream)
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.argtypes, get.restype = [ctypes.py_object, ctypes.c_char_p], ctypes.c_void_p
    return capsule, _loadergen._DLManagedTensor.from_address(get(capsule, b"dltensor")).dl_tensor
"""


def run(code, root):
    """Runs code after CONSUMER in a fresh python3 on the cuda package."""
    script = f"import sys\nsys.path.insert(0, {DIST!r})\nDRIVER, PTX = {DRIVER!r}, {PTX!r}\n" + CONSUMER + textwrap.dedent(code)
    env = dict(os.environ, LOADERGEN_CUDA_DRIVER=DRIVER, LOADERGEN_REQUIRE_GPU="1")
    return subprocess.run([sys.executable, "-c", script, root], capture_output=True, text=True, timeout=300, env=env)


def test_device_tensors_wait_and_release(root):
    """Every batch's tokens, read by a kernel on the consumer's stream s
    after __dlpack__(stream=s), equal the samples'. The tensors die while
    their kernels wait to read, and the ring (300 samples, 10 batches, 3
    slots) refills their slots: the refills wait for the kernels (the
    deleter marks the batch done on s), so the bytes stay right and the
    race checker stays quiet."""
    r = run(
        """
        import numpy as np, tokens
        s, fn = consumer()
        reads = []
        with tokens.TokensLoader(files=sys.argv[1], device="cuda", prefetch=2, workers=2) as loader:
            for b in loader.epoch(0):
                assert b.tokens.__dlpack_device__() == (2, 0), b.tokens.__dlpack_device__()
                capsule, t = dlpack(b.tokens, s.value)
                assert t.device.device_type == 2 and t.ndim == 2 and not t.strides
                assert (t.dtype.code, t.dtype.bits) == (0, 32) and (t.shape[0], t.shape[1]) == (len(b), 512)
                n = len(b) * 512 * 4
                # The kernel reads 20 ms late, and the tensor (then the batch)
                # dies at once: the ring refills the slot while the kernel
                # may still be reading it, unless the refill waits for it.
                reads.append((launch(s, fn, t.data, n, 20_000_000), n, b.indices))
                del capsule, t
            for dst, n, indices in reads:
                got = np.frombuffer(fetch(s, dst, n), dtype=np.int32).reshape(len(indices), 512)
                assert np.array_equal(got, expected(indices)), indices
            print("done", loader.stats()["batches"])
        """,
        root,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "cudaemu: race" not in r.stderr, r.stderr
    assert "done 10" in r.stdout, r.stdout


@pytest.mark.skipif("cudaemu" not in DRIVER and "emu" not in DRIVER, reason="the race checker is the emulator's")
def test_no_wait_is_a_race(root):
    """The same read with stream -1 (DLPack's "no synchronisation") reads the
    batch before any event orders it after the copy: the emulator's race
    checker fails the process, so the test above would see a missing wait."""
    r = run(
        """
        import tokens
        s, fn = consumer()
        with tokens.TokensLoader(files=sys.argv[1], device="cuda", prefetch=2, workers=2) as loader:
            for b in loader.epoch(0):
                capsule, t = dlpack(b.tokens, -1)
                fetch(s, launch(s, fn, t.data, len(b) * 512 * 4, 0), len(b) * 512 * 4)
                del capsule, t
        """,
        root,
    )
    assert r.returncode == 66 and "cudaemu: race" in r.stderr, (r.returncode, r.stderr[-2000:])


def test_torch_on_the_gpu(root):
    """Where torch has CUDA (a GPU machine): torch.from_dlpack gives device
    tensors on the loader's GPU holding the samples, ordered on torch's
    current stream; with device cpu, pinned host tensors."""
    r = run(
        """
        import torch, tokens
        if not torch.cuda.is_available():
            print("skip: torch has no CUDA")
            sys.exit(0)
        with tokens.TokensLoader(files=sys.argv[1], device="cuda", workers=2) as loader:
            for b in loader.epoch(0):
                t = torch.from_dlpack(b.tokens)
                assert t.is_cuda and t.device.index == 0 and t.dtype == torch.int32
                assert torch.equal(t.cpu(), torch.from_numpy(expected(b.indices))), b.number
            print("done", loader.stats()["batches"])
        # On the CPU backend of a cuda build the host staging is pinned, so
        # the consumer's own copy to the GPU is asynchronous.
        with tokens.TokensLoader(files=sys.argv[1], device="cpu", workers=2) as loader:
            for b in loader.epoch(0):
                t = torch.from_dlpack(b.tokens)
                assert t.device.type == "cpu" and t.is_pinned(), b.number
                assert torch.equal(t.cuda(non_blocking=True).cpu(), torch.from_numpy(expected(b.indices)))
        """,
        root,
    )
    if "No module named 'torch'" in r.stderr or "skip: torch has no CUDA" in r.stdout:
        pytest.skip("torch with CUDA is not installed here")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "done 10" in r.stdout, r.stdout
