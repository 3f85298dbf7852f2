"""Merge ops: forward against float64 NumPy, backward against finite differences,
IEEE NaN, torch's tie rule for the extrema, and argument errors."""

import numpy as np
import pytest

from kernels_numba import ops
from kernels_numba.testing import assert_close, host, numeric_grad, on, randn

SHAPES = [(1,), (7, 3), (2, 5, 3)]
NAN = np.float32(np.nan)


def _distinct(shape, seed):
    """Two inputs with no ties (finite differences of max/min are defined)."""
    a = randn(shape, seed=seed)
    b = randn(shape, seed=seed + 1)
    b[np.abs(a - b) < 1e-2] += 0.5
    return a, b


@pytest.mark.parametrize("shape", SHAPES)
def test_multiply_forward_backward(device, shape):
    a, b = _distinct(shape, 1)
    y = on(device, np.zeros(shape, np.float32))
    ops.multiply(y, *on(device, a, b))
    assert_close(host(y), a.astype(np.float64) * b, what="multiply")
    ab = on(device, a)
    ops.multiply(ab, ab, on(device, b))  # in place
    assert_close(host(ab), a.astype(np.float64) * b, what="multiply in place")


@pytest.mark.parametrize("op,ref", [("maximum", np.maximum), ("minimum", np.minimum)])
@pytest.mark.parametrize("shape", SHAPES)
def test_extremum_forward_backward(device, op, ref, shape):
    a, b = _distinct(shape, 3)
    g = randn(shape, seed=5)
    ab, bb, gb = on(device, a, b, g)
    y = on(device, np.zeros(shape, np.float32))
    getattr(ops, op)(y, ab, bb)
    assert_close(host(y), ref(a.astype(np.float64), b), rtol=0, atol=0, what=op)

    da, db = on(device, np.full(shape, 7, np.float32), np.full(shape, 7, np.float32))
    getattr(ops, f"{op}_backward")(da, db, gb, ab, bb)
    want_a = numeric_grad(lambda t: np.sum(ref(t, b) * g), a, eps=1e-4)
    want_b = numeric_grad(lambda t: np.sum(ref(a, t) * g), b, eps=1e-4)
    assert_close(host(da), want_a, rtol=1e-4, atol=1e-4, what=f"{op} da")
    assert_close(host(db), want_b, rtol=1e-4, atol=1e-4, what=f"{op} db")

    # One side only, and da written over dy (the layers chain this way).
    db2 = on(device, np.full(shape, 7, np.float32))
    getattr(ops, f"{op}_backward")(None, db2, gb, ab, bb)
    assert_close(host(db2), want_b, rtol=1e-4, atol=1e-4, what=f"{op} db alone")
    getattr(ops, f"{op}_backward")(gb, None, gb, ab, bb)
    assert_close(host(gb), want_a, rtol=1e-4, atol=1e-4, what=f"{op} da over dy")


@pytest.mark.parametrize("op", ["maximum", "minimum"])
def test_extremum_nan_and_ties(device, op):
    # Keras 3's torch (and jax) backend: a tie splits dy in halves; NaN gives dy to both.
    a = np.array([NAN, 1, NAN, 2, 3, -1], np.float32)
    b = np.array([1, NAN, NAN, 2, -1, 3], np.float32)
    g = np.array([1, 2, 3, 4, 5, 6], np.float32)
    ab, bb, gb = on(device, a, b, g)
    y = on(device, np.zeros(6, np.float32))
    getattr(ops, op)(y, ab, bb)
    ext = 3 if op == "maximum" else -1
    out = host(y)
    assert np.isnan(out[:3]).all(), out
    assert out[3:].tolist() == [2, ext, ext]
    da, db = on(device, np.zeros(6, np.float32), np.zeros(6, np.float32))
    getattr(ops, f"{op}_backward")(da, db, gb, ab, bb)
    a_wins = op == "maximum"
    assert host(da).tolist() == [1, 2, 3, 2, 5 if a_wins else 0, 0 if a_wins else 6]
    assert host(db).tolist() == [1, 2, 3, 2, 0 if a_wins else 5, 6 if a_wins else 0]


