"""Merge layers through the Layer contract (list of shapes, list of buffers, a list of
dx with None where no gradient is wanted): forward against real Keras 3 (torch
backend) where it is installed, backward against finite differences, on the CPU twins
and on the CUDA kernels under the simulator; errors and configs as Keras's."""

import os

import numpy as np
import pytest

import kernels_numba
from kerasish import layers
from kernels_numba.testing import assert_close, numeric_grad

os.environ.setdefault("KERAS_BACKEND", "torch")

CASES = [
    ("add2", lambda L: L.Add(), [(2, 3), (2, 3)]),
    ("add3", lambda L: L.Add(), [(1, 2, 3)] * 3),
    ("add1", lambda L: L.Add(), [(2, 3)]),
    ("subtract", lambda L: L.Subtract(), [(3, 2, 2), (3, 2, 2)]),
    ("multiply2", lambda L: L.Multiply(), [(2, 5), (2, 5)]),
    ("multiply4", lambda L: L.Multiply(), [(3, 2)] * 4),
    ("average3", lambda L: L.Average(), [(2, 3)] * 3),
    ("maximum2", lambda L: L.Maximum(), [(2, 3), (2, 3)]),
    ("maximum3", lambda L: L.Maximum(), [(3, 1, 4)] * 3),
    ("minimum3", lambda L: L.Minimum(), [(2, 5)] * 3),
    # Keras's broadcasting of size-1 dimensions (two inputs of one rank).
    ("multiply_gate", lambda L: L.Multiply(), [(2, 3, 2, 3), (2, 1, 1, 3)]),
    ("multiply_both", lambda L: L.Multiply(), [(2, 1, 3), (2, 2, 1)]),
    ("add_bcast", lambda L: L.Add(), [(2, 1, 3), (2, 2, 3)]),
    ("subtract_bcast", lambda L: L.Subtract(), [(2, 2, 1), (2, 2, 3)]),
    ("average_bcast", lambda L: L.Average(), [(2, 3, 1), (2, 3, 2)]),
    ("maximum_bcast", lambda L: L.Maximum(), [(2, 1, 4), (2, 3, 4)]),
    ("minimum_bcast", lambda L: L.Minimum(), [(2, 3, 1), (2, 1, 2)]),
    ("concat_last", lambda L: L.Concatenate(), [(2, 3), (2, 1), (2, 4)]),
    ("concat_axis1", lambda L: L.Concatenate(axis=1), [(2, 2, 3), (2, 1, 3)]),
    ("concat_axis_m2", lambda L: L.Concatenate(axis=-2), [(1, 3, 2, 2), (1, 3, 1, 2)]),
    ("concat_one", lambda L: L.Concatenate(), [(3, 2)]),
]
IDS = [c[0] for c in CASES]


def _inputs(shapes, seed=0):
    """Random inputs, spread so that no two are within 0.05 (max/min have no ties)."""
    rng = np.random.default_rng(seed)
    total = sum(int(np.prod(s)) for s in shapes)
    values = (rng.permutation(total) * 0.05 - total * 0.025).astype(np.float32)
    out, start = [], 0
    for s in shapes:
        size = int(np.prod(s))
        out.append(values[start:start + size].reshape(s))
        start += size
    return out


def _built(layer, shapes, device):
    batch = shapes[0][0]
    listed = [(None, *s[1:]) for s in shapes]
    layer.build(listed)
    out = layer.compute_output_shape(listed)
    layer.scratch = {k: kernels_numba.empty(s, d, device)
                     for k, (s, d) in layer.scratch_shapes(batch).items()}
    return (batch, *out[1:])


def _forward(layer, xs, out_shape, device):
    xb = [kernels_numba.to_device(np.ascontiguousarray(x), device) for x in xs]
    yb = kernels_numba.empty(out_shape, np.float32, device)
    before = kernels_numba.allocation_count()
    layer.forward(yb, xb, True)
    assert kernels_numba.allocation_count() == before, "forward allocated"
    return xb, yb


def _backward(layer, xb, yb, g, device, wanted=None):
    wanted = [True] * len(xb) if wanted is None else wanted
    dxb = [kernels_numba.to_device(np.full(x.shape, 7, np.float32), device) if w else None
           for x, w in zip(xb, wanted)]
    gb = kernels_numba.to_device(g, device)
    before = kernels_numba.allocation_count()
    layer.backward(dxb, gb, xb, yb)
    assert kernels_numba.allocation_count() == before, "backward allocated"
    return [None if d is None else kernels_numba.to_host(d) for d in dxb]


