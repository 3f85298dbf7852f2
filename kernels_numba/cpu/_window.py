"""Window arithmetic the CPU pooling loops share (inlined into each part that uses it).

Integer clamps are selects, not max()/min(): each of those is one more compile of
numba's builtin.
"""

import numba


@numba.njit(inline="always")
def _lo(v):
    return v if v > 0 else 0


@numba.njit(inline="always")
def _hi(v, n):
    return v if v < n else n


@numba.njit(inline="always")
def window_range(i, k, s, pad, out):
    """Output positions o whose window o*s - pad .. o*s - pad + k - 1 contains i: [o0, o1)
    (selects, not min(); inlined: as a call it is one more compile)."""
    lo = i + pad - k + 1
    o0 = 0 if lo <= 0 else (lo + s - 1) // s
    return o0, _hi((i + pad) // s + 1, out)
