"""permute ops against np.transpose, backward against finite differences; both devices."""

import numpy as np
import pytest

from kernels_numba import ops
from kernels_numba.testing import assert_close, host, numeric_grad, on, randn


@pytest.mark.parametrize("shape,perm", [((1, 1), (0,)), ((2, 3, 5), (1, 0)),
                                        ((3, 2, 4, 5), (2, 0, 1)), ((2, 3, 1, 2, 4), (3, 1, 0, 2))])
def test_permute(device, shape, perm):
    x = randn(shape, seed=1)
    x.flat[1 % x.size] = np.nan
    axes = (0, *(1 + p for p in perm))
    want = np.transpose(x, axes)
    y = on(device, np.zeros(want.shape, np.float32))
    ops.permute_axes(y, on(device, x), perm=perm)
    np.testing.assert_array_equal(host(y), want)
    g = randn(want.shape, seed=2)
    dx = on(device, np.zeros(shape, np.float32))
    ops.permute_axes_backward(dx, on(device, g), perm=perm)
    fn = lambda t: np.sum(np.transpose(t, axes) * g)  # noqa: E731
    assert_close(host(dx), numeric_grad(fn, randn(shape, seed=1)), rtol=1e-5, what="dx")


def test_errors_name_the_op():
    x = np.zeros((2, 3, 4), np.float32)
    with pytest.raises(ValueError, match="permute_axes: expected perm to be a permutation"):
        ops.permute_axes(x, x, perm=(0, 0))
    with pytest.raises(ValueError, match=r"permute_axes: expected y.shape == \(2, 4, 3\)"):
        ops.permute_axes(x, x, perm=(1, 0))
