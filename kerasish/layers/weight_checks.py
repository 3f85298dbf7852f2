"""The checks add_weight and the Layer constructor make on their arguments: a
regularizer or constraint kerasish can run, add_weight's Keras keywords at their "off"
values, and a weight shape of known non-negative ints under the size limit."""

import os

import numpy as np

from kerasish import constraints, regularizers
from kerasish.layers import weight_budget


def _checked_rule(kind, value, where):
    """A regularizer (with its L1/L2 factors checked) or a constraint kerasish can run."""
    if kind == "regularizer":
        try:
            reg = regularizers.get(value)
        except ValueError as exc:
            raise ValueError(f"{where}: {exc}") from None
        regularizers.penalty_factors(reg, where)
        return reg
    try:
        con = constraints.get(value)
    except ValueError as exc:
        raise ValueError(f"{where}: {exc}") from None
    return constraints.check(con, where)


# add_weight keywords of Keras 3 that kerasish takes only at their "off" value
# (regularizer and constraint are taken: add_weight pops them first).
_WEIGHT_KWARGS_OFF = {"autocast": True, "aggregation": "none", "overwrite_with_gradient": False,
                      "synchronization": "auto", "use_resource": None}
_MAX_WEIGHT_BYTES = int(os.environ.get("KERASISH_MAX_WEIGHT_BYTES", str(8 << 30)))


def _check_weight_kwargs(layer, kwargs):
    for key, value in kwargs.items():
        if key not in _WEIGHT_KWARGS_OFF:
            raise TypeError(f"{layer.name}.add_weight: unexpected keyword argument {key!r}")
        if value != _WEIGHT_KWARGS_OFF[key] and value is not None:
            raise ValueError(f"{layer.name}.add_weight: {key}={value!r} is not supported; "
                             f"expected {key}={_WEIGHT_KWARGS_OFF[key]!r}")


def _checked_weight_shape(layer, name, shape):
    """A tuple of non-negative ints whose float32 size stays under the weight limit."""
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    # e.g. Dense after the Flatten of a None spatial size
    if isinstance(shape, (list, tuple)) and None in shape:
        raise ValueError(f"{type(layer).__name__} '{layer.name}': shapes used to initialize "
                         f"variables must be fully-defined (no `None` dimensions); weight "
                         f"'{name}' received shape={tuple(shape)} (an input size known only "
                         f"from the data, None in keras.Input, reached this layer's weights)")
    try:
        dims = tuple(int(s) for s in shape)
    except (TypeError, ValueError):
        raise ValueError(f"Layer '{layer.name}': weight '{name}' needs a shape of integers; "
                         f"received shape={shape!r}") from None
    if any(d < 0 for d in dims):
        raise ValueError(f"Layer '{layer.name}': weight '{name}' has a negative dimension; "
                         f"received shape={dims}")
    nbytes = 4 * int(np.prod(dims, dtype=object))
    if nbytes > _MAX_WEIGHT_BYTES:
        raise ValueError(
            f"Layer '{layer.name}': weight '{name}' of shape {dims} would take {nbytes:,} "
            f"bytes; the limit is {_MAX_WEIGHT_BYTES:,} bytes (KERASISH_MAX_WEIGHT_BYTES)")
    weight_budget.take(layer, name, dims, nbytes)  # a model being built from a file
    return dims