def test_nan_dy_stays_out_of_the_losing_side(device):
    # The losing input gets an exact 0 (a select, not dy * 0), as torch's masked_fill.
    a, b = on(device, np.array([2, 0], np.float32), np.array([1, 1], np.float32))
    gb = on(device, np.array([np.nan, np.inf], np.float32))
    da, db = on(device, np.ones(2, np.float32), np.ones(2, np.float32))
    ops.maximum_backward(da, db, gb, a, b)
    assert np.isnan(host(da)[0]) and host(da)[1] == 0
    assert host(db)[0] == 0 and host(db)[1] == np.inf


@pytest.mark.filterwarnings("ignore:invalid value:RuntimeWarning")  # NumPy on 0 * inf
def test_multiply_nan(device):
    a, b = on(device, np.array([NAN, 0, np.inf], np.float32), np.array([1, np.inf, 0], np.float32))
    y = on(device, np.zeros(3, np.float32))
    ops.multiply(y, a, b)
    assert np.isnan(host(y)).all()


@pytest.mark.parametrize("outer,widths", [(1, (1, 2)), (5, (3, 1, 4)), (3, (2,))])
def test_columns_forward_backward(device, outer, widths):
    parts = [randn((outer, w), seed=10 + i) for i, w in enumerate(widths)]
    total = sum(widths)
    y = on(device, np.full((outer, total), 9, np.float32))
    offset = 0
    for p in parts:
        ops.copy_columns(y, on(device, p), offset)
        offset += p.shape[1]
    assert_close(host(y), np.concatenate(parts, axis=1), rtol=0, atol=0, what="copy_columns")

    g = randn((outer, total), seed=20)
    gb = on(device, g)
    offset = 0
    for i, p in enumerate(parts):
        dx = on(device, np.full(p.shape, 9, np.float32))
        ops.take_columns(dx, gb, offset)

        def loss(t, i=i):
            return np.sum(np.concatenate(parts[:i] + [t] + parts[i + 1:], axis=1) * g)

        assert_close(host(dx), numeric_grad(loss, p), rtol=1e-5, atol=1e-5,
                     what=f"take_columns part {i}")
        offset += p.shape[1]


def test_copy_columns_writes_only_its_block(device):
    y = on(device, np.full((2, 5), 9, np.float32))
    ops.copy_columns(y, on(device, np.array([[NAN], [1]], np.float32)), 3)
    out = host(y)
    assert np.isnan(out[0, 3]) and out[1, 3] == 1
    assert (np.delete(out, 3, axis=1) == 9).all()


def test_bad_arguments_name_the_op():
    f = np.float32
    with pytest.raises(ValueError, match=r"multiply: expected b.shape == \(3,\); received \(4,\)"):
        ops.multiply(np.zeros(3, f), np.zeros(3, f), np.zeros(4, f))
    with pytest.raises(TypeError, match="maximum: expected a.dtype == float32; received float64"):
        ops.maximum(np.zeros(3, f), np.zeros(3), np.zeros(3, f))
    with pytest.raises(ValueError, match=r"minimum_backward: expected da.shape == \(2, 2\)"):
        ops.minimum_backward(np.zeros((2, 3), f), None, *(np.zeros((2, 2), f),) * 3)
    with pytest.raises(ValueError, match="C-contiguous"):
        ops.multiply(np.zeros(3, f), np.zeros(6, f)[::2], np.zeros(3, f))
    with pytest.raises(ValueError, match=r"copy_columns: expected offset \+ x.shape\[1\] <= "
                                         r"y.shape\[1\] == 4; received offset=3, x.shape\[1\]=2"):
        ops.copy_columns(np.zeros((2, 4), f), np.zeros((2, 2), f), 3)
    with pytest.raises(ValueError, match=r"take_columns: expected dy.shape == \(2, \?\); "
                                         r"received \(3, 4\)"):
        ops.take_columns(np.zeros((2, 2), f), np.zeros((3, 4), f), 0)
    with pytest.raises(ValueError, match="copy_columns: expected offset to be an integer >= 0"):
        ops.copy_columns(np.zeros((2, 4), f), np.zeros((2, 2), f), -1)
    with pytest.raises(ValueError, match="expected x with 2 dimensions"):
        ops.copy_columns(np.zeros((2, 4), f), np.zeros(2, f), 0)
