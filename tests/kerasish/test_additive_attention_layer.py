"""AdditiveAttention against real Keras 3 (torch CPU backend): same weights, same outputs
(1e-5) with and without masks / key / causal / use_scale, attention scores, eager calls;
training (gradients against finite differences, a model fits); .weights.h5 and .keras
files crossing both ways; get_config keys."""

import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")
pytest.importorskip("torch", reason="interop tests need torch")
real = pytest.importorskip("keras", reason="interop tests need Keras 3")

import kerasish  # noqa: E402
from kerasish.layers.additive_attention import AdditiveAttention  # noqa: E402
from tests.kerasish.test_attention_layers import _fd_check_first_kernel  # noqa: E402

TOL = 1e-5
CUSTOM = {"AdditiveAttention": AdditiveAttention}


@pytest.fixture(autouse=True)
def _registered(monkeypatch):
    """As kerasish.layers will export it (the lead registers the layer): Keras's module
    name keras.layers in the files written, the class found by name when read."""
    if "AdditiveAttention" not in kerasish.layers.BUILTIN:
        monkeypatch.setitem(kerasish.layers.BUILTIN, "AdditiveAttention", AdditiveAttention)
        monkeypatch.setattr(kerasish.layers, "AdditiveAttention", AdditiveAttention,
                            raising=False)


def _data(n=3, tq=4, tk=5, d=3, seed=0):
    rng = np.random.default_rng(seed)
    q = rng.normal(size=(n, tq, d)).astype(np.float32)
    v = rng.normal(size=(n, tk, d)).astype(np.float32)
    k = rng.normal(size=(n, tk, d)).astype(np.float32)
    qm = (rng.random((n, tq)) > 0.3).astype(np.float32)
    vm = (rng.random((n, tk)) > 0.3).astype(np.float32)
    vm[0] = 0.0  # batch 0: every row fully masked (uniform)
    return q, v, k, qm, vm


def _model(lib, kind, tq=4, tk=5, d=3, use_scale=True, scores=False, mask_dtype="bool"):
    cls = real.layers.AdditiveAttention if lib is real else AdditiveAttention
    q_in, v_in = lib.Input((tq, d)), lib.Input((tk, d))
    ins = [q_in, v_in]
    layer_in = [q_in, v_in]
    kw = {}
    if "key" in kind:
        k_in = lib.Input((tk, d))
        ins.append(k_in)
        layer_in.append(k_in)
    if "mask" in kind:
        qm_in = lib.Input((tq,), dtype=mask_dtype if lib is real else "float32")
        vm_in = lib.Input((tk,), dtype=mask_dtype if lib is real else "float32")
        ins += [qm_in, vm_in]
        kw["mask"] = [qm_in, vm_in]
    if "causal" in kind:
        kw["use_causal_mask"] = True
    if scores:
        kw["return_attention_scores"] = True
    out = cls(use_scale=use_scale, name="add")(layer_in, **kw)
    return lib.Model(ins, out)


def _x(kind, q, v, k, qm, vm, lib, mask_dtype="bool"):
    x = [q, v] + ([k] if "key" in kind else [])
    if "mask" in kind:
        x += [qm.astype(mask_dtype), vm.astype(mask_dtype)] if lib is real else [qm, vm]
    return x


def _randomize(model, seed):
    rng = np.random.default_rng(seed)
    model.set_weights([rng.normal(size=w.shape).astype(np.float32)
                       for w in model.get_weights()])


KINDS = ["plain", "key", "mask", "causal", "key+mask+causal"]


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("use_scale", [True, False])
def test_output_equals_keras(kind, use_scale):
    data = _data()
    theirs, ours = _model(real, kind, use_scale=use_scale), _model(kerasish, kind,
                                                                  use_scale=use_scale)
    _randomize(theirs, 1)
    ours.set_weights(theirs.get_weights())
    want = real.ops.convert_to_numpy(theirs(_x(kind, *data, real)))
    np.testing.assert_allclose(ours.predict(_x(kind, *data, kerasish), verbose=0), want,
                               rtol=TOL, atol=TOL)


