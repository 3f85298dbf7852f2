"""Device buffers, events and streams: kernels_numba.device's CUDA half.

numba.cuda is reached through kernels_numba._cuda (`_numba_cuda()`, imported on first
use), so this module imports nothing CUDA itself and costs a CPU run nothing.
"""

import threading

from kernels_numba import _cuda


def is_device_array(a):
    """True for numba device arrays (real or simulated); both have copy_to_host."""
    return hasattr(a, "copy_to_host") and hasattr(a, "shape") and _cuda._numba_cuda() is not None


def device_empty(shape, dtype):
    cuda = _cuda._numba_cuda()
    return cuda.device_array(shape, dtype=dtype)


def device_from_host(host):
    cuda = _cuda._numba_cuda()
    return cuda.to_device(host)


def copy_host_to_device(dst, host, stream=0):
    dst.copy_to_device(host, stream=stream)


def copy_device_to_device(dst, src):
    """A device-to-device memcpy (both C-contiguous) on the compute stream."""
    dst.copy_to_device(src, stream=_cuda.compute_stream())


def pinned_empty(shape, dtype):
    cuda = _cuda._numba_cuda()
    return cuda.pinned_array(shape, dtype=dtype)


def new_event():
    cuda = _cuda._numba_cuda()
    # timing off: cheaper to record; the simulator's event() takes no arguments.
    return cuda.event() if _cuda.SIMULATOR else cuda.event(timing=False)


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
    cuda = _cuda._numba_cuda()
    # Why not cuda.stream(): it is created with CU_STREAM_DEFAULT, i.e. a *blocking*
    # stream, which implicitly synchronizes with the legacy default stream (where
    # synchronous copies go; kernels run on the blocking compute stream,
    # _cuda.compute_stream). A copy issued behind queued work would then wait for it:
    # no overlap. A CU_STREAM_NON_BLOCKING stream has no implicit synchronization with
    # the legacy stream, so ordering is explicit (events recorded and waited on the
    # compute stream, kernels_numba.device.Event).
    if _cuda.SIMULATOR:
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
    cuda = _cuda._numba_cuda()
    # Raw event/stream calls (cuEventSynchronize, cuStreamWaitEvent) need the context
    # current in the calling thread; numba makes it current only in its own API calls.
    cuda.current_context()


def stream_is_nonblocking(stream):
    """True when `stream` is a real, non-default, CU_STREAM_NON_BLOCKING stream (GPU test)."""
    if stream is None or _cuda.SIMULATOR or isinstance(stream, int):
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
    cuda = _cuda.imported_module()
    if cuda is not None and not _cuda.SIMULATOR:  # not imported: nothing ever ran
        cuda.synchronize()
