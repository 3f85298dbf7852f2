"""Sequence layers through time: forward vs a float64 NumPy reference, backward vs finite
differences through all steps (masks, go_backwards, initial states, return_state), and
the single-output models training through fit. "gru_rb" is GRU(reset_after=False)."""

import functools

import numpy as np
import pytest

import kerasish
from kerasish.layers import (
    GRU,
    LSTM,
    Bidirectional,
    Embedding,
    Masking,
    SimpleRNN,
)
from kernels_numba.testing import assert_close, numeric_grad
from tests.kerasish.rnn_reference import ACT
from tests.kerasish.rnn_reference import rnn_ref as _rnn_ref

GRU_RB = functools.partial(GRU, reset_after=False)
KINDS = [(LSTM, "lstm"), (GRU, "gru"), (GRU_RB, "gru_rb"), (SimpleRNN, "simple")]


def seq_ref(kind, x, K, R, b, *, mask=None, go_backwards=False, h0=None, c0=None,
            act="tanh", ract="sigmoid", xmask=None, rmask=None):
    """rnn_ref, plus Keras's GRU reset_after=False: hh = act(x W_h + (r * h) R_h + b_h)."""
    kw = dict(mask=mask, go_backwards=go_backwards, h0=h0, c0=c0, act=act, ract=ract,
              xmask=xmask, rmask=rmask)
    if kind != "gru_rb":
        return _rnn_ref(kind, x, K, R, b, **kw)
    x = np.asarray(x, np.float64)
    n, t, _ = x.shape
    u = R.shape[0]
    a, r = ACT[act], ACT[ract]
    h = np.zeros((n, u)) if h0 is None else np.asarray(h0, np.float64)
    seq = []
    for col in (range(t - 1, -1, -1) if go_backwards else range(t)):
        xt = x[:, col] if xmask is None else x[:, col] * xmask
        hp = h if rmask is None else h * rmask
        xg = xt @ K + (0 if b is None else b)
        z = r(xg[:, :u] + hp @ R[:, :u])
        rr = r(xg[:, u:2 * u] + hp @ R[:, u:2 * u])
        hh = a(xg[:, 2 * u:] + (rr * hp) @ R[:, 2 * u:])
        hn = z * h + (1 - z) * hh
        if mask is not None:
            hn = np.where((mask[:, col] != 0)[:, None], hn, h)
        h = hn
        seq.append(h)
    return np.stack(seq, 1), h, None


rnn_ref = seq_ref


def _setup(layer, input_shape, n, seed=0):
    layer._build_once(input_shape)
    layer.scratch = {k: np.empty(s, dt) for k, (s, dt) in layer.scratch_shapes(n).items()}
    rng = np.random.default_rng(seed)
    for w in layer.weights:
        w.assign((rng.normal(size=w.shape) * 0.5).astype(np.float32))
        w.ensure_grad()
        w.grad[...] = 0
    return [w.numpy().astype(np.float64) for w in layer.weights]


@pytest.mark.parametrize("cls,kind", KINDS)
@pytest.mark.parametrize("n,t,f,u,go_backwards,masked,seqs", [
    (1, 1, 1, 1, False, False, True), (2, 4, 3, 5, True, True, True),
    (3, 5, 2, 3, False, True, False), (2, 3, 4, 33, True, False, False)])
def test_through_time(cls, kind, n, t, f, u, go_backwards, masked, seqs):
    layer = cls(u, return_sequences=seqs, go_backwards=go_backwards)
    ws = _setup(layer, (None, t, f), n)
    rng = np.random.default_rng(1)
    x = rng.normal(size=(n, t, f)).astype(np.float32)
    mask = None
    if masked:
        mask = np.ones((n, t), np.float32)
        mask[0, min(1, t - 1)] = 0
        mask[-1, 0] = 0
    out_shape = (n, t, u) if seqs else (n, u)
    y = np.empty(out_shape, np.float32)
    layer.forward(y, x, True, mask=mask)

    def out(xx, w):
        seq, h, _ = rnn_ref(kind, xx, *w, mask=mask, go_backwards=go_backwards)
        return seq if seqs else h
    assert_close(y, out(x, ws), rtol=1e-5, atol=1e-5, what="forward")
    dy = rng.normal(size=out_shape).astype(np.float32)
    dx = np.empty_like(x)
    layer.backward(dx, dy.copy(), x, y, mask=mask)
    assert_close(dx, numeric_grad(lambda v: float((out(v, ws) * dy).sum()), x), rtol=1e-4,
                 atol=1e-4, what="dx")
    for k, w in enumerate(layer.weights):
        def loss(v, k=k):
            w2 = list(ws)
            w2[k] = v
            return float((out(x, w2) * dy).sum())
        assert_close(w.grad, numeric_grad(loss, ws[k]), rtol=1e-4, atol=1e-4, what=w.path)


