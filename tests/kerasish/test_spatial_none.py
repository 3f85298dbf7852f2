"""Convolutional models with None spatial sizes (keras.Input((None, None, 3)), Keras's
default input of the applications without their top): built symbolically with Keras's
None output shapes, run on each batch's image size (one plan per size), saved and
loaded across real Keras 3 (torch backend)."""

import numpy as np
import pytest

import kerasish as keras
from tests.kerasish.keras3 import real_keras

L = keras.layers


def _cnn():
    return [L.Conv2D(4, 3), L.GlobalAveragePooling2D(), L.Dense(2)]


def _sequential(shape):
    return keras.Sequential([keras.Input(shape), *_cnn()])


def _stack(x):
    """Every spatial layer family, on a None-size input: its Keras 3 shapes are below."""
    a = L.Conv2D(4, 3, padding="same", activation="relu")(x)
    b = L.DepthwiseConv2D(3, padding="same")(a)
    c = L.SeparableConv2D(4, 3, padding="same", activation="elu")(b)
    d = L.LayerNormalization()(L.BatchNormalization()(L.Add()([a, c])))
    e = L.ZeroPadding2D(1)(L.MaxPooling2D(2, padding="same")(d))
    e = L.Cropping2D(1)(L.Conv2DTranspose(3, 3, strides=2)(e))
    e = L.UpSampling2D()(L.AveragePooling2D(3, 2, padding="same")(e))
    f = L.Multiply()([e, L.Conv2D(3, 1)(e)])
    f = L.Concatenate()([f, L.Conv2D(2, 1)(e)])
    f = L.RandomContrast(0.2, seed=3)(L.RandomFlip(seed=2)(f))
    return L.Dense(2)(L.GlobalMaxPooling2D()(f))


def test_window_geometry_keeps_none_sizes():
    from kernels_numba import ops

    assert ops.conv2d_output_shape((1, None, 7, 3), (3, 3, 3, 4)) == (1, None, 5, 4)
    assert ops.conv2d_output_shape((1, 8, None, 3), (3, 3, 3, 4), strides=2,
                                   padding="same") == (1, 4, None, 4)
    assert ops.pool2d_output_shape((1, 9, None, 3), pool_size=2, strides=None,
                                   padding="same") == (1, 5, None, 3)
    with pytest.raises(ValueError, match="larger than the input"):  # the known axis is checked
        ops.conv2d_output_shape((1, None, 2, 3), (3, 3, 3, 4))


def test_sequential_predicts_any_size_like_a_static_model(rng):
    dyn = _sequential((None, None, 3))
    assert dyn.output_shape == (None, 2)
    assert [layer.output_shape for layer in dyn.layers] == [
        (None, None, None, 4), (None, 4), (None, 2)]
    for shape in [(2, 9, 11, 3), (3, 16, 13, 3)]:
        x = rng.standard_normal(shape).astype(np.float32)
        static = _sequential(shape[1:])
        static.set_weights(dyn.get_weights())
        np.testing.assert_array_equal(dyn.predict(x, verbose=0), static.predict(x, verbose=0))
    # symbolic shapes are back after the runs (summary and saving read them)
    assert dyn.layers[0].output_shape == (None, None, None, 4)


def test_every_spatial_family_matches_a_static_model(rng):
    x = keras.Input((None, None, 3))
    dyn = keras.Model(x, _stack(x))
    inner = [layer.output_shape for layer in dyn.layers[1:-2]]
    assert all(s[1:3] == (None, None) for s in inner), inner
    for shape in [(2, 9, 11, 3), (1, 6, 5, 3)]:
        xs = rng.standard_normal(shape).astype(np.float32)
        xi = keras.Input(shape[1:])
        static = keras.Model(xi, _stack(xi))
        static.set_weights(dyn.get_weights())
        np.testing.assert_allclose(dyn.predict(xs, verbose=0), static.predict(xs, verbose=0),
                                   rtol=1e-6, atol=1e-6)


