"""What is reduced over the ranks each step: the gradient block, BatchNormalization's
moving statistics, and the sums and counts behind the logs.

Gradient (one all-reduce per step): every trainable weight's gradient is a view into
`model._gradient_block`, so the block plus one extra element (this rank's weight w =
rows / per-rank batch) is summed over the ranks in one buffer; the mean gradient is the
sum of w_r * g_r divided by the sum of w_r. For equal shards (every full batch) w = 1
and the result is the mean of the per-rank mean gradients = the single-process
gradient of the global batch, up to float32 round-off; for the last, partial batch the
rows weigh in as they would in one process.

Where the buffer lives: the CPU all-reduces a host staging buffer; on CUDA a CUDA-aware
MPI reads and writes a device staging buffer directly, otherwise the gradient is staged
through a pinned host buffer (device -> pinned, all-reduce, pinned -> device).
"""

import ctypes
import os
import time

import numpy as np

import kernels_numba
from kernels_numba import device as kdevice
from kernels_numba import ops

CPU_HOST, CUDA_AWARE, PINNED = "host memory", "CUDA-aware MPI on device buffers", \
    "pinned host staging (MPI is not CUDA-aware)"


def mpi_is_cuda_aware():
    """KERASISH_MPI_CUDA_AWARE=0/1 if set; else what the MPI library says (Open MPI's
    MPIX_Query_cuda_support, MPICH's MPIX_GPU_query_support), else False."""
    forced = os.environ.get("KERASISH_MPI_CUDA_AWARE")
    if forced is not None:
        return forced not in ("0", "", "false", "no")
    try:
        lib = ctypes.CDLL(None)  # libmpi is loaded with mpi4py's MPI module
    except OSError:
        return False
    query = getattr(lib, "MPIX_Query_cuda_support", None)
    if query is not None:
        query.restype = ctypes.c_int
        return bool(query())
    query = getattr(lib, "MPIX_GPU_query_support", None)
    if query is not None:
        supported = ctypes.c_int(0)
        query(ctypes.c_int(1), ctypes.byref(supported))  # MPIX_GPU_SUPPORT_CUDA = 1
        return bool(supported.value)
    return False


def transport(device, cuda_aware):
    if device != kernels_numba.CUDA:
        return CPU_HOST
    return CUDA_AWARE if cuda_aware else PINNED


class GradientReducer:
    """The per-step mean of `model._gradient_block` over the ranks (see module doc)."""

    def __init__(self, coll, model, cuda_aware):
        self.coll, self.model = coll, model
        self.nominal = 1  # per-rank batch of the current fit: w = rows / nominal
        self.mode = transport(model.device, cuda_aware)
        self._block = None
        self.seconds = 0.0  # time in the gradient all-reduce (staging included)
        self.steps = 0

    @property
    def nbytes(self):
        """Bytes each rank contributes to one step's all-reduce."""
        return 4 * (self.model._trainable_size + 1)

    def _buffers(self):
        model = self.model
        self._block = model._gradient_block
        n = self.n = model._trainable_size
        if self.mode == CPU_HOST:
            self.buf = np.empty(n + 1, np.float32)
        elif self.mode == PINNED:
            self.buf = kdevice.pinned_empty((n + 1,), np.float32, model.device)
        else:
            self.buf = kernels_numba.empty((n + 1,), np.float32, model.device)
            self.weight = np.empty(1, np.float32)

    def __call__(self, rows):
        start = time.perf_counter()
        model = self.model
        if getattr(model, "_gradient_block", None) is None or model._trainable_size == 0:
            return
        if self._block is not model._gradient_block:  # re-packed: new block, new size
            self._buffers()
        n, buf, w = self.n, self.buf, np.float32(rows / self.nominal)
        grads = model._gradient_block[:n]
        if self.mode == CUDA_AWARE:
            ops.scale(buf[:n], grads, w)
            self.weight[0] = w
            kernels_numba.copy_from_host(buf[n:], self.weight)
            kernels_numba.synchronize(model.device)  # MPI reads the buffer on the host side
            self.coll.allreduce(buf, "gradient all-reduce")
            total = float(kernels_numba.to_host(buf[n:])[0])
            ops.scale(grads, buf[:n], 1.0 / total)
        else:
            if self.mode == PINNED:
                kernels_numba.to_host(grads, out=buf[:n])
                if w != 1:
                    np.multiply(buf[:n], w, out=buf[:n])
            else:
                ops.scale(buf[:n], grads, w)
            buf[n] = w
            self.coll.allreduce(buf, "gradient all-reduce")
            inv = np.float32(1.0 / float(buf[n]))
            if self.mode == PINNED:
                np.multiply(buf[:n], inv, out=buf[:n])
                kernels_numba.copy_from_host(grads, buf[:n])
            else:
                ops.scale(grads, buf[:n], inv)
        self.seconds += time.perf_counter() - start
        self.steps += 1


