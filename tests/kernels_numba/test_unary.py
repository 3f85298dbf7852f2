"""kernels_numba unary family vs float64 NumPy and finite differences, both devices."""

import math

import numpy as np
import pytest

from kernels_numba import ops
from kernels_numba.testing import assert_close, host, numeric_grad, on, randn

LO, HI = -0.5, 0.7


def _gelu_tanh(x):
    return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))


REFS = {
    "negative": np.negative, "square": np.square, "sqrt": np.sqrt, "exp": np.exp,
    "log": np.log, "log1p": np.log1p, "abs": np.abs, "sign": np.sign,
    "clip": lambda x: np.clip(x, LO, HI), "silu": lambda x: x / (1 + np.exp(-x)),
    "gelu_tanh": _gelu_tanh, "trunc": np.trunc, "nonzero": lambda x: (x != 0) * 1.0,
    "reciprocal": lambda x: 1 / x, "expm1": np.expm1,
}
POSITIVE = ("sqrt", "log", "log1p", "reciprocal")
FLAT_GRAD = ("sign", "trunc", "nonzero")


def _x(kind, shape=(3, 7), seed=1):
    x = randn(shape, seed=seed) * 1.5
    if kind in POSITIVE:
        x = np.abs(x) + 0.3
    return x.astype(np.float32)


@pytest.mark.parametrize("kind", list(REFS))
def test_forward_and_backward(device, kind):
    x = _x(kind)
    y = on(device, np.full(x.shape, np.nan, np.float32))
    ops.unary_forward(y, on(device, x), kind=kind, alpha=LO, beta=HI)
    assert_close(host(y), REFS[kind](x.astype(np.float64)), rtol=2e-6, atol=1e-6, what=kind)
    w = randn(x.shape, seed=2)
    dx = on(device, np.full(x.shape, np.nan, np.float32))
    ops.unary_backward(dx, on(device, w), on(device, x), kind=kind, alpha=LO, beta=HI)
    if kind in FLAT_GRAD:
        assert_close(host(dx), np.zeros(x.shape), what=kind)
        return
    g = numeric_grad(lambda v: (REFS[kind](v) * w).sum(), x)
    assert_close(host(dx), g, rtol=1e-4, atol=1e-4, what=f"{kind} grad")


def test_in_place(device):
    x = _x("exp")
    buf = on(device, x)
    ops.unary_forward(buf, buf, kind="exp")
    assert_close(host(buf), np.exp(x.astype(np.float64)), rtol=2e-6)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_nan_and_special_values(device):
    x = np.array([np.nan, -1.0, 0.0, np.inf, -np.inf, 1e3], np.float32)
    with np.errstate(all="ignore"):
        for kind, ref in REFS.items():
            y = on(device, np.zeros_like(x))
            ops.unary_forward(y, on(device, x), kind=kind, alpha=LO, beta=HI)
            want = ref(x.astype(np.float64))
            got = host(y)
            np.testing.assert_array_equal(np.isnan(got), np.isnan(want), err_msg=kind)
            fin = np.isfinite(want)
            assert_close(got[fin], want[fin], rtol=1e-5, atol=1e-6, what=kind)
            dx = on(device, np.zeros_like(x))
            ops.unary_backward(dx, on(device, np.ones_like(x)), on(device, x), kind=kind,
                               alpha=LO, beta=HI)
            if kind != "negative":  # its derivative is the constant -1
                assert np.isnan(host(dx)[0]), f"{kind}: f'(NaN) must be NaN"


def test_bad_kind_is_named():
    with pytest.raises(ValueError, match=r"unary_forward: expected kind in .*received 'cos'"):
        ops.unary_forward(np.zeros(2, np.float32), np.zeros(2, np.float32), kind="cos")
