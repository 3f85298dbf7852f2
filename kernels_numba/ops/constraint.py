"""Weight constraints (Keras 3's keras/src/constraints/constraints.py), in place.

norms = sqrt(sum(w^2, axis, keepdims)) and, with Keras's epsilon 1e-7:
- max_norm:     w *= clip(norms, 0, max_value) / (eps + norms)
- unit_norm:    w /= eps + norms
- min_max_norm: w *= (rate*clip(norms, min_value, max_value) + (1-rate)*norms) / (eps + norms)
- non_neg:      w = maximum(w, 0)
A NaN anywhere in a norm's group makes the whole group NaN (as Keras); an infinite
norm gives NaN where w is infinite, and 0 elsewhere (inf * 0 / inf).

`axis` (int, list/tuple of ints, or None = all axes; negative counts from the end)
names the axes each norm runs over, e.g. 0 for a Dense kernel (in, out), [0, 1, 2] for a
Conv2D kernel (kh, kw, cin, cout). The reduced axes must be consecutive (every Keras
use is), so w is viewed as (outer, reduced, inner) and each (outer, inner) pair is one
group, handled by one thread.
"""

import math

import numpy as np

from kernels_numba import _check
from kernels_numba.dispatch import impl

__all__ = ["max_norm", "non_neg", "unit_norm", "min_max_norm", "norm_groups"]
FAMILY = "constraint"
EPSILON = 1e-7  # keras.backend.epsilon()
# mode codes shared with the kernels
UNIT, MAX, MIN_MAX = 0, 1, 2


def norm_groups(shape, axis, op="constraint"):
    """(outer, reduced, inner) sizes of `shape` for norms over `axis`."""
    shape = tuple(int(s) for s in shape)
    nd = len(shape)
    if axis is None:
        axes = list(range(nd))
    else:
        raw = [axis] if isinstance(axis, (int, np.integer)) else axis
        if not isinstance(raw, (list, tuple)) or not raw or \
                not all(isinstance(a, (int, np.integer)) and not isinstance(a, bool)
                        for a in raw):
            raise TypeError(f"{op}: expected axis to be an int, a list of ints or None; "
                            f"received {axis!r}")
        axes = [int(a) for a in raw]
        for a in axes:
            if not -nd <= a < nd:
                raise ValueError(f"{op}: axis {a} is out of range for a weight of shape "
                                 f"{shape}")
        axes = sorted({a % nd for a in axes})
    if nd == 0:
        return 1, 1, 1
    if axes != list(range(axes[0], axes[-1] + 1)):
        raise ValueError(f"{op}: expected consecutive axes (e.g. 0, [0, 1, 2], -1); received "
                         f"axis={axis!r} for a weight of shape {shape}")
    outer = int(np.prod(shape[:axes[0]], dtype=np.int64))
    reduced = int(np.prod(shape[axes[0]:axes[-1] + 1], dtype=np.int64))
    inner = int(np.prod(shape[axes[-1] + 1:], dtype=np.int64))
    return outer, reduced, inner


def max_norm(w, *, max_value=2.0, axis=0):
    """w *= clip(norms, 0, max_value) / (eps + norms), in place.

    Args:
        w: float32, any shape (a weight), overwritten.
        max_value: >= 0, finite (Keras MaxNorm default 2).
        axis: the axes of each norm (Keras default 0).
    """
    _rescale("max_norm", w, axis, MAX, 0.0, _value("max_norm", "max_value", max_value), 1.0)


def unit_norm(w, *, axis=0):
    """w /= eps + norms, in place. w: float32, any shape; axis: Keras default 0."""
    _rescale("unit_norm", w, axis, UNIT, 0.0, 0.0, 1.0)


def min_max_norm(w, *, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
    """w *= (rate*clip(norms, min_value, max_value) + (1-rate)*norms) / (eps + norms).

    Args:
        w: float32, any shape, overwritten.
        min_value, max_value: 0 <= min_value <= max_value, finite (Keras: 0.0, 1.0).
        rate: finite (Keras: 1.0 = strict; < 1 moves the norm part of the way).
        axis: the axes of each norm (Keras default 0).
    """
    op = "min_max_norm"
    lo, hi = _value(op, "min_value", min_value), _value(op, "max_value", max_value)
    if lo > hi:
        raise ValueError(f"{op}: expected min_value <= max_value; received "
                         f"min_value={min_value!r}, max_value={max_value!r}")
    _rescale(op, w, axis, MIN_MAX, lo, hi, _value(op, "rate", rate, nonneg=False))


def non_neg(w):
    """w = maximum(w, 0), in place (NaN stays NaN). w: float32, any shape."""
    _check.array("non_neg", "w", w)
    impl("non_neg", FAMILY, w=w)(w)


def _value(op, name, value, nonneg=True):
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: expected {name} to be a number; received {value!r}") from None
    if not math.isfinite(v) or (nonneg and v < 0.0):
        want = ">= 0 and finite" if nonneg else "finite"
        raise ValueError(f"{op}: expected {name} {want}; received {value!r}")
    return v


def _rescale(op, w, axis, mode, lo, hi, rate):
    shape = _check.array(op, "w", w)
    outer, reduced, inner = norm_groups(shape, axis, op)
    fn = impl("rescale", FAMILY, w=w)
    fn(w, outer, reduced, inner, mode, np.float32(lo), np.float32(hi), np.float32(rate))
