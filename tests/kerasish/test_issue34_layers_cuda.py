"""Issue 34's new layers train the same on CUDA as on the CPU (simulator or GPU):
Conv1DTranspose's views of the 2-D kernels, RNN(StackedRNNCells)'s scratch sequences,
channels_first's permute launches, Conv2D(groups)'s column blocks, the masked
GlobalAveragePooling1D."""

import numpy as np
import pytest

import kerasish
from kerasish import config, layers


def _both_devices(build, x, y):
    import kernels_numba

    if not kernels_numba.cuda_available():
        pytest.skip("CUDA kernels cannot run here: no GPU and NUMBA_ENABLE_CUDASIM is not 1")
    runs = []
    for device in ("cpu", "cuda"):
        config.set_device(device)
        try:
            model = build()
            model.compile(optimizer=kerasish.optimizers.SGD(0.1), loss="mse")
            if runs:
                model.set_weights(runs[0][0])
            start = model.get_weights()
            pred = model.predict(x, verbose=0)
            model.fit(x, y, epochs=1, batch_size=len(x), verbose=0)
            runs.append((start, model.get_weights(), pred))
        finally:
            config.set_device("cpu")
    np.testing.assert_allclose(runs[1][2], runs[0][2], rtol=1e-5, atol=1e-6)
    for a, b in zip(runs[0][1], runs[1][1]):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    assert any(not np.allclose(a, b) for a, b in zip(runs[0][0], runs[0][1]))


@pytest.mark.cudasim
def test_conv1d_transpose_on_cuda():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((3, 4, 2)).astype("float32")
    y = rng.standard_normal((3, 8, 3)).astype("float32")
    _both_devices(lambda: kerasish.Sequential([
        layers.Input((4, 2)), layers.Conv1DTranspose(3, 2, strides=2, padding="same",
                                                     activation="tanh")]), x, y)


@pytest.mark.cudasim
def test_stacked_cells_on_cuda():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((3, 3, 2)).astype("float32")
    y = rng.standard_normal((3, 2)).astype("float32")
    _both_devices(lambda: kerasish.Sequential([
        layers.Input((3, 2)), layers.RNN([layers.GRUCell(3), layers.LSTMCell(2)])]), x, y)


@pytest.mark.cudasim
def test_channels_first_on_cuda():
    rng = np.random.default_rng(2)
    x = rng.standard_normal((3, 2, 5, 4)).astype("float32")
    y = rng.standard_normal((3, 2)).astype("float32")
    _both_devices(lambda: kerasish.Sequential([
        layers.Input((2, 5, 4)),
        layers.Conv2D(3, 2, padding="same", activation="relu", data_format="channels_first"),
        layers.BatchNormalization(axis=1),
        layers.MaxPooling2D(2, data_format="channels_first"),
        layers.GlobalAveragePooling2D(data_format="channels_first"),
        layers.Dense(2)]), x, y)


@pytest.mark.cudasim
def test_grouped_conv2d_on_cuda():
    rng = np.random.default_rng(3)
    x = rng.standard_normal((3, 5, 5, 4)).astype("float32")
    y = rng.standard_normal((3, 2)).astype("float32")
    _both_devices(lambda: kerasish.Sequential([
        layers.Input((5, 5, 4)),
        layers.Dense(4),
        layers.Conv2D(6, 3, padding="same", groups=2, activation="relu"),
        layers.Conv2D(4, 2, groups=2, activation="elu"),
        layers.GlobalAveragePooling2D(), layers.Dense(2)]), x, y)


@pytest.mark.cudasim
def test_masked_global_average_on_cuda():
    rng = np.random.default_rng(4)
    x = rng.integers(1, 7, size=(4, 5)).astype("float32")
    x[:2, 3:] = 0
    y = rng.standard_normal((4, 2)).astype("float32")
    _both_devices(lambda: kerasish.Sequential([
        layers.Input((5,)), layers.Embedding(7, 3, mask_zero=True), layers.Dense(3),
        layers.GlobalAveragePooling1D(), layers.Dense(2)]), x, y)