def test_squeeze_excite_broadcast_decided_per_size(rng):
    """Multiply of (None, None, None, C) by (None, 1, 1, C): Keras's output shape is
    (None, None, None, C); at run time the pair broadcasts (EfficientNet's SE block)."""
    x = keras.Input((None, None, 3))
    s = L.Reshape((1, 1, 3))(L.GlobalAveragePooling2D()(x))
    y = L.Multiply()([x, L.Conv2D(3, 1, activation="sigmoid")(s)])
    model = keras.Model(x, y)
    assert model.output_shape == (None, None, None, 3)
    xs = rng.standard_normal((2, 5, 4, 3)).astype(np.float32)
    w, b = model.layers[-2].get_weights()
    gate = 1 / (1 + np.exp(-(xs.astype(np.float64).mean(axis=(1, 2)) @ w[0, 0] + b)))
    np.testing.assert_allclose(model.predict(xs, verbose=0), xs * gate[:, None, None, :],
                               rtol=1e-5, atol=1e-6)


def test_image_preprocessing_layers_take_none_sizes(rng):
    def net(x):
        a = L.RandomContrast(0.2, seed=2)(L.RandomZoom(0.1, seed=1)(x))
        a = L.RandomTranslation(0.1, 0.2, seed=4)(L.RandomRotation(0.05, seed=5)(a))
        a = L.Resizing(8, 9, crop_to_aspect_ratio=True)(L.CenterCrop(6, 7)(a))
        a = L.Conv2D(3, 3, padding="same")(L.RandomCrop(5, 6, seed=3)(a))
        return L.Dense(2)(L.GlobalMaxPooling2D()(a))

    x = keras.Input((None, None, 3))
    dyn = keras.Model(x, net(x))
    assert [layer.output_shape[1:3] for layer in dyn.layers[1:8]] == [
        (None, None)] * 4 + [(6, 7), (8, 9), (5, 6)]  # Keras 3's shapes
    for shape in [(2, 9, 11, 3), (3, 5, 4, 3)]:  # larger and smaller than the crops
        xs = rng.standard_normal(shape).astype(np.float32)
        xi = keras.Input(shape[1:])
        static = keras.Model(xi, net(xi))
        static.set_weights(dyn.get_weights())
        np.testing.assert_allclose(dyn.predict(xs, verbose=0), static.predict(xs, verbose=0),
                                   rtol=1e-6, atol=1e-6)
    dyn.compile("sgd", "mse")
    for shape in [(4, 9, 11, 3), (4, 16, 13, 3)]:  # training: the random transforms run
        hist = dyn.fit(rng.standard_normal(shape).astype(np.float32),
                       np.zeros((4, 2), np.float32), verbose=0)
        assert np.isfinite(hist.history["loss"][0])


def test_one_dimensional_none_length(rng):
    def net(x):
        y = L.UpSampling1D()(L.Conv1D(4, 3, padding="causal")(x))
        return L.Dense(2)(L.GlobalAveragePooling1D()(L.MaxPooling1D()(y)))

    x = keras.Input((None, 3))
    dyn = keras.Model(x, net(x))
    assert [layer.output_shape for layer in dyn.layers[1:4]] == [
        (None, None, 4), (None, None, 4), (None, None, 4)]
    xs = rng.standard_normal((2, 7, 3)).astype(np.float32)
    xi = keras.Input((7, 3))
    static = keras.Model(xi, net(xi))
    static.set_weights(dyn.get_weights())
    np.testing.assert_array_equal(dyn.predict(xs, verbose=0), static.predict(xs, verbose=0))


def test_fit_on_two_sizes_shares_weights_with_one_plan_per_size(rng):
    model = _sequential((None, None, 3))
    model.compile("sgd", "mse")
    kernel = model.layers[0].kernel
    before = kernel.numpy().copy()
    sizes = [(4, 9, 11, 3), (4, 16, 13, 3)]
    for shape in sizes:
        hist = model.fit(rng.standard_normal(shape).astype(np.float32),
                         rng.standard_normal((4, 2)).astype(np.float32), epochs=2, verbose=0)
        assert np.all(np.isfinite(hist.history["loss"]))
        after = kernel.numpy().copy()
        assert not np.array_equal(before, after)  # the one kernel trains on both sizes
        before = after
    assert model.layers[0].kernel is kernel
    signatures = {key[2] for key in model._executors if len(key) > 2}
    assert {((9, 11, 3),), ((16, 13, 3),)} <= signatures


