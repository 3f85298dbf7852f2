"""MultiHeadAttention and Attention with dropout > 0: in training the fused kernel drops
attention probabilities with the mask attention_keep_mask gives for the layer's (seed,
step) (forward against a float64 reference, the input gradient against finite
differences with that mask fixed), the step advances per training forward (by value or
through the device step buffer), inference is dropout-free, a model fits and is
reproducible per set_random_seed; Keras 3 drops the same thing (the distribution), for
AdditiveAttention too (its kernel-level dropout tests: test_additive_attention.py)."""

import os

import numpy as np
import pytest

import kerasish
from kerasish.layers.additive_attention import AdditiveAttention
from kerasish.layers.attention import Attention, MultiHeadAttention
from kernels_numba.ops import attention as A
from kernels_numba.testing import numeric_grad

RATE = 0.4


def _lend_scratch(layer, n):
    """The scratch the engine lends a layer, as plain host arrays."""
    layer.scratch = {name: np.zeros(shape, dtype)
                     for name, (shape, dtype) in layer.scratch_shapes(n).items()}
    layer.scratch_view = lambda name, m: layer.scratch[name][:m]
    for w in layer.weights:
        w.ensure_grad()


def _keep(shape, seed, step):
    out = np.zeros(shape, np.float32)
    A.attention_keep_mask(out, rate=RATE, seed=seed, step=step)
    return out.astype(np.float64)


def _mha(n=2, tq=3, tk=4, d=5):
    rng = np.random.default_rng(1)
    q = rng.normal(size=(n, tq, d)).astype(np.float32)
    v = rng.normal(size=(n, tk, d)).astype(np.float32)
    layer = MultiHeadAttention(num_heads=2, key_dim=3, dropout=RATE, seed=21)
    layer(q, v)  # builds
    layer.set_weights([w + rng.normal(scale=0.3, size=w.shape).astype(np.float32)
                       for w in layer.get_weights()])
    _lend_scratch(layer, n)
    return layer, q, v


def _mha_ref(layer, q, v, drop):
    """Keras's MultiHeadAttention in float64: projections, softmax, dropout factors, sum."""
    wq, bq, wk, bk, wv, bv, wo, bo = (w.astype(np.float64) for w in layer.get_weights())
    qp = np.einsum("btd,dhk->bthk", q, wq) + bq
    kp = np.einsum("btd,dhk->bthk", v, wk) + bk
    vp = np.einsum("btd,dhk->bthk", v, wv) + bv
    s = np.einsum("bihk,bjhk->bhij", qp, kp) / np.sqrt(layer.key_dim)
    p = np.exp(s - s.max(-1, keepdims=True))
    p = p / p.sum(-1, keepdims=True) * drop
    o = np.einsum("bhij,bjhk->bihk", p, vp)
    return np.einsum("bihk,hko->bio", o, wo) + bo


def test_mha_training_forward_uses_the_kernel_mask_and_steps():
    layer, q, v = _mha()
    shape = (2, 2, 3, 4)
    y = np.zeros((2, 3, 5), np.float32)
    for step in range(2):
        layer.forward(y, [q, v], training=True)
        np.testing.assert_allclose(y, _mha_ref(layer, q, v, _keep(shape, 21, step)),
                                   rtol=1e-4, atol=1e-5, err_msg=f"step {step}")
    assert layer._step == 2
    first = _mha_ref(layer, q, v, _keep(shape, 21, 0))
    assert not np.allclose(first, _mha_ref(layer, q, v, _keep(shape, 21, 1)))
    layer.forward(y, [q, v], training=False)  # inference: no dropout, no step
    np.testing.assert_allclose(y, _mha_ref(layer, q, v, np.ones(shape)), rtol=1e-4,
                               atol=1e-5)
    assert layer._step == 2
    layer.step_buffer = True  # a replaying plan's form: the step from the device buffer
    layer.forward(y, [q, v], training=True)
    np.testing.assert_allclose(y, _mha_ref(layer, q, v, _keep(shape, 21, 2)), rtol=1e-4,
                               atol=1e-5)
    layer.advance_step()
    assert list(layer._steps.host()) == [3, 0] and layer._step == 4