def layers_of(model, cls):
    """Every layer of class `cls` inside the model, nested models included."""
    out, seen = [], set()

    def walk(layer):
        for inner in getattr(layer, "layers", ()) or ():
            if id(inner) in seen:
                continue
            seen.add(id(inner))
            if isinstance(inner, cls):
                out.append(inner)
            walk(inner)

    walk(model)
    return out


def reduce_batchnorm_statistics(coll, model, rows):
    """Make every trainable BatchNormalization's moving statistics the ones one process
    would have after this step on the global batch (needs them equal on all ranks
    before the step: broadcast at fit start, then this every step).

    Each rank normalized with its own batch statistics (like DDP without SyncBatchNorm)
    and updated moving = m * moving + (1 - m) * local_stat. The row-weighted mean of the
    moving means is the single-process moving mean. The variance of the global batch is
    the weighted mean of the local variances plus the spread of the local means; that
    spread is recovered from the moving means: mu_r' - mean(mu') = (1 - m) (mean_r -
    mean), so moving_var = mean(v_r') + mean((mu_r' - mean(mu'))^2) / (1 - m).
    Two small float64 all-reduces per step (BN models only)."""
    from kerasish.layers import BatchNormalization

    layers = [bn for bn in layers_of(model, BatchNormalization) if bn.trainable and bn.built]
    if not layers:
        return
    mu = np.concatenate([kernels_numba.to_host(bn.moving_mean.value) for bn in layers])
    var = np.concatenate([kernels_numba.to_host(bn.moving_variance.value)
                          for bn in layers])
    mu, var = mu.astype(np.float64), var.astype(np.float64)
    c = len(mu)
    first = coll.allreduce(np.concatenate([[rows], rows * mu, rows * var]),
                           "BatchNormalization statistics all-reduce")
    total = first[0]
    mu_bar, var_bar = first[1:1 + c] / total, first[1 + c:] / total
    spread = coll.allreduce(rows * (mu - mu_bar) ** 2,
                            "BatchNormalization statistics all-reduce (spread)") / total
    offset = 0
    for layer in layers:
        k = layer.moving_mean.value.shape[0]
        part = slice(offset, offset + k)
        keep = 1.0 - float(layer.momentum)
        new_var = var_bar[part] + (spread[part] / keep if keep > 0 else 0.0)
        kernels_numba.copy_from_host(layer.moving_mean.value, mu_bar[part].astype(np.float32))
        kernels_numba.copy_from_host(layer.moving_variance.value, new_var.astype(np.float32))
        offset += k


def _trackers(model):
    return [t for t in model._loss_trackers if t is not None] + list(model._metrics)


def reduce_logs(coll, model, read):
    """`read()` (the trainer's log builder) evaluated on the sums and counts of every
    rank: each metric's accumulator and sample count are summed over the ranks
    (float64), swapped in for the read and restored, so rank 0's logs are the means
    over the whole global data, as one process would log them."""
    metrics = [m for m in _trackers(model) if getattr(m, "acc", None) is not None]
    if not metrics:
        return read()
    states = [getattr(m, "state", None) or {"acc": m.acc} for m in metrics]
    parts = [kernels_numba.to_host(buf).astype(np.float64).ravel()
             for state in states for buf in state.values()]
    local = np.concatenate(parts + [np.array([float(m.count) for m in metrics])])
    total = coll.allreduce(local, "metrics all-reduce")
    saved = [(m.acc, getattr(m, "state", None), m.count) for m in metrics]
    try:
        offset = 0
        for m, state in zip(metrics, states):  # every accumulator (AUC keeps several)
            summed = {}
            for key, buf in state.items():
                size = int(np.prod(buf.shape))
                summed[key] = total[offset:offset + size].reshape(buf.shape)  # host arrays
                offset += size
            m.acc = next(iter(summed.values()))
            if getattr(m, "state", None) is not None:
                m.state = summed
        for k, m in enumerate(metrics):
            m.count = int(round(total[offset + k]))
        return read()
    finally:
        for m, (acc, state, count) in zip(metrics, saved):
            m.acc, m.count = acc, count
            if state is not None:
                m.state = state
