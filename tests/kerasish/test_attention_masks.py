"""Dot-product Attention's masks, scale and scores against real Keras 3 (torch CPU
backend): same weights, same outputs (1e-5) with value / query / both masks, causal,
use_scale, key, returned scores; masks from Embedding(mask_zero=True) as Keras applies
and propagates them; gradients against finite differences (inputs and the scale); a
model fits; .weights.h5 and .keras files crossing both ways; get_config keys."""

import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")
pytest.importorskip("torch", reason="interop tests need torch")
real = pytest.importorskip("keras", reason="interop tests need Keras 3")

import kerasish  # noqa: E402
from kerasish.layers.dot_attention import Attention  # noqa: E402
from tests.kerasish.test_attention_layers import _fd_check_first_kernel, _plan_gradients  # noqa: E402,E501

TOL = 1e-5
CUSTOM = {"Attention": Attention}


def _data(n=3, tq=4, tk=5, d=3, seed=0, full_row=True):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(n, tq, d)).astype(np.float32)
    v = rng.normal(size=(n, tk, d)).astype(np.float32)
    k = rng.normal(size=(n, tk, d)).astype(np.float32)
    qm = (rng.random((n, tq)) > 0.3).astype(np.float32)
    vm = (rng.random((n, tk)) > 0.3).astype(np.float32)
    vm[:, 0] = 1.0  # every row keeps a key (causal rows keep key 0)
    if full_row:
        vm[0] = 0.0  # batch 0: every row fully masked (uniform, as Keras's -1e9)
    return q, v, k, qm, vm


def _model(lib, kind, tq=4, tk=5, d=3, use_scale=False, scores=False, mask_dtype="bool",
           dropout=0.0):
    cls = real.layers.Attention if lib is real else Attention
    q_in, v_in = lib.Input((tq, d)), lib.Input((tk, d))
    ins, layer_in, kw = [q_in, v_in], [q_in, v_in], {}
    if "key" in kind:
        k_in = lib.Input((tk, d))
        ins.append(k_in)
        layer_in.append(k_in)
    qm_in = vm_in = None
    if "qmask" in kind or "both" in kind:
        qm_in = lib.Input((tq,), dtype=mask_dtype if lib is real else "float32")
        ins.append(qm_in)
    if "vmask" in kind or "both" in kind:
        vm_in = lib.Input((tk,), dtype=mask_dtype if lib is real else "float32")
        ins.append(vm_in)
    if qm_in is not None or vm_in is not None:
        kw["mask"] = [qm_in, vm_in]
    if "causal" in kind:
        kw["use_causal_mask"] = True
    if scores:
        kw["return_attention_scores"] = True
    out = cls(use_scale=use_scale, dropout=dropout, name="att")(layer_in, **kw)
    return lib.Model(ins, out)


def _x(kind, q, v, k, qm, vm, lib, mask_dtype="bool"):
    x = [q, v] + ([k] if "key" in kind else [])
    cast = (lambda m: m.astype(mask_dtype)) if lib is real else (lambda m: m)  # noqa: E731
    if "qmask" in kind or "both" in kind:
        x.append(cast(qm))
    if "vmask" in kind or "both" in kind:
        x.append(cast(vm))
    return x


def _randomize(model, seed):
    rng = np.random.default_rng(seed)
    model.set_weights([rng.normal(size=w.shape).astype(np.float32)
                       for w in model.get_weights()])


def _np(out):
    return [real.ops.convert_to_numpy(t) for t in out] if isinstance(out, (list, tuple)) \
        else real.ops.convert_to_numpy(out)


def _close(got, want):
    for a, b in zip(got if isinstance(got, list) else [got],
                    want if isinstance(want, list) else [want]):
        np.testing.assert_allclose(a, b, rtol=TOL, atol=TOL)


