"""A model built for None sizes, called on a known size (issue 21's transfer learning):
as in Keras 3 the call re-runs the base's shape inference on the new input shape, so
its output is concrete, Flatten and Dense build after it, and the outer model is
static (one plan; the nested calls bind the sizes that follow from its input)."""

import numpy as np

import kerasish as keras
from tests.kerasish.keras3 import real_keras

L = keras.layers
SIZE = (40, 40, 3)


def _base(M, shape=(None, None, 3), name="base"):
    """Xception's entry-flow block, small: strided conv, separable conv + pooling beside
    a strided 1x1 residual, Add (None sizes merge to None as in Keras)."""
    x = M.Input(shape)
    a = M.layers.Conv2D(8, 3, strides=2, use_bias=False)(x)
    a = M.layers.Activation("relu")(M.layers.BatchNormalization()(a))
    r = M.layers.Conv2D(8, 1, strides=2, padding="same")(a)
    b = M.layers.BatchNormalization()(M.layers.SeparableConv2D(8, 3, padding="same")(a))
    b = M.layers.MaxPooling2D(3, strides=2, padding="same")(b)
    return M.Model(x, M.layers.Add()([b, r]), name=name)


def _transfer(M, base, shape=SIZE):
    base.trainable = False
    inputs = M.Input(shape)
    features = base(inputs, training=False)
    flat = M.layers.Flatten()(features)
    return M.Model(inputs, M.layers.Dense(1)(flat)), (features, flat)


def _direct(model):
    """The same network built on the known size from the start, with the same weights."""
    base = _base(keras, SIZE, name="direct_base")
    base.set_weights(model.get_layer("base").get_weights())
    out, _ = _transfer(keras, base)
    out.layers[-1].set_weights(model.layers[-1].get_weights())
    return out


def test_nested_call_gives_concrete_shapes():
    base = _base(keras)
    model, (features, flat) = _transfer(keras, base)
    assert base.output_shape == (None, None, None, 8)  # the base's own shapes stay
    assert features.shape == (None, 10, 10, 8) and flat.shape == (None, 800)
    assert model.output_shape == (None, 1) and not model._dynamic
    assert model.count_params() == base.count_params() + 801
    seq = keras.Sequential([keras.Input((None, None, 3)), L.Conv2D(4, 3, strides=2),
                            L.MaxPooling2D()])
    assert seq(keras.Input((12, 11, 3))).shape == (None, 2, 2, 4)
    assert seq.output_shape == (None, None, None, 4)
    x = keras.Input((None, None, 3))
    outer = keras.Model(x, seq(x))  # a None-size model nesting one: inferred through both
    assert outer(keras.Input((13, 9, 3))).shape == (None, 3, 2, 4)


def test_fit_predict_equal_a_model_built_on_the_known_size(rng):
    base = _base(keras)
    model, _ = _transfer(keras, base)
    frozen = base.get_weights()
    xs = rng.standard_normal((6, *SIZE)).astype(np.float32)
    ys = rng.standard_normal((6, 1)).astype(np.float32)
    np.testing.assert_allclose(model.predict(xs, verbose=0), _direct(model).predict(
        xs, verbose=0), rtol=1e-6, atol=1e-6)
    model.compile("adam", "mse")
    hist = model.fit(xs, ys, batch_size=4, epochs=2, verbose=0)
    assert np.all(np.isfinite(hist.history["loss"]))
    for want, got in zip(frozen, base.get_weights()):  # frozen, BatchNormalization included
        np.testing.assert_array_equal(want, got)
    assert not np.array_equal(model.layers[-1].get_weights()[0], 0)
    np.testing.assert_allclose(model.predict(xs, verbose=0), _direct(model).predict(
        xs, verbose=0), rtol=1e-6, atol=1e-6)
    assert {len(key) for key in model._executors} == {2}  # no per-signature plans
    assert base.layers[1].input_shape == (None, None, None, 3)  # its own shapes, restored


def test_one_base_on_two_known_sizes(rng):
    """Two calls of one base in one graph: each call's concrete sizes, shared weights."""
    base = _base(keras)
    a, b = keras.Input(SIZE), keras.Input((24, 20, 3))
    fa, fb = base(a), base(b)
    assert (fa.shape, fb.shape) == ((None, 10, 10, 8), (None, 6, 5, 8))
    both = L.Concatenate()([L.Flatten()(fa), L.Flatten()(fb)])
    model = keras.Model([a, b], L.Dense(2)(both))
    assert model.layers[-2].output_shape == (None, 1040) and not model._dynamic
    xa = rng.standard_normal((3, *SIZE)).astype(np.float32)
    xb = rng.standard_normal((3, 24, 20, 3)).astype(np.float32)
    feats = np.concatenate([base.predict(xa, verbose=0).reshape(3, -1),
                            base.predict(xb, verbose=0).reshape(3, -1)], axis=1)
    w, bias = model.layers[-1].get_weights()
    np.testing.assert_allclose(model.predict([xa, xb], verbose=0), feats @ w + bias,
                               rtol=1e-5, atol=1e-5)


class _Gates(L.Layer):
    """A call() of keras.ops (traced): its shapes are inferred through its trace."""

    def call(self, x):
        return keras.ops.concatenate([keras.ops.sigmoid(x), keras.ops.relu(x)], axis=-1)


