"""Attention's masks, scale, dropout and returned scores on CUDA (simulator): predictions and
one training step equal the CPU's (model-level: for the lead's slow mark)."""

import numpy as np
import pytest

import kerasish as keras
from kerasish import config
from kerasish.layers.dot_attention import Attention

pytestmark = pytest.mark.cudasim


def _run(device):
    before = config.get_device()
    config.set_device(device)
    try:
        keras.utils.set_random_seed(3)
        qi, vi, qmi, vmi = (keras.Input(s) for s in ((2, 2), (3, 2), (2,), (3,)))
        h = keras.layers.Dense(2)(qi)  # tiny: the simulator runs every thread in Python
        out, scores = Attention(use_scale=True, dropout=0.3, seed=4)([h, vi], mask=[qmi, vmi],
                                                use_causal_mask=True,
                                                return_attention_scores=True)
        model = keras.Model([qi, vi, qmi, vmi], [out, scores])
        model.compile(keras.optimizers.SGD(0.5), ["mse", "mse"])
        rng = np.random.default_rng(0)
        x = [rng.normal(size=(2, 2, 2)).astype(np.float32),
             rng.normal(size=(2, 3, 2)).astype(np.float32),
             np.array([[1, 0], [1, 1]], np.float32), np.array([[1, 0, 1], [1, 1, 0]],
                                                             np.float32)]
        y = [np.ones((2, 2, 2), np.float32), np.full((2, 2, 3), 0.5, np.float32)]
        pred = model.predict(x, verbose=0)
        model.train_on_batch(x, y)
        return pred, [w.numpy() for w in model.weights]
    finally:
        config.set_device(before)


def test_cuda_equals_cpu():
    cpu, cuda = _run("cpu"), _run("cuda")
    for a, b in zip(cpu[0], cuda[0]):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    for a, b in zip(cpu[1], cuda[1]):
        np.testing.assert_allclose(b, a, rtol=1e-5, atol=1e-6)
    assert not np.allclose(cpu[1][-1], 1.0)  # the scale trained