@pytest.mark.parametrize("name,make,shapes", CASES, ids=IDS)
def test_backward_matches_finite_differences(device, name, make, shapes):
    layer = make(layers)
    out_shape = _built(layer, shapes, device)
    xs = _inputs(shapes)
    g = np.random.default_rng(1).standard_normal(out_shape).astype(np.float32)
    xb, yb = _forward(layer, xs, out_shape, device)
    grads = _backward(layer, xb, yb, g.copy(), device)

    def objective(i):
        def f(t):
            probe = [x if j != i else t.astype(np.float32) for j, x in enumerate(xs)]
            return float(np.sum(kernels_numba.to_host(_forward(layer, probe, out_shape,
                                                               device)[1]) * g))
        return f

    for i, (x, grad) in enumerate(zip(xs, grads)):
        assert_close(grad, numeric_grad(objective(i), x, eps=1e-2), rtol=1e-3, atol=1e-3,
                     what=f"{name} input {i}")


@pytest.mark.parametrize("name,make,shapes", CASES, ids=IDS)
def test_forward_matches_keras(device, name, make, shapes):
    real = _real_keras()
    layer = make(layers)
    out_shape = _built(layer, shapes, device)
    xs = _inputs(shapes, seed=2)
    want = np.asarray(make(real.layers)(xs))
    assert tuple(want.shape) == out_shape
    assert_close(kernels_numba.to_host(_forward(layer, xs, out_shape, device)[1]), want,
                 rtol=1e-6, atol=1e-6, what=name)


@pytest.mark.parametrize("wanted", [[False, True, False], [True, False, False],
                                    [False, False, True], [True, False, True]],
                         ids=["middle", "first", "last", "ends"])
@pytest.mark.parametrize("kind", ["Multiply", "Maximum", "Minimum", "Add", "Average",
                                  "Concatenate"])
def test_some_inputs_need_no_gradient(device, kind, wanted):
    shapes = [(2, 3)] * 3
    xs = _inputs(shapes, seed=3)
    g = np.random.default_rng(4).standard_normal((2, 9 if kind == "Concatenate" else 3))
    g = g.astype(np.float32)
    full_layer, part_layer = getattr(layers, kind)(), getattr(layers, kind)()
    out_shape = _built(full_layer, shapes, device)
    _built(part_layer, shapes, device)
    full = _backward(full_layer, *_forward(full_layer, xs, out_shape, device), g.copy(), device)
    part = _backward(part_layer, *_forward(part_layer, xs, out_shape, device), g.copy(), device,
                     wanted)
    for i, w in enumerate(wanted):
        if w:
            assert_close(part[i], full[i], rtol=0, atol=0, what=f"{kind} input {i}")
        else:
            assert part[i] is None


def test_extremum_ties_split_as_keras_torch_backend(device):
    torch = pytest.importorskip("torch")
    real = _real_keras()
    a = np.array([[1, 2, 3, 3]], np.float32)
    b = np.array([[1, 0, 3, 5]], np.float32)
    c = np.array([[1, 2, 4, 0]], np.float32)
    g = np.array([[1, 2, 4, 8]], np.float32)
    for kind in ("Maximum", "Minimum"):
        layer = getattr(layers, kind)()
        out_shape = _built(layer, [a.shape] * 3, device)
        ours = _backward(layer, *_forward(layer, [a, b, c], out_shape, device), g.copy(), device)
        ts = [torch.tensor(v, requires_grad=True) for v in (a, b, c)]
        (getattr(real.layers, kind)()(ts) * torch.tensor(g)).sum().backward()
        for i, t in enumerate(ts):
            assert_close(ours[i], t.grad.numpy(), rtol=0, atol=0, what=f"{kind} input {i}")


def test_nan_propagates(device):
    x = [np.array([[np.nan, 1.0]], np.float32), np.array([[2.0, np.nan]], np.float32)]
    for kind in ("Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum"):
        layer = getattr(layers, kind)()
        out_shape = _built(layer, [(1, 2)] * 2, device)
        assert np.isnan(kernels_numba.to_host(_forward(layer, x, out_shape, device)[1])).all(), \
            kind


