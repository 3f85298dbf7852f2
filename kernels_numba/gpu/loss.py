"""CUDA kernels for kernels_numba.ops.loss.

The math is kernels_numba.cpu.loss's `*_row` / `*_grad` functions compiled as
device functions (one formula for both devices). Row losses run one thread per
sample (grid-stride over N); the pointwise gradients (BCE, BCE from logits, MSE)
run one thread per element. `softmax_sparse_ce_train` (the fused training loss) also
sums the row losses and argmax matches: a fixed tree per block, then, with several
blocks, per-block partials that the last block to finish adds in block order (an
int32 counter decides which block; no float atomics).
"""

import numpy as np
from numba import float32

from kernels_numba._cuda import ceil_div, cuda, device_function, grid_1d, kernel, \
    launch
from kernels_numba.cpu import loss as _math
from kernels_numba.gpu import _blocks
from kernels_numba.gpu.dense import _tile_counters
from kernels_numba.gpu.reduction import BLOCK, block_sum, cached_scratch
from kernels_numba.ops.loss import TRAIN_MAX_BLOCKS

F32_1D = "float32[::1]"
F32_2D = "float32[:, ::1]"
I32_1D = "int32[::1]"
ROW_BLOCK = _blocks.size("ROW_BLOCK")  # rows are few; the simulator pays per thread

BCE, BCE_LOGITS, MSE = _math.BCE, _math.BCE_LOGITS, _math.MSE


def _device(f):
    # inline="always": compile_ptx without a driver cannot compile a separate device function.
    return device_function(f, inline="always")


_softmax_ce_forward_row = _device(_math.softmax_ce_forward_row)
_softmax_ce_backward_row = _device(_math.softmax_ce_backward_row)
_softmax_categorical_ce_forward_row = _device(_math.softmax_categorical_ce_forward_row)
_softmax_categorical_ce_backward_row = _device(_math.softmax_categorical_ce_backward_row)
_sparse_ce_forward_row = _device(_math.sparse_ce_forward_row)
_sparse_ce_backward_row = _device(_math.sparse_ce_backward_row)
_categorical_ce_forward_row = _device(_math.categorical_ce_forward_row)
_categorical_ce_backward_row = _device(_math.categorical_ce_backward_row)
_binary_ce_forward_row = _device(_math.binary_ce_forward_row)
_binary_ce_grad = _device(_math.binary_ce_grad)
_binary_ce_logits_forward_row = _device(_math.binary_ce_logits_forward_row)
_binary_ce_logits_grad = _device(_math.binary_ce_logits_grad)
_mse_forward_row = _device(_math.mse_forward_row)
_mse_grad = _device(_math.mse_grad)
_softmax_sparse_ce_train_row = _device(_math.softmax_sparse_ce_train_row)


# kernels


@kernel(f"void({F32_1D}, {F32_2D}, {F32_2D}, {I32_1D})")
def _softmax_ce_forward_kernel(loss, probs, logits, labels):
    for n in range(cuda.grid(1), loss.size, cuda.gridsize(1)):
        _softmax_ce_forward_row(loss, probs, logits, labels, n)


@kernel(f"void({F32_2D}, {F32_2D}, {I32_1D}, float32)")
def _softmax_ce_backward_kernel(dlogits, probs, labels, scale):
    for n in range(cuda.grid(1), probs.shape[0], cuda.gridsize(1)):
        _softmax_ce_backward_row(dlogits, probs, labels, scale, n)


@kernel(f"void({F32_1D}, {F32_2D}, {F32_2D}, {F32_2D})")
def _softmax_categorical_ce_forward_kernel(loss, probs, logits, targets):
    for n in range(cuda.grid(1), loss.size, cuda.gridsize(1)):
        _softmax_categorical_ce_forward_row(loss, probs, logits, targets, n)


@kernel(f"void({F32_2D}, {F32_2D}, {F32_2D}, float32)")
def _softmax_categorical_ce_backward_kernel(dlogits, probs, targets, scale):
    for n in range(cuda.grid(1), probs.shape[0], cuda.gridsize(1)):
        _softmax_categorical_ce_backward_row(dlogits, probs, targets, scale, n)


