import numpy as np
import pytest

from kernels_numba import ops
from kernels_numba.testing import assert_close, host, numeric_grad, on, randn, rng

K = 5
# Keras clips in float32: [float32(1e-7), float32(1 - 1e-7)] (the upper bound is 1 - 1.19e-7).
CLIP_LO, CLIP_HI = float(np.float32(1e-7)), float(np.float32(1 - 1e-7))
SCALE = 0.5  # stands in for kerasish's 1/N


# float64 references (Keras formulas, keras-reference.md §1.9)


def _log_softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    return z - np.log(np.exp(z).sum(axis=1, keepdims=True))


def _softmax(z):
    return np.exp(_log_softmax(z))


def _valid(labels, k):
    return (labels >= 0) & (labels < k)


def ref_softmax_ce(z, labels):
    logp = _log_softmax(z)
    ok = _valid(labels, z.shape[1])
    return np.where(ok, -logp[np.arange(len(z)), np.where(ok, labels, 0)], np.nan)


def ref_softmax_categorical_ce(z, t):
    return -(t * _log_softmax(z)).sum(axis=1)


def ref_categorical_ce(p, t):
    q = np.clip(p / p.sum(axis=1, keepdims=True), CLIP_LO, CLIP_HI)
    return -(t * np.log(q)).sum(axis=1)


def ref_sparse_ce(p, labels):
    ok = _valid(labels, p.shape[1])
    onehot = np.eye(p.shape[1])[np.where(ok, labels, 0)]
    return np.where(ok, ref_categorical_ce(p, onehot), np.nan)


def _per_sample(a):
    return a.reshape(len(a), -1).mean(axis=1)


def ref_bce(p, t):
    p = np.clip(p, CLIP_LO, CLIP_HI)
    return _per_sample(-(t * np.log(p) + (1 - t) * np.log(1 - p)))


def ref_bce_logits(z, t):
    return _per_sample(np.maximum(z, 0) - z * t + np.log1p(np.exp(-np.abs(z))))


def ref_mse(p, t):
    return _per_sample((p - t) ** 2)


def _numeric(ref, x, aux):
    """Gradient of SCALE * sum of the per-sample losses (NaN samples contribute nothing)."""
    return numeric_grad(lambda v: SCALE * np.nansum(ref(v, aux)), x)


def _labels(n, seed):
    return rng(seed).integers(0, K, n).astype(np.int32)


def _probs(shape, seed):
    """Positive, unnormalised probabilities well inside the clip range."""
    return rng(seed).uniform(0.1, 1.0, shape).astype(np.float32)


def _targets(shape, seed):
    return rng(seed).uniform(0.0, 1.0, shape).astype(np.float32)  # soft, rows not summing to 1


def _zeros(device, *shapes):
    bufs = [
        on(device, np.full(s, 7.0, np.float32)) for s in shapes
    ]  # garbage: outputs are overwritten
    return bufs[0] if len(bufs) == 1 else bufs


# fused softmax losses (from logits)


@pytest.mark.parametrize("n", [1, 3])
def test_softmax_cross_entropy(device, n):
    logits, labels = randn((n, K), seed=1, scale=3.0), _labels(n, 2)
    loss, probs = _zeros(device, (n,), (n, K))
    lb = on(device, labels)
    ops.softmax_cross_entropy_forward(loss, probs, on(device, logits), lb)
    assert_close(host(loss), ref_softmax_ce(logits.astype(np.float64), labels), what="loss")
    assert_close(host(probs), _softmax(logits.astype(np.float64)), what="probs")
    dlogits = _zeros(device, (n, K))
    ops.softmax_cross_entropy_backward(dlogits, probs, lb, scale=SCALE)
    assert_close(host(dlogits), _numeric(ref_softmax_ce, logits, labels), rtol=1e-4, what="dlogits")