def test_base_model_with_none_input_nested_on_a_known_size(rng):
    """Transfer learning: a base built for (None, None, 3), frozen, called on a fixed-size
    Input; the base's call gives concrete shapes (as in Keras), so the outer model is
    static and its one plan binds the inner calls' sizes."""
    base = keras.Sequential([keras.Input((None, None, 3)), L.Conv2D(4, 3),
                             L.BatchNormalization(), L.MaxPooling2D()])
    base.trainable = False
    inputs = keras.Input((12, 10, 3))
    outputs = L.Dense(1)(L.GlobalAveragePooling2D()(base(inputs, training=False)))
    model = keras.Model(inputs, outputs)
    # was `model._dynamic`: the nested call's shapes are concrete now (Keras's (None, 5, 4, 4))
    assert base(inputs).shape == (None, 5, 4, 4) and not model._dynamic
    xs = rng.standard_normal((4, 12, 10, 3)).astype(np.float32)
    frozen = base.get_weights()
    model.compile("adam", "mse")
    assert np.isfinite(model.fit(xs, np.zeros((4, 1), np.float32), verbose=0)
                       .history["loss"][0])
    for want, got in zip(frozen, base.get_weights()):
        np.testing.assert_array_equal(want, got)
    assert base.layers[0].input_shape == (None, None, None, 3)  # its own shapes, restored
    feats = base.predict(xs, verbose=0).mean(axis=(1, 2))
    w, b = model.layers[-1].get_weights()
    np.testing.assert_allclose(model.predict(xs, verbose=0), feats @ w + b, rtol=1e-5,
                               atol=1e-6)


def test_summary_shows_none_before_and_after_running(rng):
    model = _sequential((None, None, 3))
    lines = []
    model.summary(print_fn=lines.append)
    text = "\n".join(lines)
    assert "(None, None, None, 4)" in text and "(None, 2)" in text
    model.predict(rng.standard_normal((1, 7, 8, 3)).astype(np.float32), verbose=0)
    lines.clear()
    model.summary(print_fn=lines.append)
    assert "(None, None, None, 4)" in "\n".join(lines)


def test_flatten_after_none_size_is_refused_by_name():
    with pytest.raises(ValueError, match=r"(?s)(flatten|dense).*None.*") as info:
        keras.Sequential([keras.Input((None, None, 3)), L.Conv2D(4, 3), L.Flatten(),
                          L.Dense(2)])
    assert "(None, None, None, 4)" in str(info.value) or "fully-defined" in str(info.value)


def test_window_larger_than_the_batch_is_named_at_run_time():
    model = _sequential((None, None, 3))
    with pytest.raises(ValueError, match=r"Conv2D conv2d.*larger than the input.*\(1, 2, 5, 3\)"):
        model.predict(np.zeros((1, 2, 5, 3), np.float32), verbose=0)


def test_none_spatial_predict_on_device(on_device, rng):
    """The CUDA kernels (simulator) and the CPU twins, each against a static-size model."""
    dyn = _sequential((None, None, 3))
    for shape in [(2, 5, 6, 3), (1, 4, 7, 3)]:
        x = rng.standard_normal(shape).astype(np.float32)
        static = _sequential(shape[1:])
        static.set_weights(dyn.get_weights())
        np.testing.assert_allclose(dyn.predict(x, verbose=0), static.predict(x, verbose=0),
                                   rtol=1e-6, atol=1e-6)


# -- beside real Keras 3 -----------------------------------------------------------

def test_layer_shapes_equal_keras():
    real = real_keras()
    cases = [
        (lambda M: M.Conv2D(4, 3, strides=2, padding="same"), (None, None, 3)),
        (lambda M: M.Conv2DTranspose(4, 3, strides=2), (None, None, 3)),
        (lambda M: M.Conv2DTranspose(4, 3, strides=2), (None, 5, 3)),
        (lambda M: M.SeparableConv2D(4, 3), (None, None, 3)),
        (lambda M: M.UpSampling2D(), (None, 6, 3)),
        (lambda M: M.ZeroPadding2D(((1, 2), (0, 1))), (5, None, 3)),
        (lambda M: M.Cropping2D(1), (None, None, 3)),
        (lambda M: M.Resizing(5, 6), (None, None, 3)),
        (lambda M: M.CenterCrop(5, 6), (None, None, 3)),
        (lambda M: M.RandomCrop(5, 6), (None, None, 3)),
        (lambda M: M.RandomRotation(0.1), (None, None, 3)),
        (lambda M: M.Conv1D(4, 3), (None, 3)),
        (lambda M: M.UpSampling1D(), (None, 3)),
    ]
    for make, shape in cases:
        theirs = tuple(make(real.layers)(real.Input(shape)).shape)
        ours = tuple(make(L)(keras.Input(shape)).shape)
        assert ours == theirs, (make(L), shape)


