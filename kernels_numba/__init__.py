"""kernels_numba: the primitive library under kerasish (our "cuDNN").

Stateless forward/backward ops on caller-owned buffers, each implemented twice
with one name and signature: @cuda.jit kernels (kernels_numba.gpu) and a CPU
twin (kernels_numba.cpu). `ops` validates and dispatches on the buffers' device.
Imports and runs on machines without any CUDA driver.
"""

from kernels_numba import _blas

# Finds NumPy's OpenBLAS and binds its cblas_sgemm; sets nothing. What kernels_numba
# changes for the whole process, and when (never at import): kernels_numba/first_use.py.
BLAS_THREADS = _blas.configure()

from kernels_numba import ops  # noqa: E402,F401
from kernels_numba.first_use import cpu_work  # noqa: E402,F401
from kernels_numba.device import (  # noqa: E402,F401
    CPU,
    CUDA,
    allocation_count,
    check_cuda_available,
    copy_buffer,
    copy_from_host,
    cuda_available,
    cuda_status,
    device_of,
    empty,
    resolve_device,
    synchronize,
    to_device,
    to_host,
    zeros,
)

from kernels_numba._cuda import LaunchRecord, record_launches  # noqa: E402,F401
from kernels_numba.launches import LaunchList, capture_launches  # noqa: E402,F401

# -- compile hook: tell the user once when kernels compile (kerasish prints the message) --

_compile_callbacks = []
_compile_state = {"listening": False, "compiled": False}


def _listen_for_compiles():
    from numba.core import event

    class _FirstCompile(event.Listener):
        # numba fires "numba:compile" only for a real compile, never for a disk-cache load.
        def on_start(self, ev):
            fn = getattr(ev.data.get("dispatcher"), "py_func", None)
            if _compile_state["compiled"] or not getattr(fn, "__module__", "").startswith(
                    "kernels_numba"):
                return
            _compile_state["compiled"] = True
            for callback in list(_compile_callbacks):
                callback()

        def on_end(self, ev):
            pass

    event.register("numba:compile", _FirstCompile())
    _compile_state["listening"] = True


def on_first_compile(callback):
    """Call `callback()` when this process first compiles a kernels_numba kernel (at most
    once per process; loading kernels from numba's disk cache is not compiling). Returns
    a function that unregisters it. Compiles that happened before are not replayed."""
    if not _compile_state["listening"]:
        _listen_for_compiles()
    _compile_callbacks.append(callback)

    def remove():
        if callback in _compile_callbacks:
            _compile_callbacks.remove(callback)

    return remove


def kernels_compiled():
    """Whether this process has compiled (not just loaded from cache) a kernels_numba kernel
    since the first `on_first_compile` registration."""
    return _compile_state["compiled"]

__version__ = "0.1.0"
