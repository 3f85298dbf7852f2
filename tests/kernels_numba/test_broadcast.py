"""kernels_numba broadcast family: y = a (op) b with NumPy broadcasting, where, and
their reduced gradients, vs float64 NumPy and finite differences, on both devices."""

import numpy as np
import pytest

from kernels_numba import ops
from kernels_numba.testing import assert_close, host, numeric_grad, on, randn

REFS = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
        "divide": np.divide, "power": np.power, "maximum": np.maximum,
        "minimum": np.minimum, "equal": np.equal, "not_equal": np.not_equal,
        "less": np.less, "less_equal": np.less_equal, "greater": np.greater,
        "greater_equal": np.greater_equal}
PAIRS = [((3, 5), (5,)), ((2, 1, 3), (4, 1)), ((), (2, 3)), ((4,), (4,)),
         ((2, 3, 1, 2), (3, 5, 1))]
SMOOTH = ("add", "subtract", "multiply", "divide", "power", "maximum", "minimum")


def _inputs(kind, sa, sb):
    a, b = randn(sa, seed=1), randn(sb, seed=2)
    if kind == "power":
        a = np.abs(a) + 0.5
    if kind == "divide":
        b = np.sign(b) * (np.abs(b) + 0.5)
    if kind in ("equal", "not_equal", "less_equal", "greater_equal") and a.size and b.size:
        a.reshape(-1)[0] = b.reshape(-1)[0]  # a tie, where broadcasting lines them up
    return a.astype(np.float32), b.astype(np.float32)


def _reduce_to(g, shape):
    while g.ndim > len(shape):
        g = g.sum(axis=0)
    for d, n in enumerate(shape):
        if n == 1 and g.shape[d] != 1:
            g = g.sum(axis=d, keepdims=True)
    return g


@pytest.mark.parametrize("sa,sb", PAIRS, ids=str)
@pytest.mark.parametrize("kind", list(REFS))
def test_binary_forward_matches_numpy(device, kind, sa, sb):
    if device == "cuda" and len(sa) + len(sb) > 5 and kind not in ("add", "maximum"):
        pytest.skip("simulator: the big case runs for a sample of kinds")
    a, b = _inputs(kind, sa, sb)
    shape = np.broadcast_shapes(sa, sb)
    y = on(device, np.full(shape, np.nan, np.float32))
    ops.broadcast_binary(y, on(device, a), on(device, b), kind=kind)
    ref = REFS[kind](a.astype(np.float64), b.astype(np.float64)).astype(np.float64)
    assert_close(host(y).reshape(shape), ref, rtol=1e-5, atol=1e-6, what=kind)


@pytest.mark.parametrize("sa,sb", PAIRS[:3], ids=str)
@pytest.mark.parametrize("kind", SMOOTH)
def test_binary_backward_matches_finite_differences(device, kind, sa, sb):
    a, b = _inputs(kind, sa, sb)
    shape = np.broadcast_shapes(sa, sb)
    w = randn(shape, seed=3).astype(np.float64)
    da = on(device, np.full(sa, np.nan, np.float32))
    db = on(device, np.full(sb, np.nan, np.float32))
    ops.broadcast_binary_backward(da, db, on(device, w.astype(np.float32)), on(device, a),
                                  on(device, b), kind=kind)
    f = REFS[kind]
    ga = numeric_grad(lambda v: (f(v, b.astype(np.float64)) * w).sum(), a)
    gb = numeric_grad(lambda v: (f(a.astype(np.float64), v) * w).sum(), b)
    assert_close(host(da).reshape(sa), ga, rtol=1e-3, atol=1e-4, what=f"{kind} da")
    assert_close(host(db).reshape(sb), gb, rtol=1e-3, atol=1e-4, what=f"{kind} db")


def test_bias_gradient_is_a_column_sum(device):
    dy = randn((37, 5), seed=4)
    db = on(device, np.full(5, np.nan, np.float32))
    ops.broadcast_binary_backward(None, db, on(device, dy), on(device, dy),
                                  on(device, np.zeros(5, np.float32)), kind="add")
    assert_close(host(db), dy.astype(np.float64).sum(0), what="db")


def test_where_and_its_gradient(device):
    cond = np.array([[1.0], [0.0], [np.nan]], np.float32)  # NaN counts as true
    a, b = randn((3, 4), seed=5), randn((4,), seed=6)
    y = on(device, np.zeros((3, 4), np.float32))
    ops.broadcast_where(y, on(device, cond), on(device, a), on(device, b))
    ref = np.where(np.isnan(cond) | (cond != 0), a, b)
    assert_close(host(y), ref, rtol=0, atol=0, what="where")
    dy = randn((3, 4), seed=7)
    da, db = on(device, np.zeros((3, 4), np.float32)), on(device, np.zeros(4, np.float32))
    ops.broadcast_where_backward(da, db, on(device, dy), on(device, cond))
    take = np.isnan(cond) | (cond != 0)
    assert_close(host(da), np.where(take, dy, 0), what="da")
    assert_close(host(db), np.where(take, 0, dy).sum(0), what="db")


def test_nan_propagates(device):
    a = np.array([np.nan, 1.0, np.inf, -np.inf], np.float32)
    b = np.array([1.0, np.nan, np.inf, 2.0], np.float32)
    for kind in ("add", "multiply", "maximum", "minimum", "divide"):
        y = on(device, np.zeros(4, np.float32))
        ops.broadcast_binary(y, on(device, a), on(device, b), kind=kind)
        with np.errstate(invalid="ignore"):
            ref = REFS[kind](a, b)
        np.testing.assert_array_equal(np.isnan(host(y)), np.isnan(ref), err_msg=kind)
    y = on(device, np.zeros(4, np.float32))
    ops.broadcast_binary(y, on(device, a), on(device, b), kind="less")
    np.testing.assert_array_equal(host(y), [0, 0, 0, 1])
    da = on(device, np.zeros(4, np.float32))
    ops.broadcast_binary_backward(da, None, on(device, np.ones(4, np.float32)),
                                  on(device, a), on(device, b), kind="multiply")
    assert np.isnan(host(da)[1])  # d(a*b)/da = b = NaN


def test_errors_name_the_op_and_shapes():
    with pytest.raises(ValueError, match=r"broadcast_binary: incompatible shapes for "
                                         r"broadcasting: \(3, 4\) and \(5,\)"):
        ops.broadcast_binary(np.zeros((3, 4), np.float32), np.zeros((3, 4), np.float32),
                             np.zeros(5, np.float32), kind="add")
    with pytest.raises(ValueError, match=r"expected y.shape == \(3, 4\); received \(4, 3\)"):
        ops.broadcast_binary(np.zeros((4, 3), np.float32), np.zeros((3, 4), np.float32),
                             np.zeros(4, np.float32), kind="add")
    with pytest.raises(ValueError, match="expected kind in"):
        ops.broadcast_binary(np.zeros(3, np.float32), np.zeros(3, np.float32),
                             np.zeros(3, np.float32), kind="mod")
