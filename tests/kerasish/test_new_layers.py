"""The issue-18 layers: forward against float64 NumPy, backward against finite
differences (kerasish.testing.check_gradients), frozen layers, Sequential and functional
models, configs, argument errors; both devices."""

import numpy as np
import pytest

import kernels_numba
import kerasish
from kerasish import layers as L
from kerasish.testing import check_gradients


def _forward(layer, x, training=False):
    model = kerasish.Sequential([L.Input(x.shape[1:]), layer])
    return model.predict(x, verbose=0) if not training else None


def _x(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def _ln_ref(x, gamma, beta, axes, eps=1e-3):
    x = x.astype(np.float64)
    mu = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    return (x - mu) / np.sqrt(var + eps) * gamma + beta


GRADIENT_CASES = {
    "layernorm": (lambda: L.LayerNormalization(), (3, 2, 5)),
    "layernorm-2axes": (lambda: L.LayerNormalization(axis=[-2, -1], center=False), (2, 3, 4)),
    "normalization": (lambda: L.Normalization(mean=[0.5, -1.0, 2.0], variance=[4.0, 1.0, 0.25]),
                      (2, 4, 3)),
    "upsampling2d": (lambda: L.UpSampling2D((2, 3)), (2, 3, 2, 3)),
    "zeropadding2d": (lambda: L.ZeroPadding2D(((1, 2), (0, 1))), (2, 3, 2, 3)),
    "cropping2d": (lambda: L.Cropping2D(((1, 0), (1, 1))), (1, 4, 5, 2)),
    "conv2d-dilated": (lambda: L.Conv2D(3, 3, dilation_rate=2, padding="same",
                                        activation="tanh"), (2, 6, 5, 2)),
    "conv2d-dilated-gelu": (lambda: L.Conv2D(2, (2, 3), dilation_rate=(2, 1),
                                             activation="gelu"), (1, 5, 6, 3)),
    "depthwise": (lambda: L.DepthwiseConv2D(3, strides=2, padding="same", depth_multiplier=2,
                                            activation="tanh"), (2, 5, 6, 3)),
    "depthwise-dilated": (lambda: L.DepthwiseConv2D(2, dilation_rate=2, activation="elu"),
                          (1, 5, 5, 2)),
    "separable": (lambda: L.SeparableConv2D(4, 3, padding="same", depth_multiplier=2,
                                            activation="sigmoid"), (2, 5, 4, 3)),
    "separable-strided": (lambda: L.SeparableConv2D(3, (2, 3), strides=(2, 1), use_bias=False),
                          (1, 5, 6, 2)),
    "conv2d-transpose": (lambda: L.Conv2DTranspose(3, 3, strides=2, padding="same",
                                                   activation="tanh"), (2, 3, 2, 2)),
    "conv2d-transpose-valid": (lambda: L.Conv2DTranspose(2, (2, 3), strides=(1, 2),
                                                         activation="gelu"), (1, 3, 3, 3)),
    "gaussian-noise": (lambda: L.GaussianNoise(0.5, seed=1), (2, 3, 4)),
    "gaussian-dropout": (lambda: L.GaussianDropout(0.3, seed=2), (2, 3, 4)),
    "spatial-dropout": (lambda: L.SpatialDropout2D(0.5, seed=3), (3, 2, 3, 4)),
    "permute": (lambda: L.Permute((3, 1, 2)), (2, 3, 4, 5)),
    "repeat-vector": (lambda: L.RepeatVector(3), (2, 5)),
}


@pytest.mark.parametrize("name", sorted(GRADIENT_CASES))
def test_gradients_match_finite_differences(on_device, name):
    make, shape = GRADIENT_CASES[name]
    layer = make()
    errors = check_gradients(layer, shape)
    assert set(errors) >= {"input"} | {w.name for w in layer.trainable_weights}


def test_layernorm_forward_matches_numpy(on_device):
    x = _x((4, 3, 5)) * 3 + 1
    layer = L.LayerNormalization(axis=[1, 2], epsilon=1e-2)
    model = kerasish.Sequential([L.Input((3, 5)), layer])
    gamma, beta = _x((3, 5), 1), _x((3, 5), 2)
    layer.set_weights([gamma, beta])
    want = _ln_ref(x, gamma, beta, (1, 2), 1e-2)
    np.testing.assert_allclose(model.predict(x, verbose=0), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("axis", [-1, None, (1, 2)])
def test_normalization_adapt(on_device, axis):
    data = _x((20, 3, 4), 3) * 2 + 5
    layer = L.Normalization(axis=axis)
    layer.adapt(data)
    kept = {-1: (2,), None: (), (1, 2): (1, 2)}[axis]
    reduce = tuple(a for a in range(3) if a not in kept)
    d64 = data.astype(np.float64)
    mean, var = d64.mean(axis=reduce, keepdims=True), d64.var(axis=reduce, keepdims=True)
    np.testing.assert_allclose(layer.mean.numpy(), np.squeeze(mean, reduce), rtol=1e-6)
    np.testing.assert_allclose(layer.variance.numpy(), np.squeeze(var, reduce), rtol=1e-5)
    assert layer.count.shape == ()  # Keras's scalar weight (left at 0 by adapt, as Keras)
    model = kerasish.Sequential([L.Input((3, 4)), layer])
    x = _x((5, 3, 4), 4)
    np.testing.assert_allclose(model.predict(x, verbose=0), (x - mean) / np.sqrt(var),
                               rtol=1e-5, atol=1e-5)
    inverse = L.Normalization(axis=axis, invert=True)
    inverse.adapt(data)
    back = kerasish.Sequential([L.Input((3, 4)), inverse]).predict(
        model.predict(x, verbose=0), verbose=0)
    np.testing.assert_allclose(back, x, rtol=1e-4, atol=1e-4)


def test_normalization_adapt_batches_equals_array():
    data = _x((12, 3), 5)
    a, b = L.Normalization(), L.Normalization()
    a.adapt(data)
    b.adapt([data[:5], data[5:]])
    np.testing.assert_allclose(a.mean.numpy(), b.mean.numpy(), rtol=1e-6)
    np.testing.assert_allclose(a.variance.numpy(), b.variance.numpy(), rtol=1e-6)


def test_reshaping_forwards_match_numpy(on_device):
    x = _x((2, 3, 4, 2))
    up = _forward(L.UpSampling2D(2), x)
    np.testing.assert_array_equal(up, np.repeat(np.repeat(x, 2, 1), 2, 2))
    pad = _forward(L.ZeroPadding2D((1, 2)), x)
    np.testing.assert_array_equal(pad, np.pad(x, ((0, 0), (1, 1), (2, 2), (0, 0))))
    crop = _forward(L.Cropping2D(((1, 1), (0, 2))), x)
    np.testing.assert_array_equal(crop, x[:, 1:2, 0:2])
    perm = _forward(L.Permute((2, 3, 1)), x)
    np.testing.assert_array_equal(perm, np.transpose(x, (0, 2, 3, 1)))
    v = _x((3, 4))
    np.testing.assert_array_equal(_forward(L.RepeatVector(2), v), np.repeat(v[:, None], 2, 1))
    np.testing.assert_array_equal(_forward(L.Identity(), v), v)


def test_noise_layers_are_identity_in_inference_and_noisy_in_training(on_device):
    x = np.ones((400, 3, 3, 5), np.float32)
    out = {}
    for layer in (L.GaussianNoise(0.5, seed=3), L.GaussianDropout(0.2, seed=3),
                  L.SpatialDropout2D(0.3, seed=3)):
        model = kerasish.Sequential([L.Input(x.shape[1:]), layer])
        np.testing.assert_array_equal(model.predict(x, verbose=0), x)
        layer.scratch = {k: kernels_numba.empty(s, d, on_device)
                         for k, (s, d) in layer.scratch_shapes(400).items()}
        yb = kernels_numba.empty(x.shape, np.float32, on_device)
        layer.forward(yb, kernels_numba.to_device(x, on_device), True)
        out[type(layer).__name__] = kernels_numba.to_host(yb)
    assert abs(out["GaussianNoise"].mean() - 1) < 0.02
    assert abs(out["GaussianNoise"].std() - 0.5) < 0.02
    assert abs(out["GaussianDropout"].std() - np.sqrt(0.2 / 0.8)) < 0.02
    s = out["SpatialDropout2D"].reshape(400, 9, 5)
    assert (s.min(1) == s.max(1)).all()  # whole channels dropped or kept
    assert abs((s == 0).mean() - 0.3) < 0.03
    np.testing.assert_allclose(s[s != 0], 1 / 0.7, rtol=1e-6)


def test_new_layers_train_in_sequential_and_functional(on_device):
    kerasish.utils.set_random_seed(0)  # initial weights independent of earlier tests
    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 6, 6, 2)).astype(np.float32)
    y = rng.integers(0, 3, size=8).astype(np.int32)

    def stack(inp):
        h = L.ZeroPadding2D(1)(inp)
        h = L.SeparableConv2D(4, 3, activation="relu")(h)
        h = L.DepthwiseConv2D(3, padding="same", depth_multiplier=2)(h)
        h = L.LayerNormalization()(h)
        h = L.SpatialDropout2D(0.2, seed=1)(h)
        h = L.Conv2D(4, 3, dilation_rate=2, padding="same", activation="relu")(h)
        h = L.Conv2DTranspose(3, 2, strides=2)(h)
        h = L.Cropping2D(2)(h)
        h = L.UpSampling2D(1)(h)
        h = L.GaussianNoise(0.1, seed=2)(h)
        h = L.Permute((2, 1, 3))(h)
        h = L.GlobalAveragePooling2D()(h)
        h = L.RepeatVector(2)(h)
        h = L.Flatten()(h)
        h = L.GaussianDropout(0.1, seed=3)(h)
        h = L.Identity()(h)
        return L.Dense(3, activation="softmax")(h)

    inp = L.Input((6, 6, 2))
    model = kerasish.Model(inp, stack(inp))
    model.compile(kerasish.optimizers.Adam(0.01), "sparse_categorical_crossentropy")
    # under the simulator every launch is Python: two epochs there (the per-kernel
    # tests cover each layer on CUDA), eight on the CPU
    epochs = 2 if on_device == "cuda" else 8
    history = model.fit(x, y, epochs=epochs, batch_size=8, verbose=0)
    losses = history.history["loss"]
    assert np.isfinite(losses).all() and losses[-1] < losses[0]
    clone = kerasish.Model.from_config(model.get_config())
    assert [type(a).__name__ for a in clone.layers] == [type(b).__name__ for b in model.layers]
    seq = kerasish.Sequential([L.Input((6, 6, 2)), L.SeparableConv2D(3, 3),
                               L.LayerNormalization(), L.Flatten(), L.Dense(3)])
    seq.compile("sgd", "mse")
    seq.fit(x, rng.standard_normal((8, 3)).astype(np.float32), epochs=1, verbose=0)


