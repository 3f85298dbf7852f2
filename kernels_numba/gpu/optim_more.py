"""CUDA kernels for kernels_numba.ops.optim_more: one fused grid-stride kernel per tensor or
parameter block, running kernels_numba.cpu.optim_more's `*_step` math as device functions.
Hyperparameters are plain float32 kernel arguments (no host array: no copy per launch).
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
    return f"void({', '.join([F32_1D] * buffers + [F32] * scalars)}, {B}, {GRAD})"


@kernel(_sig(4, 10))
def _nadam_kernel(w, g, m, v, lr, beta_1, beta_2, u_next, den_next, one_minus_u, den, bias_2,
                  epsilon, decay, zero_grad, gm, gc, gs, gseg):
    for i in range(cuda.grid(1), w.size, cuda.gridsize(1)):
        gi = grad_at(g, i, gm, gc, gs, gseg)
        _nadam_step(w, m, v, i, gi, lr, beta_1, beta_2, u_next, den_next, one_minus_u, den,
                    bias_2, epsilon, decay)
        if zero_grad:
            g[i] = _ZERO


@kernel(_sig(4, 6))
def _adamax_kernel(w, g, m, u, lr, beta_1, beta_2, bias_1, epsilon, decay, zero_grad,
                   gm, gc, gs, gseg):
    for i in range(cuda.grid(1), w.size, cuda.gridsize(1)):
        gi = grad_at(g, i, gm, gc, gs, gseg)
        _adamax_step(w, m, u, i, gi, lr, beta_1, beta_2, bias_1, epsilon, decay)
        if zero_grad:
            g[i] = _ZERO


@kernel(_sig(4, 4))
def _adadelta_kernel(w, g, acc, delta, lr, rho, epsilon, decay, zero_grad, gm, gc, gs, gseg):
    for i in range(cuda.grid(1), w.size, cuda.gridsize(1)):
        gi = grad_at(g, i, gm, gc, gs, gseg)
        _adadelta_step(w, acc, delta, i, gi, lr, rho, epsilon, decay)
        if zero_grad:
            g[i] = _ZERO


@kernel(_sig(3, 4))
def _lion_kernel(w, g, m, lr, beta_1, beta_2, decay, zero_grad, gm, gc, gs, gseg):
    for i in range(cuda.grid(1), w.size, cuda.gridsize(1)):
        gi = grad_at(g, i, gm, gc, gs, gseg)
        _lion_step(w, m, i, gi, lr, beta_1, beta_2, decay)
        if zero_grad:
            g[i] = _ZERO


@kernel(_sig(4, 6))
def _ftrl_kernel(w, g, acc, linear, lr, power, l1, two_l2, two_shrink, decay, zero_grad,
                 gm, gc, gs, gseg):
    for i in range(cuda.grid(1), w.size, cuda.gridsize(1)):
        gi = grad_at(g, i, gm, gc, gs, gseg)
        _ftrl_step(w, acc, linear, i, gi, lr, power, l1, two_l2, two_shrink, decay)
        if zero_grad:
            g[i] = _ZERO


def _run(k, names, w, buffers, zero_grad, grad, values):
    launch_flat(k, w, *[flat(b) for b in buffers], *[np.float32(values[n]) for n in names],
                zero_grad, *grad_args(grad))


def nadam_update(w, g, m, v, *, zero_grad, grad, **values):
    _run(_nadam_kernel, _math.NADAM_ARGS, w, (g, m, v), zero_grad, grad, values)


def adamax_update(w, g, m, u, *, zero_grad, grad, **values):
    _run(_adamax_kernel, _math.ADAMAX_ARGS, w, (g, m, u), zero_grad, grad, values)


def adadelta_update(w, g, accumulated_grad, accumulated_delta, *, zero_grad, grad, **values):
    _run(_adadelta_kernel, _math.ADADELTA_ARGS, w, (g, accumulated_grad, accumulated_delta),
         zero_grad, grad, values)


def lion_update(w, g, m, *, zero_grad, grad, **values):
    _run(_lion_kernel, _math.LION_ARGS, w, (g, m), zero_grad, grad, values)


def ftrl_update(w, g, accumulator, linear, *, zero_grad, grad, **values):
    _run(_ftrl_kernel, _math.FTRL_ARGS, w, (g, accumulator, linear), zero_grad, grad, values)
