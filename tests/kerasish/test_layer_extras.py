"""Keras features kerasish.layers took over from the applications' workaround layers:
ReLU(max_value=6) (the relu6 kernel), Dropout(noise_shape=...) (one ops.dropout_mask
draw broadcast over the input, on the shared step counter / step buffer) and Rescaling
with per-channel scale/offset lists (ops.broadcast_binary). Forward against real Keras 3
(torch backend) or a float64 NumPy reference, backward against finite differences, on
both devices; configs as Keras's. Broadcasting merges are in test_merge_layers.py."""

import os

import numpy as np
import pytest

import kernels_numba
from kerasish import layers
from kernels_numba import ops
from kernels_numba.testing import assert_close, host, numeric_grad, on, randn

os.environ.setdefault("KERAS_BACKEND", "torch")

KEYS = ("max_value", "negative_slope", "threshold", "rate", "seed", "noise_shape", "scale",
        "offset")


def _real():
    pytest.importorskip("torch", reason="Keras comparisons need torch")
    keras = pytest.importorskip("keras", reason="Keras comparisons need Keras 3")
    if not keras.__version__.startswith("3."):
        pytest.skip(f"needs Keras 3; found {keras.__version__}")
    return keras


def _same_config(ours, theirs):
    """The layer-specific keys of both configs (tuples and lists alike)."""
    norm = {k: (list(v) if isinstance(v, tuple) else v) for k, v in theirs.items()}
    mine = {k: (list(v) if isinstance(v, tuple) else v) for k, v in ours.items()}
    assert {k: mine[k] for k in KEYS if k in norm} == {k: norm[k] for k in KEYS if k in norm}
    assert set(k for k in KEYS if k in ours) == set(k for k in KEYS if k in norm)


class _Run:
    """A built layer on `device` with its scratch lent as the engine lends it."""

    def __init__(self, layer, shape, device):
        self.layer, self.shape, self.device = layer, shape, device
        layer._build_once((None, *shape[1:]))
        layer.scratch = {k: kernels_numba.empty(s, d, device)
                         for k, (s, d) in layer.scratch_shapes(shape[0]).items()}

    def forward(self, x, training=True):
        xb = on(self.device, np.ascontiguousarray(x, np.float32))
        yb = on(self.device, np.full(self.shape, np.nan, np.float32))
        self.layer.forward(yb, xb, training)
        return xb, yb

    def backward(self, xb, yb, g):
        dx = on(self.device, np.full(self.shape, np.nan, np.float32))
        self.layer.backward(dx, on(self.device, g.copy()), xb, yb)
        return host(dx)


def _grad_check(make, shape, device, x, g):
    """Backward vs finite differences of forward on the CPU; on CUDA (the simulator is
    slow) vs the CPU backward. make(): a fresh layer with the same draw."""
    xb, yb = (run := _Run(make(), shape, device)).forward(x)
    got = run.backward(xb, yb, g)
    if device != "cpu":
        xc, yc = (cpu := _Run(make(), shape, "cpu")).forward(x)
        assert_close(got, cpu.backward(xc, yc, g), rtol=1e-6, atol=1e-6,
                     what=f"{type(run.layer).__name__} CUDA vs CPU backward")
        return

    def loss(v):
        probe = _Run(make(), shape, "cpu").forward(v.astype(np.float32))[1]
        return float((host(probe).astype(np.float64) * g).sum())

    assert_close(got, numeric_grad(loss, x, eps=1e-2), rtol=1e-3, atol=1e-3,
                 what=type(run.layer).__name__)


# ReLU(max_value=6): MobileNetV2's ReLU6.

