import math

import numpy as np
import pytest

from kernels_numba import ops
from kernels_numba.testing import assert_close, host, numeric_grad, on, randn

_erf = np.vectorize(math.erf)


def _softmax(z):
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# float64 references: kind -> f(x, alpha)
REF = {
    "linear": lambda z, a: z,
    "relu": lambda z, a: np.maximum(z, 0.0),
    "sigmoid": lambda z, a: 1.0 / (1.0 + np.exp(-z)),
    "tanh": lambda z, a: np.tanh(z),
    "leaky_relu": lambda z, a: np.where(z > 0, z, a * z),
    "elu": lambda z, a: np.where(z > 0, z, a * np.expm1(np.minimum(z, 0.0))),
    "gelu": lambda z, a: 0.5 * z * (1.0 + _erf(z / np.sqrt(2.0))),
    "softplus": lambda z, a: np.logaddexp(z, 0.0),
    "softmax": lambda z, a: _softmax(z),
    # Keras 3 (torch backend) formulas; selu with torch's constants.
    "silu": lambda z, a: z / (1.0 + np.exp(-z)),
    "selu": lambda z, a: SELU_SCALE * np.where(z > 0, z, SELU_ALPHA * np.expm1(np.minimum(z, 0))),
    "relu6": lambda z, a: np.clip(z, 0.0, 6.0),
    "hard_sigmoid": lambda z, a: np.clip(z + 3.0, 0.0, 6.0) / 6.0,
    "hard_silu": lambda z, a: z * np.clip(z + 3.0, 0.0, 6.0) / 6.0,
    "mish": lambda z, a: z * np.tanh(np.logaddexp(z, 0.0)),
    "exponential": lambda z, a: np.exp(z),
    "softsign": lambda z, a: z / (np.abs(z) + 1.0),
    "log_softmax": lambda z, a: np.log(_softmax(z)),
}
SELU_ALPHA, SELU_SCALE = 1.6732632423543772848170429916717, 1.0507009873554804934193349852946
ALPHA = {"leaky_relu": 0.2, "elu": 1.0}
KINDS = list(REF)
ROW_KINDS = ("softmax", "log_softmax")
USES_Y = {"relu", "sigmoid", "tanh", "softmax", "log_softmax"}
SHAPES = [(1,), (3, 5), (2, 3, 7)]


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("kind", KINDS)
def test_forward_matches_reference(device, kind, shape):
    x = randn(shape, seed=1, scale=2.0)
    alpha = ALPHA.get(kind, 0.0)
    y = on(device, np.full(shape, np.nan, np.float32))
    ops.activation_forward(y, on(device, x), kind=kind, alpha=alpha)
    assert_close(host(y), REF[kind](x.astype(np.float64), alpha), rtol=1e-5, atol=1e-6, what=kind)


@pytest.mark.parametrize("shape", [(1,), (2, 5)], ids=str)
@pytest.mark.parametrize("kind", KINDS)
def test_backward_matches_numeric_grad(device, kind, shape):
    x = randn(shape, seed=2, scale=2.0)
    dy = randn(shape, seed=3)
    alpha = ALPHA.get(kind, 0.0)
    expected = numeric_grad(lambda v: np.sum(REF[kind](v, alpha) * dy), x.astype(np.float64))
    y = REF[kind](x.astype(np.float64), alpha).astype(np.float32)
    dx = on(device, np.full(shape, np.nan, np.float32))
    # Pass only what the kind needs: the op must not touch the other one.
    xb = None if kind in USES_Y else on(device, x)
    yb = on(device, y) if kind in USES_Y else None
    ops.activation_backward(dx, on(device, dy), xb, yb, kind=kind, alpha=alpha)
    assert_close(host(dx), expected, rtol=1e-4, atol=1e-5, what=f"{kind} backward")


@pytest.mark.parametrize("kind", ["relu", "gelu", "softmax", "elu", "log_softmax", "mish"])
def test_in_place(device, kind):
    x = randn((3, 4), seed=4)
    dy = randn((3, 4), seed=5)
    alpha = ALPHA.get(kind, 0.0)
    ref_y = REF[kind](x.astype(np.float64), alpha)
    ref_dx = numeric_grad(lambda v: np.sum(REF[kind](v, alpha) * dy), x.astype(np.float64))
    buf = on(device, x)
    xb = None if kind in USES_Y else on(device, x)  # backward needs x kept for x-kinds
    ops.activation_forward(buf, buf, kind=kind, alpha=alpha)
    assert_close(host(buf), ref_y, rtol=1e-5, atol=1e-6, what=f"{kind} y is x")
    g = on(device, dy)
    ops.activation_backward(g, g, xb, buf if kind in USES_Y else None, kind=kind, alpha=alpha)
    assert_close(host(g), ref_dx, rtol=1e-4, atol=1e-5, what=f"{kind} dx is dy")


@pytest.mark.parametrize("shape", [(2, 131), (1, 1)], ids=str)
def test_softmax_rows_longer_than_block_and_single(device, shape):
    x = randn(shape, seed=6, scale=3.0)
    dy = randn(shape, seed=7)
    y = on(device, np.zeros(shape, np.float32))
    ops.activation_forward(y, on(device, x), kind="softmax")
    ref = _softmax(x.astype(np.float64))
    assert_close(host(y), ref, rtol=1e-5, atol=1e-6, what="softmax long rows")
    dx = on(device, np.zeros(shape, np.float32))
    ops.activation_backward(dx, on(device, dy), None, y, kind="softmax")
    expected = ref * (dy - np.sum(dy * ref, axis=-1, keepdims=True))
    assert_close(host(dx), expected, rtol=1e-4, atol=1e-6, what="softmax backward long rows")


