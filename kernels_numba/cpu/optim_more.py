"""CPU twins of kernels_numba.ops.optim_more (Nadam, Adamax, Adadelta, Lion, Ftrl), and
their per-element math, shared with kernels_numba.gpu.optim_more as device functions.

Operation order follows Keras 3's torch backend (m*beta + g*(1-beta), ...), so the
float32 results round like Keras's. Gradients are read through
kernels_numba.cpu.optim.grad_at (clipping), as in the other optimizers; per-step values
come from the `scalars` buffer (layouts in ops.optim_more), constants by value.
"""

import math

import numba
import numpy as np

from kernels_numba.cpu._parallel import bound_op, f32_1d, from_f32_bits
from kernels_numba.cpu.optim import (
    _TINY,
    grad_mode,
    head,
    scaled_clipped,
    segment_grad,
    span,
    update_call,
    update_parts,
    view,
)

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)


def nadam_step(w, m, v, i, gi, lr, beta_1, beta_2, u_next, den_next, one_minus_u, den, bias_2,
               epsilon, decay):
    wi = w[i]
    if decay != _ZERO:  # Keras 3's decoupled weight decay, before the step
        wi -= wi * decay
    mi = m[i] * beta_1 + gi * (_ONE - beta_1)
    vi = v[i] * beta_2 + gi * gi * (_ONE - beta_2)
    mi = _ZERO if abs(mi) < _TINY else mi  # flush to zero: see cpu/optim.py's _TINY
    vi = _ZERO if vi < _TINY else vi
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
    mi = _ZERO if abs(mi) < _TINY else mi  # flush to zero: see cpu/optim.py's _TINY
    ui = _ZERO if ui < _TINY else ui
    m[i] = mi
    u[i] = ui
    w[i] = wi - mi * lr / ((ui + epsilon) * bias_1)


def adadelta_step(w, accumulated_grad, accumulated_delta, i, gi, lr, rho, epsilon, decay):
    wi = w[i]
    if decay != _ZERO:  # Keras 3's decoupled weight decay, before the step
        wi -= wi * decay
    a = accumulated_grad[i] * rho + gi * gi * (_ONE - rho)
    a = _ZERO if a < _TINY else a  # flush to zero: see cpu/optim.py's _TINY
    accumulated_grad[i] = a
    d = -(math.sqrt(accumulated_delta[i] + epsilon) * gi / math.sqrt(a + epsilon))
    delta = accumulated_delta[i] * rho + d * d * (_ONE - rho)
    accumulated_delta[i] = _ZERO if delta < _TINY else delta
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
    mi = m[i] * beta_2 + gi * (_ONE - beta_2)
    m[i] = _ZERO if abs(mi) < _TINY else mi  # flush to zero: see cpu/optim.py's _TINY


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


_nadam_step = numba.njit(inline="always")(nadam_step)
_adamax_step = numba.njit(inline="always")(adamax_step)
_adadelta_step = numba.njit(inline="always")(adadelta_step)
_lion_step = numba.njit(inline="always")(lion_step)
_ftrl_step = numba.njit(inline="always")(ftrl_step)


# One part per update (kernels_numba.cpu.optim's argument layout with two slots, then
# three constant hyperparameters as float32 bits c0, c1, c2; see cpu.optim.update_parts).


@numba.njit(inline="always")
def _unpack(a, p, parts, segmented):
    """(lo, hi, w, g, slot a, slot b, c0, c1, c2, per-step scalars, grad mode...)."""
    offset, n, lo, hi = span(a, p, parts, segmented)
    return ((lo, hi, view(a, 0, offset, n), view(a, 2, offset, n), view(a, 10, offset, n),
             view(a, 12, offset, n), from_f32_bits(a[17]), from_f32_bits(a[18]),
             from_f32_bits(a[19]), f32_1d(a, 4)) + grad_mode(a, 14))


def _nadam_parts(segmented):
    def part(args, p, parts):  # c0, c1, c2: beta_1, beta_2, epsilon
        a = numba.carray(args, 20)
        lo, hi, w, g, m, v, c0, c1, c2, s, zero_grad, clipping, clip, scale = \
            _unpack(a, p, parts, segmented)
        lr, u_next, den_next, one_minus_u, den, bias_2, decay = s[0], s[1], s[2], s[3], s[4], \
            s[5], s[6]
        for i in range(lo, hi):
            if segmented:
                gi = segment_grad(g, i, a)
            else:
                gi = scaled_clipped(g[i], scale, clipping, clip)
            _nadam_step(w, m, v, i, gi, lr, c0, c1, u_next, den_next, one_minus_u, den, bias_2,
                        c2, decay)
            if zero_grad:
                g[i] = _ZERO
    return part


