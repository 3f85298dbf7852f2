"""Creating and converting tensors: zeros/ones/full/arange and the *_like ops, cast,
stop_gradient, convert_to_tensor/convert_to_numpy, shape.

zeros/ones/full/arange return float32 NumPy arrays for concrete shapes; used in a
traced call() they become Constants like any array argument. A shape whose first size
is None (`ops.zeros((ops.shape(x)[0], units))` in a custom RNN cell loop: the batch) is
a batch-sized fill in a traced call(), its batch taken from the call's input. zeros_like/ones_like/
full_like follow a tensor's (possibly batched) shape as ops (a fill launch).
Every tensor is float32: cast to float32 is the identity, to an integer dtype it
truncates toward zero and to bool it tests != 0, the results float32 holding those
values (kerasish's convention, like argmax); other dtypes are refused by name.
"""

import numpy as np

from kernels_numba import ops as K
from kerasish.graph.nodes import KerasTensor
from kerasish.ops.dispatch import run
from kerasish.ops.elementwise import UnaryOp
from kerasish.ops.operation import Operation, as_array

_INT_DTYPES = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def _concrete(name, shape):
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if any(s is None for s in shape):
        raise ValueError(f"ops.{name}: expected a concrete shape, or a None batch (first) "
                         f"size inside a traced call() with a batched input; received "
                         f"{shape} (for a batch-sized tensor use ops.{name}_like(x))")
    return shape


def _filled(name, shape, value):
    """A float32 array of `shape`, or a batch-sized fill when its batch size is None."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    if shape and shape[0] is None and None not in shape[1:]:
        from kerasish.graph.tracing import batch_source

        source = batch_source()
        if source is not None:
            return run(BatchFillOp(value, shape[1:]), [source])
    return np.full(_concrete(name, shape), value, np.float32)


def _float32(name, dtype):
    if dtype is not None and str(dtype) not in ("float32", "<class 'numpy.float32'>"):
        raise ValueError(f"ops.{name}: only dtype float32 is supported; received "
                         f"dtype={dtype!r}")


def zeros(shape, dtype=None):
    _float32("zeros", dtype)
    return _filled("zeros", shape, 0.0)


def ones(shape, dtype=None):
    _float32("ones", dtype)
    return _filled("ones", shape, 1.0)


def full(shape, fill_value, dtype=None):
    _float32("full", dtype)
    return _filled("full", shape, fill_value)


def arange(start, stop=None, step=1, dtype=None):
    if dtype is not None and str(dtype) not in ("float32", *_INT_DTYPES):
        _float32("arange", dtype)
    return np.arange(start, stop, step).astype(np.float32)


class FillLikeOp(Operation):
    def __init__(self, value):
        super().__init__()
        self.value = float(value)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def forward(self, y, x, training):
        K.fill(y, self.value)

    def backward(self, dx, dy, x, y):
        if dx is not None:
            K.fill(dx, 0.0)


class BatchFillOp(FillLikeOp):
    """`value` in a (batch, *sample_shape) tensor, the batch that of its one input."""

    def __init__(self, value, sample_shape):
        super().__init__(value)
        self.sample_shape = tuple(int(s) for s in sample_shape)

    def compute_output_shape(self, input_shape):
        return (tuple(input_shape)[0], *self.sample_shape)


def zeros_like(x, dtype=None):
    return full_like(x, 0.0, dtype)


def ones_like(x, dtype=None):
    return full_like(x, 1.0, dtype)


def full_like(x, fill_value, dtype=None):
    _float32("full_like", dtype)
    return run(FillLikeOp(fill_value), [x])


class StopGradientOp(Operation):
    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def forward(self, y, x, training):
        K.copy(y, x)

    def backward(self, dx, dy, x, y):
        if dx is not None:
            K.fill(dx, 0.0)


def stop_gradient(variable):
    return run(StopGradientOp(), [variable])


def cast(x, dtype):
    name = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    if name == "float32":
        return x if isinstance(x, KerasTensor) else as_array(x).copy()
    if name in _INT_DTYPES:
        return run(UnaryOp("trunc"), [x])
    if name == "bool":
        return run(UnaryOp("nonzero"), [x])
    raise ValueError(f"ops.cast: kerasish tensors are float32; expected dtype float32, an "
                     f"integer dtype or bool (results held in float32); received "
                     f"dtype={dtype!r}")


def convert_to_tensor(x, dtype=None, sparse=None):
    if dtype is not None and str(dtype) not in ("float32",) and str(dtype) not in _INT_DTYPES:
        raise ValueError(f"ops.convert_to_tensor: only float32 tensors exist in kerasish; "
                         f"received dtype={dtype!r}")
    if isinstance(x, KerasTensor):
        return x
    a = as_array(x)
    return a if a.flags.c_contiguous else a.copy(order="C")


def convert_to_numpy(x):
    if isinstance(x, KerasTensor):
        raise TypeError(f"ops.convert_to_numpy: {x!r} is symbolic: it has no value until "
                        f"the model runs")
    return np.asarray(as_array(x))


def shape(x):
    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)
