"""CUDA kernels for kernels_numba.ops.optim_more: one fused grid-stride kernel per tensor or
parameter block, running kernels_numba.cpu.optim_more's `*_step` math as device functions.
Per-step values come from the float32 `s` buffer (ops.optim_more.LAYOUTS); constant
hyperparameters are plain float32 arguments, so a launch's arguments never change.
"""

import numpy as np

from kernels_numba._cuda import cuda, device_function, kernel
from kernels_numba.cpu import optim_more as _math
from kernels_numba.gpu.optim import GRAD, flat, grad_args, grad_at, launch_flat

F32_1D = "float32[::1]"
F32 = "float32"
B = "boolean"
_ZERO = np.float32(0.0)

_nadam_step = device_function(_math.nadam_step, inline="always")
_adamax_step = device_function(_math.adamax_step, inline="always")
_adadelta_step = device_function(_math.adadelta_step, inline="always")
_lion_step = device_function(_math.lion_step, inline="always")
_ftrl_step = device_function(_math.ftrl_step, inline="always")


def _sig(buffers, scalars):
    # buffers (the last one is s, the per-step scalars), constant scalars, zero_grad, grad
    return f"void({', '.join([F32_1D] * buffers + [F32] * scalars)}, {B}, {GRAD})"


@kernel(_sig(5, 3))
def _nadam_kernel(w, g, m, v, s, beta_1, beta_2, epsilon, zero_grad, gm, gc, gs, gseg):
    lr = s[0]
    u_next = s[1]
    den_next = s[2]
    one_minus_u = s[3]
    den = s[4]
    bias_2 = s[5]
    decay = s[6]
    for i in range(cuda.grid(1), w.size, cuda.gridsize(1)):
        gi = grad_at(g, i, gm, gc, gs, gseg)
        _nadam_step(w, m, v, i, gi, lr, beta_1, beta_2, u_next, den_next, one_minus_u, den,
                    bias_2, epsilon, decay)
        if zero_grad:
            g[i] = _ZERO


@kernel(_sig(5, 3))
def _adamax_kernel(w, g, m, u, s, beta_1, beta_2, epsilon, zero_grad, gm, gc, gs, gseg):
    lr = s[0]
    bias_1 = s[1]
    decay = s[2]
    for i in range(cuda.grid(1), w.size, cuda.gridsize(1)):
        gi = grad_at(g, i, gm, gc, gs, gseg)
        _adamax_step(w, m, u, i, gi, lr, beta_1, beta_2, bias_1, epsilon, decay)
        if zero_grad:
            g[i] = _ZERO


@kernel(_sig(5, 2))
def _adadelta_kernel(w, g, acc, delta, s, rho, epsilon, zero_grad, gm, gc, gs, gseg):
    lr = s[0]
    decay = s[1]
    for i in range(cuda.grid(1), w.size, cuda.gridsize(1)):
        gi = grad_at(g, i, gm, gc, gs, gseg)
        _adadelta_step(w, acc, delta, i, gi, lr, rho, epsilon, decay)
        if zero_grad:
            g[i] = _ZERO


@kernel(_sig(4, 2))
def _lion_kernel(w, g, m, s, beta_1, beta_2, zero_grad, gm, gc, gs, gseg):
    lr = s[0]
    decay = s[1]
    for i in range(cuda.grid(1), w.size, cuda.gridsize(1)):
        gi = grad_at(g, i, gm, gc, gs, gseg)
        _lion_step(w, m, i, gi, lr, beta_1, beta_2, decay)
        if zero_grad:
            g[i] = _ZERO


@kernel(_sig(5, 3))
def _ftrl_kernel(w, g, acc, linear, s, power, l1, two_shrink, zero_grad, gm, gc, gs, gseg):
    lr = s[0]
    two_l2 = s[1]
    decay = s[2]
    for i in range(cuda.grid(1), w.size, cuda.gridsize(1)):
        gi = grad_at(g, i, gm, gc, gs, gseg)
        _ftrl_step(w, acc, linear, i, gi, lr, power, l1, two_l2, two_shrink, decay)
        if zero_grad:
            g[i] = _ZERO


def nadam_update(w, g, m, v, *, scalars, beta_1, beta_2, epsilon, zero_grad, grad):
    launch_flat(_nadam_kernel, w, flat(g), flat(m), flat(v), scalars, beta_1, beta_2, epsilon,
                zero_grad, *grad_args(grad))


def adamax_update(w, g, m, u, *, scalars, beta_1, beta_2, epsilon, zero_grad, grad):
    launch_flat(_adamax_kernel, w, flat(g), flat(m), flat(u), scalars, beta_1, beta_2, epsilon,
                zero_grad, *grad_args(grad))


def adadelta_update(w, g, accumulated_grad, accumulated_delta, *, scalars, rho, epsilon,
                    zero_grad, grad):
    launch_flat(_adadelta_kernel, w, flat(g), flat(accumulated_grad), flat(accumulated_delta),
                scalars, rho, epsilon, zero_grad, *grad_args(grad))


def lion_update(w, g, m, *, scalars, beta_1, beta_2, zero_grad, grad):
    launch_flat(_lion_kernel, w, flat(g), flat(m), scalars, beta_1, beta_2, zero_grad,
                *grad_args(grad))


def ftrl_update(w, g, accumulator, linear, *, scalars, power, l1, two_shrink, zero_grad, grad):
    launch_flat(_ftrl_kernel, w, flat(g), flat(accumulator), flat(linear), scalars, power, l1,
                two_shrink, zero_grad, *grad_args(grad))