@pytest.mark.parametrize("name", ["Xception", "ResNet50", "MobileNetV2", "VGG16",
                                  "EfficientNetB0"])
def test_applications_default_to_none_spatial_input(name):
    real = real_keras()
    theirs = getattr(real.applications, name)(weights=None, include_top=False)
    ours = getattr(keras.applications, name)(weights=None, include_top=False)
    assert ours.inputs[0].shape == tuple(theirs.inputs[0].shape) == (None, None, None, 3)
    assert ours.output_shape == theirs.output_shape
    assert ours.count_params() == theirs.count_params()
    if name == "Xception":  # predicts on two sizes with Keras's output shapes
        for shape in [(1, 71, 71, 3), (1, 96, 80, 3)]:
            x = np.random.default_rng(0).random(shape).astype(np.float32)
            assert ours.predict(x, verbose=0).shape == \
                tuple(theirs.compute_output_shape(shape))


def test_saved_files_cross_with_keras(tmp_path, rng):
    real = real_keras()
    ours = _sequential((None, None, 3))
    x = rng.standard_normal((2, 9, 7, 3)).astype(np.float32)
    want = ours.predict(x, verbose=0)  # run first: the file keeps the None shapes
    ours.save(tmp_path / "ours.keras")
    theirs = real.models.load_model(tmp_path / "ours.keras")
    assert tuple(theirs.inputs[0].shape) == (None, None, None, 3)
    np.testing.assert_allclose(np.asarray(theirs.predict(x, verbose=0)), want, atol=1e-5)

    theirs = real.Sequential([real.Input((None, None, 3)), real.layers.Conv2D(4, 3),
                              real.layers.GlobalAveragePooling2D(), real.layers.Dense(2)])
    want = np.asarray(theirs.predict(x, verbose=0))
    theirs.save(tmp_path / "theirs.keras")
    back = keras.models.load_model(tmp_path / "theirs.keras")
    assert back.inputs[0].shape == (None, None, None, 3)
    np.testing.assert_allclose(back.predict(x, verbose=0), want, atol=1e-5)

    theirs.save_weights(tmp_path / "theirs.weights.h5")
    mine = _sequential((None, None, 3))
    mine.load_weights(tmp_path / "theirs.weights.h5")
    np.testing.assert_allclose(mine.predict(x, verbose=0), want, atol=1e-5)
    mine.save_weights(tmp_path / "ours.weights.h5")
    again = real.Sequential([real.Input((None, None, 3)), real.layers.Conv2D(4, 3),
                             real.layers.GlobalAveragePooling2D(), real.layers.Dense(2)])
    again.load_weights(tmp_path / "ours.weights.h5")
    np.testing.assert_allclose(np.asarray(again.predict(x, verbose=0)), want, atol=1e-5)


def test_traced_binary_ops_on_none_sizes(rng):
    """keras.ops arithmetic in a call() layer on (None, None, C): the symbolic trace keeps
    the unknown sizes, each batch's sizes are traced and checked."""
    from kerasish import ops

    class Mix(keras.layers.Layer):
        def call(self, x):
            return x * 2.0 + x - ops.mean(x, axis=-1, keepdims=True)

    inp = keras.Input((None, None, 3))
    mixed = Mix()(inp)
    assert tuple(mixed.shape) == (None, None, None, 3)
    model = keras.Model(inp, keras.layers.GlobalAveragePooling2D()(mixed))
    for shape in [(2, 5, 7, 3), (1, 4, 4, 3)]:
        x = rng.random(shape, dtype=np.float32)
        want = (3.0 * x - x.mean(-1, keepdims=True)).mean(axis=(1, 2))
        np.testing.assert_allclose(model.predict(x, verbose=0), want, rtol=1e-5, atol=1e-6)


def test_broadcasting_still_names_a_misplaced_batch_axis():
    from kerasish.ops.dispatch import broadcast_shapes

    assert broadcast_shapes("add", (None, None, 4, 3), (None, 1, 1, 3)) == (None, None, 4, 3)
    assert broadcast_shapes("add", (None, None, 3), (3,)) == (None, None, 3)
    with pytest.raises(ValueError, match=r"ops.add: the batch axis \(None\)"):
        broadcast_shapes("add", (None, 3), (2, None, 3))
    with pytest.raises(ValueError, match="incompatible shapes for broadcasting"):
        broadcast_shapes("add", (None, None, 3), (None, None, 4))
