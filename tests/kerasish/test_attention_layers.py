"""MultiHeadAttention against real Keras 3 (torch CPU backend): same weights, same
outputs (1e-5) with and without attention_mask / use_causal_mask, attention scores, eager
calls; gradients of a tiny model against finite differences; refusals, config, node
arguments. Weight files and Transformer blocks crossing: test_attention_layers_files.py;
dot-product Attention and keras-io's Transformer example: test_attention_layers_dot.py;
dropout: test_attention_dropout_layers.py."""

import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")
pytest.importorskip("torch", reason="interop tests need torch")
real = pytest.importorskip("keras", reason="interop tests need Keras 3")

import kerasish  # noqa: E402
from kerasish.layers.attention import MultiHeadAttention  # noqa: E402

TOL = 1e-5
CUSTOM = {"MultiHeadAttention": MultiHeadAttention}


def _data(n=3, tq=5, tk=7, d=6, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(n, tq, d)).astype(np.float32)
    v = rng.normal(size=(n, tk, d)).astype(np.float32)
    mask = (rng.random((n, tq, tk)) > 0.35).astype(np.float32)
    mask[0, 2] = 0.0  # one fully masked row
    return q, v, mask


def _pair(lib, tq, tk, d, kind, **kw):
    L = lib.layers
    q_in, v_in = lib.Input((tq, d)), lib.Input((tk, d))
    inputs = [q_in, v_in]
    mha = L.MultiHeadAttention(num_heads=2, key_dim=3, **kw) if lib is real else \
        MultiHeadAttention(num_heads=2, key_dim=3, **kw)
    if kind == "mask":
        m_in = lib.Input((tq, tk))
        inputs.append(m_in)
        out = mha(q_in, v_in, attention_mask=m_in)
    elif kind == "causal":
        out = mha(q_in, v_in, use_causal_mask=True)
    elif kind == "mask+causal":
        m_in = lib.Input((tq, tk))
        inputs.append(m_in)
        out = mha(q_in, v_in, attention_mask=m_in, use_causal_mask=True)
    elif kind == "key":
        k_in = lib.Input((tk, d + 1))
        inputs.append(k_in)
        out = mha(q_in, v_in, key=k_in)
    else:
        out = mha(q_in, v_in)
    return lib.Model(inputs, out)


def _inputs(kind, q, v, mask):
    if kind in ("mask", "mask+causal"):
        return [q, v, mask]
    if kind == "key":
        return [q, v, np.random.default_rng(3).normal(size=(*v.shape[:2], v.shape[2] + 1))
                .astype(np.float32)]
    return [q, v]


@pytest.mark.parametrize("kind", ["plain", "mask", "causal", "mask+causal", "key"])
@pytest.mark.parametrize("kw", [{}, {"value_dim": 4, "output_shape": 5, "use_bias": False}])
def test_output_equals_keras(kind, kw):
    q, v, mask = _data()
    theirs = _pair(real, 5, 7, 6, kind, **kw)
    ours = _pair(kerasish, 5, 7, 6, kind, **kw)
    ours.set_weights([np.asarray(w) for w in theirs.get_weights()])
    x = _inputs(kind, q, v, mask)
    want = real.ops.convert_to_numpy(theirs(x))
    got = ours.predict(x, verbose=0)
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=TOL, atol=TOL)


def test_weights_match_keras_names_and_shapes():
    theirs = _pair(real, 5, 7, 6, "plain")
    ours = _pair(kerasish, 5, 7, 6, "plain")
    t = theirs.layers[-1].weights
    o = ours.layers[-1].weights
    assert [tuple(w.shape) for w in o] == [tuple(w.shape) for w in t]
    assert [w.path.split("/", 1)[1] for w in o] == [w.path.split("/", 1)[1] for w in t]
    assert ours.count_params() == theirs.count_params()


def _tiny_model(kind="mask"):
    kerasish.utils.set_random_seed(3)
    m = _pair(kerasish, 3, 4, 5, kind)
    return m


