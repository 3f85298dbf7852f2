"""regularize: L1/L2 penalties and their gradients against a float64 NumPy reference
(Keras 3's L1L2 formulas), finite differences, NaN, determinism and argument errors."""

import numpy as np
import pytest

from kernels_numba.ops import regularize as R
from kernels_numba.testing import assert_close, host, numeric_grad, on, randn

SHAPES = [(1,), (7, 3), (3, 3, 2, 5), (2049,)]  # the last one spans two parts


def ref_penalty(x, l1, l2, scale=1.0):
    x = np.asarray(x, np.float64)
    return scale * (l1 * np.abs(x).sum() + l2 * (x * x).sum())


def ref_grad(x, l1, l2, scale=1.0):
    x = np.asarray(x, np.float64)
    return scale * (l1 * np.sign(x) + 2.0 * l2 * x)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("l1,l2", [(0.01, 0.0), (0.0, 0.02), (0.3, 0.7)])
def test_weight_penalty_accumulates(device, shape, l1, l2):
    w = randn(shape, seed=1)
    w.reshape(-1)[0] = 0.0  # sign(0) = 0, as Keras/torch
    g0 = randn(shape, seed=2)
    pen, grad = on(device, np.array([0.5], np.float32), g0)
    R.weight_penalty(pen, grad, on(device, w), l1=l1, l2=l2)
    assert_close(host(pen), [0.5 + ref_penalty(w, l1, l2)], rtol=2e-5, what="penalty")
    assert_close(host(grad), g0 + ref_grad(w, l1, l2), what="grad")


@pytest.mark.parametrize("shape", [(1,), (5, 3)])
def test_activity_penalty_scale_and_flat_grad(device, shape):
    y = randn(shape, seed=3)
    scale = 1.0 / shape[0]  # Keras divides an activity penalty by the batch size
    pen, dy = on(device, np.zeros(1, np.float32), np.ones(y.size, np.float32))
    ws = on(device, np.zeros(R.penalty_workspace_shape(y.size), np.float32))
    R.activity_penalty(pen, dy, on(device, y), l1=0.1, l2=0.2, scale=scale, workspace=ws)
    assert_close(host(pen), [ref_penalty(y, 0.1, 0.2, scale)], what="penalty")
    assert_close(host(dy), 1.0 + ref_grad(y, 0.1, 0.2, scale).reshape(-1), what="dy")


def test_gradient_matches_finite_differences(device):
    w = randn((4, 3), seed=4)
    w[np.abs(w) < 0.05] = 0.3  # |w| is smooth away from 0
    grad = on(device, np.zeros((4, 3), np.float32))
    R.weight_penalty(on(device, np.zeros(1, np.float32)), grad, on(device, w), l1=0.3, l2=0.5)
    want = numeric_grad(lambda v: ref_penalty(v, 0.3, 0.5), w)
    assert_close(host(grad), want, rtol=1e-4, atol=1e-5, what="d penalty / dw")


def test_penalty_only_and_repeatable(device):
    w = randn((2049,), seed=5)
    got = []
    for _ in range(2):
        pen = on(device, np.zeros(1, np.float32))
        R.weight_penalty(pen, None, on(device, w), l1=0.01, l2=0.01)
        got.append(host(pen))
    np.testing.assert_array_equal(got[0], got[1])  # same bits: fixed-order partials
    assert_close(got[0], [ref_penalty(w, 0.01, 0.01)], rtol=2e-5, what="penalty")


def test_nan_and_inf_propagate(device):
    w = np.array([1.0, np.nan, -2.0, 0.0], np.float32)
    pen, grad = on(device, np.zeros(1, np.float32), np.zeros(4, np.float32))
    R.weight_penalty(pen, grad, on(device, w), l1=0.1, l2=0.1)
    assert np.isnan(host(pen)[0])
    np.testing.assert_array_equal(np.isnan(host(grad)), [False, True, False, False])
    pen = on(device, np.zeros(1, np.float32))
    R.weight_penalty(pen, None, on(device, np.array([np.inf, 1.0], np.float32)), l1=0.0, l2=0.1)
    assert host(pen)[0] == np.inf  # the skipped l1 term does not turn it into 0*inf = NaN


def test_bad_arguments_name_the_op():
    w = np.zeros((3, 2), np.float32)
    with pytest.raises(ValueError, match=r"weight_penalty: expected penalty.shape == \(1,\)"):
        R.weight_penalty(np.zeros(2, np.float32), None, w, l1=0.1, l2=0.0)
    with pytest.raises(ValueError, match="weight_penalty: expected grad with 6 elements"):
        R.weight_penalty(np.zeros(1, np.float32), np.zeros(5, np.float32), w, l1=0.1, l2=0.0)
    with pytest.raises(ValueError, match="weight_penalty: expected l1 >= 0 and finite; "
                                         "received -1"):
        R.weight_penalty(np.zeros(1, np.float32), None, w, l1=-1, l2=0.0)
    with pytest.raises(ValueError, match="activity_penalty: expected scale finite"):
        R.activity_penalty(np.zeros(1, np.float32), None, w, l1=0.1, l2=0.0, scale=np.inf)
    with pytest.raises(TypeError, match="activity_penalty: expected y.dtype == float32"):
        R.activity_penalty(np.zeros(1, np.float32), None, w.astype(np.float64), l1=0.1,
                           l2=0.0, scale=1.0)
    with pytest.raises(ValueError, match="expected workspace with >= 2 elements"):
        R.weight_penalty(np.zeros(1, np.float32), None, w, l1=0.1, l2=0.0,
                         workspace=np.zeros(1, np.float32))


def test_cpu_parallel_and_serial_paths_agree_bit_for_bit(monkeypatch):
    # Above PARALLEL_MIN_WORK the CPU twin splits whole parts across threads; the small
    # shapes above run serially. Both must give the same bits.
    from kernels_numba.cpu import regularize as cpu

    w, g0 = randn((70001,), seed=9), randn((70001,), seed=10)
    runs = []
    for serial in (False, True):
        if serial:
            monkeypatch.setattr(cpu, "split", lambda work: False)
        pen, grad = np.zeros(1, np.float32), g0.copy()
        R.weight_penalty(pen, grad, w, l1=0.01, l2=0.02)
        runs.append((pen, grad))
    np.testing.assert_array_equal(runs[0][0], runs[1][0])
    np.testing.assert_array_equal(runs[0][1], runs[1][1])
    assert_close(runs[0][0], [ref_penalty(w, 0.01, 0.02)], rtol=1e-5, what="penalty")
    assert_close(runs[0][1], g0 + ref_grad(w, 0.01, 0.02), what="grad")
