"""InputLayer and Input: declare the per-sample input shape (and dtype) of a model.

Integer and bool inputs (`Input(shape=(None,), dtype="int32")`, Keras's Embedding idiom) are
declared with their dtype, which `model.inputs` and the config report as Keras does; the
plan still computes in float32, so their values are fed as float32, which holds integers
exactly only below 2**24 (`fed_values` refuses larger ones). Issue 36
(dtypes in the plan) replaces this.
"""

import numpy as np

from kerasish.layers.layer import Layer

# Keras's dtype names an Input takes here; every one is fed to the plan as float32
INPUT_DTYPES = ("float32", "int32", "int64", "int16", "int8", "uint8", "uint16", "uint32",
                "bool")


def standardize_input_dtype(dtype):
    """Keras's name for an Input dtype (None -> float32), or a clear refusal."""
    if dtype is None:
        return "float32"
    try:
        name = np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    except TypeError:
        name = str(dtype)
    name = {"float": "float32", "int": "int64", "boolean": "bool"}.get(name, name)
    if name not in INPUT_DTYPES:
        raise ValueError(f"InputLayer: expected dtype one of {list(INPUT_DTYPES)}; received "
                         f"dtype={dtype!r} (float16/bfloat16/float64 inputs and strings are "
                         f"not supported by kerasish)")
    return name


_EXACT = 2 ** 24  # float32 holds every integer of magnitude below this exactly


def fed_values(x, dtype, where):
    """Input data for an Input of `dtype`, as Keras converts it (a float array fed to an
    integer Input truncates; bool is 0/1), checked to survive the plan's float32 feed.
    Issue 36 (dtypes in the plan) replaces the check."""
    if dtype == "float32" or dtype is None:
        return x
    x = np.asarray(x)
    if x.dtype.name != dtype:
        x = x.astype(dtype)
    if dtype != "bool" and x.size and x.dtype.itemsize > 2:
        lo, hi = int(x.min()), int(x.max())
        if max(-lo, hi) >= _EXACT:
            raise ValueError(
                f"{where}: expected {dtype} input values in (-2**24, 2**24), which kerasish "
                f"feeds exactly as float32 (integer dtypes in the plan are issue 36); "
                f"received values in [{lo}, {hi}]")
    return x


class InputLayer(Layer):
    """Holds the per-sample input shape; Sequential keeps it out of `model.layers`.

    Its one node (no inputs) outputs the KerasTensor that `Input(...)` returns.

    Args:
        shape: per-sample shape, e.g. (28, 28, 1).
        batch_size: optional fixed batch size (informational).
    """

    _is_input_layer = True  # graph/nodes.py: its node starts a graph

    def __init__(self, shape=None, batch_size=None, dtype=None, name=None,
                 batch_shape=None, input_shape=None, batch_input_shape=None, **kwargs):
        for key in ("sparse", "ragged", "optional"):  # Keras 3 config keys, always off here
            if kwargs.pop(key, False):
                raise ValueError(f"InputLayer: {key}=True is not supported")
        if shape is None:
            shape = input_shape
        if shape is None and batch_shape is not None:
            shape = tuple(batch_shape)[1:]
        if shape is None and batch_input_shape is not None:
            shape = tuple(batch_input_shape)[1:]
        if shape is None:
            raise ValueError("InputLayer: expected a `shape` (per-sample input shape); "
                             "received None")
        shape = tuple(shape) if not isinstance(shape, int) else (shape,)
        if any(s is not None and int(s) <= 0 for s in shape):
            raise ValueError(f"InputLayer: expected positive dimensions (or None for a size "
                             f"known only from the data); received shape={shape}")
        input_dtype = standardize_input_dtype(dtype)
        super().__init__(name=name, **kwargs)
        self.input_dtype = input_dtype
        self.shape = tuple(None if s is None else int(s) for s in shape)
        self.batch_size = batch_size
        self.built = True
        self.input_shape = self.output_shape = (None, *self.shape)
        from kerasish.graph.nodes import Node

        node = Node(self, [], [(batch_size, *self.shape)], False)  # its tensor: `Input(...)`
        node.output_tensors[0].dtype = input_dtype

    @property
    def dtype(self):
        return self.input_dtype

    def get_config(self):
        return {"batch_shape": [self.batch_size, *self.shape], "dtype": self.input_dtype,
                "sparse": False, "name": self.name}


def Input(shape=None, batch_size=None, dtype=None, name=None, batch_shape=None, **kwargs):
    """Keras's `Input(...)`: the symbolic tensor of a new InputLayer (what functional
    models start from; Sequential also takes it as its first entry)."""
    layer = InputLayer(shape=shape, batch_size=batch_size, dtype=dtype, name=name,
                       batch_shape=batch_shape, **kwargs)
    return layer.output
