"""Double-buffered device input: on CUDA the next batch's host->device copy overlaps the
current step's kernels.

An Executor has two input slots (device x / labels buffers), each with a pinned host
twin and two events. A feeder thread takes host batches from the loader (whose own
thread keeps gathering ahead) and, per batch: takes a free slot; waits (host) until
the slot's previous copy has finished reading the pinned buffer; copies the batch into
it; makes the copy stream wait (on the device) until the compute stream is done with
the slot's previous batch; issues the async copy on the copy stream and records
`ready`. The training step makes the compute stream wait for `ready` before its first
kernel; once its kernels are issued it records `released` and hands the slot back.
A slot goes back to the feeder only after `released` is recorded, so the copy's wait
always refers to the last step that read the slot.

Used on CUDA only: on the CPU the trainer keeps the synchronous `Executor.load` (no
extra copy). Every buffer and event is allocated once per Executor.
"""

import os
import queue
import threading

import numpy as np

import kernels_numba
from kerasish.data.loader import _POLL_S, DataLoader, background
from kernels_numba import device as kdevice

SLOTS = 2  # double buffering: one slot computing, one being filled
# KERASISH_ASYNC_INPUT=0 keeps the synchronous copy on CUDA too (debugging, comparisons).
ASYNC_INPUT = os.environ.get("KERASISH_ASYNC_INPUT", "1") != "0"


def epoch_batches(model, loader, what, mode):
    """One epoch's batches for the trainer: host `(x, y)` pairs on the synchronous path,
    `(Staged, None)` pairs on CUDA for a DataLoader. The synchronous path is kept on the
    CPU (no extra copy there) and for generators and Sequences, whose batch size is
    unknown before the first batch. The staged batches' executor is
    `model._loader_executor(loader, mode)` (cached); the trainer runs each staged batch
    on its feeder's executor (`_executor_for`), the one whose slot holds it."""
    host = model._batches(loader, what)
    if not ASYNC_INPUT or model.device != kernels_numba.CUDA or not model.built or \
            not isinstance(loader, DataLoader) or not model._single_io() or \
            getattr(loader, "weighted_outputs", 0):
        return host
    return model._loader_executor(loader, mode).feeder().feed(host)


class Staged:
    """A batch whose copy into input slot `slot` was issued; `len()` is its sample count."""

    __slots__ = ("feeder", "slot", "n", "_free")

    def __init__(self, feeder, slot, n, free):
        self.feeder, self.slot, self.n, self._free = feeder, slot, n, free

    def __len__(self):
        return self.n

    def wait(self):
        """Compute stream waits (device-side) for this batch's copy: call before kernels."""
        self.feeder.ready[self.slot].wait()

    def release(self):
        """After the step's kernels are issued: the slot may be refilled once they finish."""
        self.feeder.released[self.slot].record()
        self._free.put(self.slot)


class DeviceFeeder:
    """The input slots of one Executor and the thread that fills them (see module doc)."""

    def __init__(self, ex):
        dev, self.ex = ex.device, ex
        while len(ex.input_slots) < SLOTS:  # the plan's slots, doubled
            ex.input_slots.append([kernels_numba.empty(b.shape, b.dtype, dev)
                                   for b in ex.input_slots[0]])
            ex.target_slots.append([None if b is None else kernels_numba.empty(
                b.shape, b.dtype, dev) for b in ex.target_slots[0]])
        self.x_host = [kdevice.pinned_empty(ex.x.shape, np.float32, dev) for _ in range(SLOTS)]
        self.y_host = [kdevice.pinned_empty(ex.y_true.shape, ex.y_true.dtype, dev)
                       for _ in range(SLOTS)] if ex.y_slots else None
        self.stream = kdevice.copy_stream(dev)
        self.ready = [kdevice.Event(dev) for _ in range(SLOTS)]
        self.released = [kdevice.Event(dev) for _ in range(SLOTS)]

    def feed(self, host_batches):
        """Iterator of `(Staged, None)` for the `(x, y)` host batches, one copy ahead.

        Closing it (or leaving a for loop over it) stops and joins the feeder thread
        and closes `host_batches` (which stops the loader's own thread).
        """
        free, stop = queue.Queue(), threading.Event()
        for k in range(SLOTS):
            free.put(k)

        def produce():
            try:
                kdevice.use_in_this_thread(self.ex.device)
                for xb, yb in host_batches:
                    k = _take(free, stop)
                    if k is None:
                        return
                    yield self._stage(k, xb, yb, free), None
            finally:
                if hasattr(host_batches, "close"):
                    host_batches.close()

        # depth 1: with one slot computing, the other holds the one staged batch
        source = background(produce, 1, name="kerasish-device-feed")
        try:
            for item in source:  # not `yield from`: it would close source before stop.set()
                yield item
        finally:
            stop.set()  # first: a worker waiting for a slot (one never released) sees it
            source.close()
            if self.stream is not None:
                self.stream.synchronize()  # no copy in flight once the epoch ends

    def _stage(self, k, xb, yb, free):
        n = len(xb)
        if n > self.ex.batch_size:
            raise ValueError(f"batch of {n} samples exceeds the planned batch size "
                             f"{self.ex.batch_size}")
        self.ready[k].synchronize()  # the pinned buffer's previous copy is done reading it
        x_host = self.x_host[k][:n]
        _fill(x_host, xb, "x")
        self.released[k].wait(self.stream)  # device: compute done with the slot
        kdevice.copy_from_host_async(self.ex.x_slots[k][:n], x_host, self.stream)
        if self.y_host is not None:
            if yb is None:
                raise ValueError("device feed: the data yields no labels (expected (x, y))")
            y_host = self.y_host[k][:_rows(yb, self.y_host[k])]
            _fill(y_host, yb, "y")
            kdevice.copy_from_host_async(self.ex.y_slots[k][:len(y_host)], y_host, self.stream)
        self.ready[k].record(self.stream)
        return Staged(self, k, n, free)


def _take(free, stop):
    """A free slot, or None once `stop` is set (the consumer has gone)."""
    while not stop.is_set():
        try:
            return free.get(timeout=_POLL_S)
        except queue.Empty:
            continue
    return None


def _rows(y, buf):
    """Label rows of a batch in a buffer shaped like the executor's (rows, ...)."""
    return int(np.size(y)) // max(1, int(np.prod(buf.shape[1:], dtype=np.int64)))


def _fill(dst, src, name):
    """Copy (and cast, as `copy_from_host` does) a host batch into its pinned slice."""
    src = np.asarray(src)
    if src.size != dst.size or (name == "x" and src.shape[1:] != dst.shape[1:]):
        raise ValueError(f"device feed: expected {name} batch of shape {dst.shape}; "
                         f"received {src.shape}")
    np.copyto(dst, src.reshape(dst.shape), casting="unsafe")
