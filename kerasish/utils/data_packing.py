"""keras.utils.unpack_x_y_sample_weight / pack_x_y_sample_weight (Keras 3's forms)."""


def unpack_x_y_sample_weight(data):
    """(x, y, sample_weight) from a batch: x, (x,), (x, y) or (x, y, sample_weight)."""
    if isinstance(data, list):
        data = tuple(data)
    if not isinstance(data, tuple):
        return data, None, None
    if len(data) == 1:
        return data[0], None, None
    if len(data) == 2:
        return data[0], data[1], None
    if len(data) == 3:
        return data[0], data[1], data[2]
    raise ValueError(f"Data is expected to be in format `x`, `(x,)`, `(x, y)`, or "
                     f"`(x, y, sample_weight)`, found: {data}")


def pack_x_y_sample_weight(x, y=None, sample_weight=None):
    """The batch structure a train_step receives: x alone (a 1-tuple if x is a tuple or
    list), (x, y), or (x, y, sample_weight)."""
    if y is None:
        return x if not isinstance(x, (tuple, list)) else (x,)
    if sample_weight is None:
        return x, y
    return x, y, sample_weight