def test_gradients_match_finite_differences():
    """d(sum(out * g))/d(weights) and /d(query) from the plan vs central differences."""
    q, v, mask = _data(n=2, tq=3, tk=4, d=5, seed=4)
    g = np.random.default_rng(5).normal(size=(2, 3, 5))
    model = _tiny_model()
    # A linear loss: mse against target t gives d/dout = 2 (out - t) / size; pick t so
    # the gradient is g-shaped without depending on the output: compare via the loss.
    model.compile(kerasish.optimizers.SGD(0.0), "mse")
    weights = model.get_weights()

    def loss(ws):
        model.set_weights(ws)
        out = model.predict([q, v, mask], verbose=0).astype(np.float64)
        return float(np.mean((out - g) ** 2))

    base = [w.copy() for w in weights]
    numeric = []
    for wi in (0, 2, 4, 6, 7):  # query/key/value/output kernels and the output bias
        w = base[wi].astype(np.float64)
        grad = np.zeros_like(w)
        flat, gflat = w.reshape(-1), grad.reshape(-1)
        for j in range(0, flat.size, max(1, flat.size // 7)):
            old = flat[j]
            for sign in (1, -1):
                flat[j] = old + sign * 1e-2
                ws = [b.copy() for b in base]
                ws[wi] = w.astype(np.float32)
                gflat[j] += sign * loss(ws) / 2e-2
            flat[j] = old
        numeric.append((wi, grad))
    model.set_weights(base)
    analytic = _plan_gradients(model, [q, v, mask], g)
    for wi, grad in numeric:
        sel = grad != 0
        np.testing.assert_allclose(analytic[wi][sel], grad[sel], rtol=3e-2, atol=3e-4,
                                   err_msg=f"weight {wi}")


def _plan_gradients(model, x, target):
    """The gradients a training step computes (SGD with lr 1: w_before - w_after)."""
    before = [w.copy() for w in model.get_weights()]
    model.compile(kerasish.optimizers.SGD(1.0), "mse")
    model.train_on_batch(x, target.astype(np.float32))
    after = model.get_weights()
    model.set_weights(before)
    return [b - a for b, a in zip(before, after)]


def test_self_attention_gradient_through_the_plan():
    """mha(h, h) after a Dense (one tensor as query and value, as keras-io's
    TransformerBlock): the plan propagates dq, dk, dv into the Dense kernel."""
    q, _, _ = _data(n=2, tq=4, tk=4, d=5, seed=6)
    L = kerasish.layers
    kerasish.utils.set_random_seed(2)
    qi = kerasish.Input((4, 5))
    h = L.Dense(5, name="pre")(qi)
    out = MultiHeadAttention(num_heads=2, key_dim=2)(h, h, use_causal_mask=True)
    model = kerasish.Model(qi, out)
    g = np.random.default_rng(7).normal(size=(2, 4, 5)).astype(np.float32)
    base = model.get_weights()
    analytic = _plan_gradients(model, q, g)[0]  # the Dense kernel: via dq, dk, dv

    def loss(w0):
        ws = [b.copy() for b in base]
        ws[0] = w0.astype(np.float32)
        model.set_weights(ws)
        return float(np.mean((model.predict(q, verbose=0).astype(np.float64) - g) ** 2))

    w = base[0].astype(np.float64)
    for j in range(0, w.size, 3):
        e = np.zeros(w.size)
        e[j] = 1e-2
        e = e.reshape(w.shape)
        num = (loss(w + e) - loss(w - e)) / 2e-2
        assert abs(analytic.reshape(-1)[j] - num) <= 3e-2 * abs(num) + 3e-4, (j, num)
    model.set_weights(base)


def test_refusals_name_the_layer():
    with pytest.raises(ValueError, match="attention_axes=None"):
        MultiHeadAttention(num_heads=2, key_dim=2, attention_axes=(1, 2))
    with pytest.raises(ValueError, match="key_dim to be a positive integer"):
        MultiHeadAttention(num_heads=2, key_dim=0)
    mha = MultiHeadAttention(num_heads=2, key_dim=2)
    qi = kerasish.Input((3, 4))
    mha(qi, qi)
    with pytest.raises(ValueError, match="same kind of arguments"):
        mha(qi, qi, use_causal_mask=True)
    with pytest.raises(ValueError, match=r"MultiHeadAttention.*dropout.*in \[0, 1\).*1\.5"):
        MultiHeadAttention(num_heads=1, key_dim=2, dropout=1.5)


def test_config_round_trip_and_keras_config():
    mha = MultiHeadAttention(num_heads=3, key_dim=4, value_dim=2, output_shape=7,
                             use_bias=False, name="att")
    cfg = mha.get_config()
    again = MultiHeadAttention.from_config(cfg)
    assert again.get_config() == cfg
    theirs = real.layers.MultiHeadAttention(num_heads=3, key_dim=4, value_dim=2,
                                            output_shape=7, use_bias=False).get_config()
    assert {k for k in theirs if k not in ("dtype", "flash_attention")} <= set(cfg)
    MultiHeadAttention.from_config({k: v for k, v in theirs.items() if k != "dtype"})


def _fd_check_first_kernel(model, x, g, stride=2):
    """The first weight's training-step gradient vs central differences of the mse."""
    base = model.get_weights()
    analytic = _plan_gradients(model, x, g)[0].reshape(-1)

    def loss(w0):
        ws = [b.copy() for b in base]
        ws[0] = w0.astype(np.float32)
        model.set_weights(ws)
        return float(np.mean((model.predict(x, verbose=0).astype(np.float64) - g) ** 2))

    w = base[0].astype(np.float64)
    for j in range(0, w.size, stride):
        e = np.zeros(w.size)
        e[j] = 1e-2
        e = e.reshape(w.shape)
        num = (loss(w + e) - loss(w - e)) / 2e-2
        assert abs(analytic[j] - num) <= 3e-2 * abs(num) + 3e-4, (j, analytic[j], num)
    model.set_weights(base)


def test_node_arguments_are_keras_inbound_nodes():
    """What the Functional config should write for a call (Keras 3's args/kwargs), and
    calling with them records the same kind of node."""
    from kerasish.layers.attention import Attention

    q, v, m = kerasish.Input((5, 6)), kerasish.Input((7, 6)), kerasish.Input((5, 7))
    mha = MultiHeadAttention(2, 3)
    mha(q, v, attention_mask=m, use_causal_mask=True)
    args, kwargs = mha.node_arguments([q, v, m])
    assert args == [q, v] and kwargs == {"attention_mask": m, "use_causal_mask": True}
    assert tuple(mha(*args, **kwargs).shape) == (None, 5, 6)
    att = Attention()
    att([q, v], use_causal_mask=True)
    assert att.node_arguments([q, v]) == ([[q, v]], {"use_causal_mask": True})


def test_eager_call_on_arrays_equals_keras():
    q, v, mask = _data()
    theirs = real.layers.MultiHeadAttention(num_heads=2, key_dim=3)
    want = real.ops.convert_to_numpy(theirs(q, v, attention_mask=mask.astype(bool)))
    ours = MultiHeadAttention(num_heads=2, key_dim=3)
    ours(q, v, attention_mask=mask)  # builds
    ours.set_weights([np.asarray(w) for w in theirs.get_weights()])
    np.testing.assert_allclose(ours(q, v, attention_mask=mask), want, rtol=TOL, atol=TOL)


@pytest.mark.parametrize("kind", ["mask", "causal"])
def test_attention_scores_equal_keras_and_train(kind):
    """return_attention_scores=True: both outputs equal Keras's (its scores path: a fully
    masked row has zero scores), and a loss on both trains through the materialised P."""
    q, v, mask = _data()
    outs = []
    for lib in (real, kerasish):
        qi, vi = lib.Input((5, 6)), lib.Input((7, 6))
        ins = [qi, vi]
        cls = real.layers.MultiHeadAttention if lib is real else MultiHeadAttention
        mha = cls(num_heads=2, key_dim=3)
        if kind == "mask":
            mi = lib.Input((5, 7))
            ins.append(mi)
            o, sc = mha(qi, vi, attention_mask=mi, return_attention_scores=True)
        else:
            o, sc = mha(qi, vi, use_causal_mask=True, return_attention_scores=True)
        outs.append(lib.Model(ins, [o, sc]))
    theirs, ours = outs
    ours.set_weights([np.asarray(w) for w in theirs.get_weights()])
    x = [q, v, mask] if kind == "mask" else [q, v]
    want = [real.ops.convert_to_numpy(t) for t in theirs(x)]
    got = ours.predict(x, verbose=0)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=TOL, atol=TOL)
    ours.compile(kerasish.optimizers.SGD(0.05), ["mse", "mse"])
    targets = [np.zeros_like(want[0]), np.full_like(want[1], 1 / 7)]
    losses = [ours.train_on_batch(x, targets) for _ in range(4)]
    first, last = (np.atleast_1d(v)[0] for v in (losses[0], losses[-1]))
    assert last < first, losses


def test_attention_scores_gradient_matches_finite_differences():
    """A loss on the scores alone: its gradient reaches the query kernel only through
    the materialised probabilities (dprobs)."""
    kerasish.utils.set_random_seed(5)
    xi = kerasish.Input((3, 4))
    _, sc = MultiHeadAttention(num_heads=1, key_dim=2)(xi, xi, return_attention_scores=True)
    model = kerasish.Model(xi, sc)
    rng = np.random.default_rng(11)
    _fd_check_first_kernel(model, rng.normal(size=(2, 3, 4)).astype(np.float32),
                           rng.random((2, 1, 3, 3)).astype(np.float32), stride=1)