def test_softmax_cross_entropy_is_stable_and_in_place(device):
    logits = np.array(
        [[80.0, -80.0, 0.0, 5.0, 1.0], [-90.0, -95.0, -99.0, -91.0, -90.5]], np.float32
    )
    labels = np.array([3, 1], np.int32)
    loss, lb = _zeros(device, (2,)), on(device, labels)
    buf = on(device, logits)
    ops.softmax_cross_entropy_forward(loss, buf, buf, lb)  # probs written over the logits
    assert_close(host(loss), ref_softmax_ce(logits.astype(np.float64), labels), what="loss")
    assert_close(host(buf), _softmax(logits.astype(np.float64)), what="probs")


@pytest.mark.parametrize("n", [1, 3])
def test_softmax_categorical_cross_entropy(device, n):
    logits, targets = randn((n, K), seed=3, scale=3.0), _targets((n, K), 4)
    loss, probs = _zeros(device, (n,), (n, K))
    tb = on(device, targets)
    ops.softmax_categorical_cross_entropy_forward(loss, probs, on(device, logits), tb)
    assert_close(
        host(loss),
        ref_softmax_categorical_ce(logits.astype(np.float64), targets),
        rtol=1e-5,
        what="loss",
    )
    assert_close(host(probs), _softmax(logits.astype(np.float64)), what="probs")
    dlogits = _zeros(device, (n, K))
    ops.softmax_categorical_cross_entropy_backward(dlogits, probs, tb, scale=SCALE)
    assert_close(
        host(dlogits),
        _numeric(ref_softmax_categorical_ce, logits, targets),
        rtol=1e-4,
        what="dlogits",
    )


# probability losses (Keras: p / sum(p), clip)


@pytest.mark.parametrize("n", [1, 3])
def test_sparse_categorical_crossentropy(device, n):
    probs, labels = _probs((n, K), 5), _labels(n, 6)
    loss, pb, lb = _zeros(device, (n,)), on(device, probs), on(device, labels)
    ops.sparse_categorical_crossentropy_forward(loss, pb, lb)
    assert_close(host(loss), ref_sparse_ce(probs.astype(np.float64), labels), what="loss")
    dprobs = _zeros(device, (n, K))
    ops.sparse_categorical_crossentropy_backward(dprobs, pb, lb, scale=SCALE)
    assert_close(
        host(dprobs), _numeric(ref_sparse_ce, probs, labels), rtol=1e-4, atol=1e-4, what="dprobs"
    )


@pytest.mark.parametrize("n", [1, 3])
def test_categorical_crossentropy(device, n):
    probs, targets = _probs((n, K), 7), _targets((n, K), 8)
    loss, pb, tb = _zeros(device, (n,)), on(device, probs), on(device, targets)
    ops.categorical_crossentropy_forward(loss, pb, tb)
    assert_close(host(loss), ref_categorical_ce(probs.astype(np.float64), targets), what="loss")
    dprobs = _zeros(device, (n, K))
    ops.categorical_crossentropy_backward(dprobs, pb, tb, scale=SCALE)
    assert_close(
        host(dprobs),
        _numeric(ref_categorical_ce, probs, targets),
        rtol=1e-4,
        atol=1e-4,
        what="dprobs",
    )


def test_clipped_probabilities_have_zero_gradient(device):
    # Row 0: p[label]/S = 1e-9 < eps; row 1: p[label]/S = 1 > 1 - eps. Row 2 is unclipped.
    probs = np.array(
        [[1e-9, 0.5, 0.5, 0.0, 0.0], [1.0, 0.0, 0.0, 0.0, 0.0], [0.2, 0.3, 0.1, 0.2, 0.2]],
        np.float32,
    )
    labels = np.array([0, 0, 1], np.int32)
    loss, pb, lb = _zeros(device, (3,)), on(device, probs), on(device, labels)
    ops.sparse_categorical_crossentropy_forward(loss, pb, lb)
    assert_close(
        host(loss),
        ref_sparse_ce(probs.astype(np.float64), labels),
        rtol=1e-5,
        atol=1e-6,
        what="loss",
    )
    dprobs = _zeros(device, (3, K))
    ops.sparse_categorical_crossentropy_backward(dprobs, pb, lb, scale=SCALE)
    got = host(dprobs)
    assert not got[:2].any()
    assert_close(got[2], SCALE * (1.0 - np.eye(K)[1] / 0.3), rtol=1e-5, what="unclipped row")
    # categorical: clipped entries drop out of both terms of the gradient
    targets = np.eye(K, dtype=np.float32)[labels]
    ops.categorical_crossentropy_backward(dprobs, pb, on(device, targets), scale=SCALE)
    assert not host(dprobs)[:2].any()


