"""kernels_numba reduce family (axis reductions) vs float64 NumPy and finite
differences, on both devices; NaN propagation; ties split the max gradient."""

import numpy as np
import pytest

from kernels_numba import ops
from kernels_numba.ops.reduce import reduced_shape
from kernels_numba.testing import assert_close, host, numeric_grad, on, randn


def _lse(x, axes):
    m = x.max(axis=axes, keepdims=True)
    return (np.log(np.exp(x - m).sum(axis=axes, keepdims=True)) + m)


REFS = {"sum": lambda x, a: x.sum(axis=a, keepdims=True),
        "mean": lambda x, a: x.mean(axis=a, keepdims=True),
        "max": lambda x, a: x.max(axis=a, keepdims=True),
        "min": lambda x, a: x.min(axis=a, keepdims=True),
        "logsumexp": _lse,
        "argmax": lambda x, a: np.expand_dims(np.argmax(x, axis=a[0]), a[0]),
        "argmin": lambda x, a: np.expand_dims(np.argmin(x, axis=a[0]), a[0])}
AXES = [(0,), (1,), (2,), (0, 2), (0, 1, 2), ()]


@pytest.mark.parametrize("axes", AXES, ids=str)
@pytest.mark.parametrize("kind", list(REFS))
def test_forward_and_backward(device, kind, axes):
    if kind.startswith("arg") and len(axes) != 1:
        pytest.skip("argmax/argmin take one axis")
    shape = (3, 4, 5)
    x = randn(shape, seed=1)
    keep = reduced_shape(shape, axes, True)
    ref = REFS[kind](x.astype(np.float64), axes) if axes else x.astype(np.float64)
    if kind.startswith("arg") and not axes:
        ref = np.zeros(shape)
    y = on(device, np.full(keep, np.nan, np.float32))
    ops.reduce_axes(y, on(device, x), kind=kind, axes=axes)
    assert_close(host(y), ref, rtol=1e-5, atol=1e-5, what=kind)
    w = randn(keep, seed=2)
    dx = on(device, np.full(shape, np.nan, np.float32))
    ops.reduce_axes_backward(dx, on(device, w), on(device, x), y, kind=kind, axes=axes)
    if kind.startswith("arg"):
        assert_close(host(dx), np.zeros(shape), what=kind)
        return
    fn = REFS[kind]
    g = numeric_grad(lambda v: ((fn(v, axes) if axes else v) * w).sum(), x)
    assert_close(host(dx), g, rtol=1e-3, atol=1e-4, what=f"{kind} grad")


def test_removed_axes_layout_and_negative_axes(device):
    x = randn((2, 3, 4), seed=3)
    y = on(device, np.zeros((2, 3), np.float32))
    ops.reduce_axes(y, on(device, x), kind="sum", axes=(-1,))
    assert_close(host(y), x.astype(np.float64).sum(-1))


def test_max_ties_split_the_gradient(device):
    x = np.array([[1.0, 3.0, 3.0], [2.0, 0.0, 2.0]], np.float32)
    y = on(device, np.zeros(2, np.float32))
    ops.reduce_axes(y, on(device, x), kind="max", axes=(1,))
    dx = on(device, np.zeros((2, 3), np.float32))
    ops.reduce_axes_backward(dx, on(device, np.array([2.0, 4.0], np.float32)), on(device, x),
                             y, kind="max", axes=(1,))
    assert_close(host(dx), [[0, 1, 1], [2, 0, 2]], rtol=0, atol=0)


def test_nan_propagates(device):
    x = np.array([[1.0, np.nan, 3.0], [1.0, 2.0, -np.inf]], np.float32)
    for kind, want in (("sum", [np.nan, -np.inf]), ("max", [np.nan, 2.0]),
                       ("min", [np.nan, -np.inf]), ("argmax", [1.0, 1.0]),
                       ("argmin", [1.0, 2.0]), ("logsumexp", [np.nan, None])):
        y = on(device, np.zeros(2, np.float32))
        ops.reduce_axes(y, on(device, x), kind=kind, axes=(1,))
        got = host(y)
        assert np.isnan(got[0]) == np.isnan(want[0]) and (np.isnan(want[0]) or
                                                          got[0] == want[0]), kind
        if want[1] is not None:
            assert got[1] == want[1], (kind, got)
    y = on(device, np.zeros(1, np.float32))
    ops.reduce_axes(y, on(device, np.full((1, 2), -np.inf, np.float32)), kind="logsumexp",
                    axes=(1,))
    assert host(y)[0] == -np.inf


def test_errors_name_the_op():
    with pytest.raises(ValueError, match=r"reduce_axes: expected y.shape == \(3,\)"):
        ops.reduce_axes(np.zeros(4, np.float32), np.zeros((3, 4), np.float32), kind="sum",
                        axes=(1,))
    with pytest.raises(ValueError, match="axes in"):
        ops.reduce_axes(np.zeros(3, np.float32), np.zeros((3, 4), np.float32), kind="sum",
                        axes=(2,))
    with pytest.raises(ValueError, match="max over zero elements"):
        ops.reduce_axes(np.zeros(3, np.float32), np.zeros((3, 0), np.float32), kind="max",
                        axes=(1,))
