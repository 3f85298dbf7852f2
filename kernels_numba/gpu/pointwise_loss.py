"""CUDA kernels for kernels_numba.ops.pointwise_loss.

The math is kernels_numba.cpu.pointwise_loss's functions compiled as device functions
(one formula for both devices). Per-sample losses run one thread per sample, the
pointwise gradients one thread per element; `hinge_targets` is one block that first
decides, by a fixed-order block sum of "not 0 or 1" flags, whether the whole batch is
0/1 labels (Keras's convert_binary_labels_to_hinge), then writes every element.
"""

import numpy as np
from numba import float32, int32

from kernels_numba._cuda import cuda, device_function, grid_1d, kernel, launch
from kernels_numba.cpu import pointwise_loss as _math
from kernels_numba.gpu import _blocks
from kernels_numba.gpu.reduction import BLOCK, block_sum
from kernels_numba.ops.pointwise_loss import KIND_CODES

F32_1D = "float32[::1]"
F32_2D = "float32[:, ::1]"
ROW_BLOCK = _blocks.size("ROW_BLOCK")
KLD = _math.KLD


def _device(f):
    # inline="always": compile_ptx without a driver cannot compile a separate device function.
    return device_function(f, inline="always")


_element_loss = _device(_math.element_loss)
_element_grad = _device(_math.element_grad)
_cosine_row = _device(_math.cosine_row)
_cosine_grad_row = _device(_math.cosine_grad_row)
_cat_hinge_row = _device(_math.cat_hinge_row)
_cat_hinge_grad_row = _device(_math.cat_hinge_grad_row)


@kernel(f"void({F32_1D}, {F32_2D}, {F32_2D}, int32, float32)")
def _pointwise_forward_kernel(loss, x, targets, kind, delta):
    d = x.shape[1]
    for n in range(cuda.grid(1), loss.size, cuda.gridsize(1)):
        total = float32(0.0)
        for j in range(d):
            total += _element_loss(x[n, j], targets[n, j], kind, delta)
        loss[n] = total if kind == KLD else total / float32(d)


@kernel(f"void({F32_1D}, {F32_1D}, {F32_1D}, float32, int32, float32)")
def _pointwise_backward_kernel(dx, x, targets, coef, kind, delta):
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        dx[i] = coef * _element_grad(x[i], targets[i], kind, delta)


@kernel(f"void({F32_1D}, {F32_1D})")
def _hinge_targets_kernel(out, targets):
    # One block (launched with blockDim <= BLOCK): count the non-0/1 elements, then convert.
    buf = cuda.shared.array(BLOCK, float32)
    zero = float32(0.0)
    one = float32(1.0)
    bad = zero
    for i in range(cuda.threadIdx.x, targets.size, cuda.blockDim.x):
        t = targets[i]
        if not (t == zero or t == one):
            bad += one
    binary = block_sum(buf, bad) == zero  # a sum of ones is never rounded to 0
    for i in range(cuda.threadIdx.x, targets.size, cuda.blockDim.x):
        t = targets[i]  # out may be targets: each element read before it is written
        out[i] = float32(2.0) * t - one if binary else t


@kernel(f"void({F32_1D}, {F32_1D}, float32, float32)")
def _smooth_kernel(out, targets, a, b):
    for i in range(cuda.grid(1), targets.size, cuda.gridsize(1)):
        out[i] = targets[i] * a + b


@kernel(f"void({F32_1D}, {F32_2D}, {F32_2D})")
def _cosine_forward_kernel(loss, pred, targets):
    for n in range(cuda.grid(1), loss.size, cuda.gridsize(1)):
        _cosine_row(loss, pred, targets, n)


@kernel(f"void({F32_2D}, {F32_2D}, {F32_2D}, float32)")
def _cosine_backward_kernel(dpred, pred, targets, scale):
    for n in range(cuda.grid(1), pred.shape[0], cuda.gridsize(1)):
        _cosine_grad_row(dpred, pred, targets, scale, n)


@kernel(f"void({F32_1D}, {F32_2D}, {F32_2D})")
def _cat_hinge_forward_kernel(loss, pred, targets):
    for n in range(cuda.grid(1), loss.size, cuda.gridsize(1)):
        _cat_hinge_row(loss, pred, targets, n)


@kernel(f"void({F32_2D}, {F32_2D}, {F32_2D}, float32)")
def _cat_hinge_backward_kernel(dpred, pred, targets, scale):
    for n in range(cuda.grid(1), pred.shape[0], cuda.gridsize(1)):
        _cat_hinge_grad_row(dpred, pred, targets, scale, n)


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


def pointwise_loss_forward(loss, pred, targets, *, kind, param):
    _launch_rows(_pointwise_forward_kernel, loss.size, loss, _rows(pred), _rows(targets),
                 int32(KIND_CODES[kind]), float32(param))


def pointwise_loss_backward(dpred, pred, targets, *, kind, scale, param):
    _launch_elements(_pointwise_backward_kernel, pred.size, _flat(dpred), _flat(pred),
                     _flat(targets), _math.grad_coef(kind, scale, pred),
                     int32(KIND_CODES[kind]), float32(param))


def hinge_targets(out, targets):
    launch(_hinge_targets_kernel, 1, min(BLOCK, max(32, targets.size)), _flat(out),
           _flat(targets))


def smooth_labels(out, targets, a, b):
    _launch_elements(_smooth_kernel, targets.size, _flat(out), _flat(targets), np.float32(a),
                     np.float32(b))


def cosine_similarity_forward(loss, pred, targets):
    _launch_rows(_cosine_forward_kernel, loss.size, loss, pred, targets)


def cosine_similarity_backward(dpred, pred, targets, scale):
    _launch_rows(_cosine_backward_kernel, pred.shape[0], dpred, pred, targets, float32(scale))


def categorical_hinge_forward(loss, pred, targets):
    _launch_rows(_cat_hinge_forward_kernel, loss.size, loss, pred, targets)


def categorical_hinge_backward(dpred, pred, targets, scale):
    _launch_rows(_cat_hinge_backward_kernel, pred.shape[0], dpred, pred, targets, float32(scale))
