"""Optimizer updates (Keras 3 formulas), one fused kernel per parameter tensor.

w, g and every slot buffer have the same shape (any), float32, C-contiguous; the
kernels see them flattened. The host folds step-dependent scalars (Adam's
alpha = lr*sqrt(1-beta_2**t)/(1-beta_1**t)) in float64 and passes float32.
`zero_grad=True` also sets g = 0 in the same kernel (saves a launch per tensor).
`weight_decay` (every op): Keras 3's decoupled decay, w -= w * weight_decay * lr before
the update (its base optimizer applies it so for every optimizer; AdamW is Adam with it).
"""

import math

import numpy as np

from kernels_numba import _check
from kernels_numba.dispatch import impl

__all__ = ["sgd_update", "adam_update", "rmsprop_update", "adagrad_update"]
FAMILY = "optim"


def _number(op, name, value, expected, ok):
    """float(value), checked finite and ok(value); `expected` words the rule for the error."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: expected {name} to be a number; received {value!r}") from None
    if not (math.isfinite(v) and ok(v)):
        raise ValueError(f"{op}: expected {name} {expected}; received {value!r}")
    return v


def _nonnegative(op, name, value):
    return _number(op, name, value, ">= 0", lambda v: v >= 0.0)


def _unit(op, name, value):
    return _number(op, name, value, "in [0, 1]", lambda v: 0.0 <= v <= 1.0)


def _beta(op, name, value):
    return _number(op, name, value, "in [0, 1)", lambda v: 0.0 <= v < 1.0)


def _buffers(op, w, **others):
    """Validate w and the buffers that must share its shape (None entries skipped)."""
    shape = _check.array(op, "w", w)
    for name, a in others.items():
        if a is not None:
            _check.array(op, name, a, shape=shape)


def sgd_update(w, g, velocity=None, *, lr, momentum=0.0, nesterov=False, weight_decay=0.0,
               zero_grad=False):
    """SGD: w -= lr*g; with momentum m = momentum*m - lr*g, then w += m.

    Nesterov: m as above, then w += momentum*m - lr*g.

    Args:
        w: parameter, any shape, float32 (updated in place).
        g: gradient, same shape (set to 0 when zero_grad).
        velocity: momentum slot m, same shape, or None (only when momentum == 0).
        lr: learning rate >= 0.
        momentum: in [0, 1].
        nesterov: Nesterov momentum (needs velocity).
        weight_decay: >= 0, decoupled (w -= w*weight_decay*lr first).
        zero_grad: also zero g.
    """
    op = "sgd_update"
    _buffers(op, w, g=g, velocity=velocity)
    lr = _nonnegative(op, "lr", lr)
    momentum = _unit(op, "momentum", momentum)
    decay = _nonnegative(op, "weight_decay", weight_decay) * lr
    if velocity is None and (momentum != 0.0 or nesterov):
        raise ValueError(
            f"{op}: expected a velocity buffer when momentum > 0 or nesterov; received None "
            f"(momentum={momentum}, nesterov={nesterov})"
        )
    fn = impl(op, FAMILY, w=w, g=g, velocity=velocity)
    fn(
        w,
        g,
        velocity,
        lr=np.float32(lr),
        momentum=np.float32(momentum),
        nesterov=bool(nesterov),
        decay=np.float32(decay),
        zero_grad=bool(zero_grad),
    )


def adam_update(
    w,
    g,
    m,
    v,
    *,
    lr,
    step,
    beta_1=0.9,
    beta_2=0.999,
    epsilon=1e-7,
    weight_decay=0.0,
    zero_grad=False,
):
    """Adam (Keras epsilon-hat form); weight_decay > 0 gives AdamW's decoupled w -= w*wd*lr first.

    m += (g-m)*(1-beta_1); v += (g*g-v)*(1-beta_2); w -= m*alpha/(sqrt(v)+epsilon),
    alpha = lr*sqrt(1-beta_2**step)/(1-beta_1**step).

    Args:
        w: parameter, any shape, float32 (updated in place).
        g: gradient, same shape (set to 0 when zero_grad).
        m: first-moment slot, same shape.
        v: second-moment slot, same shape.
        lr: learning rate >= 0.
        step: t = iterations + 1 (positive int).
        beta_1: in [0, 1).
        beta_2: in [0, 1).
        epsilon: >= 0.
        weight_decay: >= 0 (AdamW).
        zero_grad: also zero g.
    """
    op = "adam_update"
    _buffers(op, w, g=g, m=m, v=v)
    lr = _nonnegative(op, "lr", lr)
    step = _check.positive_int(op, "step", step)
    beta_1 = _beta(op, "beta_1", beta_1)
    beta_2 = _beta(op, "beta_2", beta_2)
    epsilon = _nonnegative(op, "epsilon", epsilon)
    weight_decay = _nonnegative(op, "weight_decay", weight_decay)
    alpha = lr * math.sqrt(1.0 - beta_2**step) / (1.0 - beta_1**step)
    fn = impl(op, FAMILY, w=w, g=g, m=m, v=v)
    fn(
        w,
        g,
        m,
        v,
        alpha=np.float32(alpha),
        one_minus_beta_1=np.float32(1.0 - beta_1),
        one_minus_beta_2=np.float32(1.0 - beta_2),
        epsilon=np.float32(epsilon),
        decay=np.float32(weight_decay * lr),
        zero_grad=bool(zero_grad),
    )


def rmsprop_update(
    w,
    g,
    velocity,
    momentum_buf=None,
    average_grad=None,
    *,
    lr,
    rho=0.9,
    momentum=0.0,
    epsilon=1e-7,
    centered=False,
    weight_decay=0.0,
    zero_grad=False,
):
    """RMSprop (Keras): v = rho*v + (1-rho)*g*g; inc = lr*g/sqrt(den), den = v + eps
    (centered: a = rho*a + (1-rho)*g, den = v - a*a + eps); momentum: mom = momentum*mom + inc,
    w -= mom; else w -= inc.

    Args:
        w: parameter, any shape, float32 (updated in place).
        g: gradient, same shape (set to 0 when zero_grad).
        velocity: mean-square slot v, same shape.
        momentum_buf: momentum slot, same shape; required when momentum > 0, else ignored.
        average_grad: mean-gradient slot a, same shape; required when centered, else ignored.
        lr: learning rate >= 0.
        rho: in [0, 1].
        momentum: in [0, 1].
        epsilon: >= 0.
        centered: center the second moment.
        weight_decay: >= 0, decoupled (w -= w*weight_decay*lr first).
        zero_grad: also zero g.
    """
    op = "rmsprop_update"
    lr = _nonnegative(op, "lr", lr)
    rho = _unit(op, "rho", rho)
    momentum = _unit(op, "momentum", momentum)
    epsilon = _nonnegative(op, "epsilon", epsilon)
    decay = _nonnegative(op, "weight_decay", weight_decay) * lr
    if momentum > 0.0 and momentum_buf is None:
        raise ValueError(f"{op}: expected a momentum_buf buffer when momentum > 0; received None")
    if centered and average_grad is None:
        raise ValueError(f"{op}: expected an average_grad buffer when centered=True; received None")
    momentum_buf = momentum_buf if momentum > 0.0 else None
    average_grad = average_grad if centered else None
    _buffers(op, w, g=g, velocity=velocity, momentum_buf=momentum_buf, average_grad=average_grad)
    fn = impl(
        op,
        FAMILY,
        w=w,
        g=g,
        velocity=velocity,
        momentum_buf=momentum_buf,
        average_grad=average_grad,
    )
    fn(
        w,
        g,
        velocity,
        momentum_buf,
        average_grad,
        lr=np.float32(lr),
        rho=np.float32(rho),
        momentum=np.float32(momentum),
        epsilon=np.float32(epsilon),
        centered=bool(centered),
        decay=np.float32(decay),
        zero_grad=bool(zero_grad),
    )


def adagrad_update(w, g, accumulator, *, lr, epsilon=1e-7, weight_decay=0.0, zero_grad=False):
    """Adagrad (Keras): acc += g*g; w -= lr*g/sqrt(acc + epsilon).

    Args:
        w: parameter, any shape, float32 (updated in place).
        g: gradient, same shape (set to 0 when zero_grad).
        accumulator: slot, same shape (Keras starts it at 0.1).
        lr: learning rate >= 0.
        epsilon: >= 0.
        weight_decay: >= 0, decoupled (w -= w*weight_decay*lr first).
        zero_grad: also zero g.
    """
    op = "adagrad_update"
    _buffers(op, w, g=g, accumulator=accumulator)
    lr = _nonnegative(op, "lr", lr)
    epsilon = _nonnegative(op, "epsilon", epsilon)
    decay = _nonnegative(op, "weight_decay", weight_decay) * lr
    fn = impl(op, FAMILY, w=w, g=g, accumulator=accumulator)
    fn(w, g, accumulator, lr=np.float32(lr), epsilon=np.float32(epsilon),
       decay=np.float32(decay), zero_grad=bool(zero_grad))
