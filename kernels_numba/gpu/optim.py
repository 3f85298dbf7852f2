"""CUDA kernels for kernels_numba.ops.optim: one fused grid-stride kernel per parameter tensor
(or per parameter block: the whole flat block in one launch).

The per-element math is kernels_numba.cpu.optim's `grad_at` and `*_step` functions
compiled as device functions (one formula for both devices). Unused slots are passed
as w; unused scale/segment buffers as small cached stand-ins. Per-step values (lr,
alpha, decay, ...) are read from the float32 `s` buffer (layouts: ops.optim.SCALARS),
so the arguments of a launch never change from step to step (CUDA-graph replay).
"""

import numpy as np

from kernels_numba import device
from kernels_numba._cuda import cuda, device_function, grid_1d, kernel, launch
from kernels_numba.cpu import optim as _math

F32_1D = "float32[::1]"
F32 = "float32"
B = "boolean"
# grad_at's arguments: mode, clipvalue, scales, segments
GRAD = "int32, float32, float32[::1], int64[:, ::1]"

# inline="always": compile_ptx without a driver cannot compile a separate device function.
grad_at = device_function(_math.grad_at, inline="always")
_sgd_step = device_function(_math.sgd_step, inline="always")
_adam_step = device_function(_math.adam_step, inline="always")
_rmsprop_step = device_function(_math.rmsprop_step, inline="always")
_adagrad_step = device_function(_math.adagrad_step, inline="always")
_ZERO = np.float32(0.0)


# kernels (s: the per-step scalars buffer)


@kernel(f"void({F32_1D}, {F32_1D}, {F32_1D}, {F32_1D}, {F32}, {B}, {B}, {B}, {GRAD})")
def _sgd_kernel(w, g, velocity, s, momentum, nesterov, use_velocity, zero_grad, gm, gc, gs,
                gseg):
    lr = s[0]
    decay = s[1]
    for i in range(cuda.grid(1), w.size, cuda.gridsize(1)):
        gi = grad_at(g, i, gm, gc, gs, gseg)
        _sgd_step(w, velocity, i, gi, lr, momentum, nesterov, use_velocity, decay)
        if zero_grad:
            g[i] = _ZERO


@kernel(f"void({F32_1D}, {F32_1D}, {F32_1D}, {F32_1D}, {F32_1D}, {F32}, {F32}, {F32}, {B}, "
        f"{GRAD})")
def _adam_kernel(w, g, m, v, s, one_minus_beta_1, one_minus_beta_2, epsilon, zero_grad,
                 gm, gc, gs, gseg):
    alpha = s[0]
    decay = s[1]
    for i in range(cuda.grid(1), w.size, cuda.gridsize(1)):
        gi = grad_at(g, i, gm, gc, gs, gseg)
        _adam_step(w, m, v, i, gi, alpha, one_minus_beta_1, one_minus_beta_2, epsilon, decay)
        if zero_grad:
            g[i] = _ZERO


@kernel(f"void({F32_1D}, {F32_1D}, {F32_1D}, {F32_1D}, {F32_1D}, {F32_1D}, "
        f"{F32}, {F32}, {F32}, {B}, {B}, {B}, {GRAD})")
def _rmsprop_kernel(w, g, velocity, momentum_buf, average_grad, s, rho, momentum, epsilon,
                    centered, use_momentum, zero_grad, gm, gc, gs, gseg):
    lr = s[0]
    decay = s[1]
    for i in range(cuda.grid(1), w.size, cuda.gridsize(1)):
        gi = grad_at(g, i, gm, gc, gs, gseg)
        _rmsprop_step(w, velocity, momentum_buf, average_grad, i, gi, lr, rho, momentum,
                      epsilon, centered, use_momentum, decay)
        if zero_grad:
            g[i] = _ZERO


@kernel(f"void({F32_1D}, {F32_1D}, {F32_1D}, {F32_1D}, {F32}, {B}, {GRAD})")
def _adagrad_kernel(w, g, accumulator, s, epsilon, zero_grad, gm, gc, gs, gseg):
    lr = s[0]
    decay = s[1]
    for i in range(cuda.grid(1), w.size, cuda.gridsize(1)):
        gi = grad_at(g, i, gm, gc, gs, gseg)
        _adagrad_step(w, accumulator, i, gi, lr, epsilon, decay)
        if zero_grad:
            g[i] = _ZERO


# launchers

_stand_ins = []


def grad_args(grad):
    """ops.optim's (mode, clipvalue, scales, segments) with device stand-ins filled in
    (allocated once per process)."""
    mode, clipvalue, scales, segments = grad
    if scales is None or segments is None:
        if not _stand_ins:
            _stand_ins.extend([device.to_device(_math.NO_SCALES, device.CUDA),
                               device.to_device(_math.NO_SEGMENTS, device.CUDA)])
        scales = _stand_ins[0] if scales is None else scales
        segments = _stand_ins[1] if segments is None else segments
    return np.int32(mode), clipvalue, flat(scales), segments


def flat(a):
    return a.reshape(a.size)


def launch_flat(k, w, *args):
    grid, block = grid_1d(min(w.size, 65536 * 256))
    launch(k, grid, block, flat(w), *args)


def sgd_update(w, g, velocity, *, scalars, momentum, nesterov, zero_grad, grad):
    use_velocity = velocity is not None
    launch_flat(_sgd_kernel, w, flat(g), flat(velocity if use_velocity else w), scalars,
                momentum, nesterov, use_velocity, zero_grad, *grad_args(grad))


def adam_update(w, g, m, v, *, scalars, one_minus_beta_1, one_minus_beta_2, epsilon, zero_grad,
                grad):
    launch_flat(_adam_kernel, w, flat(g), flat(m), flat(v), scalars, one_minus_beta_1,
                one_minus_beta_2, epsilon, zero_grad, *grad_args(grad))


def rmsprop_update(w, g, velocity, momentum_buf, average_grad, *, scalars, rho, momentum,
                   epsilon, centered, zero_grad, grad):
    use_momentum = momentum_buf is not None
    launch_flat(_rmsprop_kernel, w, flat(g), flat(velocity),
                flat(momentum_buf if use_momentum else w), flat(average_grad if centered else w),
                scalars, rho, momentum, epsilon, centered, use_momentum, zero_grad,
                *grad_args(grad))


def adagrad_update(w, g, accumulator, *, scalars, epsilon, zero_grad, grad):
    launch_flat(_adagrad_kernel, w, flat(g), flat(accumulator), scalars, epsilon, zero_grad,
                *grad_args(grad))
