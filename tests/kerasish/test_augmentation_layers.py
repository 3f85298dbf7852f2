"""Image preprocessing layers (kerasish.layers.preprocessing): identity at inference,
determinism per seed, Keras 3's outputs for Resizing / CenterCrop and for the affine
sampler, config round trips, and keras-io's "Image classification from scratch" model."""

import os
import types

import numpy as np
import pytest

import kerasish as keras
from kerasish import layers as _layers
from kerasish.layers import preprocessing as P
from kernels_numba import device as kdevice
from kernels_numba.ops import augment_geometric as ag

os.environ.setdefault("KERAS_BACKEND", "torch")

# keras.layers with the preprocessing layers (until kerasish.layers exports them).
layers = types.SimpleNamespace(**{**vars(_layers),
                                 **{c.__name__: c for c in P.PREPROCESSING_LAYERS}})


def run(layer, x, training, seed_batch=None):
    """The layer's forward (and its scratch) on a host batch, as the executor runs it."""
    shape = (None, *x.shape[1:])
    if not layer.built:
        layer._build_once(shape)
    layer.scratch = {k: np.zeros(s, d) for k, (s, d) in layer.scratch_shapes(len(x)).items()}
    y = np.full((len(x), *layer.compute_output_shape(shape)[1:]), np.nan, np.float32)
    layer.forward(y, np.ascontiguousarray(x, np.float32), training)
    return y


def run_on(device, layer, x, training):
    """run() with the buffers on `device` (cpu, or cuda under the simulator)."""
    shape = (None, *x.shape[1:])
    if not layer.built:
        layer._build_once(shape)
    layer.scratch = {k: kdevice.zeros(s, d, device)
                     for k, (s, d) in layer.scratch_shapes(len(x)).items()}
    y = kdevice.zeros((len(x), *layer.compute_output_shape(shape)[1:]), np.float32, device)
    xd = kdevice.to_device(np.ascontiguousarray(x, np.float32), device)
    layer.forward(y, xd, training)
    g = np.random.default_rng(1).standard_normal(y.shape).astype(np.float32)
    dx = kdevice.zeros(x.shape, np.float32, device)
    layer.backward(dx, kdevice.to_device(g, device), xd, y)
    return kdevice.to_host(y), kdevice.to_host(dx)


def images(n=3, h=7, w=6, c=3, seed=0, scale=255.0):
    return (np.random.default_rng(seed).random((n, h, w, c)) * scale).astype(np.float32)


RANDOM = [lambda s: P.RandomFlip(seed=s), lambda s: P.RandomRotation(0.2, seed=s),
          lambda s: P.RandomZoom(0.3, seed=s), lambda s: P.RandomTranslation(0.2, 0.3, seed=s),
          lambda s: P.RandomContrast(0.5, seed=s), lambda s: P.RandomBrightness(0.3, seed=s)]


@pytest.mark.parametrize("make", RANDOM)
def test_identity_at_inference_and_deterministic_per_seed(make):
    x = images()
    np.testing.assert_array_equal(run(make(5), x, training=False), x)
    a, b = make(5), make(5)
    first = run(a, x, True)
    np.testing.assert_array_equal(first, run(b, x, True))  # same seed, same step
    second = run(a, x, True)  # the next step draws new parameters
    assert not np.array_equal(first, second)
    assert not np.array_equal(first, run(make(6), x, True))
    assert not np.array_equal(first, x)


ALL = RANDOM + [lambda s: P.RandomCrop(4, 5, seed=s), lambda s: P.Resizing(5, 4),
                lambda s: P.Resizing(4, 5, crop_to_aspect_ratio=True),
                lambda s: P.CenterCrop(3, 5), lambda s: P.CenterCrop(9, 5)]


