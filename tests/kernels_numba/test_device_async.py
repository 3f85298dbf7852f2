"""kernels_numba.device's async-copy helpers: pinned_empty, copy_stream, Event,
copy_from_host_async. On the CPU (and with no CUDA driver) they degrade to NumPy
arrays, None, no-op events and a plain copy; on CUDA (the `device` fixture's cudasim
case, or a GPU) a pinned -> stream -> event round trip delivers the data."""

import numpy as np
import pytest

import kernels_numba
from kernels_numba import device as kdevice


def test_pinned_empty_on_cpu_is_a_counted_numpy_array():
    before = kernels_numba.allocation_count()
    a = kdevice.pinned_empty((4, 3), np.int32, "cpu")
    assert type(a) is np.ndarray and a.shape == (4, 3) and a.dtype == np.int32
    assert kernels_numba.allocation_count() == before + 1


def test_stream_and_event_degrade_on_cpu():
    assert kdevice.copy_stream("cpu") is None
    kdevice.use_in_this_thread("cpu")
    event = kdevice.Event("cpu")
    event.record()
    event.wait(kdevice.copy_stream("cpu"))
    event.synchronize()


def test_copy_from_host_async_on_cpu_is_a_plain_copy():
    dst = np.zeros((2, 3), np.float32)
    kdevice.copy_from_host_async(dst, np.arange(6.0).reshape(2, 3), None)  # float64: cast
    np.testing.assert_array_equal(dst, np.arange(6).reshape(2, 3))
    with pytest.raises(ValueError, match=r"expected shape \(2, 3\)"):
        kdevice.copy_from_host_async(dst, np.zeros((3, 2)), None)


@pytest.mark.skipif(kernels_numba.cuda_available(), reason="CUDA can run here")
def test_helpers_run_without_any_cuda():
    assert type(kdevice.pinned_empty((2,))) is np.ndarray  # device defaults to cuda
    assert kdevice.copy_stream() is None
    kdevice.use_in_this_thread()
    kdevice.Event().record()



def test_async_round_trip_through_pinned_memory_and_the_copy_stream(device):
    host = kdevice.pinned_empty((5, 3), np.float32, device)
    host[...] = np.arange(15, dtype=np.float32).reshape(5, 3)
    dst = kernels_numba.zeros((5, 3), device=device)
    stream, done = kdevice.copy_stream(device), kdevice.Event(device)
    assert (stream is None) == (device == "cpu")
    assert stream is kdevice.copy_stream(device)  # created once
    kdevice.use_in_this_thread(device)
    kdevice.copy_from_host_async(dst[:4], host[:4], stream)  # a row view, as the feeder
    done.record(stream)
    done.wait()  # the compute stream waits for the copy
    done.synchronize()
    got = kernels_numba.to_host(dst)
    np.testing.assert_array_equal(got[:4], host[:4])
    assert not got[4].any()


def test_async_copy_refuses_a_cast_on_cuda(device):
    if device == "cpu":
        pytest.skip("the CPU fallback casts, as copy_from_host does")
    dst = kernels_numba.zeros((2, 3), device=device)
    stream = kdevice.copy_stream(device)
    with pytest.raises(ValueError, match="C-contiguous float32 host array of shape"):
        kdevice.copy_from_host_async(dst, np.zeros((2, 3)), stream)  # float64


def test_copy_buffer_copies_views_and_checks_its_operands(device):
    # the setup copy (weights and slots into their blocks): a memcpy on CUDA; NaN and
    # Inf travel as bits
    host = np.arange(12, dtype=np.float32).reshape(3, 4)
    host[1, 2], host[2, 0] = np.nan, -np.inf
    block = kernels_numba.zeros((20,), np.float32, device)
    view = block[5:17].reshape(3, 4)
    kernels_numba.copy_buffer(view, kernels_numba.to_device(host, device))
    got = kernels_numba.to_host(block)
    np.testing.assert_array_equal(got[5:17].reshape(3, 4), host)
    assert not got[:5].any() and not got[17:].any()  # nothing outside the view
    wide = kernels_numba.to_device(np.arange(24, dtype=np.float32).reshape(3, 8), device)
    out = kernels_numba.zeros((3, 4), np.float32, device)
    with pytest.raises(ValueError, match=r"copy_buffer: expected src to be C-contiguous; "
                                         r"received strides \(32, 8\)"):
        kernels_numba.copy_buffer(out, wide[:, ::2])
    with pytest.raises(ValueError, match=r"copy_buffer: expected dst.shape == \(4, 3\); "
                                         r"received \(3, 4\)"):
        kernels_numba.copy_buffer(out, kernels_numba.zeros((4, 3), np.float32, device))
    with pytest.raises(TypeError, match="copy_buffer: expected dst.dtype == float16; "
                                        "received float32"):
        kernels_numba.copy_buffer(out, kernels_numba.zeros((3, 4), np.float16, device))
    if device == "cuda":
        with pytest.raises(ValueError, match="copy_buffer: all buffers must be on one device"):
            kernels_numba.copy_buffer(out, np.zeros((3, 4), np.float32))


@pytest.mark.cudasim
def test_event_without_a_stream_records_and_waits_on_the_compute_stream():
    """Kernels run on the compute stream, not the legacy stream 0: an event recorded
    after them, or waited on before them, must use that stream (ordering through the
    legacy stream's implicit sync breaks under per-thread default streams)."""
    if not kernels_numba.cuda_available():
        pytest.skip("CUDA kernels cannot run here")
    from kernels_numba import _cuda

    calls = []

    class Spy:
        def record(self, stream):
            calls.append(("record", stream))

        def wait(self, stream):
            calls.append(("wait", stream))

    event = kdevice.Event()
    event._event = Spy()
    event.record()
    event.wait()
    copy = kdevice.copy_stream()
    event.record(copy)
    event.wait(copy)
    compute = _cuda.compute_stream()
    assert compute != 0
    assert calls == [("record", compute), ("wait", compute), ("record", copy), ("wait", copy)]


def test_copy_from_host_takes_an_array_with_a_new_axis(device):
    """x[..., None] (Keras's channel axis idiom) has a stride-0 axis of length 1, which
    numba's copy strips as a broadcast axis: the copy refused its own shape."""
    x = np.arange(12, dtype=np.float32).reshape(2, 3, 2)[..., None]
    assert 0 in x.strides
    dst = kernels_numba.zeros((2, 3, 2, 1), device=device)
    kernels_numba.copy_from_host(dst, x)
    np.testing.assert_array_equal(kernels_numba.to_host(dst), x)