_nadam_part = update_parts(_nadam_parts)


def _adamax_parts(segmented):
    def part(args, p, parts):  # c0, c1, c2: beta_1, beta_2, epsilon
        a = numba.carray(args, 20)
        lo, hi, w, g, m, u, c0, c1, c2, s, zero_grad, clipping, clip, scale = \
            _unpack(a, p, parts, segmented)
        lr, bias_1, decay = s[0], s[1], s[2]
        for i in range(lo, hi):
            if segmented:
                gi = segment_grad(g, i, a)
            else:
                gi = scaled_clipped(g[i], scale, clipping, clip)
            _adamax_step(w, m, u, i, gi, lr, c0, c1, bias_1, c2, decay)
            if zero_grad:
                g[i] = _ZERO
    return part


_adamax_part = update_parts(_adamax_parts)


def _adadelta_parts(segmented):
    def part(args, p, parts):  # c0, c1, c2: rho, epsilon
        a = numba.carray(args, 20)
        lo, hi, w, g, acc, delta, c0, c1, c2, s, zero_grad, clipping, clip, scale = \
            _unpack(a, p, parts, segmented)
        lr, decay = s[0], s[1]
        for i in range(lo, hi):
            if segmented:
                gi = segment_grad(g, i, a)
            else:
                gi = scaled_clipped(g[i], scale, clipping, clip)
            _adadelta_step(w, acc, delta, i, gi, lr, c0, c1, decay)
            if zero_grad:
                g[i] = _ZERO
    return part


_adadelta_part = update_parts(_adadelta_parts)


def _lion_parts(segmented):
    def part(args, p, parts):  # c0, c1, c2: beta_1, beta_2
        a = numba.carray(args, 20)
        lo, hi, w, g, m, _, c0, c1, c2, s, zero_grad, clipping, clip, scale = \
            _unpack(a, p, parts, segmented)
        lr, decay = s[0], s[1]
        for i in range(lo, hi):
            if segmented:
                gi = segment_grad(g, i, a)
            else:
                gi = scaled_clipped(g[i], scale, clipping, clip)
            _lion_step(w, m, i, gi, lr, c0, c1, decay)
            if zero_grad:
                g[i] = _ZERO
    return part


_lion_part = update_parts(_lion_parts)


def _ftrl_parts(segmented):
    def part(args, p, parts):  # c0, c1, c2: power, l1, two_shrink
        a = numba.carray(args, 20)
        lo, hi, w, g, acc, linear, c0, c1, c2, s, zero_grad, clipping, clip, scale = \
            _unpack(a, p, parts, segmented)
        lr, two_l2, decay = s[0], s[1], s[2]
        for i in range(lo, hi):
            if segmented:
                gi = segment_grad(g, i, a)
            else:
                gi = scaled_clipped(g[i], scale, clipping, clip)
            _ftrl_step(w, acc, linear, i, gi, lr, c0, c1, two_l2, c2, decay)
            if zero_grad:
                g[i] = _ZERO
    return part


_ftrl_part = update_parts(_ftrl_parts)


def _call(part, w, g, slot_a, slot_b, scalars, zero_grad, grad, c0, c1=_ZERO, c2=_ZERO):
    return update_call(part, head(w, g, scalars, grad, zero_grad), (slot_a, slot_b),
                       (np.float32(c0), np.float32(c1), np.float32(c2)))


@bound_op
def nadam_update(w, g, m, v, *, scalars, beta_1, beta_2, epsilon, zero_grad, grad):
    return _call(_nadam_part, w, g, m, v, scalars, zero_grad, grad, beta_1, beta_2, epsilon)


@bound_op
def adamax_update(w, g, m, u, *, scalars, beta_1, beta_2, epsilon, zero_grad, grad):
    return _call(_adamax_part, w, g, m, u, scalars, zero_grad, grad, beta_1, beta_2, epsilon)


@bound_op
def adadelta_update(w, g, accumulated_grad, accumulated_delta, *, scalars, rho, epsilon,
                    zero_grad, grad):
    return _call(_adadelta_part, w, g, accumulated_grad, accumulated_delta, scalars, zero_grad,
                 grad, rho, epsilon)


@bound_op
def lion_update(w, g, m, *, scalars, beta_1, beta_2, zero_grad, grad):
    return _call(_lion_part, w, g, m, m, scalars, zero_grad, grad, beta_1, beta_2)


@bound_op
def ftrl_update(w, g, accumulator, linear, *, scalars, power, l1, two_shrink, zero_grad, grad):
    return _call(_ftrl_part, w, g, accumulator, linear, scalars, zero_grad, grad, power, l1,
                 two_shrink)