@pytest.mark.parametrize("make", ALL)
def test_forward_and_backward_equal_on_cpu_and_cuda(device, make):
    """Each layer's training forward and backward on the device's buffers equal the CPU's
    (one seed); the backward is the transpose of the forward (<dy, f(x)> = <dx, x> for
    these linear-in-x maps, brightness and contrast excepted)."""
    x = images(n=2, h=7, w=6, scale=1.0)
    y, dx = run_on(device, make(4), x, True)
    y_cpu, dx_cpu = run_on("cpu", make(4), x, True)
    np.testing.assert_allclose(y, y_cpu, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(dx, dx_cpu, rtol=1e-5, atol=1e-5)
    if not isinstance(make(0), (P.RandomBrightness, P.RandomContrast)):
        g = np.random.default_rng(1).standard_normal(y.shape)
        assert np.isclose(np.sum(g * y), np.sum(dx * x), rtol=1e-4)


def test_global_seed_fixes_unseeded_layers():
    x = images()
    keras.utils.set_random_seed(3)
    a = run(P.RandomRotation(0.3), x, True)
    keras.utils.set_random_seed(3)
    np.testing.assert_array_equal(run(P.RandomRotation(0.3), x, True), a)


def test_flip_modes_flip_whole_images():
    x = images(n=8)
    y = run(P.RandomFlip("horizontal", seed=1), x, True)
    flipped = [np.array_equal(y[i], x[i, :, ::-1]) for i in range(8)]
    kept = [np.array_equal(y[i], x[i]) for i in range(8)]
    assert all(f or k for f, k in zip(flipped, kept)) and any(flipped) and any(kept)
    y = run(P.RandomFlip(seed=1), x, True)  # both axes, one draw: same images flipped
    assert [np.array_equal(y[i], x[i, ::-1, ::-1]) for i in range(8)] == flipped


def test_colour_layers_follow_keras_formulas():
    x = images(n=4)
    layer = P.RandomBrightness(0.2, value_range=(0, 255), seed=2)
    y = run(layer, x, True)
    delta = layer.scratch["delta"]
    assert np.all(np.abs(delta) <= 0.2 * 255)
    np.testing.assert_allclose(y, np.clip(x + delta[:, None, None, None], 0, 255), rtol=1e-6)
    layer = P.RandomContrast(0.5, value_range=(0, 255), seed=2)
    y = run(layer, x, True)
    f = layer.scratch["factor"]
    assert np.all((f >= 1.0) & (f <= 1.5))  # Keras 3: a number f means (0, f)
    mu = x.astype(np.float64).mean(axis=(1, 2), keepdims=True)
    np.testing.assert_allclose(y, np.clip((x - mu) * f[:, None, None, None] + mu, 0, 255),
                               rtol=1e-5, atol=1e-3)


def test_random_crop_shapes_and_inference_center():
    x = images(n=4, h=9, w=8)
    layer = P.RandomCrop(5, 4, seed=1)
    y = run(layer, x, True)
    assert y.shape == (4, 5, 4, 3)
    for i in range(4):
        t, left = layer.scratch["offsets"][i]
        np.testing.assert_array_equal(y[i], x[i, t:t + 5, left:left + 4])
    center = run(layer, x, False)  # the aspect box (9, 7.2 -> 7) resized to (5, 4)
    ref = run(P.Resizing(5, 4, crop_to_aspect_ratio=True), x, False)
    np.testing.assert_array_equal(center, ref)


# Real Keras 3 (torch backend): Resizing, CenterCrop and the affine sampler.

@pytest.fixture(scope="module")
def real():
    pytest.importorskip("torch", reason="interop tests need torch")
    return pytest.importorskip("keras", reason="interop tests need Keras 3")


@pytest.mark.parametrize("size,kw", [((4, 5), {}), ((11, 3), {}),
                                     ((5, 5), {"crop_to_aspect_ratio": True}),
                                     ((4, 9), {"interpolation": "nearest"}),
                                     ((14, 12), {"interpolation": "nearest"})])
def test_resizing_matches_keras(real, size, kw):
    x = images(n=2, h=7, w=6)
    want = np.asarray(real.layers.Resizing(*size, **kw)(x))
    got = run(P.Resizing(*size, **kw), x, False)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5 * 255)


@pytest.mark.parametrize("size", [(5, 3), (7, 6), (9, 4)])
def test_center_crop_matches_keras(real, size):
    x = images(n=2, h=7, w=6)
    want = np.asarray(real.layers.CenterCrop(*size)(x))
    np.testing.assert_allclose(run(P.CenterCrop(*size), x, False), want, rtol=1e-5,
                               atol=1e-5 * 255)


