"""MultiHeadAttention against real Keras 3 (torch CPU backend): same weights, same
outputs (1e-5) with and without attention_mask / use_causal_mask; gradients of a tiny
model against finite differences; weight files crossing; keras-io's Transformer text
classification example with only the import changed."""

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


@pytest.mark.parametrize("fmt", ["h5", "weights.h5"])
def test_weight_files_cross_with_keras(tmp_path, fmt):
    """Keras writes (legacy .h5: model.save; native: save_weights), kerasish reads and
    writes back, a fresh Keras model reads that: same outputs all along."""
    q, v, mask = _data()
    theirs = _pair(real, 5, 7, 6, "mask")
    ours = _pair(kerasish, 5, 7, 6, "mask")
    x = [q, v, mask]
    path = str(tmp_path / f"theirs.{fmt}")
    theirs.save(path) if fmt == "h5" else theirs.save_weights(path)
    ours.load_weights(path)
    want = real.ops.convert_to_numpy(theirs(x))
    np.testing.assert_allclose(ours.predict(x, verbose=0), want, rtol=TOL, atol=TOL)
    back = str(tmp_path / f"ours.{fmt}")
    ours.save_weights(back)
    fresh = _pair(real, 5, 7, 6, "mask")
    fresh.load_weights(back)
    np.testing.assert_allclose(real.ops.convert_to_numpy(fresh(x)), want, rtol=TOL,
                               atol=TOL)


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
    model = kerasish.Model(qi, MultiHeadAttention(num_heads=1, key_dim=2, dropout=0.5)(qi, qi))
    model.compile("sgd", "mse")
    x = np.zeros((2, 3, 4), np.float32)
    model.predict(x, verbose=0)  # inference: dropout is off
    with pytest.raises(ValueError, match="dropout=0.5 in training"):
        model.train_on_batch(x, x)


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


def test_keras_io_transformer_text_classification(monkeypatch):
    """keras-io's "Text classification with Transformer" (synthetic token ids), with
    only `import kerasish as keras` changed; a few steps of fit lower the loss."""
    if not hasattr(kerasish.layers, "MultiHeadAttention"):  # until the lead exports it
        monkeypatch.setattr(kerasish.layers, "MultiHeadAttention", MultiHeadAttention,
                            raising=False)
    keras = kerasish
    from kerasish import layers, ops

    class TransformerBlock(layers.Layer):
        def __init__(self, embed_dim, num_heads, ff_dim, rate=0.1):
            super().__init__()
            self.att = layers.MultiHeadAttention(num_heads=num_heads, key_dim=embed_dim)
            self.ffn = keras.Sequential(
                [layers.Dense(ff_dim, activation="relu"), layers.Dense(embed_dim)])
            self.layernorm1 = layers.LayerNormalization(epsilon=1e-6)
            self.layernorm2 = layers.LayerNormalization(epsilon=1e-6)
            self.dropout1 = layers.Dropout(rate)
            self.dropout2 = layers.Dropout(rate)

        def call(self, inputs):
            attn_output = self.att(inputs, inputs)
            attn_output = self.dropout1(attn_output)
            out1 = self.layernorm1(inputs + attn_output)
            ffn_output = self.ffn(out1)
            ffn_output = self.dropout2(ffn_output)
            return self.layernorm2(out1 + ffn_output)

    class TokenAndPositionEmbedding(layers.Layer):
        def __init__(self, maxlen, vocab_size, embed_dim):
            super().__init__()
            self.token_emb = layers.Embedding(input_dim=vocab_size, output_dim=embed_dim)
            self.pos_emb = layers.Embedding(input_dim=maxlen, output_dim=embed_dim)

        def call(self, x):
            maxlen = ops.shape(x)[-1]
            positions = ops.arange(start=0, stop=maxlen, step=1)
            positions = self.pos_emb(positions)
            x = self.token_emb(x)
            return x + positions

    vocab_size, maxlen = 200, 20
    rng = np.random.default_rng(0)
    x_train = rng.integers(0, vocab_size, (64, maxlen))
    y_train = (x_train[:, :5].sum(axis=1) % 2).astype(np.int32)  # learnable from tokens

    embed_dim, num_heads, ff_dim = 32, 2, 32
    keras.utils.set_random_seed(1)
    inputs = layers.Input(shape=(maxlen,))
    embedding_layer = TokenAndPositionEmbedding(maxlen, vocab_size, embed_dim)
    x = embedding_layer(inputs)
    transformer_block = TransformerBlock(embed_dim, num_heads, ff_dim)
    x = transformer_block(x)
    x = layers.GlobalAveragePooling1D()(x)
    x = layers.Dropout(0.1)(x)
    x = layers.Dense(20, activation="relu")(x)
    x = layers.Dropout(0.1)(x)
    outputs = layers.Dense(2, activation="softmax")(x)
    model = keras.Model(inputs=inputs, outputs=outputs)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    history = model.fit(x_train, y_train, batch_size=32, epochs=4,
                        validation_data=(x_train[:16], y_train[:16]), verbose=0)
    losses = history.history["loss"]
    assert np.isfinite(losses).all() and losses[-1] < losses[0], losses
    assert model.predict(x_train[:3], verbose=0).shape == (3, 2)


