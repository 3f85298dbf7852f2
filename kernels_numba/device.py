"""Devices and buffers: the one place that allocates and copies.

A buffer is a NumPy array on the CPU or a numba device array on CUDA. Ops never
allocate; callers (the kerasish graph planner, tests, benchmarks) get buffers
here. `allocation_count()` lets tests prove that a training step allocates nothing.

Asynchronous input (CUDA): a batch is staged in a `pinned_empty` host buffer, copied
with `copy_from_host_async` on `copy_stream()`, and an `Event` recorded after the copy
makes the compute stream wait for it. On the CPU (or with no CUDA at all) these
degrade to a plain NumPy array, None, a plain copy and no-op events.
"""

import os
import warnings

import numpy as np

from kernels_numba import _cuda, _cuda_memory

CPU = "cpu"
CUDA = "cuda"
_allocations = 0


def cuda_available():
    """True when CUDA kernels can run here: the probe kernel compiled and ran (once per
    process; see kernels_numba._cuda.probe), or NUMBA_ENABLE_CUDASIM=1."""
    return _cuda.available()


def cuda_status():
    """(status, reason): "ok", "absent" (no GPU/driver/numba-cuda here) or "broken"."""
    return _cuda.probe()


def check_cuda_available():
    if not cuda_available():
        raise RuntimeError(
            f"CUDA not available: {_cuda.unavailable_reason()}. Run `python -m "
            "kernels_numba.doctor` for the versions involved; install the `cuda` extra "
            "(pip install 'kerasish[cuda]') on a machine with an NVIDIA GPU, or use device 'cpu'."
        )


_warned = False


def resolve_device(name=None):
    """'auto' | 'cpu' | 'cuda' (default: $KERASISH_DEVICE, else auto) -> 'cpu' or 'cuda'.

    auto: CUDA when the probe passes; the CPU when no GPU is present (silently) or the
    CUDA stack is broken (one RuntimeWarning per process naming the reason). 'cuda' on
    a machine where the probe fails raises RuntimeError with that reason.
    """
    global _warned
    name = (name or os.environ.get("KERASISH_DEVICE") or "auto").lower()
    if name not in ("auto", CPU, CUDA):
        raise ValueError(f"Unknown device: expected one of 'auto', 'cpu', 'cuda'; "
                         f"received {name!r}")
    if name == "auto":
        status, reason = cuda_status()
        if status == "ok":
            return CUDA
        if status == "broken" and not _warned:
            _warned = True
            warnings.warn(f"kernels_numba: CUDA is installed but unusable, training on the "
                          f"CPU: {reason} (python -m kernels_numba.doctor for details)",
                          RuntimeWarning, stacklevel=2)
        return CPU
    if name == CUDA:
        check_cuda_available()
    return name


def device_of(a):
    """'cpu' for NumPy arrays, 'cuda' for device arrays; TypeError otherwise."""
    if isinstance(a, np.ndarray):
        return CPU
    if _cuda_memory.is_device_array(a):
        return CUDA
    raise TypeError(f"expected a NumPy array or a CUDA device array; received {type(a).__name__}")


def allocation_count():
    """How many buffers `empty`/`zeros`/`to_device` have allocated in this process."""
    return _allocations


def empty(shape, dtype=np.float32, device=CPU):
    global _allocations
    _allocations += 1
    if device == CUDA:
        check_cuda_available()
        return _cuda_memory.device_empty(shape, np.dtype(dtype))
    return np.empty(shape, dtype=dtype)


def zeros(shape, dtype=np.float32, device=CPU):
    global _allocations
    if device == CUDA:
        return to_device(np.zeros(shape, dtype=dtype), CUDA)
    _allocations += 1
    return np.zeros(shape, dtype=dtype)


def to_device(host, device=CPU):
    """A new buffer on `device` holding a copy of the host array."""
    global _allocations
    _allocations += 1
    host = np.ascontiguousarray(host)
    if device == CUDA:
        check_cuda_available()
        return _cuda_memory.device_from_host(host)
    return host.copy()


def copy_from_host(dst, host):
    """Copy a host array into an existing buffer (no allocation)."""
    host = np.asarray(host, dtype=dst.dtype)
    if host.shape != tuple(dst.shape):
        raise ValueError(f"copy_from_host: expected shape {tuple(dst.shape)}; "
                         f"received {host.shape}")
    if device_of(dst) == CUDA:
        host = np.ascontiguousarray(host)
        if host.size and 0 in host.strides:  # x[..., None]: numba drops stride-0 axes
            host = host.copy()               # as broadcast ones, then the shapes disagree
        _cuda_memory.copy_host_to_device(dst, host)
    else:
        np.copyto(dst, host)


