"""Every layer's backward matches finite differences through the public Layer API,
on the CPU twin and (under the simulator / on a GPU) on the CUDA kernels."""

import numpy as np
import pytest

import kerasish as keras
import kernels_numba
from kerasish import config, layers
from kerasish.testing import check_gradients

CASES = [
    ("dense_linear", lambda: layers.Dense(3), (2, 5)),
    ("dense_relu", lambda: layers.Dense(4, activation="relu", bias_initializer="ones"), (1, 3)),
    ("dense_tanh", lambda: layers.Dense(3, activation="tanh"), (2, 4)),
    ("dense_softmax", lambda: layers.Dense(3, activation="softmax"), (2, 4)),
    ("dense_gelu", lambda: layers.Dense(2, activation="gelu"), (2, 3)),
    ("activation_elu", lambda: layers.Activation("elu"), (2, 5)),
    ("activation_sigmoid", lambda: layers.Activation("sigmoid"), (3, 2)),
    ("relu_layer", lambda: layers.ReLU(), (2, 5)),
    ("relu_layer_slope", lambda: layers.ReLU(negative_slope=0.1), (1, 7)),
    ("leaky_relu_layer", lambda: layers.LeakyReLU(), (3, 2, 3)),
    ("softmax_layer", lambda: layers.Softmax(), (2, 3, 4)),
    ("rescaling", lambda: layers.Rescaling(0.5, offset=-1.0), (2, 3, 2)),
    ("rescaling_scale_only", lambda: layers.Rescaling(1 / 255), (1, 5)),
    ("conv_valid", lambda: layers.Conv2D(2, (3, 2), bias_initializer="ones"), (1, 5, 4, 2)),
    ("conv_same_stride2", lambda: layers.Conv2D(2, 3, strides=2, padding="same",
                                                activation="relu", bias_initializer="ones"),
     (2, 5, 5, 1)),
    ("maxpool", lambda: layers.MaxPooling2D((2, 2)), (1, 4, 5, 2)),
    ("maxpool_same", lambda: layers.MaxPooling2D(2, padding="same"), (2, 3, 3, 1)),
    ("avgpool", lambda: layers.AveragePooling2D((2, 2), strides=1), (1, 3, 4, 2)),
    ("global_avg", lambda: layers.GlobalAveragePooling2D(), (2, 3, 2, 3)),
    ("flatten", lambda: layers.Flatten(), (2, 2, 3, 1)),
    ("reshape", lambda: layers.Reshape((3, -1)), (2, 6)),
    ("batchnorm", lambda: layers.BatchNormalization(), (4, 3)),
    ("batchnorm_image", lambda: layers.BatchNormalization(), (2, 2, 3, 2)),
    ("dropout", lambda: layers.Dropout(0.5, seed=3), (3, 4)),
]


@pytest.mark.parametrize("name,make,shape", CASES, ids=[c[0] for c in CASES])
def test_layer_gradients(name, make, shape):
    layer = make()
    errors = check_gradients(layer, shape)
    assert "input" in errors
    assert len(errors) == 1 + len(layer.trainable_weights)


def _forward_backward(make, shape, device, seed=0):
    """Output, input gradient and weight gradients of one forward/backward on `device`."""
    config.set_device(device)
    try:
        keras.utils.set_random_seed(seed)
        layer = make()
        layer._build_once((None, *shape[1:]))
        layer.scratch = {k: kernels_numba.empty(s, d, device)
                         for k, (s, d) in layer.scratch_shapes(shape[0]).items()}
        rng = np.random.default_rng(seed)
        x = kernels_numba.to_device(rng.standard_normal(shape).astype(np.float32), device)
        out = (shape[0], *layer.output_shape[1:])
        if getattr(layer, "aliases_input", False):
            return []
        y = kernels_numba.empty(out, np.float32, device)
        layer.forward(y, x, True)
        dy = kernels_numba.to_device(rng.standard_normal(out).astype(np.float32), device)
        dx = kernels_numba.empty(shape, np.float32, device)
        for w in layer.trainable_weights:
            w.ensure_grad()
        layer.backward(dx, dy, x, y)
        grads = [kernels_numba.to_host(w.grad) for w in layer.trainable_weights]
        return [kernels_numba.to_host(y), kernels_numba.to_host(dx), *grads]
    finally:
        config.set_device("cpu")


@pytest.mark.cudasim
@pytest.mark.parametrize("name,make,shape", CASES, ids=[c[0] for c in CASES])
def test_layer_on_cuda_matches_cpu(name, make, shape):
    """Finite differences run on the CPU twin above; here the CUDA path must agree with it."""
    if not kernels_numba.cuda_available():
        pytest.skip("CUDA kernels cannot run here: no GPU and NUMBA_ENABLE_CUDASIM is not 1")
    cpu = _forward_backward(make, shape, "cpu")
    gpu = _forward_backward(make, shape, "cuda")
    assert len(cpu) == len(gpu)
    for a, b in zip(cpu, gpu):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)


def test_dense_config_roundtrip_and_names():
    a, b = layers.Dense(4), layers.Dense(4)
    assert b.name.startswith("dense_") and a.name != b.name
    clone = layers.Dense.from_config(a.get_config())
    assert clone.units == 4 and clone.activation == "linear"
    conf = layers.deserialize(layers.serialize(layers.Conv2D(8, 3, padding="same")))
    assert conf.kernel_size == (3, 3) and conf.padding == "same"


@pytest.mark.parametrize("make,match", [
    (lambda: layers.Dense(0), "units"),
    (lambda: layers.Dense(-3), "units"),
    (lambda: layers.Conv2D(4, 3, padding="full"), "padding"),
    (lambda: layers.Conv2D(4, (3, 3, 3)), "kernel_size"),
    (lambda: layers.Dropout(1.5), "rate"),
    (lambda: layers.Dense(3, activation="swishy"), "Unknown activation"),
    (lambda: layers.Dense(3, foo=1), "Unrecognized keyword arguments"),
])
def test_bad_layer_arguments(make, match):
    with pytest.raises(ValueError, match=match):
        make()


def test_dropout_inference_is_identity():
    layer = layers.Dropout(0.5)
    layer._build_once((None, 4))
    layer.scratch = {"mask": np.empty((2, 4), np.float32)}
    x = np.arange(8, dtype=np.float32).reshape(2, 4)
    y = np.empty_like(x)
    layer.forward(y, x, training=False)
    np.testing.assert_array_equal(y, x)


def test_rescaling_layer():
    layer = layers.Rescaling(1 / 255, offset=-0.5)
    model = keras.Sequential([keras.Input((2, 3)), layer])
    x = np.arange(12, dtype=np.float64).reshape(2, 2, 3) * 20
    np.testing.assert_allclose(model(x.astype(np.float32)), x / 255 - 0.5, rtol=1e-6, atol=1e-7)
    clone = layers.deserialize(layers.serialize(layer))
    assert (clone.scale, clone.offset) == (layer.scale, layer.offset)
    with pytest.raises(TypeError, match="expected scale to be a number or a per-channel list"):
        layers.Rescaling("2")
    with pytest.raises(ValueError, match=r"non-empty list of finite numbers.*offset=\[nan\]"):
        layers.Rescaling(2.0, offset=[float("nan")])