@kernel(f"void({F32_1D}, {F32_2D}, {I32_1D})")
def _sparse_ce_forward_kernel(loss, probs, labels):
    for n in range(cuda.grid(1), loss.size, cuda.gridsize(1)):
        _sparse_ce_forward_row(loss, probs, labels, n)


@kernel(f"void({F32_2D}, {F32_2D}, {I32_1D}, float32)")
def _sparse_ce_backward_kernel(dprobs, probs, labels, scale):
    for n in range(cuda.grid(1), probs.shape[0], cuda.gridsize(1)):
        _sparse_ce_backward_row(dprobs, probs, labels, scale, n)


@kernel(f"void({F32_1D}, {F32_2D}, {F32_2D})")
def _categorical_ce_forward_kernel(loss, probs, targets):
    for n in range(cuda.grid(1), loss.size, cuda.gridsize(1)):
        _categorical_ce_forward_row(loss, probs, targets, n)


@kernel(f"void({F32_2D}, {F32_2D}, {F32_2D}, float32)")
def _categorical_ce_backward_kernel(dprobs, probs, targets, scale):
    for n in range(cuda.grid(1), probs.shape[0], cuda.gridsize(1)):
        _categorical_ce_backward_row(dprobs, probs, targets, scale, n)


@kernel(f"void({F32_1D}, {F32_2D}, {F32_2D}, int32)")
def _pointwise_forward_kernel(loss, x, targets, kind):
    for n in range(cuda.grid(1), loss.size, cuda.gridsize(1)):
        if kind == BCE:
            _binary_ce_forward_row(loss, x, targets, n)
        elif kind == BCE_LOGITS:
            _binary_ce_logits_forward_row(loss, x, targets, n)
        else:
            _mse_forward_row(loss, x, targets, n)


@kernel(f"void({F32_1D}, {F32_1D}, {F32_1D}, float32, int32)")
def _pointwise_backward_kernel(dx, x, targets, coef, kind):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        if kind == BCE:
            dx[i] = _binary_ce_grad(x[i], targets[i], coef)
        elif kind == BCE_LOGITS:
            dx[i] = _binary_ce_logits_grad(x[i], targets[i], coef)
        else:
            dx[i] = _mse_grad(x[i], targets[i], coef)


@kernel(f"void({F32_2D}, {F32_2D}, {F32_1D}, {F32_1D}, {F32_2D}, {I32_1D}, float32, int32, "
        f"int32, {F32_1D}, int32[::1])")
def _softmax_sparse_ce_train_kernel(probs, dlogits, loss_acc, match_acc, logits, labels, scale,
                                    from_logits, has_match, part, ctr):
    buf = cuda.shared.array(BLOCK, float32)
    last = cuda.shared.array(1, np.int32)
    if cuda.blockDim.x > BLOCK:  # larger than the shared buffer: refuse, never overrun
        return
    tid = cuda.threadIdx.x
    loss_sum = float32(0.0)
    match_sum = float32(0.0)
    for n in range(cuda.grid(1), probs.shape[0], cuda.gridsize(1)):
        loss, match = _softmax_sparse_ce_train_row(probs, dlogits, logits, labels, scale,
                                                   from_logits != 0, n)
        loss_sum += loss
        match_sum += match
    loss_sum = block_sum(buf, loss_sum)
    match_sum = block_sum(buf, match_sum)
    blocks = cuda.gridDim.x
    if blocks > 1:  # uniform across the block: every thread takes the same branch
        if tid == 0:
            part[cuda.blockIdx.x] = loss_sum
            part[blocks + cuda.blockIdx.x] = match_sum
            cuda.threadfence()  # the partials are visible before the counter moves
            last[0] = 0
            if cuda.atomic.add(ctr, 0, 1) == blocks - 1:
                last[0] = 1
                ctr[0] = 0  # ready for the next launch
        cuda.syncthreads()
        if last[0] == 0:
            return
        cuda.threadfence()
        loss_sum = float32(0.0)
        match_sum = float32(0.0)
        for i in range(tid, blocks, cuda.blockDim.x):  # fixed slots per thread, then a tree
            loss_sum += part[i]
            match_sum += part[blocks + i]
        loss_sum = block_sum(buf, loss_sum)
        match_sum = block_sum(buf, match_sum)
    if tid == 0:
        loss_acc[0] += loss_sum
        if has_match:
            match_acc[0] += match_sum