@pytest.mark.parametrize("cls,kind", KINDS)
def test_initial_states_and_return_state(cls, kind):
    n, t, f, u = 2, 3, 2, 4
    layer = cls(u, return_state=True)
    ws = _setup(layer, [(None, t, f)], n)
    rng = np.random.default_rng(2)
    x = rng.normal(size=(n, t, f)).astype(np.float32)
    states = [rng.normal(size=(n, u)).astype(np.float32) for _ in range(layer.STATES)]
    outs = [np.empty((n, u), np.float32) for _ in range(1 + layer.STATES)]
    layer.forward(outs, [x] + states, False)
    _, h, c = rnn_ref(kind, x, *ws, h0=states[0], c0=states[1] if len(states) > 1 else None)
    assert_close(outs[0], h, rtol=1e-5, atol=1e-5)
    assert_close(outs[1], h, rtol=1e-5, atol=1e-5)
    if layer.STATES == 2:
        assert_close(outs[2], c, rtol=1e-5, atol=1e-5)
    dys = [rng.normal(size=(n, u)).astype(np.float32) for _ in outs]
    dxs = [np.empty_like(x)] + [np.empty_like(s) for s in states]
    layer.backward(dxs, [d.copy() for d in dys], [x] + states, outs)

    def loss(xx, s0):
        _, hh, cc = rnn_ref(kind, xx, *ws, h0=s0[0], c0=s0[1] if len(s0) > 1 else None)
        total = ((dys[0] + dys[1]) * hh).sum()
        return float(total + ((dys[2] * cc).sum() if len(s0) > 1 else 0))
    assert_close(dxs[0], numeric_grad(lambda v: loss(v, states), x), rtol=1e-4, atol=1e-4)
    for k in range(len(states)):
        def ls(v, k=k):
            s2 = list(states)
            s2[k] = v
            return loss(x, s2)
        assert_close(dxs[1 + k], numeric_grad(ls, states[k]), rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("cls,kind", [(LSTM, "lstm"), (GRU_RB, "gru_rb")])
def test_dropout_masks_are_per_sequence_and_seeded(cls, kind):
    n, t, f, u = 3, 4, 5, 2
    layer = cls(u, dropout=0.5, recurrent_dropout=0.3, seed=7, return_sequences=True)
    ws = _setup(layer, (None, t, f), n)
    x = np.random.default_rng(3).normal(size=(n, t, f)).astype(np.float32)
    y = np.empty((n, t, u), np.float32)
    layer.forward(y, x, True)
    xm, rm = layer._buf("dmask", n, f), layer._buf("rmask", n, u)
    assert set(np.unique(xm)) <= {0.0, 2.0} and 0.0 in xm
    seq, _, _ = rnn_ref(kind, x, *ws, xmask=xm, rmask=rm)
    assert_close(y, seq, rtol=1e-5, atol=1e-5)
    dy = np.ones_like(y)
    dx = np.empty_like(x)
    layer.backward(dx, dy.copy(), x, y)
    num = numeric_grad(lambda v: float(rnn_ref(kind, v, *ws, xmask=xm, rmask=rm)[0].sum()), x)
    assert_close(dx, num, rtol=1e-4, atol=1e-4)
    y2 = np.empty_like(y)
    layer.forward(y2, x, False)  # inference: no dropout
    assert_close(y2, rnn_ref(kind, x, *ws)[0], rtol=1e-5, atol=1e-5)


def test_refused_arguments():
    with pytest.raises(ValueError, match="stateful=True is not supported"):
        LSTM(3, stateful=True)
    with pytest.raises(ValueError, match="unroll=True"):
        GRU(3, unroll=True)
    GRU(3, recurrent_regularizer=None, recurrent_constraint=None)  # as Keras configs write
    with pytest.raises(ValueError, match="activation"):
        LSTM(3, activation="softmax")
    with pytest.raises(ValueError, match="dropout"):
        SimpleRNN(3, dropout=1.5)


@pytest.mark.parametrize("mode", ["concat", "sum", "mul", "ave"])
def test_bidirectional_through_time(mode):
    n, t, f, u = 2, 4, 3, 3
    layer = Bidirectional(LSTM(u, return_sequences=True), merge_mode=mode)
    _setup(layer, (None, t, f), n)
    assert [w.path.split("/", 1)[1] for w in layer.weights][:1] == \
        ["forward_lstm/lstm_cell/kernel"] or layer.weights[0].path.endswith("lstm_cell/kernel")
    ws = [w.numpy().astype(np.float64) for w in layer.weights]
    x = np.random.default_rng(4).normal(size=(n, t, f)).astype(np.float32)
    mask = np.ones((n, t), np.float32)
    mask[1, 3] = 0

    def out(xx, w):
        a = rnn_ref("lstm", xx, *w[:3], mask=mask)[0]
        b = rnn_ref("lstm", xx, *w[3:], mask=mask, go_backwards=True)[0][:, ::-1]
        y = {"concat": lambda: np.concatenate([a, b], -1), "sum": lambda: a + b,
             "mul": lambda: a * b, "ave": lambda: (a + b) / 2}[mode]()
        return y * mask[..., None]  # Keras zeroes masked outputs inside Bidirectional
    ref = out(x, ws)
    y = np.empty(ref.shape, np.float32)
    layer.forward(y, x, True, mask=mask)
    assert_close(y, ref, rtol=1e-5, atol=1e-5)
    dy = np.random.default_rng(5).normal(size=ref.shape).astype(np.float32)
    dx = np.empty_like(x)
    layer.backward(dx, dy.copy(), x, y, mask=mask)
    assert_close(dx, numeric_grad(lambda v: float((out(v, ws) * dy).sum()), x), rtol=1e-4,
                 atol=1e-4)
    for k in (0, 4):
        def loss(v, k=k):
            w2 = list(ws)
            w2[k] = v
            return float((out(x, w2) * dy).sum())
        assert_close(layer.weights[k].grad, numeric_grad(loss, ws[k]), rtol=1e-4, atol=1e-4)


def test_masking_feeds_the_recurrent_mask():
    x = np.random.default_rng(6).normal(size=(2, 4, 3)).astype(np.float32)
    x[0, 2:] = 0.0
    m = Masking()
    m._build_once((None, 4, 3))
    m.scratch = {k: np.empty(s, dt) for k, (s, dt) in m.scratch_shapes(2).items()}
    mask = np.empty((2, 4), np.float32)
    m.write_mask(mask, x)
    assert_close(mask, [[1, 1, 0, 0], [1, 1, 1, 1]])
    e = Embedding(5, 2, mask_zero=True)
    e._build_once((None, 3))
    ids = np.array([[1, 0, 4], [0, 0, 2]], np.float32)
    em = np.empty((2, 3), np.float32)
    e.write_mask(em, ids)
    assert_close(em, ids != 0)


def _fit(model, x, y, epochs=3):
    model.compile(kerasish.optimizers.Adam(0.01), "sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    hist = model.fit(x, y, batch_size=16, epochs=epochs, verbose=0)
    return hist.history["loss"]


def _seq_task(n=96, t=6, vocab=12, seed=0):
    rng = np.random.default_rng(seed)
    ids = rng.integers(1, vocab, size=(n, t)).astype(np.float32)
    labels = (ids[:, 0] > vocab / 2).astype(np.int32)  # depends on the first token
    return ids, labels


@pytest.mark.parametrize("build", [
    lambda L: [L.Input((6,)), L.Embedding(12, 8), L.LSTM(10), L.Dense(2, activation="softmax")],
    lambda L: [L.Input((6,)), L.Embedding(12, 8), L.GRU(7, reset_after=False, go_backwards=True,
                                                        dropout=0.1, recurrent_dropout=0.2),
               L.Dense(2, activation="softmax")],
    lambda L: [L.Input((6,)), L.Embedding(12, 8), L.GRU(7, return_sequences=True),
               L.SimpleRNN(5), L.Dense(2, activation="softmax")],
    lambda L: [L.Input((6,)), L.Embedding(12, 8), L.Bidirectional(L.LSTM(6)),
               L.Dense(2, activation="softmax")],
    lambda L: [L.Input((6,)), L.Embedding(12, 8), L.Conv1D(8, 3, padding="causal",
                                                            activation="relu"),
               L.GlobalMaxPooling1D(), L.Dense(2, activation="softmax")],
    lambda L: [L.Input((6,)), L.Embedding(12, 8), L.TimeDistributed(L.Dense(4)),
               L.LSTM(5, go_backwards=True), L.Dense(2, activation="softmax")],
], ids=["lstm", "gru-reset-before", "gru-simple", "bidirectional", "conv1d", "time-distributed"])
def test_sequence_models_train_through_fit(build):
    kerasish.utils.set_random_seed(0)
    x, y = _seq_task()
    losses = _fit(kerasish.Sequential(build(kerasish.layers)), x, y, epochs=6)
    assert np.isfinite(losses).all()
    assert losses[-1] < losses[0] * 0.8, losses


@pytest.mark.cudasim
@pytest.mark.slow  # a model-level re-run of kernels test_rnn_sequence proves op by op
def test_gru_reset_before_trains_the_same_on_cuda():
    import kernels_numba
    from kerasish import config
    if not kernels_numba.cuda_available():
        pytest.skip("CUDA kernels cannot run here: no GPU and NUMBA_ENABLE_CUDASIM is not 1")
    x, y = _seq_task(n=6, t=3, vocab=5)
    runs = []
    for device in ("cpu", "cuda"):
        config.set_device(device)
        try:
            kerasish.utils.set_random_seed(0)
            model = kerasish.Sequential([
                kerasish.layers.Input((3,)), kerasish.layers.Embedding(5, 3),
                GRU(4, reset_after=False, go_backwards=True, recurrent_dropout=0.3, seed=1),
                kerasish.layers.Dense(2, activation="softmax")])
            model.compile("sgd", "sparse_categorical_crossentropy")
            if runs:
                model.set_weights(runs[0][0])
            start = model.get_weights()
            model.fit(x, y, epochs=2, batch_size=6, verbose=0)
            assert kernels_numba.device_of(model.layers[1].kernel.value) == device
            runs.append((start, model.get_weights()))
        finally:
            config.set_device("cpu")
    assert not np.allclose(runs[0][0][1], runs[0][1][1])  # the GRU kernel trained
    for a, b in zip(runs[0][1], runs[1][1]):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