@pytest.mark.parametrize("kind", ["plain", "key+mask+causal"])
def test_attention_scores_equal_keras(kind):
    data = _data()
    theirs, ours = (_model(lib, kind, scores=True) for lib in (real, kerasish))
    _randomize(theirs, 2)
    ours.set_weights(theirs.get_weights())
    want = [real.ops.convert_to_numpy(t) for t in theirs(_x(kind, *data, real))]
    got = ours.predict(_x(kind, *data, kerasish), verbose=0)
    for a, b in zip(got, want):
        np.testing.assert_allclose(a, b, rtol=TOL, atol=TOL)


def test_eager_call_on_arrays_equals_keras():
    q, v, k, qm, vm = _data()
    theirs = real.layers.AdditiveAttention()
    want = real.ops.convert_to_numpy(theirs([q, v, k], mask=[qm.astype(bool), vm.astype(bool)]))
    ours = AdditiveAttention()
    ours([q, v, k], mask=[qm, vm])
    ours.set_weights([np.asarray(w) for w in theirs.get_weights()])
    np.testing.assert_allclose(ours([q, v, k], mask=[qm, vm]), want, rtol=TOL, atol=TOL)


@pytest.mark.parametrize("kind", ["self", "key+mask+causal"])
def test_gradients_through_the_plan(kind):
    """A Dense before the query (and the self-attention's value/key) and the scale:
    the training step's gradients against central differences."""
    kerasish.utils.set_random_seed(4)
    rng = np.random.default_rng(9)
    q, v, k, qm, vm = _data(n=2, seed=3)
    qi = kerasish.Input((4, 3))
    h = kerasish.layers.Dense(3)(qi)
    if kind == "self":
        model = kerasish.Model(qi, AdditiveAttention()([h, h]))
        x = q
    else:
        vi, ki = kerasish.Input((5, 3)), kerasish.Input((5, 3))
        qmi, vmi = kerasish.Input((4,)), kerasish.Input((5,))
        out = AdditiveAttention()([h, vi, ki], mask=[qmi, vmi], use_causal_mask=True)
        model = kerasish.Model([qi, vi, ki, qmi, vmi], out)
        x = [q, v, k, qm, vm]
    g = rng.normal(size=(2, 4, 3)).astype(np.float32)
    _fd_check_first_kernel(model, x, g, stride=1)
    # the scale (the last weight) too: move it to the front by a permuted model view
    weights = model.get_weights()
    from tests.kerasish.test_attention_layers import _plan_gradients

    analytic = _plan_gradients(model, x, g)[-1]

    def loss(s):
        model.set_weights(weights[:-1] + [s.astype(np.float32)])
        return float(np.mean((model.predict(x, verbose=0).astype(np.float64) - g) ** 2))

    for j in range(weights[-1].size):
        e = np.zeros(weights[-1].size)
        e[j] = 1e-2
        num = (loss(weights[-1] + e) - loss(weights[-1] - e)) / 2e-2
        assert abs(analytic[j] - num) <= 3e-2 * abs(num) + 3e-4, (j, analytic[j], num)
    model.set_weights(weights)


def test_model_fits():
    kerasish.utils.set_random_seed(1)
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 6, 4)).astype(np.float32)
    y = (x[:, :, 0].mean(1) > 0).astype(np.float32)[:, None]
    inp = kerasish.Input((6, 4))
    h = AdditiveAttention(dropout=0.1)([inp, inp])
    out = kerasish.layers.Dense(1, activation="sigmoid")(
        kerasish.layers.GlobalAveragePooling1D()(h))
    model = kerasish.Model(inp, out)
    model.compile(kerasish.optimizers.Adam(0.02), "binary_crossentropy")
    losses = model.fit(x, y, batch_size=16, epochs=6, verbose=0).history["loss"]
    assert np.isfinite(losses).all() and losses[-1] < losses[0], losses


