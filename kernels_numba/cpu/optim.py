"""CPU twins of kernels_numba.ops.optim, and the per-element update math of both devices.

The `*_step` functions are plain Python over float32 scalars: the CPU loops below
njit-compile them and kernels_numba.gpu.optim compiles the same functions as CUDA
device functions, so both devices run one formula. Each loop reads the gradient
through `grad_at` (clipping or a device-side scale, see ops.optim), hands the step
that value `gi`, then zeroes g[i] when asked. Unused slots (velocity=None,
momentum_buf/average_grad when off) are replaced by w and never touched.
`decay` = weight_decay * lr: Keras 3's decoupled weight decay w -= w * decay, applied
before the update (its base optimizer does this for every optimizer).
"""

import math

import numba
import numpy as np

from kernels_numba.cpu.activation import PARALLEL_MIN_SIZE

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)

# grad_at modes (ops.optim picks one per call)
PLAIN, CLIP_VALUE, SCALE_ONE, SCALE_SEGMENTS = 0, 1, 2, 3
# Stand-ins for the scale/segment buffers when a call has none.
NO_SCALES = np.ones(1, np.float32)
NO_SEGMENTS = np.zeros((1, 2), np.int64)


# per-element math (shared with the CUDA kernels)


def grad_at(g, i, mode, clipvalue, scales, segments):
    """The gradient the update uses for element i.

    CLIP_VALUE: g clipped to [-clipvalue, clipvalue] (NaN stays NaN, as torch.clamp).
    SCALE_ONE: g * scales[0] (global_clipnorm, or one variable's clipnorm).
    SCALE_SEGMENTS: g * scales[k] for the segment k = [segments[k,0], segments[k,1])
    holding i (sorted, found by binary search); elements in no segment (alignment
    gaps between the variables of a block) read 0, so they stay 0 whatever the scale.
    """
    gi = g[i]
    if mode == CLIP_VALUE:
        if gi > clipvalue:
            gi = clipvalue
        elif gi < -clipvalue:
            gi = -clipvalue
    elif mode == SCALE_ONE:
        gi = gi * scales[0]
    elif mode == SCALE_SEGMENTS:
        if i < segments[0, 0]:
            return _ZERO
        lo = 0
        hi = segments.shape[0] - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if segments[mid, 0] <= i:
                lo = mid
            else:
                hi = mid - 1
        if i < segments[lo, 1]:
            gi = gi * scales[lo]
        else:
            gi = _ZERO
    return gi


def sgd_step(w, velocity, i, gi, lr, momentum, nesterov, use_velocity, decay):
    if decay != _ZERO:
        w[i] -= w[i] * decay
    if use_velocity:
        m = momentum * velocity[i] - lr * gi
        velocity[i] = m
        if nesterov:
            w[i] += momentum * m - lr * gi
        else:
            w[i] += m
    else:
        w[i] -= lr * gi


def adam_step(w, m, v, i, gi, alpha, one_minus_beta_1, one_minus_beta_2, epsilon, decay):
    wi = w[i]
    if decay != _ZERO:  # AdamW: decoupled decay before the Adam step
        wi -= wi * decay
    mi = m[i] + (gi - m[i]) * one_minus_beta_1
    vi = v[i] + (gi * gi - v[i]) * one_minus_beta_2
    m[i] = mi
    v[i] = vi
    w[i] = wi - mi * alpha / (math.sqrt(vi) + epsilon)


def rmsprop_step(w, velocity, momentum_buf, average_grad, i, gi, lr, rho, momentum, epsilon,
                 centered, use_momentum, decay):
    if decay != _ZERO:
        w[i] -= w[i] * decay
    vi = rho * velocity[i] + (_ONE - rho) * gi * gi
    velocity[i] = vi
    if centered:
        ai = rho * average_grad[i] + (_ONE - rho) * gi
        average_grad[i] = ai
        denominator = vi - ai * ai + epsilon
    else:
        denominator = vi + epsilon
    increment = lr * gi / math.sqrt(denominator)  # Keras: epsilon inside the sqrt
    if use_momentum:
        mi = momentum * momentum_buf[i] + increment
        momentum_buf[i] = mi
        w[i] -= mi
    else:
        w[i] -= increment


def adagrad_step(w, accumulator, i, gi, lr, epsilon, decay):
    if decay != _ZERO:
        w[i] -= w[i] * decay
    acc = accumulator[i] + gi * gi
    accumulator[i] = acc
    w[i] -= lr * gi / math.sqrt(acc + epsilon)


_grad_at = numba.njit(cache=True)(grad_at)
_sgd_step = numba.njit(cache=True)(sgd_step)
_adam_step = numba.njit(cache=True)(adam_step)
_rmsprop_step = numba.njit(cache=True)(rmsprop_step)
_adagrad_step = numba.njit(cache=True)(adagrad_step)


# Each update has a parallel loop and a serial twin for small tensors (biases): waking
# the thread pool costs more than the update itself (threshold shared with the
# activation loops). `gm, gc, gs, gseg` = grad_at's mode, clipvalue, scales, segments.


@numba.njit(parallel=True, cache=True)
def _sgd(w, g, velocity, lr, momentum, nesterov, use_velocity, decay, zero_grad,
         gm, gc, gs, gseg):
    for i in numba.prange(w.size):
        gi = _grad_at(g, i, gm, gc, gs, gseg)
        _sgd_step(w, velocity, i, gi, lr, momentum, nesterov, use_velocity, decay)
        if zero_grad:
            g[i] = _ZERO