def test_output_shapes_and_batch():
    assert layers.Add().compute_output_shape([(None, 3), (None, 3)]) == (None, 3)
    assert layers.Add().compute_output_shape([(4, 3), (None, 3)]) == (4, 3)
    # None against a known size stays None, as Keras 3's _compute_elemwise_op_output_shape
    # (keras/src/layers/merging/base_merge.py) gives; the size is checked once it is bound
    assert layers.Multiply().compute_output_shape([(None, None, 3), (None, 5, 3)]) == \
        (None, None, 3)
    assert layers.Add().compute_output_shape([(None, 5, 3), (None, None, 3)]) == \
        (None, None, 3)
    assert layers.Maximum().compute_output_shape([(None, None, 3), (None, 1, 3)]) == \
        (None, None, 3)
    assert layers.Concatenate(axis=1).compute_output_shape(
        [(None, 2, 3), (None, 4, 3)]) == (None, 6, 3)
    assert layers.Concatenate().compute_output_shape([(None, 2, None), (None, 2, 3)]) == \
        (None, 2, None)


def test_bad_inputs_are_named():
    with pytest.raises(ValueError, match=r"`Subtract` layer \('subtract'\) should be called on "
                                         r"exactly 2 inputs; received input_shape=\[\(None, 3\), "
                                         r"\(None, 3\), \(None, 3\)\]"):
        layers.Subtract().build([(None, 3)] * 3)
    with pytest.raises(ValueError, match=r"Add 'add': expected inputs of one shape .*"
                                         r"received input_shape=\[\(None, 3\), \(None, 4\)\]"):
        layers.Add().build([(None, 3), (None, 4)])
    with pytest.raises(ValueError, match=r"broadcasting across ranks or over 3\+ inputs"):
        layers.Maximum().build([(None, 1, 4), (None, 4, 4), (None, 4, 1)])
    with pytest.raises(ValueError, match="broadcasting across ranks"):
        layers.Multiply().build([(None, 2, 4), (None, 4)])
    with pytest.raises(ValueError, match=r"received input_shape=\[\(None, 2, 4\), "
                                         r"\(None, 3, 1\)\]"):
        layers.Multiply().build([(None, 2, 4), (None, 3, 1)])
    assert layers.Maximum().compute_output_shape([(None, 1, 4), (None, 3, 1)]) == \
        (None, 3, 4)
    with pytest.raises(ValueError, match="should be called on a list"):
        layers.Average().build((None, 3))
    with pytest.raises(ValueError, match="different batch sizes"):
        layers.Add().build([(2, 3), (3, 3)])
    with pytest.raises(ValueError, match=r"Concatenate 'concatenate': a `Concatenate` layer "
                                         r"requires inputs with matching shapes except for the "
                                         r"concatenation axis -1"):
        layers.Concatenate().build([(None, 2, 3), (None, 3, 3)])
    with pytest.raises(ValueError, match="batch axis"):
        layers.Concatenate(axis=0).build([(None, 3), (None, 3)])
    with pytest.raises(ValueError, match="batch axis"):
        layers.Concatenate(axis=-2).build([(None, 3), (None, 3)])
    with pytest.raises(ValueError, match="axis=2 inside it"):
        layers.Concatenate(axis=2).build([(None, 3), (None, 3)])
    with pytest.raises(TypeError, match="integer axis"):
        layers.Concatenate(axis="1")
    layer = layers.Add()
    layer.build([(None, 2)] * 2)
    with pytest.raises(ValueError, match="built for 2 inputs; received 3"):
        layer.forward(np.zeros((1, 2), np.float32), [np.zeros((1, 2), np.float32)] * 3, True)


@pytest.mark.parametrize("kind,kwargs", [("Add", {}), ("Subtract", {}), ("Multiply", {}),
                                         ("Average", {}), ("Maximum", {}), ("Minimum", {}),
                                         ("Concatenate", {"axis": 1})])
def test_configs_cross_with_keras(kind, kwargs):
    real = _real_keras()
    theirs = getattr(real.layers, kind)(name=f"m_{kind}", **kwargs).get_config()
    ours = getattr(layers, kind)(name=f"m_{kind}", **kwargs)
    assert set(ours.get_config()) == set(theirs)
    back = layers.deserialize({"class_name": kind, "config": theirs})
    assert type(back).__name__ == kind and back.name == f"m_{kind}"
    assert back.get_config() == ours.get_config()
    again = getattr(real.layers, kind).from_config(ours.get_config())
    assert again.name == f"m_{kind}" and getattr(again, "axis", None) == kwargs.get("axis")