@pytest.mark.parametrize("with_key", [False, True])
@pytest.mark.parametrize("causal", [False, True])
def test_dot_attention_equals_keras_and_trains(with_key, causal):
    from kerasish.layers.attention import Attention

    rng = np.random.default_rng(8)
    q = rng.normal(size=(2, 4, 3)).astype(np.float32)
    v = rng.normal(size=(2, 6, 3)).astype(np.float32)
    k = rng.normal(size=(2, 6, 3)).astype(np.float32)
    x = [q, v, k] if with_key else [q, v]
    outs = []
    for lib, cls in ((real, real.layers.Attention), (kerasish, Attention)):
        ins = [lib.Input(a.shape[1:]) for a in x]
        model = lib.Model(ins, cls()(ins, use_causal_mask=causal))
        outs.append(model)
    want = real.ops.convert_to_numpy(outs[0](x))
    np.testing.assert_allclose(outs[1].predict(x, verbose=0), want, rtol=TOL, atol=TOL)
    # gradients reach the inputs: a Dense in front of every input learns
    ins = [kerasish.Input(a.shape[1:]) for a in x]
    pre = [kerasish.layers.Dense(3)(t) for t in ins]
    model = kerasish.Model(ins, Attention()(pre, use_causal_mask=causal))
    model.compile(kerasish.optimizers.SGD(0.1), "mse")
    target = rng.normal(size=(2, 4, 3)).astype(np.float32)
    losses = [model.train_on_batch(x, target) for _ in range(5)]
    assert losses[-1] < losses[0], losses


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


def test_dot_attention_self_gradient():
    """Attention()([h, h]): the query, key and value paths all reach the Dense."""
    from kerasish.layers.attention import Attention

    kerasish.utils.set_random_seed(4)
    xi = kerasish.Input((4, 3))
    h = kerasish.layers.Dense(3)(xi)
    model = kerasish.Model(xi, Attention()([h, h]))
    rng = np.random.default_rng(9)
    _fd_check_first_kernel(model, rng.normal(size=(2, 4, 3)).astype(np.float32),
                           rng.normal(size=(2, 4, 3)).astype(np.float32), stride=1)


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


