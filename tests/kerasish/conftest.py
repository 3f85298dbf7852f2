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