def test_none_size_output_shapes_equal_keras():
    """A None size merged with a known one (or a 1) is None in Keras 3's output shape."""
    real = _real_keras()
    pairs = [((None, 4), (5, 4)), ((5, 4), (None, 4)), ((None, 4), (1, 4)),
             ((None, None, 3), (1, 1, 3)), ((None, 5, 3), (6, None, 3))]
    for kind in ("Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum"):
        for a, b in pairs:
            theirs = getattr(real.layers, kind)()([real.Input(a), real.Input(b)]).shape
            ours = getattr(layers, kind)()([layers.Input(a), layers.Input(b)]).shape
            assert tuple(ours) == tuple(theirs), (kind, a, b)


def _real_keras():
    pytest.importorskip("torch", reason="needs torch (the `test` extra)")
    real = pytest.importorskip("keras", reason="needs Keras 3 (the `test` extra)")
    if not real.__version__.startswith("3."):
        pytest.skip(f"needs Keras 3; found keras {real.__version__}")
    return real


# -- end to end: two-input models through keras.Model and fit ------------------------

E2E = {
    "Add": lambda hs: sum(hs[1:], hs[0]),
    "Subtract": lambda hs: hs[0] - hs[1],
    "Multiply": lambda hs: np.prod(hs, axis=0),
    "Average": lambda hs: sum(hs[1:], hs[0]) / len(hs),
    "Maximum": lambda hs: np.max(hs, axis=0),
    "Minimum": lambda hs: np.min(hs, axis=0),
    "Concatenate": lambda hs: np.concatenate(hs, axis=-1),
}
E2E_CASES = [(kind, 2) for kind in E2E] + [("Multiply", 3), ("Maximum", 3), ("Concatenate", 3)]


def _e2e_model(kind, count):
    import kerasish

    inputs = [kerasish.Input((3,), name=f"in_{i}") for i in range(count)]
    branches = [layers.Dense(4, activation="tanh", name=f"branch_{i}") for i in range(count)]
    head = layers.Dense(1, name="head")
    merged = getattr(layers, kind)()([d(x) for d, x in zip(branches, inputs)])
    model = kerasish.Model(inputs, head(merged))
    model.compile(kerasish.optimizers.SGD(0.1), "mse")
    return model, branches + [head]


def _e2e_loss(kind, params, xs, y):
    """The model's mse in float64 NumPy; params = [(kernel, bias)] per Dense."""
    hs = [np.tanh(x @ k + b) for x, (k, b) in zip(xs, params[:-1])]
    k, b = params[-1]
    return float(np.mean((E2E[kind](hs) @ k + b - y) ** 2))


@pytest.mark.parametrize("kind,count", E2E_CASES, ids=[f"{k}{c}" for k, c in E2E_CASES])
def test_model_with_merge_trains_like_finite_differences(on_device, kind, count):
    import kerasish

    kerasish.utils.set_random_seed(0)
    rng = np.random.default_rng(5)
    xs = [rng.normal(size=(5, 3)).astype(np.float32) for _ in range(count)]
    y = rng.normal(size=(5, 1)).astype(np.float32)
    model, dense = _e2e_model(kind, count)
    params = [[w.astype(np.float64) for w in d.get_weights()] for d in dense]
    assert_close(model.predict(xs, verbose=0), _e2e_pred(kind, params, xs), rtol=1e-5,
                 atol=1e-5, what="predict")
    for step in range(2):  # two SGD steps: w1 = w0 - 0.1 * dL/dw at w0
        model.fit(xs, y, batch_size=5, epochs=1, shuffle=False, verbose=0)
        after = [[w.astype(np.float64) for w in d.get_weights()] for d in dense]
        for li, d in enumerate(dense):
            for wi, name in enumerate(("kernel", "bias")):
                def loss(t, li=li, wi=wi):
                    probe = [list(p) for p in params]
                    probe[li][wi] = t
                    return _e2e_loss(kind, probe, xs, y)

                grad = (params[li][wi] - after[li][wi]) / 0.1
                assert_close(grad, numeric_grad(loss, params[li][wi]), rtol=1e-3, atol=1e-4,
                             what=f"step {step} {d.name}/{name}")
        params = after


def _e2e_pred(kind, params, xs):
    hs = [np.tanh(x @ k + b) for x, (k, b) in zip(xs, params[:-1])]
    k, b = params[-1]
    return E2E[kind](hs) @ k + b


