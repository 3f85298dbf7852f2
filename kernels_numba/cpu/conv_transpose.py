"""CPU twin of kernels_numba.ops.conv_transpose.bias_activation (the GEMM and col2im
parts of a transposed convolution are ops.conv2d's)."""

import numba
import numpy as np

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)


@numba.njit(parallel=True, cache=True)
def _bias_act(y, b, has_bias, act):
    m, f = y.shape
    for r in numba.prange(m):
        for j in range(f):
            v = y[r, j]
            if has_bias:
                v += b[j]
            if act == 1:
                v = _ZERO if v < _ZERO else v  # a select: NaN passes through
            elif act == 2:
                v = _ONE / (_ONE + np.exp(-v))
            elif act == 3:
                v = np.tanh(v)
            y[r, j] = v


def bias_activation(y, b, act):
    _bias_act(y, y[0] if b is None else b, b is not None, act)