def test_out_of_range_labels_give_nan_loss_and_zero_gradient(device):
    labels = np.array([2, -1, K, 0], np.int32)
    logits, probs = randn((4, K), seed=9), _probs((4, K), 10)
    lb = on(device, labels)
    loss, p_out = _zeros(device, (4,), (4, K))
    ops.softmax_cross_entropy_forward(loss, p_out, on(device, logits), lb)
    got = host(loss)
    assert np.isnan(got[1:3]).all() and np.isfinite(got[[0, 3]]).all()
    assert_close(
        got[[0, 3]], ref_softmax_ce(logits.astype(np.float64), labels)[[0, 3]], what="valid rows"
    )
    grad = _zeros(device, (4, K))
    ops.softmax_cross_entropy_backward(grad, p_out, lb, scale=SCALE)
    assert not host(grad)[1:3].any()
    assert_close(host(grad), _numeric(ref_softmax_ce, logits, labels), rtol=1e-4, what="dlogits")

    ops.sparse_categorical_crossentropy_forward(loss, on(device, probs), lb)
    got = host(loss)
    assert np.isnan(got[1:3]).all() and np.isfinite(got[[0, 3]]).all()
    ops.sparse_categorical_crossentropy_backward(grad, on(device, probs), lb, scale=SCALE)
    assert not host(grad)[1:3].any()
    assert_close(
        host(grad), _numeric(ref_sparse_ce, probs, labels), rtol=1e-4, atol=1e-4, what="dprobs"
    )


# pointwise losses: per-sample mean over every non-batch element

POINTWISE_SHAPES = [(1,), (3, 5), (2, 2, 3)]


@pytest.mark.parametrize("shape", POINTWISE_SHAPES)
def test_binary_crossentropy(device, shape):
    probs = rng(11).uniform(0.05, 0.95, shape).astype(np.float32)
    targets = (rng(12).uniform(size=shape) > 0.5).astype(np.float32)
    targets.reshape(-1)[0] = 0.3  # soft target
    loss, pb, tb = _zeros(device, (shape[0],)), on(device, probs), on(device, targets)
    ops.binary_crossentropy_forward(loss, pb, tb)
    assert_close(host(loss), ref_bce(probs.astype(np.float64), targets), what="loss")
    grad = _zeros(device, shape)
    ops.binary_crossentropy_backward(grad, pb, tb, scale=SCALE)
    assert_close(host(grad), _numeric(ref_bce, probs, targets), rtol=1e-4, atol=1e-5, what="dprobs")


def test_binary_crossentropy_clips(device):
    probs, targets = (
        np.array([[0.0, 1.0, 0.5]], np.float32),
        np.array([[1.0, 0.0, 1.0]], np.float32),
    )
    loss, pb, tb = _zeros(device, (1,)), on(device, probs), on(device, targets)
    ops.binary_crossentropy_forward(loss, pb, tb)
    assert_close(host(loss), ref_bce(probs.astype(np.float64), targets), rtol=1e-5, what="loss")
    grad = _zeros(device, (1, 3))
    ops.binary_crossentropy_backward(grad, pb, tb, scale=SCALE)
    assert_close(host(grad), [[0.0, 0.0, -SCALE / 3 / 0.5]], what="dprobs (clipped entries are 0)")