def test_relu6_matches_keras(device):
    real = _real()
    shape = (2, 3, 7)
    x = np.linspace(-9.0, 9.0, int(np.prod(shape))).astype(np.float32).reshape(shape)
    x[0, 0, :3] = [0.0, 6.0, np.nan]
    ours = layers.ReLU(max_value=6)
    want = np.asarray(real.layers.ReLU(max_value=6)(x))
    assert_close(host(_Run(ours, shape, device).forward(x)[1]), want, rtol=0, atol=0,
                 what="ReLU(6)")  # NaN stays NaN on both sides
    _same_config(ours.get_config(), real.layers.ReLU(6.0).get_config())
    assert ours.get_config()["max_value"] == 6.0 and ours.activation == "relu6"
    clone = layers.deserialize(layers.serialize(ours))
    assert type(clone) is layers.ReLU and clone.activation == "relu6"
    assert clone.get_config() == {**ours.get_config(), "name": clone.name}
    # Keras builds the same layer from our config.
    assert real.layers.ReLU.from_config(ours.get_config()).max_value == 6.0
    xs = (randn(shape, seed=1) * 4).astype(np.float32)
    xs[np.abs(xs) < 0.05] = 0.3  # away from the kinks at 0 and 6 for finite differences
    xs[np.abs(xs - 6) < 0.05] = 5.0
    _grad_check(lambda: layers.ReLU(6.0), shape, device, xs, randn(shape, seed=2))


@pytest.mark.parametrize("kwargs,match", [
    (dict(max_value=5.0), r"max_value=5.0"),
    (dict(threshold=1.0), r"threshold=1.0"),
    (dict(max_value=6.0, negative_slope=0.1), r"negative_slope=0.1"),
    (dict(max_value=-1.0), r"ReLU: expected max_value >= 0"),
    (dict(threshold=-1.0), r"ReLU: expected threshold >= 0"),
    (dict(max_value="6"), r"received max_value='6'"),
])
def test_relu_refusals_are_named(kwargs, match):
    with pytest.raises(ValueError, match=match):
        layers.ReLU(**kwargs)


def test_relu_defaults_keep_their_config():
    real = _real()
    for kwargs in ({}, {"negative_slope": 0.2}):
        _same_config(layers.ReLU(**kwargs).get_config(), real.layers.ReLU(**kwargs).get_config())


# Dropout(noise_shape): EfficientNet's stochastic depth.

SHAPE = (3, 2, 3, 4)


@pytest.mark.parametrize("noise_shape,mask_shape", [
    ((None, 1, 1, 1), (3, 1, 1, 1)),  # whole samples
    ((None, 1, 1, None), (3, 1, 1, 4)),  # whole channels
    ((3, 2, 1, 4), (3, 2, 1, 4)),
])
def test_noise_shape_dropout_broadcasts_one_draw(device, noise_shape, mask_shape):
    x, g = randn(SHAPE, seed=3), randn(SHAPE, seed=4)

    def make():
        return layers.Dropout(0.4, noise_shape=noise_shape, seed=5)

    run = _Run(make(), SHAPE, device)
    mask = np.zeros(mask_shape, np.float32)
    ops.dropout_mask(mask, rate=0.4, seed=5, step=0)  # the by-value draw of step 0 (CPU)
    assert set(np.unique(mask)) <= {0.0, np.float32(1 / 0.6)}
    xb, yb = run.forward(x)
    assert_close(host(yb), x.astype(np.float64) * mask, rtol=1e-6, atol=1e-6, what="forward")
    assert_close(run.backward(xb, yb, g), g.astype(np.float64) * mask, rtol=1e-6, atol=1e-6,
                 what="backward")
    _grad_check(make, SHAPE, device, x, g)
    assert run.layer._step == 1
    np.testing.assert_array_equal(host(run.forward(x, training=False)[1]), x)
    assert run.layer._step == 1  # inference draws nothing


def test_noise_shape_dropout_config_and_errors():
    real = _real()
    ours = layers.Dropout(0.25, noise_shape=(None, 1, 1, 1), seed=3)
    _same_config(ours.get_config(),
                 real.layers.Dropout(0.25, noise_shape=(None, 1, 1, 1), seed=3).get_config())
    assert tuple(real.layers.Dropout.from_config(ours.get_config()).noise_shape) == \
        (None, 1, 1, 1)
    clone = layers.deserialize(layers.serialize(ours))
    assert clone.noise_shape == (None, 1, 1, 1)
    _same_config(layers.Dropout(0.5).get_config(), real.layers.Dropout(0.5).get_config())
    with pytest.raises(ValueError, match=r"Dropout dropout_\d+: noise_shape=\(None, 2, 1, 1\) "
                                         r"does not broadcast to the input shape"):
        layers.Dropout(0.5, noise_shape=(None, 2, 1, 1))._build_once((None, 3, 3, 4))
    with pytest.raises(ValueError, match=r"noise_shape=\(None, 1\) does not broadcast"):
        layers.Dropout(0.5, noise_shape=(None, 1))._build_once((None, 3, 3, 4))
    with pytest.raises(ValueError, match="Dropout: expected `noise_shape entries`"):
        layers.Dropout(0.5, noise_shape=(None, 0))
    with pytest.raises(ValueError, match="expected noise_shape to be None or a tuple"):
        layers.Dropout(0.5, noise_shape=3)