def test_weights_files_cross_both_ways(tmp_path):
    data = _data()
    kind = "key+mask+causal"
    theirs, ours = _model(real, kind), _model(kerasish, kind)
    _randomize(theirs, 3)
    theirs.save_weights(tmp_path / "k.weights.h5")
    ours.load_weights(tmp_path / "k.weights.h5")
    want = real.ops.convert_to_numpy(theirs(_x(kind, *data, real)))
    np.testing.assert_allclose(ours.predict(_x(kind, *data, kerasish), verbose=0), want,
                               rtol=TOL, atol=TOL)
    _randomize(ours, 4)
    ours.save_weights(tmp_path / "o.weights.h5")
    fresh = _model(real, kind)
    fresh.load_weights(tmp_path / "o.weights.h5")
    np.testing.assert_allclose(real.ops.convert_to_numpy(fresh(_x(kind, *data, real))),
                               ours.predict(_x(kind, *data, kerasish), verbose=0), rtol=TOL,
                               atol=TOL)


@pytest.mark.parametrize("kind", ["key", "mask+causal"])
def test_keras_files_cross_both_ways(tmp_path, kind):
    """(kerasish's Inputs are float32: Keras's model takes float 0/1 masks here too.)"""
    data = _data()
    f32 = "float32"
    theirs = _model(real, kind, scores=kind == "key", mask_dtype=f32)
    _randomize(theirs, 5)
    theirs.save(tmp_path / "k.keras")
    ours = kerasish.saving.load_model(tmp_path / "k.keras", custom_objects=CUSTOM)
    want = theirs(_x(kind, *data, real, f32))
    want = [real.ops.convert_to_numpy(t) for t in (want if isinstance(want, (list, tuple))
                                                  else [want])]
    got = ours.predict(_x(kind, *data, kerasish), verbose=0)
    for a, b in zip(got if isinstance(got, list) else [got], want):
        np.testing.assert_allclose(a, b, rtol=TOL, atol=TOL)
    mine = _model(kerasish, kind, scores=kind == "key")
    _randomize(mine, 6)
    mine.save(tmp_path / "o.keras")
    back = real.saving.load_model(tmp_path / "o.keras")
    got = mine.predict(_x(kind, *data, kerasish), verbose=0)
    want = back(_x(kind, *data, real, f32))
    want = [real.ops.convert_to_numpy(t) for t in (want if isinstance(want, (list, tuple))
                                                  else [want])]
    for a, b in zip(got if isinstance(got, list) else [got], want):
        np.testing.assert_allclose(a, b, rtol=TOL, atol=TOL)


def test_config_keys_equal_keras_and_round_trip():
    theirs = real.layers.AdditiveAttention(use_scale=False, dropout=0.2, seed=3).get_config()
    ours = AdditiveAttention(use_scale=False, dropout=0.2, seed=3).get_config()
    assert set(theirs) == set(ours), (set(theirs) ^ set(ours))
    for key in ("use_scale", "dropout", "seed"):
        assert ours[key] == theirs[key]
    assert AdditiveAttention.from_config(ours).get_config() == ours
    AdditiveAttention.from_config({k: v for k, v in theirs.items() if k != "dtype"})


def test_refusals_name_the_layer():
    with pytest.raises(ValueError, match="AdditiveAttention.*dropout.*in \\[0, 1\\)"):
        AdditiveAttention(dropout=1.0)
    layer = AdditiveAttention(name="aa")
    with pytest.raises(ValueError, match="AdditiveAttention 'aa'.*list \\[query, value\\]"):
        layer(kerasish.Input((2, 3)))
    with pytest.raises(ValueError, match="AdditiveAttention 'aa'.*mask=\\[query_mask"):
        layer([kerasish.Input((2, 3))] * 2, mask=kerasish.Input((2,)))
    with pytest.raises(ValueError, match="AdditiveAttention 'aa'.*value_mask of shape"):
        layer([kerasish.Input((2, 3)), kerasish.Input((4, 3))],
              mask=[None, kerasish.Input((3,))])