@pytest.mark.parametrize("fill", ["reflect", "wrap", "constant", "nearest"])
@pytest.mark.parametrize("interpolation", ["bilinear", "nearest"])
def test_affine_sampler_matches_keras_affine_transform(real, fill, interpolation):
    """The matrices the Random* layers draw, applied by Keras's own affine_transform."""
    x = images(n=3, h=7, w=6)
    m = np.zeros((3, 6), np.float32)
    ag.random_affine_params(m, seed=4, step=0, height=7, width=6, rotation=(-1.0, 1.0),
                            zoom_height=(-0.3, 0.3), translate_width=(-0.2, 0.2))
    y = np.zeros_like(x)
    ag.affine_transform_forward(y, x, m, interpolation=interpolation, fill_mode=fill,
                                fill_value=7.0)
    transform = np.concatenate([m, np.zeros((3, 2), np.float32)], axis=1)
    want = np.asarray(real.ops.image.affine_transform(
        x, transform, interpolation=interpolation, fill_mode=fill, fill_value=7.0).cpu())
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5 * 255)


# configs


CONFIGS = [P.RandomFlip("vertical", seed=3), P.RandomRotation((-0.1, 0.2), fill_mode="wrap"),
           P.RandomZoom(0.2, (-0.1, 0.3), interpolation="nearest", fill_value=1.0),
           P.RandomTranslation(0.1, (0.0, 0.2), fill_mode="constant"),
           P.RandomCrop(4, 5, seed=1), P.RandomContrast((0.1, 0.4), value_range=(0, 1)),
           P.RandomBrightness(0.3, value_range=(1, -1), seed=2),
           P.Resizing(8, 9, interpolation="nearest", crop_to_aspect_ratio=True),
           P.CenterCrop(3, 4)]


@pytest.mark.parametrize("layer", CONFIGS, ids=lambda layer: type(layer).__name__)
def test_config_round_trip(layer):
    config = layer.get_config()
    again = type(layer).from_config(config)
    assert again.get_config() == config


@pytest.mark.parametrize("layer", CONFIGS, ids=lambda layer: type(layer).__name__)
def test_config_loads_in_keras(real, layer):
    config = layer.get_config()
    config.pop("batch_input_shape", None)
    theirs = getattr(real.layers, type(layer).__name__).from_config(config).get_config()
    for key, value in config.items():
        if key in ("name", "trainable", "dtype"):
            continue
        mine = list(value) if isinstance(value, tuple) else value
        other = list(theirs[key]) if isinstance(theirs[key], tuple) else theirs[key]
        assert mine == other, (key, value, theirs[key])


def test_unsupported_arguments_are_refused_by_name():
    for make, match in [(lambda: P.RandomFlip("diagonal"), "RandomFlip: expected `mode`"),
                        (lambda: P.RandomRotation(0.1, fill_mode="mirror"), "fill_mode"),
                        (lambda: P.RandomZoom(-1.0), "RandomZoom: expected `height_factor`"),
                        (lambda: P.RandomRotation(1.5), "RandomRotation: the `factor`"),
                        (lambda: P.Resizing(3, 3, pad_to_aspect_ratio=True),
                         "pad_to_aspect_ratio=True is not supported"),
                        (lambda: P.Resizing(3, 3, interpolation="bicubic"), "interpolation"),
                        (lambda: P.CenterCrop(3, 3, data_format="channels_first"),
                         "channels_last"),
                        (lambda: P.RandomContrast(0.2, value_range=(5, 1)), "value_range")]:
        with pytest.raises(ValueError, match=match):
            make()
    with pytest.raises(ValueError, match="RandomRotation .*known height and width"):
        P.RandomRotation(0.1)._build_once((None, 8))


# models