def _block(lib, t=5, d=6, name="block"):
    """A functional Transformer block: masked causal self-attention, residual and
    LayerNorm, a feed-forward pair, residual and LayerNorm; a causal Attention on top."""
    L = lib.layers
    x_in, m_in = lib.Input((t, d), name="x"), lib.Input((t, t), name="m")
    mha = (L.MultiHeadAttention if lib is real else MultiHeadAttention)(
        num_heads=2, key_dim=3, name="mha")
    h = mha(x_in, x_in, attention_mask=m_in, use_causal_mask=True)
    h = L.LayerNormalization(epsilon=1e-6, name="ln1")(L.Add(name="add1")([x_in, h]))
    f = L.Dense(d, name="ff2")(L.Dense(8, activation="relu", name="ff1")(h))
    h = L.LayerNormalization(epsilon=1e-6, name="ln2")(L.Add(name="add2")([h, f]))
    att = real.layers.Attention if lib is real else __import__(
        "kerasish.layers.attention", fromlist=["Attention"]).Attention
    out = att(name="dot")([h, x_in], use_causal_mask=True)
    return lib.Model([x_in, m_in], out, name=name)


def _block_data(n=3, t=5, d=6):
    rng = np.random.default_rng(12)
    x = rng.normal(size=(n, t, d)).astype(np.float32)
    m = (rng.random((n, t, t)) > 0.3).astype(np.float32)
    m[1, 3] = 0.0  # a fully masked row
    return [x, m]


def _randomize(model, seed):
    rng = np.random.default_rng(seed)
    model.set_weights([rng.normal(scale=0.5, size=np.shape(w)).astype(np.float32)
                       for w in model.get_weights()])


def test_transformer_block_keras_file_from_keras(tmp_path):
    """A .keras file of the block written by Keras loads in kerasish (no custom_objects):
    same predictions (1e-5), the mask and causal call arguments kept."""
    x = _block_data()
    theirs = _block(real)
    _randomize(theirs, 1)
    want = real.ops.convert_to_numpy(theirs(x))
    theirs.save(tmp_path / "theirs.keras")
    ours = kerasish.models.load_model(tmp_path / "theirs.keras")
    np.testing.assert_allclose(ours.predict(x, verbose=0), want, rtol=TOL, atol=TOL)
    assert ours.get_layer("mha")._options == (False, True, True, False)
    assert ours.get_layer("dot")._causal is True


def test_transformer_block_keras_file_to_keras(tmp_path):
    """kerasish's .keras file of the block loads in Keras without custom_objects: same
    predictions (1e-5)."""
    x = _block_data()
    mine = _block(kerasish)
    _randomize(mine, 2)
    mine_out = mine.predict(x, verbose=0)
    mine.save(tmp_path / "ours.keras")
    back = real.models.load_model(tmp_path / "ours.keras")
    np.testing.assert_allclose(real.ops.convert_to_numpy(back(x)), mine_out, rtol=TOL,
                               atol=TOL)


def test_transformer_block_native_weights_cross_both_ways(tmp_path):
    x = _block_data()
    theirs, ours = _block(real), _block(kerasish)
    _randomize(theirs, 3)
    want = real.ops.convert_to_numpy(theirs(x))
    theirs.save_weights(tmp_path / "theirs.weights.h5")
    ours.load_weights(tmp_path / "theirs.weights.h5")
    np.testing.assert_allclose(ours.predict(x, verbose=0), want, rtol=TOL, atol=TOL)
    _randomize(ours, 4)
    mine_out = ours.predict(x, verbose=0)
    ours.save_weights(tmp_path / "ours.weights.h5")
    fresh = _block(real)
    fresh.load_weights(tmp_path / "ours.weights.h5")
    np.testing.assert_allclose(real.ops.convert_to_numpy(fresh(x)), mine_out, rtol=TOL,
                               atol=TOL)


def test_native_weights_file_has_keras_subgroups(tmp_path):
    import h5py

    ours = _block(kerasish)
    ours.save_weights(tmp_path / "o.weights.h5")
    with h5py.File(tmp_path / "o.weights.h5", "r") as f:
        groups = sorted(f["layers/multi_head_attention"])
        shapes = [f[f"layers/multi_head_attention/query_dense/vars/{i}"].shape
                  for i in range(2)]
    assert {"key_dense", "output_dense", "query_dense", "value_dense"} <= set(groups)
    assert shapes == [(6, 2, 3), (2, 3)]


