"""CPU twins of kernels_numba.ops.optim, and the per-element update math of both devices.

The `*_step` functions are plain Python over float32 scalars: the CPU loops below
njit-compile them and kernels_numba.gpu.optim compiles the same functions as CUDA
device functions, so both devices run one formula. Unused slots (velocity=None,
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


# per-element math (shared with the CUDA kernels)


def sgd_step(w, g, velocity, i, lr, momentum, nesterov, use_velocity, decay, zero_grad):
    if decay != _ZERO:
        w[i] -= w[i] * decay
    gi = g[i]
    if use_velocity:
        m = momentum * velocity[i] - lr * gi
        velocity[i] = m
        if nesterov:
            w[i] += momentum * m - lr * gi
        else:
            w[i] += m
    else:
        w[i] -= lr * gi
    if zero_grad:
        g[i] = _ZERO


def adam_step(w, g, m, v, i, alpha, one_minus_beta_1, one_minus_beta_2, epsilon, decay, zero_grad):
    wi = w[i]
    if decay != _ZERO:  # AdamW: decoupled decay before the Adam step
        wi -= wi * decay
    gi = g[i]
    mi = m[i] + (gi - m[i]) * one_minus_beta_1
    vi = v[i] + (gi * gi - v[i]) * one_minus_beta_2
    m[i] = mi
    v[i] = vi
    w[i] = wi - mi * alpha / (math.sqrt(vi) + epsilon)
    if zero_grad:
        g[i] = _ZERO


def rmsprop_step(
    w,
    g,
    velocity,
    momentum_buf,
    average_grad,
    i,
    lr,
    rho,
    momentum,
    epsilon,
    centered,
    use_momentum,
    decay,
    zero_grad,
):
    if decay != _ZERO:
        w[i] -= w[i] * decay
    gi = g[i]
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
    if zero_grad:
        g[i] = _ZERO


def adagrad_step(w, g, accumulator, i, lr, epsilon, decay, zero_grad):
    if decay != _ZERO:
        w[i] -= w[i] * decay
    gi = g[i]
    acc = accumulator[i] + gi * gi
    accumulator[i] = acc
    w[i] -= lr * gi / math.sqrt(acc + epsilon)
    if zero_grad:
        g[i] = _ZERO


_sgd_step = numba.njit(cache=True)(sgd_step)
_adam_step = numba.njit(cache=True)(adam_step)
_rmsprop_step = numba.njit(cache=True)(rmsprop_step)
_adagrad_step = numba.njit(cache=True)(adagrad_step)


@numba.njit(parallel=True, cache=True)
def _sgd(w, g, velocity, lr, momentum, nesterov, use_velocity, decay, zero_grad):
    for i in numba.prange(w.size):
        _sgd_step(w, g, velocity, i, lr, momentum, nesterov, use_velocity, decay,
                  zero_grad)


@numba.njit(parallel=True, cache=True)
def _adam(w, g, m, v, alpha, one_minus_beta_1, one_minus_beta_2, epsilon, decay, zero_grad):
    for i in numba.prange(w.size):
        _adam_step(
            w, g, m, v, i, alpha, one_minus_beta_1, one_minus_beta_2, epsilon, decay, zero_grad
        )


@numba.njit(parallel=True, cache=True)
def _rmsprop(
    w,
    g,
    velocity,
    momentum_buf,
    average_grad,
    lr,
    rho,
    momentum,
    epsilon,
    centered,
    use_momentum,
    decay,
    zero_grad,
):
    for i in numba.prange(w.size):
        _rmsprop_step(
            w,
            g,
            velocity,
            momentum_buf,
            average_grad,
            i,
            lr,
            rho,
            momentum,
            epsilon,
            centered,
            use_momentum,
            decay,
            zero_grad,
        )


@numba.njit(parallel=True, cache=True)
def _adagrad(w, g, accumulator, lr, epsilon, decay, zero_grad):
    for i in numba.prange(w.size):
        _adagrad_step(w, g, accumulator, i, lr, epsilon, decay, zero_grad)


# Serial twins for small tensors (biases): waking the thread pool costs more than the
# update itself, and a step updates many small tensors (threshold shared with the
# activation loops).


@numba.njit(cache=True)
def _sgd_serial(w, g, velocity, lr, momentum, nesterov, use_velocity, decay, zero_grad):
    for i in range(w.size):
        _sgd_step(w, g, velocity, i, lr, momentum, nesterov, use_velocity, decay,
                  zero_grad)


@numba.njit(cache=True)
def _adam_serial(w, g, m, v, alpha, one_minus_beta_1, one_minus_beta_2, epsilon, decay,
                 zero_grad):
    for i in range(w.size):
        _adam_step(
            w, g, m, v, i, alpha, one_minus_beta_1, one_minus_beta_2, epsilon, decay, zero_grad
        )


@numba.njit(cache=True)
def _rmsprop_serial(w, g, velocity, momentum_buf, average_grad, lr, rho, momentum, epsilon,
                    centered, use_momentum, decay, zero_grad):
    for i in range(w.size):
        _rmsprop_step(w, g, velocity, momentum_buf, average_grad, i, lr, rho, momentum,
                      epsilon, centered, use_momentum, decay, zero_grad)


@numba.njit(cache=True)
def _adagrad_serial(w, g, accumulator, lr, epsilon, decay, zero_grad):
    for i in range(w.size):
        _adagrad_step(w, g, accumulator, i, lr, epsilon, decay, zero_grad)


def _pick(parallel, serial, w):
    return parallel if w.size >= PARALLEL_MIN_SIZE else serial


def _flat(a):
    return a.reshape(a.size)


def sgd_update(w, g, velocity, *, lr, momentum, nesterov, decay, zero_grad):
    use_velocity = velocity is not None
    fw = _flat(w)
    _pick(_sgd, _sgd_serial, w)(
        fw,
        _flat(g),
        _flat(velocity) if use_velocity else fw,
        lr,
        momentum,
        nesterov,
        use_velocity,
        decay,
        zero_grad,
    )


def adam_update(
    w, g, m, v, *, alpha, one_minus_beta_1, one_minus_beta_2, epsilon, decay, zero_grad
):
    _pick(_adam, _adam_serial, w)(
        _flat(w),
        _flat(g),
        _flat(m),
        _flat(v),
        alpha,
        one_minus_beta_1,
        one_minus_beta_2,
        epsilon,
        decay,
        zero_grad,
    )


def rmsprop_update(
    w, g, velocity, momentum_buf, average_grad, *, lr, rho, momentum, epsilon, centered, decay,
    zero_grad
):
    fw = _flat(w)
    use_momentum = momentum_buf is not None
    _pick(_rmsprop, _rmsprop_serial, w)(
        fw,
        _flat(g),
        _flat(velocity),
        _flat(momentum_buf) if use_momentum else fw,
        _flat(average_grad) if centered else fw,
        lr,
        rho,
        momentum,
        epsilon,
        centered,
        use_momentum,
        decay,
        zero_grad,
    )


def adagrad_update(w, g, accumulator, *, lr, epsilon, decay, zero_grad):
    _pick(_adagrad, _adagrad_serial, w)(_flat(w), _flat(g), _flat(accumulator), lr, epsilon,
                                        decay, zero_grad)