def _augmented_model(seed):
    keras.utils.set_random_seed(seed)
    model = keras.Sequential([keras.Input((9, 8, 3)), layers.Conv2D(2, 3),
                              layers.RandomRotation(0.2), layers.RandomFlip(),
                              layers.RandomContrast(0.3, value_range=(-5, 5)),
                              layers.RandomBrightness(0.1, value_range=(-5, 5)),
                              layers.RandomZoom(0.2), layers.RandomTranslation(0.1, 0.1),
                              layers.RandomCrop(5, 6), layers.Resizing(4, 4),
                              layers.CenterCrop(3, 3), layers.Flatten(), layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    return model


def test_fit_trains_layers_before_the_augmentation_deterministically():
    x = np.random.default_rng(0).standard_normal((6, 9, 8, 3)).astype(np.float32)
    y = np.random.default_rng(1).standard_normal((6, 2)).astype(np.float32)
    weights = []
    for _ in range(2):
        model = _augmented_model(11)
        before = model.layers[0].get_weights()[0].copy()
        model.fit(x, y, batch_size=3, epochs=1, verbose=0, shuffle=False)
        weights.append(model.get_weights())
        assert not np.array_equal(model.layers[0].get_weights()[0], before)  # dx flowed
        assert model.predict(x, verbose=0).shape == (6, 2)
    for a, b in zip(*weights):
        np.testing.assert_array_equal(a, b)


def make_model(input_shape, num_classes):
    """keras-io's "Image classification from scratch" model, as written there."""
    data_augmentation_layers = [layers.RandomFlip("horizontal"), layers.RandomRotation(0.1)]

    def data_augmentation(images):
        for layer in data_augmentation_layers:
            images = layer(images)
        return images

    inputs = keras.Input(shape=input_shape)
    x = data_augmentation(inputs)
    x = layers.Rescaling(1.0 / 255)(x)
    x = layers.Conv2D(128, 3, strides=2, padding="same")(x)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)
    previous_block_activation = x  # Set aside residual
    for size in [256, 512, 728]:
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(size, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)
        x = layers.Activation("relu")(x)
        x = layers.SeparableConv2D(size, 3, padding="same")(x)
        x = layers.BatchNormalization()(x)
        x = layers.MaxPooling2D(3, strides=2, padding="same")(x)
        # Project residual
        residual = layers.Conv2D(size, 1, strides=2, padding="same")(previous_block_activation)
        x = layers.add([x, residual])  # Add back residual
        previous_block_activation = x  # Set aside next residual
    x = layers.SeparableConv2D(1024, 3, padding="same")(x)
    x = layers.BatchNormalization()(x)
    x = layers.Activation("relu")(x)
    x = layers.GlobalAveragePooling2D()(x)
    if num_classes == 2:
        units = 1
    else:
        units = num_classes
    x = layers.Dropout(0.25)(x)
    # We specify activation=None so as to return logits
    outputs = layers.Dense(units, activation=None)(x)
    return keras.Model(inputs, outputs)


def test_keras_io_image_classification_from_scratch():
    image_size = (32, 32)
    rng = np.random.default_rng(0)
    x = (rng.random((2, *image_size, 3)) * 255).astype(np.float32)
    y = np.array([0, 1], np.float32)
    # The data_augmentation Sequential of the guide's first part, on its own.
    data_augmentation = keras.Sequential([layers.RandomFlip("horizontal"),
                                          layers.RandomRotation(0.1)])
    np.testing.assert_array_equal(data_augmentation(x), x)  # inference: unchanged
    model = make_model(input_shape=image_size + (3,), num_classes=2)
    model.compile(optimizer=keras.optimizers.Adam(3e-4),
                  loss=keras.losses.BinaryCrossentropy(from_logits=True),
                  metrics=[keras.metrics.BinaryAccuracy(name="acc")])
    history = model.fit(x, y, epochs=1, batch_size=2, verbose=0)
    assert np.isfinite(history.history["loss"][0])
    predictions = model.predict(x, verbose=0)
    score = float(keras.ops.sigmoid(predictions[0][0]))
    assert predictions.shape == (2, 1) and 0.0 <= score <= 1.0


def test_keras_file_crosses_with_keras(real, tmp_path, monkeypatch):
    """Saved with the layers registered as built-ins (as kerasish.layers will list them),
    the .keras file loads in kerasish and in Keras 3 with the same predictions."""
    for cls in P.PREPROCESSING_LAYERS:
        monkeypatch.setitem(_layers.BUILTIN, cls.__name__, cls)
    x = images(n=4, h=9, w=8, scale=1.0)
    model = keras.Sequential([keras.Input((9, 8, 3)), P.RandomFlip("horizontal", seed=1),
                              P.RandomRotation(0.1), P.RandomContrast(0.2),
                              P.RandomBrightness(0.1, value_range=(0, 1)),
                              P.Resizing(6, 6), P.CenterCrop(4, 4), layers.Flatten(),
                              layers.Dense(2)])
    model.compile("sgd", "mse")
    model.fit(x, np.ones((4, 2), np.float32), epochs=1, verbose=0)
    model.save(tmp_path / "aug.keras")
    want = model.predict(x, verbose=0)
    again = keras.models.load_model(tmp_path / "aug.keras")
    assert [type(la).__name__ for la in again.layers][:6] == [
        "RandomFlip", "RandomRotation", "RandomContrast", "RandomBrightness", "Resizing",
        "CenterCrop"]
    np.testing.assert_array_equal(again.predict(x, verbose=0), want)
    theirs = real.models.load_model(tmp_path / "aug.keras")
    np.testing.assert_allclose(np.asarray(theirs.predict(x, verbose=0)), want, atol=1e-5)
