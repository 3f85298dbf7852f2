"""constraint: Keras 3's MaxNorm/UnitNorm/MinMaxNorm/NonNeg in place, against a float64
NumPy transcription of keras/src/constraints/constraints.py, on odd shapes and axes."""

import numpy as np
import pytest

from kernels_numba.ops import constraint as C
from kernels_numba.testing import assert_close, host, on, randn

EPS = 1e-7


def norms(w, axis):
    w = np.asarray(w, np.float64)
    return np.sqrt(np.sum(w * w, axis=None if axis is None else tuple(np.atleast_1d(axis)),
                          keepdims=True))


def ref_max_norm(w, max_value, axis):
    n = norms(w, axis)
    return w * (np.clip(n, 0, max_value) / (EPS + n))


def ref_unit_norm(w, axis):
    return w / (EPS + norms(w, axis))


def ref_min_max_norm(w, lo, hi, rate, axis):
    n = norms(w, axis)
    return w * ((rate * np.clip(n, lo, hi) + (1 - rate) * n) / (EPS + n))


CASES = [((1,), 0), ((7, 3), 0), ((7, 3), 1), ((7, 3), -1), ((3, 2, 3, 5), [0, 1, 2]),
         ((3, 4, 5), 1), ((2, 3, 4), (1, 2)), ((5, 3), None)]


@pytest.mark.parametrize("shape,axis", CASES)
def test_norm_constraints_match_keras_formulas(device, shape, axis):
    w = randn(shape, seed=7, scale=0.8)
    for apply, want in [
        (lambda b: C.max_norm(b, max_value=1.5, axis=axis), ref_max_norm(w, 1.5, axis)),
        (lambda b: C.unit_norm(b, axis=axis), ref_unit_norm(w, axis)),
        (lambda b: C.min_max_norm(b, min_value=0.5, max_value=1.2, rate=0.7, axis=axis),
         ref_min_max_norm(w, 0.5, 1.2, 0.7, axis)),
    ]:
        buf = on(device, w)
        apply(buf)
        assert_close(host(buf), want, rtol=1e-5, atol=1e-6, what=f"{shape} axis={axis}")


def test_max_norm_leaves_small_columns_and_zero_columns(device):
    w = np.array([[0.1, 3.0, 0.0], [0.2, 4.0, 0.0]], np.float32)  # column norms .22, 5, 0
    buf = on(device, w)
    C.max_norm(buf, max_value=2.0, axis=0)
    assert_close(host(buf), ref_max_norm(w, 2.0, 0), rtol=1e-6, atol=1e-7)
    assert np.all(host(buf)[:, 2] == 0.0)  # 0 * 0 / eps, no NaN


def test_non_neg(device):
    w = np.array([[-1.0, 0.5, np.nan], [0.0, -0.0, -np.inf]], np.float32)
    buf = on(device, w)
    C.non_neg(buf)
    with np.errstate(invalid="ignore"):
        want = np.maximum(w, 0)  # NumPy's maximum keeps NaN, as Keras's ops.maximum
    np.testing.assert_array_equal(host(buf), want)


def test_nan_poisons_its_group_only(device):
    w = randn((4, 3), seed=8)
    w[2, 1] = np.nan
    for apply in (lambda b: C.max_norm(b, max_value=0.5, axis=0),
                  lambda b: C.unit_norm(b, axis=0),
                  lambda b: C.min_max_norm(b, axis=0)):
        buf = on(device, w)
        apply(buf)
        got = np.isnan(host(buf))
        assert got[:, 1].all() and not got[:, [0, 2]].any()


def test_bad_arguments_name_the_op():
    w = np.zeros((2, 3, 4), np.float32)
    with pytest.raises(ValueError, match=r"max_norm: expected consecutive axes .*axis=\[0, 2\]"):
        C.max_norm(w, max_value=1.0, axis=[0, 2])
    with pytest.raises(ValueError, match="unit_norm: axis 3 is out of range .*\\(2, 3, 4\\)"):
        C.unit_norm(w, axis=3)
    with pytest.raises(ValueError, match="max_norm: expected max_value >= 0 and finite"):
        C.max_norm(w, max_value=-1.0)
    with pytest.raises(ValueError, match="min_max_norm: expected min_value <= max_value"):
        C.min_max_norm(w, min_value=2.0, max_value=1.0)
    with pytest.raises(TypeError, match="non_neg: expected w.dtype == float32"):
        C.non_neg(np.zeros(3))
    with pytest.raises(TypeError, match="unit_norm: expected axis to be an int"):
        C.unit_norm(w, axis="0")


@pytest.mark.parametrize("shape,axis", [((3, 300), 0), ((70, 600), 0), ((600, 70), 1),
                                        ((5, 40, 300), 1)])
def test_cpu_tiles_and_parallel_path(monkeypatch, shape, axis):
    # Wide inner sizes take several column tiles; large weights take the parallel path.
    from kernels_numba.cpu import constraint as cpu

    w = randn(shape, seed=11)
    runs = []
    for serial in (False, True):
        if serial:
            monkeypatch.setattr(cpu, "split", lambda work: False)
        buf = w.copy()
        C.min_max_norm(buf, min_value=0.5, max_value=3.0, rate=0.9, axis=axis)
        runs.append(buf)
    np.testing.assert_array_equal(runs[0], runs[1])
    assert_close(runs[0], ref_min_max_norm(w, 0.5, 3.0, 0.9, axis), rtol=1e-5, atol=1e-6)
