"""InputLayer and Input: declare the per-sample input shape of a model."""

from kerasish.layers.layer import Layer


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
        super().__init__(name=name, dtype=dtype, **kwargs)
        self.shape = tuple(None if s is None else int(s) for s in shape)
        self.batch_size = batch_size
        self.built = True
        self.input_shape = self.output_shape = (None, *self.shape)
        from kerasish.graph.nodes import Node

        Node(self, [], [(batch_size, *self.shape)], False)  # its tensor: `Input(...)`

    def get_config(self):
        return {"batch_shape": [self.batch_size, *self.shape], "dtype": "float32",
                "sparse": False, "name": self.name}


def Input(shape=None, batch_size=None, dtype=None, name=None, batch_shape=None, **kwargs):
    """Keras's `Input(...)`: the symbolic tensor of a new InputLayer (what functional
    models start from; Sequential also takes it as its first entry)."""
    layer = InputLayer(shape=shape, batch_size=batch_size, dtype=dtype, name=name,
                       batch_shape=batch_shape, **kwargs)
    return layer.output
