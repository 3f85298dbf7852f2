"""CPU twin of kernels_numba.ops.permute: one gather loop over the output, parallel."""

import numba


@numba.njit(parallel=True, cache=True)
def _permute(y, x, o0, o1, o2, o3, s0, s1, s2, s3):
    per = o0 * o1 * o2 * o3
    for r in numba.prange(y.size // max(o3, 1)):
        b = r // (o0 * o1 * o2)
        q = r - b * (o0 * o1 * o2)
        i2 = q % o2
        q //= o2
        i1 = q % o1
        i0 = q // o1
        base = b * per + i0 * s0 + i1 * s1 + i2 * s2
        out = r * o3
        for i3 in range(o3):
            y[out + i3] = x[base + i3 * s3]


def permute_axes(y, x, o0, o1, o2, o3, s0, s1, s2, s3):
    _permute(y.reshape(y.size), x.reshape(x.size), o0, o1, o2, o3, s0, s1, s2, s3)


permute_axes_backward = permute_axes