def test_traced_layer_inside_the_base(rng):
    x = keras.Input((None, None, 3))
    base = keras.Model(x, _Gates()(L.Conv2D(2, 3)(x)), name="base")
    inputs = keras.Input((7, 6, 3))
    features = base(inputs)
    assert base.output_shape == (None, None, None, 4) and features.shape == (None, 5, 4, 4)
    model = keras.Model(inputs, L.Dense(1)(L.Flatten()(features)))
    assert not model._dynamic
    xs = rng.standard_normal((2, 7, 6, 3)).astype(np.float32)
    w, b = model.layers[-1].get_weights()
    np.testing.assert_allclose(model.predict(xs, verbose=0),
                               base.predict(xs, verbose=0).reshape(2, -1) @ w + b,
                               rtol=1e-5, atol=1e-6)
    model.compile("sgd", "mse")
    assert np.isfinite(model.fit(xs, np.zeros((2, 1), np.float32), verbose=0)
                       .history["loss"][0])


def test_nested_predict_on_device(on_device, rng):
    """The bound inner sizes on the CUDA kernels (simulator) and the CPU twins."""
    base = keras.Sequential([keras.Input((None, None, 3)), L.Conv2D(2, 3, strides=2)])
    inputs = keras.Input((7, 6, 3))
    model = keras.Model(inputs, L.Dense(1)(L.Flatten()(base(inputs))))
    assert not model._dynamic
    x = rng.standard_normal((2, 7, 6, 3)).astype(np.float32)
    w, b = model.layers[-1].get_weights()
    want = base.predict(x, verbose=0).reshape(2, -1) @ w + b
    np.testing.assert_allclose(model.predict(x, verbose=0), want, rtol=1e-5, atol=1e-5)


# -- beside real Keras 3 -----------------------------------------------------------

def _shape_column(model):
    lines = []
    model.summary(print_fn=lambda line, *args, **kwargs: lines.append(line))
    rows = [line.split("│") for line in "\n".join(lines).splitlines()
            if line.startswith("│") and "(" in line]
    return [row[2].strip() for row in rows]


def test_shapes_equal_keras():
    real = real_keras()
    theirs, (t_features, t_flat) = _transfer(real, _base(real))
    ours, (o_features, o_flat) = _transfer(keras, _base(keras))
    assert o_features.shape == tuple(t_features.shape)
    assert o_flat.shape == tuple(t_flat.shape)
    assert ours.output_shape == tuple(theirs.output_shape)
    assert ours.count_params() == theirs.count_params()
    for mine, their in zip(ours.get_layer("base").layers, theirs.get_layer("base").layers):
        assert mine.output_shape == tuple(their.output.shape), mine.name
    # summary rows other than the nested model's: the input, Flatten and Dense
    want, got = _shape_column(theirs), _shape_column(ours)
    assert len(got) == len(want) == 4
    assert [got[0], *got[2:]] == [want[0], *want[2:]] == ["(None, 40, 40, 3)", "(None, 800)",
                                                          "(None, 1)"]


def test_xception_base_on_a_known_size_equals_keras():
    """The applications' default (None, None, 3) input, then Flatten: Keras's shapes."""
    real = real_keras()
    shapes, params = [], []
    for M in (real, keras):
        base = M.applications.Xception(weights=None, include_top=False)
        inputs = M.Input((75, 83, 3))
        features = base(inputs)
        model = M.Model(inputs, M.layers.Dense(1)(M.layers.Flatten()(features)))
        shapes.append(tuple(features.shape))
        params.append(model.count_params())
    assert shapes[1] == shapes[0] == (None, 3, 3, 2048) and params[1] == params[0]
    assert not model._dynamic


def test_summary_shows_the_nested_calls_concrete_shape_as_keras():
    real = real_keras()
    theirs, _ = _transfer(real, _base(real))
    ours, _ = _transfer(keras, _base(keras))
    assert _shape_column(ours)[1] == _shape_column(theirs)[1] == "(None, 10, 10, 8)"


def _sequential_base(M):
    """The same block as a Conv2D stack (no residual): a nested Sequential."""
    return M.Sequential([
        M.Input((None, None, 3)), M.layers.Conv2D(8, 3, strides=2, use_bias=False),
        M.layers.BatchNormalization(), M.layers.Activation("relu"),
        M.layers.SeparableConv2D(8, 3, padding="same"), M.layers.BatchNormalization(),
        M.layers.MaxPooling2D(3, strides=2, padding="same")], name="base")


def _files_cross(real, make_base, tmp_path, rng):
    xs = rng.standard_normal((3, *SIZE)).astype(np.float32)
    ours, (features, _) = _transfer(keras, make_base(keras))
    assert features.shape == (None, 10, 10, 8)
    ours.compile("adam", "mse")
    ours.fit(xs, np.ones((3, 1), np.float32), verbose=0)
    want = ours.predict(xs, verbose=0)
    ours.save(tmp_path / "ours.keras")
    theirs = real.models.load_model(tmp_path / "ours.keras")
    assert tuple(theirs.get_layer("base").outputs[0].shape) == (None, None, None, 8)
    np.testing.assert_allclose(np.asarray(theirs.predict(xs, verbose=0)), want, atol=1e-5)
    back = keras.models.load_model(tmp_path / "ours.keras")
    assert not back._dynamic and back.get_layer("base").output_shape == (None, None, None, 8)
    np.testing.assert_allclose(back.predict(xs, verbose=0), want, atol=1e-5)

    theirs, _ = _transfer(real, make_base(real))
    want = np.asarray(theirs.predict(xs, verbose=0))
    theirs.save(tmp_path / "theirs.keras")
    mine = keras.models.load_model(tmp_path / "theirs.keras")
    assert not mine._dynamic and mine.layers[-2].output_shape == (None, 800)
    np.testing.assert_allclose(mine.predict(xs, verbose=0), want, atol=1e-5)


def test_saved_files_cross_with_keras(tmp_path, rng):
    _files_cross(real_keras(), _sequential_base, tmp_path, rng)


def test_saved_files_with_a_nested_functional_cross_with_keras(tmp_path, rng):
    _files_cross(real_keras(), _base, tmp_path, rng)