# launchers


def _rows(a):
    return a.reshape(a.shape[0], a.size // a.shape[0])


def _flat(a):
    return a.reshape(a.size)


def _launch_rows(k, n, *args):
    grid, block = grid_1d(n, ROW_BLOCK)
    launch(k, grid, block, *args)


def _launch_elements(k, n, *args):
    grid, block = grid_1d(min(n, 65536 * 256))
    launch(k, grid, block, *args)


def softmax_cross_entropy_forward(loss, probs, logits, labels):
    _launch_rows(_softmax_ce_forward_kernel, loss.size, loss, probs, logits, labels)


def softmax_cross_entropy_backward(dlogits, probs, labels, *, scale):
    _launch_rows(
        _softmax_ce_backward_kernel, probs.shape[0], dlogits, probs, labels, float32(scale)
    )


def softmax_categorical_cross_entropy_forward(loss, probs, logits, targets):
    _launch_rows(_softmax_categorical_ce_forward_kernel, loss.size, loss, probs, logits, targets)


def softmax_categorical_cross_entropy_backward(dlogits, probs, targets, *, scale):
    _launch_rows(
        _softmax_categorical_ce_backward_kernel,
        probs.shape[0],
        dlogits,
        probs,
        targets,
        float32(scale),
    )


def sparse_categorical_crossentropy_forward(loss, probs, labels):
    _launch_rows(_sparse_ce_forward_kernel, loss.size, loss, probs, labels)


def sparse_categorical_crossentropy_backward(dprobs, probs, labels, *, scale):
    _launch_rows(_sparse_ce_backward_kernel, probs.shape[0], dprobs, probs, labels, float32(scale))


def categorical_crossentropy_forward(loss, probs, targets):
    _launch_rows(_categorical_ce_forward_kernel, loss.size, loss, probs, targets)


def categorical_crossentropy_backward(dprobs, probs, targets, *, scale):
    _launch_rows(
        _categorical_ce_backward_kernel, probs.shape[0], dprobs, probs, targets, float32(scale)
    )


def _pointwise_forward(loss, x, targets, kind):
    _launch_rows(
        _pointwise_forward_kernel, loss.size, loss, _rows(x), _rows(targets), np.int32(kind)
    )


def _pointwise_backward(dx, x, targets, scale, kind):
    _launch_elements(
        _pointwise_backward_kernel,
        x.size,
        _flat(dx),
        _flat(x),
        _flat(targets),
        _math.pointwise_coef(kind, scale, x),
        np.int32(kind),
    )


def binary_crossentropy_forward(loss, probs, targets):
    _pointwise_forward(loss, probs, targets, BCE)


def binary_crossentropy_backward(dprobs, probs, targets, *, scale):
    _pointwise_backward(dprobs, probs, targets, scale, BCE)


def binary_crossentropy_logits_forward(loss, logits, targets):
    _pointwise_forward(loss, logits, targets, BCE_LOGITS)


def binary_crossentropy_logits_backward(dlogits, logits, targets, *, scale):
    _pointwise_backward(dlogits, logits, targets, scale, BCE_LOGITS)


def mse_forward(loss, pred, targets):
    _pointwise_forward(loss, pred, targets, MSE)


def mse_backward(dpred, pred, targets, *, scale):
    _pointwise_backward(dpred, pred, targets, scale, MSE)


def softmax_sparse_ce_train(probs, dlogits, loss_acc, match_acc, logits, labels, *, scale,
                            workspace=None, from_logits=False):
    n = probs.shape[0]
    blocks = min(ceil_div(n, BLOCK), TRAIN_MAX_BLOCKS)
    part = loss_acc
    if blocks > 1:
        part = cached_scratch(2 * blocks) if workspace is None else workspace
    launch(_softmax_sparse_ce_train_kernel, blocks, BLOCK, probs, dlogits, loss_acc,
           loss_acc if match_acc is None else match_acc, logits, labels, float32(scale),
           np.int32(bool(from_logits)), np.int32(match_acc is not None), part, _tile_counters(1))