def copy_buffer(dst, src):
    """dst[...] = src for two C-contiguous buffers of one shape and dtype on one device:
    a memory copy (device to device on CUDA, on the compute stream), not a kernel. For
    setting up (packing weights and optimizer slots into their blocks), where a copy
    kernel under the CUDA simulator ran one Python thread per element: 25 s for the
    reference CNN's 100k-float Dense kernel."""
    from kernels_numba import _check  # (it imports this module)

    where = _check.same_device("copy_buffer", dst=dst, src=src)
    shape = _check.array("copy_buffer", "src", src, dtype=None)
    _check.array("copy_buffer", "dst", dst, shape=shape, dtype=src.dtype)
    if where == CPU:
        np.copyto(dst, src)
    elif dst.size:
        _cuda_memory.copy_device_to_device(dst, src)


def pinned_empty(shape, dtype=np.float32, device=CUDA):
    """A host array for async copies: page-locked on CUDA (a copy from pageable memory is
    staged by the driver and blocks the host), a plain NumPy array on the CPU."""
    global _allocations
    _allocations += 1
    if device == CUDA and cuda_available():
        return _cuda_memory.pinned_empty(shape, np.dtype(dtype))
    return np.empty(shape, dtype=dtype)


def copy_stream(device=CUDA):
    """The one host->device copy stream (non-blocking, see _cuda_memory.py), or None on the CPU."""
    if device == CUDA and cuda_available():
        return _cuda_memory.copy_stream()
    return None


def use_in_this_thread(device=CUDA):
    """Call first in a thread that issues copies or events (a feeder); no-op on the CPU."""
    if device == CUDA and cuda_available():
        _cuda_memory.use_context_in_this_thread()


class Event:
    """Orders work across streams; every method is a no-op on the CPU.

    `stream=None` means the compute stream (`_cuda.compute_stream()`, the one
    non-default stream every kernel launches on), never the legacy stream 0: ordering
    against the kernels must not rest on the legacy stream's implicit synchronisation
    (gone under per-thread default streams).
    """

    __slots__ = ("_event",)

    def __init__(self, device=CUDA):
        self._event = _cuda_memory.new_event() if device == CUDA and cuda_available() else None

    def record(self, stream=None):
        """Mark the point reached by the work issued so far on `stream`."""
        if self._event is not None:
            self._event.record(_cuda.compute_stream() if stream is None else stream)

    def wait(self, stream=None):
        """Make later work on `stream` wait (on the device; the host goes on) for it."""
        if self._event is not None:
            self._event.wait(_cuda.compute_stream() if stream is None else stream)

    def synchronize(self):
        """Block the host until the recorded work is done."""
        if self._event is not None:
            self._event.synchronize()


def copy_from_host_async(dst, host, stream=None):
    """Issue a copy of `host` into the existing buffer `dst` on `stream`, without waiting.

    On CUDA, `host` should be pinned (`pinned_empty`) and must not change until the copy
    is done (record an Event after it); other work must wait for that Event before
    reading `dst`. On the CPU it is `copy_from_host` (a plain copy, `stream` ignored).
    """
    if device_of(dst) != CUDA or stream is None:
        copy_from_host(dst, host)
        return
    # No casting or reordering here: a temporary could be freed while the DMA reads it.
    if host.dtype != dst.dtype or host.shape != tuple(dst.shape) or \
            not host.flags.c_contiguous:
        raise ValueError(f"copy_from_host_async: expected a C-contiguous {dst.dtype} host "
                         f"array of shape {tuple(dst.shape)}; received {host.dtype} "
                         f"{host.shape}")
    _cuda_memory.copy_host_to_device(dst, host, stream)


def to_host(a, out=None):
    """A NumPy copy of a buffer (or `out` filled with it)."""
    if device_of(a) == CUDA:
        return _cuda_memory.copy_device_to_host(a, out)
    if out is not None:
        np.copyto(out, a)
        return out
    return np.array(a, copy=True)


def synchronize(device=CUDA):
    if device == CUDA:
        _cuda_memory.synchronize()
