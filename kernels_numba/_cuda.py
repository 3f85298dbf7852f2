"""The one module that imports numba.cuda: a thin jit/launch facade.

Everything CUDA-specific the rest of the package needs goes through here, so a
move from numba-cuda (maintenance mode) to its successor touches this file only.

- `cuda` is the numba.cuda module, or None when numba-cuda is missing or broken.
- `kernel(*signatures)` declares a @cuda.jit kernel and records it, with every
  signature it is launched with, in KERNELS; the PTX test compiles that list, so
  no kernel escapes the float64 scan.
- `device_function` declares a @cuda.jit(device=True) helper.
- `launch(k, grid, block, *args)` launches with a cached configuration.
- Kernels are compiled lazily: eager signatures would need a driver at import.
"""

import os
import threading

try:  # numba-cuda is an optional extra; importing it needs no driver.
    from numba import cuda
except Exception:  # noqa: BLE001 - any failure means "no CUDA path"
    cuda = None

SIMULATOR = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"

# Keywords the simulator's jit rejects (numba-cuda-notes.md, fact 7).
_SIM_UNSUPPORTED = ("lineinfo", "launch_bounds", "max_registers", "forceinline", "lto")

# name -> KernelSpec; filled as the gpu/* modules are imported.
KERNELS = {}


class KernelSpec:
    """A registered kernel: the Python function and the signatures it is launched with."""

    def __init__(self, name, pyfunc, signatures):
        self.name = name
        self.pyfunc = pyfunc
        self.signatures = signatures

    def __repr__(self):
        return f"KernelSpec({self.name}, {len(self.signatures)} signatures)"


class _Unavailable:
    """Stands in for a kernel when numba-cuda is not installed."""

    def __init__(self, name):
        self.name = name

    def __getitem__(self, config):
        raise RuntimeError(
            f"CUDA kernel {self.name} cannot run: numba-cuda is not installed. "
            "Install the `cuda` extra (pip install 'kerasish[cuda]') or set KERASISH_DEVICE=cpu."
        )


def _jit_options(options):
    if SIMULATOR:
        return {k: v for k, v in options.items() if k not in _SIM_UNSUPPORTED}
    return options


def kernel(*signatures, **options):
    """Declare a CUDA kernel; `signatures` are numba signature strings used by the PTX check."""
    if not signatures:
        raise ValueError("kernel(): every kernel must declare at least one signature")

    def decorate(pyfunc):
        name = f"{pyfunc.__module__}.{pyfunc.__name__}"
        KERNELS[name] = KernelSpec(name, pyfunc, list(signatures))
        if cuda is None:
            return _Unavailable(name)
        return cuda.jit(**_jit_options(options))(pyfunc)

    return decorate


def device_function(pyfunc=None, **options):
    """Declare a @cuda.jit(device=True) helper (inlined into kernels)."""

    # inline="always": otherwise compile_ptx of a caller looks up the current device,
    # which fails on machines without a driver (the PTX check in CI).
    options.setdefault("inline", "always")

    def decorate(f):
        if cuda is None:
            return f
        return cuda.jit(device=True, **_jit_options(options))(f)

    return decorate(pyfunc) if pyfunc is not None else decorate


def ceil_div(a, b):
    return (a + b - 1) // b


def grid_1d(n, block=256):
    """(grid, block) covering n threads; never a zero-sized grid."""
    return max(1, ceil_div(n, block)), block


def launch(k, grid, block, *args, shared_bytes=0):
    """Launch kernel `k`; `k[grid, block]` is an lru-cached configuration in numba-cuda."""
    k[grid, block, 0, shared_bytes](*args)


def available():
    """True when a real GPU (or the simulator) can run kernels."""
    if cuda is None:
        return False
    try:
        return bool(cuda.is_available())
    except Exception:  # noqa: BLE001 - a broken driver means "not available"
        return False


def unavailable_reason():
    """Why available() is False, for error messages."""
    if cuda is None:
        return "numba-cuda is not installed"
    try:
        return "" if cuda.is_available() else "no CUDA driver or device found"
    except Exception as exc:  # noqa: BLE001
        return str(exc)


def is_device_array(a):
    """True for numba device arrays (real or simulated); both have copy_to_host."""
    return cuda is not None and hasattr(a, "copy_to_host") and hasattr(a, "shape")


def device_empty(shape, dtype):
    return cuda.device_array(shape, dtype=dtype)


def device_from_host(host):
    return cuda.to_device(host)


def copy_host_to_device(dst, host, stream=0):
    dst.copy_to_device(host, stream=stream)


def pinned_empty(shape, dtype):
    return cuda.pinned_array(shape, dtype=dtype)


def new_event():
    # timing off: cheaper to record; the simulator's event() takes no arguments.
    return cuda.event() if SIMULATOR else cuda.event(timing=False)


_copy_stream = None
_copy_stream_lock = threading.Lock()


def copy_stream():
    """The process's host->device copy stream: non-blocking, created once, never freed."""
    global _copy_stream
    with _copy_stream_lock:
        if _copy_stream is None:
            _copy_stream = _new_nonblocking_stream()
    return _copy_stream


def _new_nonblocking_stream():
    # Why not cuda.stream(): it is created with CU_STREAM_DEFAULT, i.e. a *blocking*
    # stream, and our kernels launch on stream 0, the legacy default stream, which
    # implicitly synchronizes with every blocking stream. A copy issued behind queued
    # kernels would then wait for them: no overlap. A CU_STREAM_NON_BLOCKING stream has
    # no implicit synchronization with stream 0, so ordering is explicit (events).
    if SIMULATOR:
        return cuda.stream()  # simulated streams are synchronous anyway
    cuda.current_context()  # the primary context must be current for the driver call
    try:
        from cuda.bindings import driver as cu
    except ImportError:  # very old bindings: correct, but copies serialize with compute
        return cuda.stream()
    err, handle = cu.cuStreamCreate(cu.CUstream_flags.CU_STREAM_NON_BLOCKING.value)
    if err != cu.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"cuStreamCreate(CU_STREAM_NON_BLOCKING) failed: {err!r}")
    return cuda.external_stream(int(handle))


def use_context_in_this_thread():
    # Raw event/stream calls (cuEventSynchronize, cuStreamWaitEvent) need the context
    # current in the calling thread; numba makes it current only in its own API calls.
    cuda.current_context()


def stream_is_nonblocking(stream):
    """True when `stream` is a real, non-default, CU_STREAM_NON_BLOCKING stream (GPU test)."""
    if stream is None or SIMULATOR or isinstance(stream, int):
        return False
    from cuda.bindings import driver as cu

    ptr = int(stream.handle)
    if ptr in (0, int(cu.CU_STREAM_LEGACY), int(cu.CU_STREAM_PER_THREAD)):
        return False
    err, flags = cu.cuStreamGetFlags(stream.handle)
    return err == cu.CUresult.CUDA_SUCCESS and \
        bool(int(flags) & int(cu.CUstream_flags.CU_STREAM_NON_BLOCKING.value))


def copy_device_to_host(src, out=None):
    return src.copy_to_host(out) if out is not None else src.copy_to_host()


def synchronize():
    if cuda is not None and not SIMULATOR:
        cuda.synchronize()
