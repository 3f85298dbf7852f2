"""Python operators on symbolic tensors: `install_operators(KerasTensor)` gives
x + y, x - y, x * y, x / y, -x, x ** y, x @ y, x[key], comparisons (float32 0/1) and
x.T, each recording the matching ops node.

`==` and `!=` return tensors too (Keras 3), but framework code still compares tensors
by identity (`t in outputs`, `list.index(t)`): the tensor they return is truthy exactly
when the two operands are the same object, so those idioms keep working. Operands
that are not tensors, numbers, arrays or Variables give NotImplemented.
"""

import numbers

import numpy as np

from kerasish.variables import Variable


def _operand(v):
    from kerasish.graph.nodes import KerasTensor

    return isinstance(v, (KerasTensor, numbers.Number, np.ndarray, Variable, list, tuple))


def _binary(fn_name, reflected=False):
    def method(self, other):
        if not _operand(other):
            return NotImplemented
        from kerasish import ops

        fn = getattr(ops, fn_name)
        return fn(other, self) if reflected else fn(self, other)

    method.__name__ = f"__{'r' if reflected else ''}{fn_name}__"
    return method


def _identity_equality(fn_name, same):
    def method(self, other):
        if not _operand(other):
            return NotImplemented
        from kerasish import ops
        from kerasish.graph.nodes import KerasTensor

        try:
            out = getattr(ops, fn_name)(self, other)
        except ValueError:
            if isinstance(other, KerasTensor):  # shapes that cannot compare: identity
                return (self is other) == same
            raise
        out._identity_truth = (self is other) == same
        return out

    return method


def _bool(self):
    truth = getattr(self, "_identity_truth", None)
    return True if truth is None else truth


def _getitem(self, key):
    from kerasish import ops

    return ops.getitem(self, key)


def _neg(self):
    from kerasish import ops

    return ops.negative(self)


def _transpose(self):
    from kerasish import ops

    return ops.transpose(self)


def install_operators(cls):
    """Add the arithmetic, comparison and indexing operators to tensor class `cls`."""
    pairs = {"add": "add", "sub": "subtract", "mul": "multiply", "truediv": "divide",
             "pow": "power", "matmul": "matmul"}
    for dunder, fn_name in pairs.items():
        setattr(cls, f"__{dunder}__", _binary(fn_name))
        setattr(cls, f"__r{dunder}__", _binary(fn_name, reflected=True))
    for dunder, fn_name in (("lt", "less"), ("le", "less_equal"), ("gt", "greater"),
                            ("ge", "greater_equal")):
        setattr(cls, f"__{dunder}__", _binary(fn_name))
    cls.__eq__ = _identity_equality("equal", True)
    cls.__ne__ = _identity_equality("not_equal", False)
    cls.__bool__ = _bool
    cls.__neg__ = _neg
    cls.__getitem__ = _getitem
    cls.T = property(_transpose)
    cls.__array_ufunc__ = None  # ndarray + tensor defers to tensor.__radd__
    return cls