@numba.njit(cache=True)
def _sgd_serial(w, g, velocity, lr, momentum, nesterov, use_velocity, decay, zero_grad,
                gm, gc, gs, gseg):
    for i in range(w.size):
        gi = _grad_at(g, i, gm, gc, gs, gseg)
        _sgd_step(w, velocity, i, gi, lr, momentum, nesterov, use_velocity, decay)
        if zero_grad:
            g[i] = _ZERO


@numba.njit(parallel=True, cache=True)
def _adam(w, g, m, v, alpha, one_minus_beta_1, one_minus_beta_2, epsilon, decay, zero_grad,
          gm, gc, gs, gseg):
    for i in numba.prange(w.size):
        gi = _grad_at(g, i, gm, gc, gs, gseg)
        _adam_step(w, m, v, i, gi, alpha, one_minus_beta_1, one_minus_beta_2, epsilon, decay)
        if zero_grad:
            g[i] = _ZERO


@numba.njit(cache=True)
def _adam_serial(w, g, m, v, alpha, one_minus_beta_1, one_minus_beta_2, epsilon, decay,
                 zero_grad, gm, gc, gs, gseg):
    for i in range(w.size):
        gi = _grad_at(g, i, gm, gc, gs, gseg)
        _adam_step(w, m, v, i, gi, alpha, one_minus_beta_1, one_minus_beta_2, epsilon, decay)
        if zero_grad:
            g[i] = _ZERO


@numba.njit(parallel=True, cache=True)
def _rmsprop(w, g, velocity, momentum_buf, average_grad, lr, rho, momentum, epsilon, centered,
             use_momentum, decay, zero_grad, gm, gc, gs, gseg):
    for i in numba.prange(w.size):
        gi = _grad_at(g, i, gm, gc, gs, gseg)
        _rmsprop_step(w, velocity, momentum_buf, average_grad, i, gi, lr, rho, momentum,
                      epsilon, centered, use_momentum, decay)
        if zero_grad:
            g[i] = _ZERO


@numba.njit(cache=True)
def _rmsprop_serial(w, g, velocity, momentum_buf, average_grad, lr, rho, momentum, epsilon,
                    centered, use_momentum, decay, zero_grad, gm, gc, gs, gseg):
    for i in range(w.size):
        gi = _grad_at(g, i, gm, gc, gs, gseg)
        _rmsprop_step(w, velocity, momentum_buf, average_grad, i, gi, lr, rho, momentum,
                      epsilon, centered, use_momentum, decay)
        if zero_grad:
            g[i] = _ZERO


@numba.njit(parallel=True, cache=True)
def _adagrad(w, g, accumulator, lr, epsilon, decay, zero_grad, gm, gc, gs, gseg):
    for i in numba.prange(w.size):
        gi = _grad_at(g, i, gm, gc, gs, gseg)
        _adagrad_step(w, accumulator, i, gi, lr, epsilon, decay)
        if zero_grad:
            g[i] = _ZERO


@numba.njit(cache=True)
def _adagrad_serial(w, g, accumulator, lr, epsilon, decay, zero_grad, gm, gc, gs, gseg):
    for i in range(w.size):
        gi = _grad_at(g, i, gm, gc, gs, gseg)
        _adagrad_step(w, accumulator, i, gi, lr, epsilon, decay)
        if zero_grad:
            g[i] = _ZERO


def pick(parallel, serial, w):
    return parallel if w.size >= PARALLEL_MIN_SIZE else serial


def flat(a):
    return a.reshape(a.size)


def grad_args(grad):
    """ops.optim's (mode, clipvalue, scales, segments) with the CPU stand-ins filled in."""
    mode, clipvalue, scales, segments = grad
    return (mode, clipvalue, NO_SCALES if scales is None else flat(scales),
            NO_SEGMENTS if segments is None else segments)


def sgd_update(w, g, velocity, *, lr, momentum, nesterov, decay, zero_grad, grad):
    use_velocity = velocity is not None
    fw = flat(w)
    pick(_sgd, _sgd_serial, w)(fw, flat(g), flat(velocity) if use_velocity else fw, lr,
                               momentum, nesterov, use_velocity, decay, zero_grad,
                               *grad_args(grad))


def adam_update(w, g, m, v, *, alpha, one_minus_beta_1, one_minus_beta_2, epsilon, decay,
                zero_grad, grad):
    pick(_adam, _adam_serial, w)(flat(w), flat(g), flat(m), flat(v), alpha, one_minus_beta_1,
                                 one_minus_beta_2, epsilon, decay, zero_grad, *grad_args(grad))


def rmsprop_update(w, g, velocity, momentum_buf, average_grad, *, lr, rho, momentum, epsilon,
                   centered, decay, zero_grad, grad):
    fw = flat(w)
    use_momentum = momentum_buf is not None
    pick(_rmsprop, _rmsprop_serial, w)(
        fw, flat(g), flat(velocity), flat(momentum_buf) if use_momentum else fw,
        flat(average_grad) if centered else fw, lr, rho, momentum, epsilon, centered,
        use_momentum, decay, zero_grad, *grad_args(grad))


def adagrad_update(w, g, accumulator, *, lr, epsilon, decay, zero_grad, grad):
    pick(_adagrad, _adagrad_serial, w)(flat(w), flat(g), flat(accumulator), lr, epsilon, decay,
                                       zero_grad, *grad_args(grad))