@pytest.mark.parametrize("make", [
    lambda: L.DepthwiseConv2D(3), lambda: L.SeparableConv2D(2, 3),
    lambda: L.Conv2DTranspose(2, 3), lambda: L.LayerNormalization(),
    lambda: L.Conv2D(2, 3, dilation_rate=2)])
def test_frozen_layers_compute_only_dx(on_device, make):
    layer = make()
    layer.trainable = False
    shape = (2, 5, 5, 3)
    check_gradients(layer, shape)  # dx against finite differences, no weight gradients
    assert all(w.grad is None for w in layer.weights)


@pytest.mark.parametrize("make,match", [
    (lambda: L.LayerNormalization(rms_scaling=True), "rms_scaling=True is not supported"),
    (lambda: L.Normalization(mean=1.0), "pass both mean and variance"),
    (lambda: L.UpSampling2D(interpolation="bilinear"), "interpolation='nearest'"),
    (lambda: L.ZeroPadding2D(data_format="channels_first"), "channels_last"),
    (lambda: L.Cropping2D(cropping=(1, -1)), "Cropping2D: expected `cropping`"),
    (lambda: L.Conv2DTranspose(2, 3, output_padding=1), "output_padding=None"),
    (lambda: L.Conv2DTranspose(2, 3, dilation_rate=2), "Conv2DTranspose: only dilation_rate"),
    (lambda: L.DepthwiseConv2D(3, depth_multiplier=0), "depth_multiplier"),
    (lambda: L.Conv2D(2, 3, strides=2, dilation_rate=2), "strides > 1"),
    (lambda: L.Conv2D(2, 3, groups=3), "groups"),  # groups must divide filters
    (lambda: L.GaussianNoise(-1.0), "GaussianNoise: expected stddev >= 0"),
    (lambda: L.GaussianDropout(1.0), "GaussianDropout: expected rate in"),
    (lambda: L.SpatialDropout2D(0.5, data_format="channels_first"), "channels_last"),
    (lambda: L.Permute((1, 1)), "Permute: expected `dims`"),
    (lambda: L.RepeatVector(0), "RepeatVector: expected `n`"),
])
def test_unsupported_arguments_are_refused_by_name(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_shape_errors_name_the_layer():
    with pytest.raises(ValueError, match="LayerNormalization .*only trailing axes"):
        kerasish.Sequential([L.Input((3, 4)), L.LayerNormalization(axis=1)])
    with pytest.raises(ValueError, match="Cropping2D .*leaves nothing"):
        kerasish.Sequential([L.Input((3, 4, 1)), L.Cropping2D(2)])
    with pytest.raises(ValueError, match="UpSampling2D .*rank 4"):
        kerasish.Sequential([L.Input((3, 4)), L.UpSampling2D()])