@pytest.mark.parametrize("kind", ["sigmoid", "softplus", "softmax", "elu", "gelu", "tanh",
                                  "silu", "mish", "selu", "softsign", "hard_silu", "relu6",
                                  "hard_sigmoid", "log_softmax"])
def test_extreme_inputs_stay_finite(device, kind):
    x = np.array([[-100.0, -30.0, 0.0, 30.0, 100.0]], np.float32)
    y = on(device, np.zeros_like(x))
    ops.activation_forward(y, on(device, x), kind=kind, alpha=ALPHA.get(kind, 1.0))
    got = host(y)
    assert np.all(np.isfinite(got)), f"{kind}: {got}"
    assert_close(got, REF[kind](x.astype(np.float64), ALPHA.get(kind, 1.0)), rtol=1e-5,
                 atol=1e-6, what=kind)


def test_linear_backward_copies(device):
    dy = randn((2, 3), seed=8)
    dx = on(device, np.zeros((2, 3), np.float32))
    ops.activation_backward(dx, on(device, dy), None, None, kind="linear")
    assert_close(host(dx), dy, rtol=0, atol=0, what="linear backward")


def test_bad_arguments_name_the_op():
    f32 = np.float32
    x = np.zeros((2, 3), f32)
    with pytest.raises(ValueError, match=r"activation_forward: expected kind in \[.*'gelu'.*\]; "
                                         r"received 'swish'"):
        ops.activation_forward(x, x, kind="swish")
    with pytest.raises(ValueError, match=r"activation_forward: expected y.shape == \(2, 3\)"):
        ops.activation_forward(np.zeros((3, 2), f32), x, kind="relu")
    with pytest.raises(TypeError, match="activation_forward: expected x.dtype == float32"):
        ops.activation_forward(x, np.zeros((2, 3)), kind="relu")
    with pytest.raises(ValueError, match="activation_backward: kind 'gelu' needs argument x"):
        ops.activation_backward(x, x, None, x, kind="gelu")
    with pytest.raises(ValueError, match="activation_backward: kind 'softmax' needs argument y"):
        ops.activation_backward(x, x, x, None, kind="softmax")
    with pytest.raises(ValueError, match=r"activation_backward: expected y.shape == \(2, 3\)"):
        ops.activation_backward(x, x, None, np.zeros(6, f32), kind="tanh")
    with pytest.raises(ValueError, match="C-contiguous"):
        ops.activation_forward(x.T, x.T, kind="relu")
    with pytest.raises(ValueError, match="at least 1 dimension for softmax"):
        ops.activation_forward(np.zeros((), f32), np.zeros((), f32), kind="softmax")


# NaN propagates (IEEE): a NaN input gives a NaN output and a NaN gradient, on every kind,
# in the serial and the parallel CPU loops (PARALLEL_MIN_SIZE = 32768) and on CUDA.
NAN_ROW = [np.nan, -1.5, 0.0, 0.7, -0.3]


@pytest.mark.parametrize("size", [5, 40_000], ids=["small", "parallel"])
@pytest.mark.parametrize("kind", KINDS)
def test_nan_in_nan_out_forward_and_backward(device, kind, size):
    if size > 5 and (device == "cuda" or kind in ROW_KINDS):
        pytest.skip("the large case exercises the CPU's parallel elementwise loops")
    x = np.resize(np.array(NAN_ROW, np.float32), (2, size))
    x[1, 0] = 0.25  # the second row holds no NaN
    alpha = ALPHA.get(kind, 0.0)
    y = on(device, np.zeros_like(x))
    ops.activation_forward(y, on(device, x), kind=kind, alpha=alpha)
    got = host(y)
    nan_in = np.isnan(x)
    if kind in ROW_KINDS:  # the row holding the NaN is NaN; the other row is untouched
        assert np.isnan(got[0]).all() and np.isfinite(got[1]).all(), got
    else:
        np.testing.assert_array_equal(np.isnan(got), nan_in, err_msg=f"{kind} forward")
        with np.errstate(invalid="ignore"):
            assert_close(got[~nan_in], REF[kind](x.astype(np.float64), alpha)[~nan_in],
                         rtol=1e-5, atol=1e-6, what=f"{kind} finite part")
    dy = on(device, np.ones_like(x))
    dx = on(device, np.zeros_like(x))
    ops.activation_backward(dx, dy, on(device, x), y, kind=kind, alpha=alpha)
    gdx = host(dx)
    if kind == "linear":  # f'(x) = 1 everywhere: dy passes unchanged
        assert_close(gdx, np.ones_like(x), rtol=0, atol=0, what="linear dx")
    elif kind in ROW_KINDS:
        assert np.isnan(gdx[0]).all() and np.isfinite(gdx[1]).all(), gdx
    else:
        np.testing.assert_array_equal(np.isnan(gdx), nan_in, err_msg=f"{kind} backward")


@pytest.mark.parametrize("kind", [k for k in KINDS if k not in ROW_KINDS])
def test_nan_gradient_passes_where_the_slope_is_not_zero(device, kind):
    x = np.array([[0.5, 2.0, -0.5]], np.float32)
    alpha = ALPHA.get(kind, 0.0)
    y = on(device, np.zeros_like(x))
    ops.activation_forward(y, on(device, x), kind=kind, alpha=alpha)
    dx = on(device, np.zeros_like(x))
    dy = np.full_like(x, np.nan)
    ops.activation_backward(dx, on(device, dy), on(device, x), y, kind=kind, alpha=alpha)
    got = host(dx)
    assert np.isnan(got[0, :2]).all(), f"{kind}: {got}"  # f'(x) > 0 there
    if kind == "relu":  # f'(x) == 0: 0, as Keras's backends (a select, not dy * 0)
        assert got[0, 2] == 0.0