def test_mha_backward_regenerates_the_mask():
    """dquery and dvalue of one training step vs finite differences of the float64
    reference with the forward's mask (the backward recomputes it from seed and step)."""
    layer, q, v = _mha()
    layer.forward(np.zeros((2, 3, 5), np.float32), [q, v], training=True)
    layer.forward(y := np.zeros((2, 3, 5), np.float32), [q, v], training=True)  # step 1
    drop = _keep((2, 2, 3, 4), 21, 1)
    g = np.random.default_rng(2).normal(size=y.shape).astype(np.float32)
    dx = [np.zeros_like(q), np.zeros_like(v)]
    layer.backward(dx, g, [q, v], y)
    np.testing.assert_allclose(
        dx[0], numeric_grad(lambda t: np.sum(_mha_ref(layer, t, v, drop) * g), q),
        rtol=2e-3, atol=2e-4)
    np.testing.assert_allclose(
        dx[1], numeric_grad(lambda t: np.sum(_mha_ref(layer, q, t, drop) * g), v),
        rtol=2e-3, atol=2e-4)


def test_dot_attention_dropout_forward_and_backward():
    rng = np.random.default_rng(4)
    q, v = (rng.normal(size=s).astype(np.float32) for s in ((2, 3, 4), (2, 5, 4)))
    layer = Attention(dropout=RATE, seed=8)
    layer([q, v])
    _lend_scratch(layer, 2)

    def ref(qq, vv, drop):
        s = np.einsum("bid,bjd->bij", qq, vv)
        p = np.exp(s - s.max(-1, keepdims=True))
        return np.einsum("bij,bjd->bid", p / p.sum(-1, keepdims=True) * drop[:, 0], vv)

    y = np.zeros((2, 3, 4), np.float32)
    layer.forward(y, [q, v], training=True)
    drop = _keep((2, 1, 3, 5), 8, 0)
    np.testing.assert_allclose(y, ref(q, v, drop), rtol=1e-4, atol=1e-5)
    g = rng.normal(size=y.shape).astype(np.float32)
    dx = [np.zeros_like(q), np.zeros_like(v)]
    layer.backward(dx, g, [q, v], y)
    np.testing.assert_allclose(dx[0], numeric_grad(lambda t: np.sum(ref(t, v, drop) * g), q),
                               rtol=2e-3, atol=2e-4)
    np.testing.assert_allclose(dx[1], numeric_grad(lambda t: np.sum(ref(q, t, drop) * g), v),
                               rtol=2e-3, atol=2e-4)


def _fit(seed, dropout=0.1, epochs=6):
    kerasish.utils.set_random_seed(seed)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 6, 8)).astype(np.float32)
    y = (x.mean(axis=(1, 2)) > 0).astype(np.float32)[:, None]
    inp = kerasish.Input((6, 8))
    h = MultiHeadAttention(num_heads=2, key_dim=4, dropout=dropout)(inp, inp)
    h = kerasish.layers.GlobalAveragePooling1D()(h)
    out = kerasish.layers.Dense(1, activation="sigmoid")(h)
    model = kerasish.Model(inp, out)
    model.compile(kerasish.optimizers.Adam(0.01), "binary_crossentropy")
    if not epochs:
        return model, x, []
    losses = model.fit(x, y, batch_size=16, epochs=epochs, verbose=0).history["loss"]
    return model, x, losses