@pytest.mark.parametrize("shape", POINTWISE_SHAPES)
def test_binary_crossentropy_logits(device, shape):
    logits = randn(shape, seed=13, scale=3.0)
    logits.reshape(-1)[0] = -40.0  # far tail: stable form, no overflow
    targets = (rng(14).uniform(size=shape) > 0.5).astype(np.float32)
    loss, zb, tb = _zeros(device, (shape[0],)), on(device, logits), on(device, targets)
    ops.binary_crossentropy_logits_forward(loss, zb, tb)
    assert_close(host(loss), ref_bce_logits(logits.astype(np.float64), targets), what="loss")
    grad = _zeros(device, shape)
    ops.binary_crossentropy_logits_backward(grad, zb, tb, scale=SCALE)
    assert_close(
        host(grad), _numeric(ref_bce_logits, logits, targets), rtol=1e-4, atol=1e-5, what="dlogits"
    )


@pytest.mark.parametrize("shape", POINTWISE_SHAPES)
def test_mse(device, shape):
    pred, targets = randn(shape, seed=15), randn(shape, seed=16)
    loss, pb, tb = _zeros(device, (shape[0],)), on(device, pred), on(device, targets)
    ops.mse_forward(loss, pb, tb)
    assert_close(host(loss), ref_mse(pred.astype(np.float64), targets), what="loss")
    ops.mse_backward(pb, pb, tb, scale=SCALE)  # in place: dpred over pred
    assert_close(host(pb), _numeric(ref_mse, pred, targets), rtol=1e-4, atol=1e-5, what="dpred")


def test_bad_arguments_name_the_op():
    x, z = np.zeros((2, K), np.float32), np.zeros(2, np.float32)
    with pytest.raises(
        TypeError,
        match="softmax_cross_entropy_forward: expected labels.dtype == int32; received int64",
    ):
        ops.softmax_cross_entropy_forward(z, x.copy(), x, np.zeros(2, np.int64))
    with pytest.raises(
        ValueError, match=r"softmax_cross_entropy_forward: expected probs.shape == \(2, 5\)"
    ):
        ops.softmax_cross_entropy_forward(z, np.zeros((2, 4), np.float32), x, np.zeros(2, np.int32))
    with pytest.raises(
        ValueError, match=r"sparse_categorical_crossentropy_forward: expected loss.shape == \(2,\)"
    ):
        ops.sparse_categorical_crossentropy_forward(
            np.zeros(3, np.float32), x, np.zeros(2, np.int32)
        )
    with pytest.raises(
        ValueError, match="categorical_crossentropy_backward: expected probs with 2 dimensions"
    ):
        ops.categorical_crossentropy_backward(z.copy(), z, z.copy(), scale=1.0)
    with pytest.raises(
        ValueError, match="softmax_categorical_cross_entropy_forward: expected logits with shape"
    ):
        ops.softmax_categorical_cross_entropy_forward(
            z,
            np.zeros((2, 0), np.float32),
            np.zeros((2, 0), np.float32),
            np.zeros((2, 0), np.float32),
        )
    with pytest.raises(
        ValueError, match=r"mse_backward: expected targets.shape == \(2, 5\); received \(5, 2\)"
    ):
        ops.mse_backward(x.copy(), x, np.zeros((5, 2), np.float32), scale=1.0)
    with pytest.raises(
        ValueError, match="binary_crossentropy_backward: expected scale to be finite"
    ):
        ops.binary_crossentropy_backward(x.copy(), x, x.copy(), scale=float("inf"))
    with pytest.raises(
        TypeError, match="binary_crossentropy_logits_forward: expected targets.dtype == float32"
    ):
        ops.binary_crossentropy_logits_forward(z, x, x.astype(np.float64))


# NaN propagates: a NaN input (logit, probability, prediction or target) makes that sample's
# loss NaN and its gradient NaN, on both devices (the clips must not turn NaN into eps).

