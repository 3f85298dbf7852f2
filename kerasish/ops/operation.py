"""Operation: one kerasish.ops function as a graph node, and how op arguments become
tensors.

Every op is an Operation (a Layer without weights of its own): on symbolic tensors
`op(inputs)` records a Node like any layer call, so ops written inside `call()`
become part of the model's graph and the plan allocates their buffers; on arrays the
op runs at once through the same forward (its CPU twin) and returns an array.

Op arguments that are not tensors become graph inputs of a fixed value:
- a Variable (a layer weight used in `call()`) reads the weight's own buffer
  (`ReadVariable`: no copy; its gradient is added into the variable's `.grad`);
- an array or a list of numbers becomes a `Constant` (its own buffer, no gradient);
- Python scalars stay op attributes (each op decides).
Tensors whose first dimension is None have a batch axis; the others (weights,
constants, full reductions) have a fixed shape.
"""

import numpy as np

import kernels_numba
from kerasish.graph.nodes import KerasTensor, Node, flatten
from kerasish.layers.layer import Layer
from kerasish.variables import Variable


class Operation(Layer):
    """Base of every op node. Subclasses implement compute_output_shape(input_shape),
    forward(y, x, training) and backward(dx, dy, x, y) with kernels_numba ops, like
    layers; x/dx are lists when the op takes several tensors."""

    is_operation = True

    def __init__(self, name=None):
        super().__init__(name=name or _op_name(type(self).__name__))
        self.built = True

    def build(self, input_shape):
        self.built = True

    def get_config(self):
        raise TypeError(f"{type(self).__name__} is an op inside a traced call(); it has no "
                        f"config of its own")


class Constant(Operation):
    """A fixed array as a graph tensor: the plan uses its buffer as the tensor."""

    def __init__(self, value):
        super().__init__()
        host = np.ascontiguousarray(value, dtype=np.float32)
        self.host = host
        self._values = {}

    def external_value(self, device):
        buf = self._values.get(device)
        if buf is None:
            buf = self._values[device] = kernels_numba.to_device(self.host, device)
        return buf

    def compute_output_shape(self, input_shape):
        return tuple(self.host.shape)

    def forward(self, y, x, training):
        pass  # the output is the constant's own buffer

    def backward(self, dx, dy, x, y):
        pass


class ReadVariable(Operation):
    """A weight inside a traced call(): the tensor is the variable's buffer; backward
    adds the tensor's gradient into `variable.grad` (so the optimizer sees it)."""

    def __init__(self, variable, owner):
        super().__init__()
        self.variable, self.owner = variable, owner

    @property
    def trainable_weights(self):
        return [self.variable] if self.variable.trainable and self.owner.trainable else []

    @property
    def non_trainable_weights(self):
        return []

    def external_value(self, device):
        return self.variable.value

    def compute_output_shape(self, input_shape):
        return tuple(self.variable.shape)

    def forward(self, y, x, training):
        pass

    def backward(self, dx, dy, x, y):
        if self.trainable_weights:
            kernels_numba.ops.axpy(self.variable.grad, dy, 1.0)


_counts = {}


def _op_name(cls_name):
    """Op nodes get private names: they never appear in model.layers or configs."""
    _counts[cls_name] = _counts.get(cls_name, 0) + 1
    return f"__op_{cls_name.lower()}_{_counts[cls_name]}"


def is_symbolic(*values):
    """A symbolic tensor among the values (a GradientTape's tensor counts only while its
    recording is written: otherwise it is its array, kerasish/tape/recording.py)."""
    from kerasish.tape import recording

    return any(isinstance(v, KerasTensor) and v.__dict__.get("_tape_rec") in
               (None, recording.active()) for v in flatten(list(values)))


def as_tensor(value, owner=None):
    """A KerasTensor for an op argument in a traced call (see the module doc)."""
    if isinstance(value, KerasTensor):
        return value
    if isinstance(value, Variable):
        from kerasish.graph.tracing import current_owner

        op = ReadVariable(value, owner or current_owner() or _NO_OWNER)
    else:
        op = Constant(value)
    op._build_once(())
    return Node(op, [], [op.output_shape], False).outputs


def as_array(value):
    """A float32 NumPy array for an op argument on the eager path."""
    if isinstance(value, Variable):
        return value.numpy()
    if isinstance(value, KerasTensor):  # a GradientTape's tensor outside its recording
        from kerasish.tape.recording import value_of

        return value_of(value)
    return np.asarray(value, dtype=np.float32)


class EagerArray(np.ndarray):
    """What eager ops and layer/model calls on arrays return: a NumPy array that also
    has Keras tensors' `.numpy()` (so `layer(x).numpy()` works as in Keras)."""

    def numpy(self):
        return np.asarray(self)


def eager(result):
    """Arrays (or lists/dicts of them) as EagerArrays."""
    if isinstance(result, np.ndarray):
        return result.view(EagerArray)
    if isinstance(result, list):
        return [eager(r) for r in result]
    if isinstance(result, dict):
        return {k: eager(v) for k, v in result.items()}
    return result


class _NoOwner:
    trainable = True


_NO_OWNER = _NoOwner()
