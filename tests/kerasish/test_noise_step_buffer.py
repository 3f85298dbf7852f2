"""GaussianNoise, GaussianDropout and SpatialDropout2D read their step from a device buffer
(kernels_numba.ops.StepScalars): the draws are the by-value draws of the same (seed, step),
and advance_step() + the same draw call (what a replayed launch plan does) gives the next
training forward's draw."""

import numpy as np
import pytest

from kerasish.layers.noise import GaussianDropout, GaussianNoise, SpatialDropout2D
from kernels_numba import ops
from kernels_numba.testing import host, on, randn

SHAPE = (2, 3, 4, 5)


def _layer(cls, device):
    layer = cls(0.3, seed=11) if cls is not GaussianNoise else cls(0.5, seed=11)
    layer.build(SHAPE)
    layer.step_buffer = True
    layer.input_shape = layer.output_shape = SHAPE
    if cls is not GaussianNoise:  # the mask scratch, as the engine lends it
        shape, dtype = layer.scratch_shapes(SHAPE[0])["mask"]
        layer.scratch = {"mask": on(device, np.zeros(shape, dtype))}
        layer.scratch_view = lambda name, n: layer.scratch[name][:n]
    return layer


def _by_value(cls, x, step):
    """The draw of a by-value step, on the CPU (the devices agree: test_noise)."""
    if cls is GaussianNoise:
        y = np.zeros(SHAPE, np.float32)
        ops.gaussian_fill(y, mean=0.0, stddev=0.5, seed=11, step=step)
        return y + x
    if cls is GaussianDropout:
        m = np.zeros(SHAPE, np.float32)
        ops.gaussian_fill(m, mean=1.0, stddev=np.sqrt(0.3 / 0.7), seed=11, step=step)
        return x * m
    m = np.zeros((SHAPE[0], SHAPE[-1]), np.float32)
    ops.dropout_mask(m, rate=0.3, seed=11, step=step)
    return x * m[:, None, None, :]


@pytest.mark.parametrize("cls", [GaussianNoise, GaussianDropout, SpatialDropout2D])
def test_draws_follow_the_step_buffer(device, cls):
    x = randn(SHAPE, seed=3)
    layer = _layer(cls, device)
    xb, y = on(device, x, np.zeros(SHAPE, np.float32))
    for step in range(2):
        layer.forward(y, xb, training=True)
        np.testing.assert_allclose(host(y), _by_value(cls, x, step), rtol=1e-5, atol=1e-5)
    assert layer._step == 2
    buffer = layer._steps.buffer
    layer.advance_step()  # step 2 into the same buffer, no draw
    assert layer._steps.buffer is buffer and layer._step == 3
    words = host(buffer)
    assert words.dtype == np.uint32 and list(words) == [2, 0]
    with pytest.raises(RuntimeError, match="advance_step\\(\\) before any training forward"):
        _layer(cls, device).advance_step()


def test_by_value_step_by_default(device):
    # Off by default (a replaying plan must call advance_step first): the same draws, no
    # buffer.
    layer = GaussianNoise(0.5, seed=11)
    layer.build(SHAPE)
    x = randn(SHAPE, seed=3)
    xb, y = on(device, x, np.zeros(SHAPE, np.float32))
    layer.forward(y, xb, training=True)
    np.testing.assert_allclose(host(y), _by_value(GaussianNoise, x, 0), rtol=1e-5, atol=1e-5)
    assert layer._steps is None and layer._step == 1
