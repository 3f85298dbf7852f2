"""CPU twins of kernels_numba.ops.optim_more (Nadam, Adamax, Adadelta, Lion, Ftrl), and
their per-element math, shared with kernels_numba.gpu.optim_more as device functions.

Operation order follows Keras 3's torch backend (m*beta + g*(1-beta), ...), so the
float32 results round like Keras's. Gradients are read through
kernels_numba.cpu.optim.grad_at (clipping), as in the other optimizers.
"""

import math

import numba
import numpy as np

from kernels_numba.cpu.optim import _grad_at, flat, grad_args, pick

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)


def nadam_step(w, m, v, i, gi, lr, beta_1, beta_2, u_next, den_next, one_minus_u, den, bias_2,
               epsilon, decay):
    wi = w[i]
    if decay != _ZERO:  # Keras 3's decoupled weight decay, before the step
        wi -= wi * decay
    mi = m[i] * beta_1 + gi * (_ONE - beta_1)
    vi = v[i] * beta_2 + gi * gi * (_ONE - beta_2)
    m[i] = mi
    v[i] = vi
    m_hat = mi * u_next / den_next + gi * one_minus_u / den
    w[i] = wi - m_hat * lr / (math.sqrt(vi / bias_2) + epsilon)


def adamax_step(w, m, u, i, gi, lr, beta_1, beta_2, bias_1, epsilon, decay):
    wi = w[i]
    if decay != _ZERO:  # Keras 3's decoupled weight decay, before the step
        wi -= wi * decay
    mi = m[i] * beta_1 + gi * (_ONE - beta_1)
    ui = u[i] * beta_2
    ai = abs(gi)
    if ui == ui and not ui >= ai:  # max that keeps NaN from either side (torch.maximum)
        ui = ai
    m[i] = mi
    u[i] = ui
    w[i] = wi - mi * lr / ((ui + epsilon) * bias_1)


def adadelta_step(w, accumulated_grad, accumulated_delta, i, gi, lr, rho, epsilon, decay):
    wi = w[i]
    if decay != _ZERO:  # Keras 3's decoupled weight decay, before the step
        wi -= wi * decay
    a = accumulated_grad[i] * rho + gi * gi * (_ONE - rho)
    accumulated_grad[i] = a
    d = -(math.sqrt(accumulated_delta[i] + epsilon) * gi / math.sqrt(a + epsilon))
    accumulated_delta[i] = accumulated_delta[i] * rho + d * d * (_ONE - rho)
    w[i] = wi + d * lr


def lion_step(w, m, i, gi, lr, beta_1, beta_2, decay):
    wi = w[i]
    if decay != _ZERO:  # Keras 3's decoupled weight decay, before the step
        wi -= wi * decay
    c = m[i] * beta_1 + gi * (_ONE - beta_1)
    if c > _ZERO:
        s = _ONE
    elif c < _ZERO:
        s = -_ONE
    else:
        s = c  # 0 stays 0, NaN stays NaN
    w[i] = wi - s * lr
    m[i] = m[i] * beta_2 + gi * (_ONE - beta_2)


def ftrl_step(w, accumulator, linear, i, gi, lr, power, l1, two_l2, two_shrink, decay):
    wi = w[i]
    if decay != _ZERO:  # Keras 3's decoupled weight decay, before the step
        wi -= wi * decay
    n = accumulator[i]
    n_new = n + gi * gi
    n_new_p = n_new ** power
    z = linear[i] + (gi + two_shrink * wi) - (n_new_p - n ** power) / lr * wi
    linear[i] = z
    zc = z
    if z > l1:
        zc = l1
    elif z < -l1:
        zc = -l1
    w[i] = (zc - z) / (n_new_p / lr + two_l2)
    accumulator[i] = n_new


_nadam_step = numba.njit(cache=True)(nadam_step)
_adamax_step = numba.njit(cache=True)(adamax_step)
_adadelta_step = numba.njit(cache=True)(adadelta_step)
_lion_step = numba.njit(cache=True)(lion_step)
_ftrl_step = numba.njit(cache=True)(ftrl_step)


# Parallel loops and serial twins (small tensors), as in kernels_numba.cpu.optim.
# `gm, gc, gs, gseg` = grad_at's mode, clipvalue, scales, segments.


@numba.njit(parallel=True, cache=True)
def _nadam(w, g, m, v, a, zero_grad, gm, gc, gs, gseg):
    for i in numba.prange(w.size):
        gi = _grad_at(g, i, gm, gc, gs, gseg)
        _nadam_step(w, m, v, i, gi, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9])
        if zero_grad:
            g[i] = _ZERO


@numba.njit(cache=True)
def _nadam_serial(w, g, m, v, a, zero_grad, gm, gc, gs, gseg):
    for i in range(w.size):
        gi = _grad_at(g, i, gm, gc, gs, gseg)
        _nadam_step(w, m, v, i, gi, a[0], a[1], a[2], a[3], a[4], a[5], a[6], a[7], a[8], a[9])
        if zero_grad:
            g[i] = _ZERO


