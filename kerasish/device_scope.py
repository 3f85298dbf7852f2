"""`keras.device(name)`: a context manager choosing the device of models built inside it.

Keras's names: "cpu", "cpu:0", "gpu", "gpu:0", "cuda", "cuda:0" (gpu means cuda, as in
Keras's torch backend). Inside, new models (and their weights) go to that device, as
`kerasish.config.set_device` does; the previous choice comes back on exit. A model
keeps the device it was built on.
"""

import contextlib

from kerasish import config


def _parse(device_name):
    if not isinstance(device_name, str):
        raise ValueError(f"keras.device: expected a string like 'gpu:0' or 'cpu'; received "
                         f"device_name={device_name!r}")
    kind, _, index = device_name.lower().partition(":")
    kind = {"gpu": "cuda"}.get(kind, kind)
    if kind not in ("cpu", "cuda") or index not in ("", "0"):
        raise ValueError(f"keras.device: expected 'cpu', 'cpu:0', 'gpu', 'gpu:0', 'cuda' or "
                         f"'cuda:0' (kerasish drives one device per process); received "
                         f"device_name={device_name!r}")
    return kind


@contextlib.contextmanager
def device(device_name):
    kind = _parse(device_name)
    previous = config._device
    config.set_device(kind)
    try:
        yield kind
    finally:
        config._device = previous
