"""Global settings: the device models are built on, floatx, epsilon, debug level.

`KERASISH_DEVICE=auto|cpu|cuda` (default auto: CUDA when a usable GPU exists) or
`set_device(...)` before building a model. A built model keeps its device.
`set_autotune(True|False)` / `KERASISH_AUTOTUNE=0|1`: the kernel auto-tuner
(kernels_numba/autotune.py), on by default; choices are made when a plan is built.
"""

import os

import kernels_numba
from kernels_numba import autotune as _autotune

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


def set_autotune(flag):
    """Turn the kernel auto-tuner on (True, the default) or off (False: every op makes
    the fixed choice it made before the tuner, bit for bit). kernels_numba/autotune.py;
    the environment variable KERASISH_AUTOTUNE=0|1 is the default."""
    _autotune.set_enabled(flag)


def get_autotune():
    """Whether the kernel auto-tuner is on."""
    return _autotune.enabled()


def set_autotune_budget(total_s=None, per_decision_s=None):
    """The tuner's time budget: seconds per process (default 2) and per decision
    (default 0.25); past it ops make their fixed choice."""
    _autotune.set_budget(total_s, per_decision_s)