@numba.njit(parallel=True, cache=True)
def _adamax(w, g, m, u, a, zero_grad, gm, gc, gs, gseg):
    for i in numba.prange(w.size):
        gi = _grad_at(g, i, gm, gc, gs, gseg)
        _adamax_step(w, m, u, i, gi, a[0], a[1], a[2], a[3], a[4], a[5])
        if zero_grad:
            g[i] = _ZERO


@numba.njit(cache=True)
def _adamax_serial(w, g, m, u, a, zero_grad, gm, gc, gs, gseg):
    for i in range(w.size):
        gi = _grad_at(g, i, gm, gc, gs, gseg)
        _adamax_step(w, m, u, i, gi, a[0], a[1], a[2], a[3], a[4], a[5])
        if zero_grad:
            g[i] = _ZERO


@numba.njit(parallel=True, cache=True)
def _adadelta(w, g, acc, delta, a, zero_grad, gm, gc, gs, gseg):
    for i in numba.prange(w.size):
        gi = _grad_at(g, i, gm, gc, gs, gseg)
        _adadelta_step(w, acc, delta, i, gi, a[0], a[1], a[2], a[3])
        if zero_grad:
            g[i] = _ZERO


@numba.njit(cache=True)
def _adadelta_serial(w, g, acc, delta, a, zero_grad, gm, gc, gs, gseg):
    for i in range(w.size):
        gi = _grad_at(g, i, gm, gc, gs, gseg)
        _adadelta_step(w, acc, delta, i, gi, a[0], a[1], a[2], a[3])
        if zero_grad:
            g[i] = _ZERO


@numba.njit(parallel=True, cache=True)
def _lion(w, g, m, a, zero_grad, gm, gc, gs, gseg):
    for i in numba.prange(w.size):
        gi = _grad_at(g, i, gm, gc, gs, gseg)
        _lion_step(w, m, i, gi, a[0], a[1], a[2], a[3])
        if zero_grad:
            g[i] = _ZERO


@numba.njit(cache=True)
def _lion_serial(w, g, m, a, zero_grad, gm, gc, gs, gseg):
    for i in range(w.size):
        gi = _grad_at(g, i, gm, gc, gs, gseg)
        _lion_step(w, m, i, gi, a[0], a[1], a[2], a[3])
        if zero_grad:
            g[i] = _ZERO


@numba.njit(parallel=True, cache=True)
def _ftrl(w, g, acc, linear, a, zero_grad, gm, gc, gs, gseg):
    for i in numba.prange(w.size):
        gi = _grad_at(g, i, gm, gc, gs, gseg)
        _ftrl_step(w, acc, linear, i, gi, a[0], a[1], a[2], a[3], a[4], a[5])
        if zero_grad:
            g[i] = _ZERO


@numba.njit(cache=True)
def _ftrl_serial(w, g, acc, linear, a, zero_grad, gm, gc, gs, gseg):
    for i in range(w.size):
        gi = _grad_at(g, i, gm, gc, gs, gseg)
        _ftrl_step(w, acc, linear, i, gi, a[0], a[1], a[2], a[3], a[4], a[5])
        if zero_grad:
            g[i] = _ZERO


# The launchers pack the float32 hyperparameters into one small array `a` (same order
# as the step's scalar arguments): the loops stay short and one signature serves all.

NADAM_ARGS = ("lr", "beta_1", "beta_2", "u_next", "den_next", "one_minus_u", "den", "bias_2",
              "epsilon", "decay")
ADAMAX_ARGS = ("lr", "beta_1", "beta_2", "bias_1", "epsilon", "decay")
ADADELTA_ARGS = ("lr", "rho", "epsilon", "decay")
LION_ARGS = ("lr", "beta_1", "beta_2", "decay")
FTRL_ARGS = ("lr", "power", "l1", "two_l2", "two_shrink", "decay")


def scalars(names, values):
    return np.array([values[n] for n in names], np.float32)


def _run(parallel, serial, names, w, buffers, zero_grad, grad, values):
    pick(parallel, serial, w)(flat(w), *[flat(b) for b in buffers], scalars(names, values),
                              zero_grad, *grad_args(grad))


def nadam_update(w, g, m, v, *, zero_grad, grad, **values):
    _run(_nadam, _nadam_serial, NADAM_ARGS, w, (g, m, v), zero_grad, grad, values)


def adamax_update(w, g, m, u, *, zero_grad, grad, **values):
    _run(_adamax, _adamax_serial, ADAMAX_ARGS, w, (g, m, u), zero_grad, grad, values)


def adadelta_update(w, g, accumulated_grad, accumulated_delta, *, zero_grad, grad, **values):
    _run(_adadelta, _adadelta_serial, ADADELTA_ARGS, w, (g, accumulated_grad, accumulated_delta),
         zero_grad, grad, values)


def lion_update(w, g, m, *, zero_grad, grad, **values):
    _run(_lion, _lion_serial, LION_ARGS, w, (g, m), zero_grad, grad, values)


def ftrl_update(w, g, accumulator, linear, *, zero_grad, grad, **values):
    _run(_ftrl, _ftrl_serial, FTRL_ARGS, w, (g, accumulator, linear), zero_grad, grad, values)
