"""NaN propagates through the layers as IEEE says, so a NaN in the data shows up in the
loss (and TerminateOnNaN stops training) instead of silently zeroing the model."""

import numpy as np
import pytest

import kerasish as keras
from kerasish import activations, callbacks, layers

ELEMENTWISE = ["relu", "leaky_relu", "elu", "sigmoid", "tanh", "gelu", "softplus", "linear"]


@pytest.mark.parametrize("name", ELEMENTWISE + ["softmax"])
def test_activation_functions_keep_nan(name):
    got = getattr(activations, name)([np.nan, -1.0, 1.0])
    assert np.isnan(got).tolist() == ([True] * 3 if name == "softmax" else [True, False, False])


def test_relu_of_nan_is_nan_not_zero():
    got = activations.relu([np.nan, -1.0, 1.0])  # was [0, 0, 1]
    assert np.isnan(got[0]) and got[1:].tolist() == [0.0, 1.0]


class _Batches(callbacks.Callback):
    def __init__(self):
        super().__init__()
        self.seen = []

    def on_train_batch_end(self, batch, logs=None):
        self.seen.append((self.epoch, batch, logs["loss"]))

    def on_epoch_begin(self, epoch, logs=None):
        self.epoch = epoch


def _reference_cnn(side, relu):
    # The reference CNN (Conv2D 32 3x3 relu, MaxPool, Conv2D 64 relu, MaxPool, Flatten,
    # Dense 64 relu, Dense 10 softmax) on small images; relu="layer" puts each ReLU in its
    # own layer instead of the Dense/Conv2D fused epilogue.
    def with_relu(layer_cls, *args):
        if relu == "fused":
            return [layer_cls(*args, activation="relu")]
        return [layer_cls(*args), layers.ReLU()]

    return keras.Sequential([
        keras.Input((side, side, 1)), *with_relu(layers.Conv2D, 32, 3), layers.MaxPooling2D(),
        *with_relu(layers.Conv2D, 64, 3), layers.MaxPooling2D(), layers.Flatten(),
        *with_relu(layers.Dense, 64), layers.Dense(10, activation="softmax")])


def _one_nan_pixel_stops_training(device, relu):
    n, side, batch = (64, 12, 16) if device == "cpu" else (12, 10, 4)  # the simulator is slow
    rng = np.random.default_rng(0)
    x = rng.random((n, side, side, 1), dtype=np.float32)
    y = rng.integers(0, 10, n).astype(np.int32)
    nan_batch = 2
    x[nan_batch * batch + 1, side // 2, side // 2, 0] = np.nan  # ONE pixel of one image
    keras.utils.set_random_seed(1)
    model = _reference_cnn(side, relu)
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    seen = _Batches()
    history = model.fit(x, y, batch_size=batch, epochs=2, shuffle=False, verbose=0,
                        callbacks=[seen, callbacks.TerminateOnNaN()])
    losses = [loss for _, _, loss in seen.seen]
    assert [(e, b) for e, b, _ in seen.seen] == [(0, b) for b in range(nan_batch + 1)], seen.seen
    assert np.isfinite(losses[:nan_batch]).all() and np.isnan(losses[nan_batch]), losses
    assert model.stop_training
    assert len(history.history["loss"]) == 1 and np.isnan(history.history["loss"][0])


def test_one_nan_pixel_makes_the_loss_nan_and_terminate_on_nan_stops(on_device):
    _one_nan_pixel_stops_training(on_device, "layer")


def test_reference_cnn_with_fused_relu():
    # CPU only: the simulator takes minutes per run of this CNN; the CUDA path of every
    # kernel here is covered by the layer variant above and the kernel tests.
    _one_nan_pixel_stops_training("cpu", "fused")


def test_nan_flows_through_each_layer_in_predict(on_device):
    # Forward through Conv2D, MaxPooling2D, AveragePooling2D, BatchNormalization (inference),
    # Flatten, Dense and Dropout: only the sample holding the NaN comes out NaN.
    model = keras.Sequential([
        keras.Input((6, 6, 2)), layers.Conv2D(3, 3, padding="same"), layers.MaxPooling2D(),
        layers.AveragePooling2D(), layers.BatchNormalization(), layers.Flatten(),
        layers.Dropout(0.5), layers.Dense(4), layers.Activation("softmax")])
    x = np.random.default_rng(2).random((3, 6, 6, 2), dtype=np.float32)
    x[1, 0, 0, 1] = np.nan
    got = model.predict(x, verbose=0)
    assert np.isnan(got[1]).all() and np.isfinite(got[[0, 2]]).all(), got
