"""Optimizer updates (Keras 3 formulas), one fused kernel per parameter tensor.

w, g and every slot buffer have the same shape (any), float32, C-contiguous; the
kernels see them flattened. The host folds step-dependent scalars (Adam's
alpha = lr*sqrt(1-beta_2**t)/(1-beta_1**t)) in float64 and passes float32.
`zero_grad=True` also sets g = 0 in the same kernel (saves a launch per tensor).
`weight_decay` (every op): Keras 3's decoupled decay, w -= w * weight_decay * lr before
the update (its base optimizer applies it so for every optimizer; AdamW is Adam with it).

Gradient clipping, fused (every op takes these keywords; at most one of the two):
- `clipvalue=c`: each gradient element clipped to [-c, c] (Keras clipvalue).
- `grad_scale=s`: a float32 device buffer the kernel reads (no host round trip):
  with `segments=None`, s has one element and every gradient is multiplied by s[0]
  (global_clipnorm, or one variable's clipnorm); with `segments` (int64 (K, 2): sorted,
  non-overlapping [start, end) ranges of the flat buffer, one per variable of a
  parameter block), element i of segment k is multiplied by s[k], and elements in no
  segment (alignment gaps) read 0. ops.sum_squares + ops.clip_norm_scales make s.
"""

import math

import numpy as np

from kernels_numba import _check
from kernels_numba.dispatch import impl

__all__ = ["sgd_update", "adam_update", "rmsprop_update", "adagrad_update", "grad_transform"]
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


# grad_at modes of the kernels (kernels_numba.cpu.optim)
PLAIN, CLIP_VALUE, SCALE_ONE, SCALE_SEGMENTS = 0, 1, 2, 3


def grad_transform(op, w, clipvalue=None, grad_scale=None, segments=None):
    """(mode, clipvalue, scales, segments) for the kernels, checked: what an update op
    does to each gradient element before using it (see the module docstring)."""
    if clipvalue is not None and grad_scale is not None:
        raise ValueError(f"{op}: expected at most one of clipvalue and grad_scale; received "
                         f"clipvalue={clipvalue!r} and a grad_scale buffer")
    if clipvalue is not None:
        c = _number(op, "clipvalue", clipvalue, "> 0", lambda v: v > 0.0)
        return CLIP_VALUE, np.float32(c), None, None
    if grad_scale is None:
        if segments is not None:
            raise ValueError(f"{op}: expected segments only with a grad_scale buffer; "
                             f"received segments without grad_scale")
        return PLAIN, np.float32(0.0), None, None
    if segments is None:
        _check.array(op, "grad_scale", grad_scale, shape=(1,))
        _check.same_device(op, w=w, grad_scale=grad_scale)
        return SCALE_ONE, np.float32(0.0), grad_scale, None
    (k, _) = _check.array(op, "segments", segments, shape=(None, 2), dtype=np.int64)
    if k < 1:
        raise ValueError(f"{op}: expected at least one segment; received shape (0, 2)")
    _check.array(op, "grad_scale", grad_scale, shape=(k,))
    _check.same_device(op, w=w, grad_scale=grad_scale, segments=segments)
    if isinstance(segments, np.ndarray):  # device tables are checked when they are made
        _check_segments(op, segments, int(np.prod(_check.array(op, "w", w), dtype=np.int64)))
    return SCALE_SEGMENTS, np.float32(0.0), grad_scale, segments


def _check_segments(op, segments, size):
    starts, ends = segments[:, 0], segments[:, 1]
    if (starts < 0).any() or (ends > size).any() or (ends < starts).any() or \
            (starts[1:] < ends[:-1]).any():
        raise ValueError(f"{op}: expected segments as sorted, non-overlapping [start, end) "
                         f"ranges inside [0, {size}]; received {segments.tolist()[:8]}")


def sgd_update(w, g, velocity=None, *, lr, momentum=0.0, nesterov=False, weight_decay=0.0,
               zero_grad=False, clipvalue=None, grad_scale=None, segments=None):
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
        clipvalue, grad_scale, segments: gradient clipping (module docstring).
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
        grad=grad_transform(op, w, clipvalue, grad_scale, segments),
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
    clipvalue=None,
    grad_scale=None,
    segments=None,
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
        clipvalue, grad_scale, segments: gradient clipping (module docstring).
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
        grad=grad_transform(op, w, clipvalue, grad_scale, segments),
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
    clipvalue=None,
    grad_scale=None,
    segments=None,
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
        clipvalue, grad_scale, segments: gradient clipping (module docstring).
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
        grad=grad_transform(op, w, clipvalue, grad_scale, segments),
    )


def adagrad_update(w, g, accumulator, *, lr, epsilon=1e-7, weight_decay=0.0, zero_grad=False,
                   clipvalue=None, grad_scale=None, segments=None):
    """Adagrad (Keras): acc += g*g; w -= lr*g/sqrt(acc + epsilon).

    Args:
        w: parameter, any shape, float32 (updated in place).
        g: gradient, same shape (set to 0 when zero_grad).
        accumulator: slot, same shape (Keras starts it at 0.1).
        lr: learning rate >= 0.
        epsilon: >= 0.
        weight_decay: >= 0, decoupled (w -= w*weight_decay*lr first).
        zero_grad: also zero g.
        clipvalue, grad_scale, segments: gradient clipping (module docstring).
    """
    op = "adagrad_update"
    _buffers(op, w, g=g, accumulator=accumulator)
    lr = _nonnegative(op, "lr", lr)
    epsilon = _nonnegative(op, "epsilon", epsilon)
    decay = _nonnegative(op, "weight_decay", weight_decay) * lr
    fn = impl(op, FAMILY, w=w, g=g, accumulator=accumulator)
    fn(w, g, accumulator, lr=np.float32(lr), epsilon=np.float32(epsilon),
       decay=np.float32(decay), zero_grad=bool(zero_grad),
       grad=grad_transform(op, w, clipvalue, grad_scale, segments))


# Nadam, Adamax, Adadelta, Lion, Ftrl and the gradient norms live in their own family
# files (size); they are part of the optimizer ops, so this module exports them too.
from kernels_numba.ops.norms import *  # noqa: E402,F401,F403
from kernels_numba.ops.norms import __all__ as _norms_all  # noqa: E402
from kernels_numba.ops.optim_more import *  # noqa: E402,F401,F403
from kernels_numba.ops.optim_more import __all__ as _more_all  # noqa: E402

__all__ = __all__ + list(_norms_all) + list(_more_all)
