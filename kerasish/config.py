"""Global settings: the device models are built on, floatx, epsilon, debug level.

`KERASISH_DEVICE=auto|cpu|cuda` (default auto: CUDA when a usable GPU exists) or
`set_device(...)` before building a model. A built model keeps its device.
"""

import os

import kernels_numba

_device = None


def set_device(name):
    """Select 'auto', 'cpu' or 'cuda' for models built from now on."""
    global _device
    _device = kernels_numba.resolve_device(name)
    return _device


def get_device():
    """The device new models are built on ('cpu' or 'cuda')."""
    global _device
    if _device is None:
        _device = kernels_numba.resolve_device(os.environ.get("KERASISH_DEVICE", "auto"))
    return _device


def floatx():
    return "float32"


def epsilon():
    return 1e-7


def image_data_format():
    return "channels_last"


def debug_level():
    """KERASISH_DEBUG=1 prints the graph plan, 2 also every launch."""
    try:
        return int(os.environ.get("KERASISH_DEBUG", "0"))
    except ValueError:
        return 0
