"""Variable: a named weight living in a device buffer, with an optional gradient buffer."""

import numpy as np

import kernels_numba


class Variable:
    """A weight: `.value` is the device buffer, `.grad` its gradient (trainable only).

    `path` ("sequential/dense/kernel") is Keras's variable path, used as the h5 name.
    """

    def __init__(self, initial_value, name, trainable=True, device="cpu", path=None):
        host = np.array(initial_value, dtype=np.float32, order="C")  # keeps a 0-d shape
        self.name = name
        self.path = path or name
        self.trainable = trainable
        self.device = device
        self._shape = host.shape  # a scalar () keeps its shape; its buffer holds 1 element
        self.value = kernels_numba.to_device(host.reshape(host.shape or (1,)), device)
        self.grad = None

    @property
    def shape(self):
        return self._shape

    @property
    def dtype(self):
        return "float32"

    def numpy(self):
        """A host copy of the value."""
        return kernels_numba.to_host(self.value).reshape(self._shape)

    def assign(self, value):
        """Copy `value` into the existing buffer (no reallocation); a symbolic value (a
        traced update_state) becomes a graph node."""
        if hasattr(value, "_keras_history"):
            from kerasish.ops import state

            return state.update(self, value, "set")
        host = np.asarray(value, dtype=np.float32)
        if host.shape != self.shape:
            raise ValueError(
                f"Variable {self.path}: expected a value of shape {self.shape}; "
                f"received shape {host.shape}"
            )
        kernels_numba.copy_from_host(self.value, host.reshape(self.value.shape))

    def assign_add(self, value):
        """self += value: on a symbolic value (a traced update_state) a graph node that
        updates the buffer each run; on arrays at once."""
        return self._update(value, "add")

    def assign_sub(self, value):
        return self._update(value, "sub")

    def _update(self, value, mode):
        if hasattr(value, "_keras_history"):
            from kerasish.ops import state

            return state.update(self, value, mode)
        delta = np.asarray(value, dtype=np.float32)
        self.assign(self.numpy() + (delta if mode == "add" else -delta))
        return self

    def ensure_grad(self):
        """Allocate the zeroed gradient buffer once (trainable variables only)."""
        if self.grad is None:
            self.grad = kernels_numba.zeros(self.shape, np.float32, self.device)
        return self.grad

    def __repr__(self):
        return f"<Variable path={self.path} shape={self.shape} device={self.device}>"