CLASS_LOSSES = {
    # name: (forward(loss, x, aux, device), backward(grad, x, aux, device), input maker, aux maker)
    "softmax_ce": (
        lambda loss, x, a, d: ops.softmax_cross_entropy_forward(loss, _zeros(d, (2, K)), x, a),
        None, lambda: randn((2, K), seed=21), lambda: _labels(2, 22)),
    "softmax_categorical_ce": (
        lambda loss, x, a, d: ops.softmax_categorical_cross_entropy_forward(
            loss, _zeros(d, (2, K)), x, a),
        None, lambda: randn((2, K), seed=23), lambda: _targets((2, K), 24)),
    "sparse_ce": (
        lambda loss, x, a, d: ops.sparse_categorical_crossentropy_forward(loss, x, a),
        lambda g, x, a: ops.sparse_categorical_crossentropy_backward(g, x, a, scale=SCALE),
        lambda: _probs((2, K), 25), lambda: _labels(2, 26)),
    "categorical_ce": (
        lambda loss, x, a, d: ops.categorical_crossentropy_forward(loss, x, a),
        lambda g, x, a: ops.categorical_crossentropy_backward(g, x, a, scale=SCALE),
        lambda: _probs((2, K), 27), lambda: _targets((2, K), 28)),
    "bce": (
        lambda loss, x, a, d: ops.binary_crossentropy_forward(loss, x, a),
        lambda g, x, a: ops.binary_crossentropy_backward(g, x, a, scale=SCALE),
        lambda: _probs((2, K), 29), lambda: _targets((2, K), 30)),
    "bce_logits": (
        lambda loss, x, a, d: ops.binary_crossentropy_logits_forward(loss, x, a),
        lambda g, x, a: ops.binary_crossentropy_logits_backward(g, x, a, scale=SCALE),
        lambda: randn((2, K), seed=31), lambda: _targets((2, K), 32)),
    "mse": (
        lambda loss, x, a, d: ops.mse_forward(loss, x, a),
        lambda g, x, a: ops.mse_backward(g, x, a, scale=SCALE),
        lambda: randn((2, K), seed=33), lambda: randn((2, K), seed=34)),
}


@pytest.mark.parametrize("where", ["label", "other"])
@pytest.mark.parametrize("name", list(CLASS_LOSSES))
def test_nan_input_gives_nan_loss_and_gradient(device, name, where):
    forward, backward, make_x, make_aux = CLASS_LOSSES[name]
    x, aux = make_x(), make_aux()
    label = int(aux[0]) if aux.dtype == np.int32 else 2
    j = label if where == "label" else (label + 1) % K
    x[0, j] = np.nan
    loss, xb, ab = _zeros(device, (2,)), on(device, x), on(device, aux)
    forward(loss, xb, ab, device)
    got = host(loss)
    assert np.isnan(got[0]) and np.isfinite(got[1]), f"{name}: loss {got}"
    grad = _zeros(device, (2, K))
    if backward is None:  # fused softmax losses: the gradient comes from the saved probs
        probs = _zeros(device, (2, K))
        if name == "softmax_ce":
            ops.softmax_cross_entropy_forward(loss, probs, xb, ab)
            ops.softmax_cross_entropy_backward(grad, probs, ab, scale=SCALE)
        else:
            ops.softmax_categorical_cross_entropy_forward(loss, probs, xb, ab)
            ops.softmax_categorical_cross_entropy_backward(grad, probs, ab, scale=SCALE)
        assert np.isnan(host(probs)[0]).all() and np.isfinite(host(probs)[1]).all()
    else:
        backward(grad, xb, ab)
    g = host(grad)
    assert np.isnan(g[0, j]) and np.isfinite(g[1]).all(), f"{name}: grad {g}"


@pytest.mark.parametrize("name", ["softmax_categorical_ce", "categorical_ce", "bce", "mse"])
def test_nan_target_gives_nan_loss(device, name):
    forward, _, make_x, make_aux = CLASS_LOSSES[name]
    x, aux = make_x(), make_aux()
    aux[1, 3] = np.nan
    loss = _zeros(device, (2,))
    forward(loss, on(device, x), on(device, aux), device)
    got = host(loss)
    assert np.isfinite(got[0]) and np.isnan(got[1]), f"{name}: loss {got}"
