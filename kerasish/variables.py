"""Variable: a named weight living in a device buffer, with an optional gradient buffer."""

import numpy as np

import kernels_numba


class Variable:
    """A weight: `.value` is the device buffer, `.grad` its gradient (trainable only).

    `path` ("sequential/dense/kernel") is Keras's variable path, used as the h5 name.
    """

    def __init__(self, initial_value, name, trainable=True, device="cpu", path=None):
        host = np.ascontiguousarray(initial_value, dtype=np.float32)
        self.name = name
        self.path = path or name
        self.trainable = trainable
        self.device = device
        self.value = kernels_numba.to_device(host, device)
        self.grad = None

    @property
    def shape(self):
        return tuple(self.value.shape)

    @property
    def dtype(self):
        return "float32"

    def numpy(self):
        """A host copy of the value."""
        return kernels_numba.to_host(self.value)

    def assign(self, value):
        """Copy `value` into the existing buffer (no reallocation)."""
        host = np.asarray(value, dtype=np.float32)
        if host.shape != self.shape:
            raise ValueError(
                f"Variable {self.path}: expected a value of shape {self.shape}; "
                f"received shape {host.shape}"
            )
        kernels_numba.copy_from_host(self.value, host)

    def ensure_grad(self):
        """Allocate the zeroed gradient buffer once (trainable variables only)."""
        if self.grad is None:
            self.grad = kernels_numba.zeros(self.shape, np.float32, self.device)
        return self.grad

    def __repr__(self):
        return f"<Variable path={self.path} shape={self.shape} device={self.device}>"
