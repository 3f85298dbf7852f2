"""StateVariable: what `Metric.add_variable` returns, a Variable that reads like Keras's.

Keras code reads metric state as tensors: `return self.true_positives.value`,
`float(metric.result())`, `return self.total / self.count`. So a scalar state's `.value`
is a 0-d view of its one-element buffer on the CPU (NumPy 2 converts only 0-d arrays to
Python scalars), `float()`/`np.asarray()` read the value, and arithmetic goes through
kerasish.ops (eager on the host; inside a traced update_state the variable becomes a
graph input like any weight).
"""

import numpy as np

from kerasish.variables import Variable


def _op(name, reflected=False):
    def method(self, other):
        from kerasish import ops

        fn = getattr(ops, name)
        return fn(other, self) if reflected else fn(self, other)

    method.__name__ = f"__{'r' if reflected else ''}{name}__"
    return method


class StateVariable(Variable):
    @property
    def value(self):
        buf = self._buffer
        return buf.reshape(()) if not self._shape and isinstance(buf, np.ndarray) else buf

    @value.setter
    def value(self, buffer):
        self._buffer = buffer

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def __float__(self):
        return float(self.numpy().reshape(-1)[0]) if self.numpy().size == 1 else \
            float(self.numpy())

    def __int__(self):
        return int(self.__float__())

    __add__, __radd__ = _op("add"), _op("add", True)
    __sub__, __rsub__ = _op("subtract"), _op("subtract", True)
    __mul__, __rmul__ = _op("multiply"), _op("multiply", True)
    __truediv__, __rtruediv__ = _op("divide"), _op("divide", True)
    __pow__, __rpow__ = _op("power"), _op("power", True)

    def __neg__(self):
        from kerasish import ops

        return ops.negative(self)