@pytest.mark.parametrize("noise_shape", [None, (None, 1, 3, 1)])
def test_dropout_step_buffer_draws_the_by_value_steps(device, noise_shape):
    x = randn(SHAPE, seed=6)
    by_value = _Run(layers.Dropout(0.3, noise_shape=noise_shape, seed=9), SHAPE, device)
    buffered = _Run(layers.Dropout(0.3, noise_shape=noise_shape, seed=9), SHAPE, device)
    buffered.layer.step_buffer = True
    assert layers.Dropout.step_buffer is False and by_value.layer._steps is None
    for _ in range(2):
        np.testing.assert_array_equal(host(buffered.forward(x)[1]),
                                      host(by_value.forward(x)[1]))
    assert by_value.layer._steps is None and by_value.layer._step == 2
    buffer = buffered.layer._steps.buffer
    buffered.layer.advance_step()  # step 2 into the same buffer, no draw
    assert buffered.layer._steps.buffer is buffer and buffered.layer._step == 3
    assert list(host(buffer)) == [2, 0]
    with pytest.raises(RuntimeError, match=r"Dropout dropout_\d+: advance_step\(\) before"):
        layers.Dropout(0.3).advance_step()


def test_dropout_by_value_steps_are_the_op_draws():
    """step_buffer=False (the default): each forward is ops.dropout_forward at the next
    step, bit for bit (what checkpoints and the determinism tests rely on)."""
    x = randn(SHAPE, seed=7)
    run = _Run(layers.Dropout(0.5, seed=13), SHAPE, "cpu")
    for step in range(2):
        y, mask = np.empty_like(x), np.empty_like(x)
        ops.dropout_forward(y, mask, x, rate=0.5, seed=13, step=step)
        np.testing.assert_array_equal(host(run.forward(x)[1]), y)
    state = run.layer.get_extra_state()
    assert (int(state["seed"]), int(state["step"])) == (13, 2)


# Rescaling with per-channel lists: EfficientNet's ImageNet stem.

@pytest.mark.parametrize("scale,offset", [
    ([0.5, 2.0, -1.5], 0.0),
    ([0.5, 2.0, -1.5], [1.0, 0.0, -2.0]),
    (0.25, [1.0, -0.5, 3.0]),
    ([3.0], 1.0),
])
def test_per_channel_rescaling_matches_keras(device, scale, offset):
    real = _real()
    shape = (2, 3, 2, 3)
    x, g = randn(shape, seed=8), randn(shape, seed=9)
    ours = layers.Rescaling(scale, offset=offset)
    run = _Run(ours, shape, device)
    want = np.asarray(real.layers.Rescaling(scale, offset=offset)(x))
    ref = x.astype(np.float64) * np.asarray(scale, np.float64) + np.asarray(offset, np.float64)
    assert_close(want, ref, rtol=1e-6, atol=1e-6, what="Keras vs NumPy")
    assert_close(host(run.forward(x)[1]), ref, rtol=1e-6, atol=1e-6, what="Rescaling")
    _same_config(ours.get_config(), real.layers.Rescaling(scale, offset=offset).get_config())
    clone = layers.deserialize(layers.serialize(ours))
    assert (clone.scale, clone.offset) == (ours.scale, ours.offset)
    _grad_check(lambda: layers.Rescaling(scale, offset=offset), shape, device, x, g)


def test_per_channel_rescaling_errors():
    with pytest.raises(ValueError, match=r"Rescaling rescaling_?\d*: scale has 2 values for "
                                         r"an input with 3 channels"):
        layers.Rescaling([1.0, 2.0])._build_once((None, 4, 3))
    with pytest.raises(ValueError, match=r"non-empty list.*received scale=\[\]"):
        layers.Rescaling([])
    with pytest.raises(TypeError, match="expected offset to be a number or a per-channel"):
        layers.Rescaling(1.0, offset=None)