def test_functional_config_nodes_equal_keras_and_round_trip(tmp_path):
    """The config's inbound nodes are Keras 3's (args and kwargs, tensors serialized),
    and a kerasish save/load keeps the mask and causal call arguments."""
    ours, theirs = _block(kerasish), _block(real)
    import json

    def nodes(model, name):  # as the config.json holds them (tuples are lists)
        return json.loads(json.dumps(next(e["inbound_nodes"] for e in
                                          model.get_config()["layers"] if e["name"] == name)))

    for name in ("mha", "dot", "add1"):
        assert nodes(ours, name) == nodes(theirs, name), name
    assert nodes(ours, "mha")[0]["kwargs"]["use_causal_mask"] is True
    x = _block_data()
    _randomize(ours, 5)
    want = ours.predict(x, verbose=0)
    ours.save(tmp_path / "o.keras")
    back = kerasish.models.load_model(tmp_path / "o.keras")
    assert back.get_layer("mha")._options == (False, True, True, False)
    assert back.get_layer("dot")._causal is True
    np.testing.assert_allclose(back.predict(x, verbose=0), want, rtol=TOL, atol=TOL)
    assert back.get_config() == ours.get_config()


def test_config_node_refusals_name_the_layer():
    cfg = _block(kerasish).get_config()
    for entry in cfg["layers"]:
        if entry["name"] == "ff1":  # a one-input layer given a tensor kwarg
            node = entry["inbound_nodes"][0]
            node["kwargs"] = {"extra": node["args"][0]}
    with pytest.raises(ValueError, match="layer 'ff1' .*takes one input"):
        kerasish.Model.from_config(cfg)


@pytest.mark.parametrize("kind", ["key", "mask", "scores"])
def test_keras_config_with_call_kwargs_loads(kind):
    """Keras 3's config of a model calling MHA with key=, attention_mask= or
    return_attention_scores=True: kerasish's from_config gives the same outputs, and
    its own config of the result is Keras's again."""
    import json

    q, v, mask = _data()
    k = np.random.default_rng(13).normal(size=(3, 7, 4)).astype(np.float32)
    qi, vi = real.Input((5, 6), name="q"), real.Input((7, 6), name="v")
    mha = real.layers.MultiHeadAttention(num_heads=2, key_dim=3, name="mha")
    if kind == "key":
        ki = real.Input((7, 4), name="k")
        ins, x, out = [qi, vi, ki], [q, v, k], mha(qi, vi, key=ki)
    elif kind == "mask":
        mi = real.Input((5, 7), name="mk")
        ins, x, out = [qi, vi, mi], [q, v, mask], mha(query=qi, value=vi, attention_mask=mi)
    else:
        ins, x, out = [qi, vi], [q, v], list(mha(qi, vi, return_attention_scores=True))
    theirs = real.Model(ins, out)
    _randomize(theirs, 6)
    want = theirs(x)
    want = [real.ops.convert_to_numpy(w) for w in (want if isinstance(want, list) else [want])]
    cfg = json.loads(json.dumps(theirs.get_config()))
    ours = kerasish.Model.from_config(cfg)
    ours.set_weights([np.asarray(w) for w in theirs.get_weights()])
    got = ours.predict(x, verbose=0)
    for a, b in zip(got if isinstance(got, list) else [got], want):
        np.testing.assert_allclose(a, b, rtol=TOL, atol=TOL)
    if kind != "mask":  # Keras keeps query=/value= as kwargs; ours writes them positionally
        mine = json.loads(json.dumps(ours.get_config()))
        assert [e["inbound_nodes"] for e in mine["layers"]] == \
            [e["inbound_nodes"] for e in cfg["layers"]]