def test_model_with_dropout_fits_and_is_reproducible():
    model, x, losses = _fit(5)
    assert np.isfinite(losses).all() and losses[-1] < losses[0], losses
    again, _, losses2 = _fit(5)
    assert losses == losses2
    for a, b in zip(model.get_weights(), again.get_weights()):
        assert np.array_equal(a, b)
    other, _, _ = _fit(6)
    assert not all(np.array_equal(a, b) for a, b in zip(model.get_weights(),
                                                        other.get_weights()))
    # inference is dropout-free: the same weights in a dropout=0 model predict the same
    plain, _, _ = _fit(5, dropout=0.0, epochs=0)
    plain.set_weights(model.get_weights())
    np.testing.assert_array_equal(plain.predict(x, verbose=0), model.predict(x, verbose=0))


def test_rate_zero_training_equals_inference():
    layer, q, v = _mha()
    layer.dropout = 0.0
    y1, y2 = np.zeros((2, 3, 5), np.float32), np.zeros((2, 3, 5), np.float32)
    layer.forward(y1, [q, v], training=True)
    layer.forward(y2, [q, v], training=False)
    assert np.array_equal(y1, y2) and layer._step == 0


# -- Keras 3 drops the attention distribution too ------------------------------------------

def _uniform_one_hot(n, t):
    """q = k = 0-score inputs and one-hot values: out[b, i, j] = factor(b, i, j) / t."""
    return np.zeros((n, 3, t), np.float32), np.tile(np.eye(t, dtype=np.float32), (n, 1, 1))


def _check_dropped_distribution(out, t, rate):
    """Every entry is 0 (dropped) or 1/((1-rate) t) (kept): the dropout acted on the
    probabilities, and about `rate` of them are dropped."""
    kept = np.float32(1 / ((1 - rate) * t))
    assert np.all(np.isclose(out, 0, atol=1e-7) | np.isclose(out, kept, rtol=1e-5)), out
    frac = np.mean(np.isclose(out, 0, atol=1e-7))
    assert abs(frac - rate) < 0.08, frac


@pytest.mark.parametrize("which", ["Attention", "AdditiveAttention", "MultiHeadAttention"])
def test_dropout_acts_on_the_distribution_as_keras(which):
    os.environ.setdefault("KERAS_BACKEND", "torch")
    pytest.importorskip("torch")
    real = pytest.importorskip("keras")
    n, t, rate = 40, 8, 0.5
    q, v = _uniform_one_hot(n, t)
    if which != "MultiHeadAttention":  # additive, no scale: every score is tanh(1)
        kw = {"use_scale": False} if which == "AdditiveAttention" else {}
        theirs = getattr(real.layers, which)(dropout=rate, **kw)
        ours = (AdditiveAttention if which == "AdditiveAttention" else Attention)(
            dropout=rate, **kw)
        theirs([q, v])
        ours([q, v])
        call = lambda layer, training: layer([q, v], training=training)  # noqa: E731
    else:  # zero query/key kernels (uniform scores), identity value and output kernels
        theirs = real.layers.MultiHeadAttention(num_heads=1, key_dim=t, dropout=rate)
        ours = MultiHeadAttention(num_heads=1, key_dim=t, dropout=rate)
        theirs(q, v)
        ours(q, v)
        eye = np.eye(t, dtype=np.float32)
        weights = [np.zeros((t, 1, t), np.float32), np.zeros((1, t), np.float32)] * 2 + \
            [eye[:, None], np.zeros((1, t), np.float32), eye[None], np.zeros(t, np.float32)]
        theirs.set_weights(weights)
        ours.set_weights(weights)
        call = lambda layer, training: layer(q, v, training=training)  # noqa: E731
    want = real.ops.convert_to_numpy(call(theirs, True))
    _check_dropped_distribution(want, t, rate)
    _lend_scratch(ours, n)
    y = np.zeros((n, 3, t), np.float32)
    ours.forward(y, [q, v], training=True)
    _check_dropped_distribution(y, t, rate)
    np.testing.assert_allclose(real.ops.convert_to_numpy(call(theirs, False)),
                               np.full((n, 3, t), 1 / t), rtol=1e-6)
    ours.forward(y, [q, v], training=False)
    np.testing.assert_allclose(y, np.full((n, 3, t), 1 / t), rtol=1e-6)