KINDS = ["vmask", "qmask", "both", "causal", "vmask+causal", "key+both+causal"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("use_scale", [False, True])
def test_output_equals_keras(kind, use_scale):
    data = _data()
    theirs, ours = (_model(lib, kind, use_scale=use_scale) for lib in (real, kerasish))
    _randomize(theirs, 1)
    ours.set_weights(theirs.get_weights())
    _close(ours.predict(_x(kind, *data, kerasish), verbose=0),
           _np(theirs(_x(kind, *data, real))))


@pytest.mark.parametrize("kind", ["plain", "both", "key+both+causal"])
def test_attention_scores_equal_keras(kind):
    """(Without a fully masked row: there the fused kernel's probabilities are zeros,
    Keras's uniform.)"""
    data = _data(full_row=False)
    theirs, ours = (_model(lib, kind, use_scale=True, scores=True) for lib in (real, kerasish))
    _randomize(theirs, 2)
    ours.set_weights(theirs.get_weights())
    _close(ours.predict(_x(kind, *data, kerasish), verbose=0),
           _np(theirs(_x(kind, *data, real))))


def test_eager_call_on_arrays_equals_keras():
    q, v, k, qm, vm = _data()
    theirs = real.layers.Attention(use_scale=True)
    want = _np(theirs([q, v, k], mask=[qm.astype(bool), vm.astype(bool)]))
    ours = Attention(use_scale=True)
    ours([q, v, k], mask=[qm, vm])
    ours.set_weights([np.asarray(w) for w in theirs.get_weights()])
    _close(ours([q, v, k], mask=[qm, vm]), want)


def _embedded(lib, self_attention=True, scores=False):
    ids = lib.Input((6,))  # float ids (kerasish's Inputs are float32; Embedding casts)
    e = lib.layers.Embedding(9, 4, mask_zero=True, name="emb")(ids)
    cls = real.layers.Attention if lib is real else Attention
    att = cls(use_scale=True, name="att")([e, e], return_attention_scores=scores)
    h = att[0] if scores else att
    # the query's mask reaches the LSTM (Keras's compute_mask): padded steps skipped
    out = lib.layers.LSTM(3, name="lstm")(h)
    return lib.Model(ids, [out] + ([att[1]] if scores else []))


def test_embedding_masks_flow_as_keras():
    ids = np.array([[1, 2, 0, 0, 3, 0], [4, 0, 5, 6, 7, 8], [0, 0, 0, 1, 2, 0]])
    for scores in (False, True):
        theirs, ours = _embedded(real, scores=scores), _embedded(kerasish, scores=scores)
        _randomize(theirs, 7)
        ours.set_weights(theirs.get_weights())
        _close(ours.predict(ids, verbose=0), _np(theirs(ids)))


def test_embedding_query_mask_with_an_unmasked_value_equals_keras():
    """Only the query carries a mask: Keras zeroes its rows (no value mask) and the
    mask reaches the LSTM."""
    ids = np.array([[1, 2, 0, 3], [0, 4, 5, 0]], np.float32)
    v = np.random.default_rng(3).normal(size=(2, 5, 4)).astype(np.float32)
    models = []
    for lib, cls in ((real, real.layers.Attention), (kerasish, Attention)):
        ids_in, v_in = lib.Input((4,)), lib.Input((5, 4))
        e = lib.layers.Embedding(9, 4, mask_zero=True, name="emb")(ids_in)
        h = cls(use_scale=True, name="att")([e, v_in])
        models.append(lib.Model([ids_in, v_in], lib.layers.LSTM(3, name="lstm")(h)))
    _randomize(models[0], 9)
    models[1].set_weights(models[0].get_weights())
    _close(models[1].predict([ids, v], verbose=0), _np(models[0]([ids, v])))


def test_embedding_mask_on_another_value_is_refused():
    ids_q, ids_v = kerasish.Input((3,)), kerasish.Input((4,))
    eq, ev = (kerasish.layers.Embedding(5, 2, mask_zero=True)(t) for t in (ids_q, ids_v))
    with pytest.raises(ValueError, match="Attention 'a'.*value tensor carries a mask.*"
                                         "mask=\\[query_mask, value_mask\\]"):
        Attention(name="a")([eq, ev])
    # the unmasked value is fine (the query's mask still zeroes rows and flows on)
    assert Attention()([eq, kerasish.Input((4, 2))]).shape == (None, 3, 2)


@pytest.mark.parametrize("kind", ["self", "key+both+causal"])
def test_gradients_through_the_plan(kind):
    """A Dense before the query (and the self-attention's value/key), and the scale:
    the training step's gradients against central differences."""
    kerasish.utils.set_random_seed(4)
    rng = np.random.default_rng(9)
    q, v, k, qm, vm = _data(n=2, seed=3)
    qi = kerasish.Input((4, 3))
    h = kerasish.layers.Dense(3)(qi)
    if kind == "self":
        model = kerasish.Model(qi, Attention(use_scale=True)([h, h]))
        x = q
    else:
        vi, ki = kerasish.Input((5, 3)), kerasish.Input((5, 3))
        qmi, vmi = kerasish.Input((4,)), kerasish.Input((5,))
        out = Attention(use_scale=True)([h, vi, ki], mask=[qmi, vmi], use_causal_mask=True)
        model = kerasish.Model([qi, vi, ki, qmi, vmi], out)
        x = [q, v, k, qm, vm]
    g = rng.normal(size=(2, 4, 3)).astype(np.float32)
    _fd_check_first_kernel(model, x, g, stride=1)
    weights = model.get_weights()
    model.set_weights(weights[:-1] + [np.float32(1.3).reshape(())])  # not the ones init
    weights = model.get_weights()
    analytic = _plan_gradients(model, x, g)[-1]

    def loss(s):
        model.set_weights(weights[:-1] + [np.asarray(s, np.float32).reshape(())])
        return float(np.mean((model.predict(x, verbose=0).astype(np.float64) - g) ** 2))

    s = float(weights[-1])
    num = (loss(s + 1e-2) - loss(s - 1e-2)) / 2e-2
    assert abs(float(analytic) - num) <= 3e-2 * abs(num) + 3e-4, (analytic, num)
    model.set_weights(weights)


def test_scores_gradient_matches_finite_differences():
    """The returned scores enter the loss (both outputs): the Dense kernel's gradient."""
    kerasish.utils.set_random_seed(5)
    rng = np.random.default_rng(2)
    q, v, _, qm, vm = _data(n=2, seed=4, full_row=False)
    qi, vi, qmi, vmi = (kerasish.Input(s) for s in ((4, 3), (5, 3), (4,), (5,)))
    h = kerasish.layers.Dense(3)(qi)
    out, scores = Attention(use_scale=True)([h, vi], mask=[qmi, vmi],
                                            return_attention_scores=True)
    model = kerasish.Model([qi, vi, qmi, vmi], kerasish.layers.Concatenate()([out, scores]))
    g = rng.normal(size=(2, 4, 8)).astype(np.float32)
    _fd_check_first_kernel(model, [q, v, qm, vm], g, stride=1)


def test_model_fits_with_masks_and_dropout():
    kerasish.utils.set_random_seed(1)
    rng = np.random.default_rng(0)
    ids = rng.integers(1, 20, (64, 6))
    ids[:, 4:] *= rng.random((64, 2)) > 0.5  # padded tails
    y = (ids[:, 0] > 10).astype(np.float32)[:, None]
    inp = kerasish.Input((6,))
    e = kerasish.layers.Embedding(20, 8, mask_zero=True)(inp)
    h, _ = Attention(use_scale=True, dropout=0.1)([e, e], use_causal_mask=True,
                                                  return_attention_scores=True)
    out = kerasish.layers.Dense(1, activation="sigmoid")(
        kerasish.layers.GlobalAveragePooling1D()(h))
    model = kerasish.Model(inp, out)
    model.compile(kerasish.optimizers.Adam(0.02), "binary_crossentropy")
    losses = model.fit(ids, y, batch_size=16, epochs=6, verbose=0).history["loss"]
    assert np.isfinite(losses).all() and losses[-1] < losses[0], losses


def test_scores_after_dropout_are_keras_weights():
    """Training with dropout: the returned weights are Keras's after-dropout weights
    (the inference softmax times the kernel's keep mask for this step), out = weights
    @ value: the training loss on both outputs equals that computed from them."""
    from kernels_numba.ops import attention as attention_ops

    q, v, _, _, _ = _data(n=2, tq=4, tk=5, seed=6)
    model = _model(kerasish, "plain", scores=True, dropout=0.4)
    layer = model.get_layer("att")
    infer = model.predict([q, v], verbose=0)[1].astype(np.float64)
    model.compile(kerasish.optimizers.SGD(0.0), ["mse", "mse"])
    got = model.train_on_batch([q, v], [np.zeros((2, 4, 3), np.float32),
                                        np.zeros((2, 4, 5), np.float32)])
    keep = np.zeros((2, 1, 4, 5), np.float32)
    attention_ops.attention_keep_mask(keep, rate=0.4, seed=layer._seed,
                                      step=layer._drop["step"])
    assert 0 < (keep > 0).mean() < 1
    post = infer * keep[:, 0]
    want = np.mean((post @ v) ** 2) + np.mean(post ** 2)
    total = got[0] if isinstance(got, (list, tuple)) else got
    np.testing.assert_allclose(total, want, rtol=1e-5)


def test_weights_files_cross_both_ways(tmp_path):
    data = _data()
    kind = "key+both+causal"
    theirs, ours = (_model(lib, kind, use_scale=True) for lib in (real, kerasish))
    _randomize(theirs, 3)
    theirs.save_weights(tmp_path / "k.weights.h5")
    ours.load_weights(tmp_path / "k.weights.h5")
    _close(ours.predict(_x(kind, *data, kerasish), verbose=0),
           _np(theirs(_x(kind, *data, real))))
    _randomize(ours, 4)
    ours.save_weights(tmp_path / "o.weights.h5")
    fresh = _model(real, kind, use_scale=True)
    fresh.load_weights(tmp_path / "o.weights.h5")
    _close(ours.predict(_x(kind, *data, kerasish), verbose=0),
           _np(fresh(_x(kind, *data, real))))


@pytest.mark.parametrize("kind", ["key", "both+causal"])
def test_keras_files_cross_both_ways(tmp_path, kind):
    """(kerasish's Inputs are float32: Keras's model takes float 0/1 masks here too.)"""
    data = _data(full_row=kind == "both+causal")
    f32 = "float32"
    theirs = _model(real, kind, use_scale=True, scores=kind == "key", mask_dtype=f32)
    _randomize(theirs, 5)
    theirs.save(tmp_path / "k.keras")
    ours = kerasish.saving.load_model(tmp_path / "k.keras", custom_objects=CUSTOM)
    _close(ours.predict(_x(kind, *data, kerasish), verbose=0),
           _np(theirs(_x(kind, *data, real, f32))))
    mine = _model(kerasish, kind, use_scale=True, scores=kind == "key")
    _randomize(mine, 6)
    mine.save(tmp_path / "o.keras")
    back = real.saving.load_model(tmp_path / "o.keras")
    _close(mine.predict(_x(kind, *data, kerasish), verbose=0),
           _np(back(_x(kind, *data, real, f32))))


def test_embedding_model_keras_file_loads_in_keras(tmp_path):
    """kerasish -> Keras. (Keras's own file of this model records the implicit masks as
    NotEqual / ConvertToTensor op layers, which kerasish's loader does not know.)"""
    ids = np.array([[1, 2, 0, 0, 3, 0], [4, 0, 5, 6, 7, 8]], np.float32)
    ours = _embedded(kerasish)
    _randomize(ours, 8)
    ours.save(tmp_path / "o.keras")
    _close(_np(real.saving.load_model(tmp_path / "o.keras")(ids)), ours.predict(ids, verbose=0))


def test_config_keys_equal_keras_and_round_trip():
    theirs = real.layers.Attention(use_scale=True, dropout=0.2, seed=3).get_config()
    ours = Attention(use_scale=True, dropout=0.2, seed=3).get_config()
    assert set(theirs) == set(ours), (set(theirs) ^ set(ours))
    for key in ("use_scale", "score_mode", "dropout", "seed"):
        assert ours[key] == theirs[key]
    assert Attention.from_config(ours).get_config() == ours
    Attention.from_config({k: v for k, v in theirs.items() if k != "dtype"})


def test_refusals_name_the_layer():
    with pytest.raises(ValueError, match="Attention 'c'.*score_mode='concat' is not supported"):
        Attention(score_mode="concat", name="c")
    with pytest.raises(ValueError, match="Invalid value for argument score_mode"):
        Attention(score_mode="add")
    layer = Attention(name="a")
    with pytest.raises(ValueError, match="Attention 'a'.*mask=\\[query_mask"):
        layer([kerasish.Input((2, 3))] * 2, mask=kerasish.Input((2,)))
    with pytest.raises(ValueError, match="Attention 'a'.*value_mask of shape"):
        layer([kerasish.Input((2, 3)), kerasish.Input((4, 3))],
              mask=[None, kerasish.Input((3,))])
