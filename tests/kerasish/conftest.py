import pytest

from kerasish import config
from kerasish.layers import layer as layer_module


@pytest.fixture
def on_device(device):
    """Build kerasish models on `device` for this test (cpu, or cuda under the simulator)."""
    previous = config.get_device()
    config.set_device(device)
    yield device
    config.set_device(previous)


@pytest.fixture(autouse=True)
def fresh_names():
    """Auto-generated layer names restart per test (dense, dense_1, ...)."""
    layer_module.reset_names()
    yield


# Model-level CUDA cases that re-run, under the simulator, what the kernel tests in
# tests/kernels_numba already prove op by op (the simulator runs every launch in Python:
# these files take minutes each). They carry `slow` there; scripts/test.sh leaves slow
# tests out of its simulator stage, `NUMBA_ENABLE_CUDASIM=1 pytest -m cudasim` runs all.
_SIMULATOR_HEAVY = {
    "test_activations_keras.py", "test_losses_keras.py", "test_metrics_keras.py",
    "test_gradient_clipping.py", "test_optimizers_keras.py", "test_weight_decay.py",
    "test_new_layers.py", "test_frozen_layers.py", "test_nan_propagation.py",
    "test_merge_layers.py", "test_distribute.py", "test_attention_masks_cuda.py",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("cudasim") and item.path.name in _SIMULATOR_HEAVY:
            item.add_marker(pytest.mark.slow)
