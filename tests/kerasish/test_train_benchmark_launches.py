"""benchmarks/train.py's CUDA launch count: one replayed training step, counted with
kernels_numba.record_launches (which replay honours). The old count patched each
kernels_numba.gpu module's `launch`, which a replayed step never calls: it read ~0."""

import sys

import numpy as np
import pytest

import kerasish as keras
import kernels_numba
from kerasish import config, layers, models

pytestmark = pytest.mark.cudasim


def _model():
    keras.utils.set_random_seed(3)
    model = models.Sequential([keras.Input((4,)), layers.Dense(3, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy")
    return model


def _patched_module_launch_count(model, x, y):
    """The count benchmarks/train.py used to take, kept here to show why it was wrong."""
    counter, patched = [0], []
    for name, mod in list(sys.modules.items()):
        if name.startswith("kernels_numba.gpu.") and hasattr(mod, "launch"):
            def counting(*a, _orig=mod.launch, **kw):
                counter[0] += 1
                return _orig(*a, **kw)

            patched.append((mod, mod.launch))
            mod.launch = counting
    try:
        model.train_on_batch(x, y)
    finally:
        for mod, orig in patched:
            mod.launch = orig
    return counter[0]


def test_launches_per_step_counts_a_replayed_step():
    if not kernels_numba.cuda_available():
        pytest.skip("CUDA kernels cannot run here")
    from benchmarks.train import launches_per_step

    x = np.linspace(-1, 1, 16 * 4, dtype=np.float32).reshape(16, 4)
    y = (np.arange(16) % 3).astype(np.int32)
    config.set_device("cuda")
    try:
        model = _model()
        count = launches_per_step(model, x, y)
        again = launches_per_step(model, x, y, warmup=0)
        old = _patched_module_launch_count(model, x, y)
    finally:
        config.set_device("cpu")
    assert count == again and count >= 3, count  # forward, loss, backward, optimizer
    assert old < count  # the replayed step bypasses the modules' launch
