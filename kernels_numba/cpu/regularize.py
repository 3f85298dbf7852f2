"""CPU twin of kernels_numba.ops.regularize, and the per-element math both devices share.

The buffer is cut into ops.regularize.parts_for(size) fixed contiguous parts; each is
summed in order in float64 into its slot of a partials vector (a thread takes a run of
whole parts, or the calling thread takes all of them for small buffers), then the slots
are added in order: the result does not depend on the thread count or the path.
"""

import numba
import numpy as np
from llvmlite import ir
from numba.core import types

from kernels_numba.cpu._parallel import (
    _pointer_intrinsic,
    f32_1d,
    f32_bits,
    from_f32_bits,
    lazy_part,
    pack,
    run_parts,
    split,
)
from kernels_numba.ops.regularize import parts_for

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
_TWO = np.float32(2.0)
_f64_pointer = _pointer_intrinsic(types.float64, ir.DoubleType())


def grad_term(v, l1, l2, scale):
    """scale*(l1*sign(v) + 2*l2*v), a 0 factor's term skipped (Keras's L1L2); sign is
    torch's: 1, -1, 0 at 0, NaN at NaN (one function: the GPU inlines it whole)."""
    g = _ZERO
    if l1 != _ZERO:
        s = v * _ZERO  # 0 at 0, NaN at NaN
        if v > _ZERO:
            s = _ONE
        elif v < _ZERO:
            s = -_ONE
        g += l1 * s
    if l2 != _ZERO:
        g += _TWO * l2 * v
    return scale * g


def total(s1, s2, l1, l2, scale):
    """scale*(l1*s1 + l2*s2), a 0 factor's term skipped."""
    p = _ZERO
    if l1 != _ZERO:
        p += l1 * s1
    if l2 != _ZERO:
        p += l2 * s2
    return scale * p


_grad_term = numba.njit(inline="always")(grad_term)


@lazy_part
def _penalty_part(args, p, parts):
    a = numba.carray(args, 10)
    x, grad = f32_1d(a, 0), f32_1d(a, 2)
    part = numba.carray(_f64_pointer(a[4]), (a[5],))
    l1, l2, scale = from_f32_bits(a[6]), from_f32_bits(a[7]), from_f32_bits(a[8])
    has_grad = a[9] != 0
    n, k_all = x.size, part.size // 2
    k0, k1 = k_all * p // parts, k_all * (p + 1) // parts
    # Loops run over slices from 0: indexing with a computed start (signed, so numba
    # adds a wraparound branch) made them 30x slower.
    if has_grad:
        xs, gs = x[k0 * n // k_all:k1 * n // k_all], grad[k0 * n // k_all:k1 * n // k_all]
        for j in range(xs.size):
            gs[j] += _grad_term(xs[j], l1, l2, scale)
    for k in range(k0, k1):
        xs = x[k * n // k_all:(k + 1) * n // k_all]
        s1 = 0.0
        s2 = 0.0
        for j in range(xs.size):
            d = np.float64(xs[j])
            s1 += abs(d)
            s2 += d * d
        part[2 * k] = s1
        part[2 * k + 1] = s2


_NO_GRAD = np.zeros(1, np.float32)


def penalty(penalty, grad, x, l1, l2, scale, workspace):
    k = parts_for(x.size)
    part = np.empty(2 * k, np.float64)  # host partials: 2 KiB at most
    has_grad = grad is not None
    args = pack(x.reshape(x.size), grad.reshape(grad.size) if has_grad else _NO_GRAD,
                part.ctypes.data, part.size, f32_bits(l1), f32_bits(l2), f32_bits(scale),
                int(has_grad))
    if split(x.size) and k > 1:
        run_parts(_penalty_part, args, min(k, numba.get_num_threads()))
    else:
        _penalty_part.serial(args)
    s1, s2 = 0.0, 0.0
    for i in range(k):  # in order
        s1 += float(part[2 * i])
        s2 += float(part[2 * i + 1])
    penalty[0] += total(np.float32(s1), np.float32(s2), l1, l2, scale)