FUNCTIONAL = [("add", "Add", {}), ("subtract", "Subtract", {}), ("multiply", "Multiply", {}),
              ("average", "Average", {}), ("maximum", "Maximum", {}), ("minimum", "Minimum", {}),
              ("concatenate", "Concatenate", {"axis": 1})]


@pytest.mark.parametrize("fn,kind,kwargs", FUNCTIONAL, ids=[f[0] for f in FUNCTIONAL])
def test_functional_forms(fn, kind, kwargs):
    import kerasish

    real = _real_keras()
    xs = _inputs([(2, 3, 2), (2, 3, 2)], seed=6)
    ours = np.asarray(getattr(layers, fn)(xs, **kwargs))
    assert_close(ours, np.asarray(getattr(layers, kind)(**kwargs)(xs)), rtol=0, atol=0, what=fn)
    assert_close(ours, np.asarray(getattr(real.layers, fn)(xs, **kwargs)), rtol=1e-6,
                 atol=1e-6, what=f"{fn} vs Keras")
    a, b = kerasish.Input((3, 2)), kerasish.Input((3, 2))
    out = getattr(layers, fn)([a, b], name=f"my_{fn}", **kwargs)
    assert out.shape == ((None, 6, 2) if fn == "concatenate" else (None, 3, 2))


def _all_merges_model(lib):
    L = lib.layers
    inputs = [lib.Input((3,), name=n) for n in ("a", "b", "c")]
    h = [L.Dense(4)(t) for t in inputs]
    merged = L.concatenate([L.add(h[:2]), L.subtract(h[1:]), L.multiply(h), L.average(h),
                            L.maximum(h), L.minimum(h)], axis=1)
    return lib.Model(inputs, L.Dense(2)(merged))


def test_merge_models_cross_h5_with_keras(tmp_path):
    import kerasish

    real = _real_keras()
    xs = _inputs([(4, 3)] * 3, seed=7)
    theirs = _all_merges_model(real)
    theirs.save(tmp_path / "keras.h5")
    loaded = kerasish.models.load_model(tmp_path / "keras.h5", compile=False)
    assert [type(layer).__name__ for layer in loaded.layers][6:13] == \
        ["Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate"]
    assert_close(loaded.predict(xs, verbose=0), theirs.predict(xs, verbose=0), rtol=1e-6,
                 atol=1e-6, what="Keras -> kerasish")

    ours = _all_merges_model(kerasish)
    ours.save(tmp_path / "ours.h5")
    back = real.models.load_model(tmp_path / "ours.h5", compile=False)
    assert_close(back.predict(xs, verbose=0), ours.predict(xs, verbose=0), rtol=1e-6,
                 atol=1e-6, what="kerasish -> Keras")


@pytest.mark.parametrize("kind", ["Multiply", "Maximum", "Subtract", "Concatenate"])
def test_one_tensor_merged_with_itself(on_device, kind):
    # Both inputs are one tensor: the engine gives each its own dx and sums them.
    import kerasish

    kerasish.utils.set_random_seed(1)
    rng = np.random.default_rng(8)
    x = rng.normal(size=(3, 3)).astype(np.float32)
    y = rng.normal(size=(3, 1)).astype(np.float32)
    inp = kerasish.Input((3,))
    branch, head = layers.Dense(4, activation="tanh"), layers.Dense(1)
    h = branch(inp)
    model = kerasish.Model(inp, head(getattr(layers, kind)()([h, h])))
    model.compile(kerasish.optimizers.SGD(0.1), "mse")
    params = [[w.astype(np.float64) for w in d.get_weights()] for d in (branch, head)]
    model.fit(x, y, batch_size=3, epochs=1, shuffle=False, verbose=0)
    after = [[w.astype(np.float64) for w in d.get_weights()] for d in (branch, head)]
    for li, wi in [(0, 0), (0, 1), (1, 0)]:
        def loss(t, li=li, wi=wi):
            probe = [list(p) for p in params]
            probe[li][wi] = t
            return _e2e_loss(kind, [probe[0], probe[0], probe[1]], [x, x], y)

        assert_close((params[li][wi] - after[li][wi]) / 0.1, numeric_grad(loss, params[li][wi]),
                     rtol=1e-3, atol=1e-4, what=f"{kind} weight {li}/{wi}")
