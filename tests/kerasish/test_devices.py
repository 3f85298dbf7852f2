"""One model code path for both devices: the CUDA path (simulator or GPU) trains like the CPU."""

import numpy as np
import pytest

import kerasish as keras
from kerasish import config, layers, models


def tiny_cnn(seed):
    keras.utils.set_random_seed(seed)
    model = models.Sequential([
        keras.Input((5, 5, 1)),
        layers.Conv2D(2, 3, activation="relu"),
        layers.MaxPooling2D(2, padding="same"),
        layers.Flatten(),
        # no bias before batch norm: its gradient is ~0 and Adam would amplify rounding noise
        layers.Dense(4, use_bias=False),
        layers.BatchNormalization(),
        layers.Dropout(0.25, seed=7),
        layers.Dense(3, activation="softmax"),
    ])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


@pytest.mark.cudasim
def test_two_fit_steps_on_cuda_match_cpu():
    from kernels_numba import cuda_available

    if not cuda_available():
        pytest.skip("CUDA kernels cannot run here: no GPU and NUMBA_ENABLE_CUDASIM is not 1")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4, 5, 5, 1)).astype(np.float32)
    y = np.array([0, 2, 1, 2])
    results = {}
    for device in ("cpu", "cuda"):
        config.set_device(device)
        try:
            model = tiny_cnn(seed=1)
            assert model.device == device
            history = model.fit(x, y, batch_size=2, epochs=1, shuffle=False, verbose=0)
            results[device] = (model.get_weights(), history.history["loss"][0],
                               model.predict(x, verbose=0))
        finally:
            config.set_device("cpu")
    (w_cpu, loss_cpu, p_cpu), (w_gpu, loss_gpu, p_gpu) = results["cpu"], results["cuda"]
    assert abs(loss_cpu - loss_gpu) < 1e-5
    for a, b in zip(w_cpu, w_gpu):
        np.testing.assert_allclose(b, a, rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(p_gpu, p_cpu, rtol=1e-4, atol=1e-5)


def test_cpu_suite_default_device_is_the_cpu(request):
    """tests/conftest.py pins KERASISH_DEVICE=cpu unless the run selects cudasim/gpu, so on
    a GPU machine the CPU suite still tests the CPU twins."""
    import os

    from tests.conftest import default_test_device

    want = default_test_device(request.config.getoption("markexpr", ""),
                               os.environ.get("KERASISH_TEST_DEVICE"))
    if want != "cpu":
        pytest.skip(f"this run's default device is {want!r}, not the CPU suite's")
    assert os.environ["KERASISH_DEVICE"] == "cpu"
    assert config.get_device() == "cpu"
    assert models.Sequential([keras.Input((3,)), layers.Dense(2)]).device == "cpu"
