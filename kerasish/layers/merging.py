"""Merge layers (Keras 3's keras/src/layers/merging): Add, Subtract, Multiply, Average,
Maximum, Minimum, Concatenate, and their functional forms (`add([a, b])`, ...).

Each is called on a list of tensors; `build`/`compute_output_shape` take the list of
their shapes (None batch), `forward(y, xs, training)` the list of input buffers, and
`backward(dxs, dy, xs, y)` a list with one buffer per input to overwrite, or None
where that input needs no gradient (dy may be overwritten).

As in Keras, n inputs chain pairwise: output = op(output, inputs[i]) from the left, and
backward follows the chain (for 3+ inputs Multiply, Maximum and Minimum keep the
intermediate results in scratch). Inputs have one shape, or (two inputs of one rank,
Add/Subtract/Multiply/Average/Maximum/Minimum) per-sample shapes whose size-1
dimensions broadcast as in Keras (a squeeze-excite gate (B, 1, 1, C) times a (B, H, W, C)
map): one ops.broadcast_binary launch, its backward summing over the broadcast axes.
Broadcasting across ranks or over 3+ inputs is refused by name.
"""

import numpy as np

from kerasish.layers.layer import Layer
from kernels_numba import ops


def _as_shapes(layer, input_shape):
    """The list of input shapes as tuples; ValueError unless it is one."""
    if not isinstance(input_shape, (list, tuple)) or not input_shape or \
            not all(isinstance(s, (list, tuple)) for s in input_shape):
        raise ValueError(
            f"{type(layer).__name__} '{layer.name}': a merge layer should be called on a "
            f"list of at least 1 input; received input_shape={input_shape!r}")
    shapes = [tuple(None if d is None else int(d) for d in s) for s in input_shape]
    if any(len(s) < 1 for s in shapes):
        raise ValueError(f"{type(layer).__name__} '{layer.name}': inputs need a batch axis; "
                         f"received input_shape={shapes}")
    batches = {s[0] for s in shapes} - {None}
    if len(batches) > 1:
        raise ValueError(f"{type(layer).__name__} '{layer.name}': cannot merge tensors with "
                         f"different batch sizes; received input_shape={shapes}")
    return shapes, (batches.pop() if batches else None)


def _broadcast_dims(a, b):
    """NumPy broadcasting of two per-sample shapes of one rank (None: unknown size)."""
    if len(a) != len(b):
        return None
    out = []
    for i, j in zip(a, b):
        if i is None or j is None:  # Keras: unknown stays unknown (checked at run time)
            out.append(None)
        elif i == j or j == 1:
            out.append(i)
        elif i == 1:
            out.append(j)
        else:
            return None
    return tuple(out)


def _same_dims(a, b):
    """Per-sample dims that agree where both are known; None matches anything and the
    result is None there, as Keras's _compute_elemwise_op_output_shape gives (the size
    is checked when the plan binds the concrete shapes)."""
    if len(a) != len(b):
        return None
    out = []
    for i, j in zip(a, b):
        if i is not None and j is not None and i != j:
            return None
        out.append(None if None in (i, j) else i)
    return tuple(out)


class Merge(Layer):
    """Base of the elementwise merges: validates the list of equal input shapes."""

    MIN_INPUTS, MAX_INPUTS = 1, None
    BROADCAST = None  # ops.broadcast_binary kind when two inputs broadcast
    BROADCAST_SCALE = 1.0  # then the result (and gradients) times this (Average: 0.5)
    _broadcasting = False

    def _merged_shape(self, input_shape):
        """((batch, *dims), input count, whether size-1 dimensions broadcast)."""
        shapes, batch = _as_shapes(self, input_shape)
        count = len(shapes)
        if count < self.MIN_INPUTS or (self.MAX_INPUTS and count > self.MAX_INPUTS):
            want = f"exactly {self.MAX_INPUTS}" if self.MAX_INPUTS == self.MIN_INPUTS \
                else f"at least {self.MIN_INPUTS}"
            raise ValueError(f"A `{type(self).__name__}` layer ('{self.name}') should be "
                             f"called on {want} inputs; received input_shape={shapes}")
        inner = shapes[0][1:]
        for s in shapes[1:]:
            inner = _same_dims(inner, s[1:])
            if inner is None:
                break
        broadcasting = inner is None and count == 2 and self.BROADCAST is not None
        if broadcasting:
            inner = _broadcast_dims(shapes[0][1:], shapes[1][1:])
        if inner is None:
            raise ValueError(
                f"{type(self).__name__} '{self.name}': expected inputs of one shape (or two "
                f"of one rank whose size-1 dimensions broadcast; broadcasting across ranks "
                f"or over 3+ inputs is not supported); received input_shape={shapes}")
        return (batch, *inner), count, broadcasting

    def build(self, input_shape):
        shape, self._count, self._broadcasting = self._merged_shape(input_shape)
        self._inner = shape[1:]  # with a None size: the bound output shape's, per call
        self._dynamic = any(None in s[1:] for s in input_shape)
        self._modes = {}
        self.built = True

    def _broadcasts(self):
        """Whether this call broadcasts: fixed at build, or (a None size in the inputs)
        decided by the concrete shapes the plan binds, once per signature."""
        if not getattr(self, "_dynamic", False):
            return self._broadcasting
        key = tuple(tuple(s) for s in self.input_shape)
        mode = self._modes.get(key)
        if mode is None:
            mode = self._modes[key] = self._merged_shape(self.input_shape)[2]
        return mode

    def compute_output_shape(self, input_shape):
        return self._merged_shape(input_shape)[0]

    def _inputs(self, xs):
        if not isinstance(xs, (list, tuple)) or len(xs) != self._count:
            got = len(xs) if isinstance(xs, (list, tuple)) else type(xs).__name__
            raise ValueError(f"{type(self).__name__} '{self.name}': built for {self._count} "
                             f"inputs; received {got}")
        return xs

    def forward(self, y, x, training):
        x = self._inputs(x)
        if not self._broadcasts():
            return self._forward(y, x)
        ops.broadcast_binary(y, x[0], x[1], kind=self.BROADCAST)
        if self.BROADCAST_SCALE != 1.0:
            ops.scale(y, y, self.BROADCAST_SCALE)

    def backward(self, dx, dy, x, y):
        if not self._broadcasts():
            return self._backward(dx, dy, x, y)
        if dx[0] is None and dx[1] is None:
            return
        ops.broadcast_binary_backward(dx[0], dx[1], dy, x[0], x[1], kind=self.BROADCAST)
        if self.BROADCAST_SCALE != 1.0:
            for d in dx:
                if d is not None:
                    ops.scale(d, d, self.BROADCAST_SCALE)


class Add(Merge):
    """y = inputs[0] + inputs[1] + ... (elementwise)."""

    BROADCAST = "add"

    def _forward(self, y, x):
        ops.copy(y, x[0])
        for xi in x[1:]:
            ops.axpy(y, xi, 1.0)  # y + 1*x is exactly y + x: Keras's left-to-right sum

    def _backward(self, dx, dy, x, y):
        for d in dx:
            if d is not None:
                ops.copy(d, dy)


class Subtract(Merge):
    """y = inputs[0] - inputs[1] (exactly 2 inputs)."""

    BROADCAST = "subtract"
    MIN_INPUTS = MAX_INPUTS = 2

    def _forward(self, y, x):
        ops.copy(y, x[0])
        ops.axpy(y, x[1], -1.0)

    def _backward(self, dx, dy, x, y):
        if dx[0] is not None:
            ops.copy(dx[0], dy)
        if dx[1] is not None:
            ops.scale(dx[1], dy, -1.0)


class Average(Merge):
    """y = (inputs[0] + ... + inputs[n-1]) / n."""

    BROADCAST, BROADCAST_SCALE = "add", 0.5  # two inputs: (a + b) / 2

    def _forward(self, y, x):
        ops.copy(y, x[0])
        for xi in x[1:]:
            ops.axpy(y, xi, 1.0)
        ops.scale(y, y, 1.0 / len(x))

    def _backward(self, dx, dy, x, y):
        for d in dx:
            if d is not None:
                ops.scale(d, dy, 1.0 / len(dx))


class _Chained(Merge):
    """Multiply, Maximum, Minimum: out_i = op(out_{i-1}, inputs[i]), out_0 = inputs[0].

    out_1 .. out_{n-2} are kept in scratch ("chain_i") for backward; out_{n-1} is y."""

    def scratch_shapes(self, batch_size):
        inner = self._inner if None not in self._inner else self.output_shape[1:]
        return {f"chain_{i}": ((batch_size, *inner), np.float32)
                for i in range(1, self._count - 1)}

    def _partial(self, i, x, y):
        """out_i for the batch of x (out_0 is x[0], the last is y)."""
        if i == 0:
            return x[0]
        if i == len(x) - 1:
            return y
        return self.scratch_view(f"chain_{i}", x[0].shape[0])

    def _forward(self, y, x):
        if len(x) == 1:
            ops.copy(y, x[0])
        for i in range(1, len(x)):
            self._op(self._partial(i, x, y), self._partial(i - 1, x, y), x[i])

    def _backward(self, dx, dy, x, y):
        # g is the gradient wrt out_i, kept in dy (overwritable) while walking back.
        if len(dx) == 1:
            if dx[0] is not None:
                ops.copy(dx[0], dy)
            return
        for i in range(len(dx) - 1, 0, -1):
            below = any(d is not None for d in dx[:i])
            if not below and dx[i] is None:
                return
            prev = dx[0] if i == 1 else (dy if below else None)
            self._step_back(prev, dx[i], dy, self._partial(i - 1, x, y), x[i])
            if not below:
                return


class Multiply(_Chained):
    """y = inputs[0] * inputs[1] * ... (elementwise)."""

    BROADCAST = "multiply"

    _op = staticmethod(ops.multiply)

    def _step_back(self, dprev, dxi, g, prev, xi):
        if dxi is not None:
            ops.multiply(dxi, g, prev)  # before g is overwritten
        if dprev is not None:
            ops.multiply(dprev, g, xi)


class Maximum(_Chained):
    """y = max(inputs[0], inputs[1], ...) elementwise, NaN if any input is NaN.

    Backward as Keras 3's torch/jax backends: ties split the gradient in halves."""

    BROADCAST = "maximum"

    _op = staticmethod(ops.maximum)

    def _step_back(self, dprev, dxi, g, prev, xi):
        ops.maximum_backward(dprev, dxi, g, prev, xi)


class Minimum(_Chained):
    """y = min(inputs[0], inputs[1], ...) elementwise, NaN if any input is NaN."""

    BROADCAST = "minimum"

    _op = staticmethod(ops.minimum)

    def _step_back(self, dprev, dxi, g, prev, xi):
        ops.minimum_backward(dprev, dxi, g, prev, xi)


class Concatenate(Layer):
    """Concatenates a list of inputs along `axis` (default -1, never the batch axis).

    Each input is viewed as (outer, inner), outer = batch * prod(shape[1:axis]): its
    block of columns in the output is one copy_columns launch (take_columns back)."""

    def __init__(self, axis=-1, **kwargs):
        super().__init__(**kwargs)
        if isinstance(axis, bool) or not isinstance(axis, (int, np.integer)):
            raise TypeError(f"Concatenate: expected an integer axis; received axis={axis!r}")
        self.axis = int(axis)

    def _merged_shape(self, input_shape):
        shapes, batch = _as_shapes(self, input_shape)
        rank = len(shapes[0])
        axis = self.axis + rank if self.axis < 0 else self.axis
        if any(len(s) != rank for s in shapes) or not 0 <= axis < rank:
            raise ValueError(f"Concatenate '{self.name}': expected inputs of one rank with "
                             f"axis={self.axis} inside it; received input_shape={shapes}")
        if axis == 0:
            raise ValueError(f"Concatenate '{self.name}': concatenating along the batch axis "
                             f"(axis={self.axis}) is not supported; received input_shape={shapes}")
        rest = shapes[0][1:axis] + shapes[0][axis + 1:]
        for s in shapes[1:]:
            rest = _same_dims(rest, s[1:axis] + s[axis + 1:])
            if rest is None:
                raise ValueError(
                    f"Concatenate '{self.name}': a `Concatenate` layer requires inputs with "
                    f"matching shapes except for the concatenation axis {self.axis}; received "
                    f"input_shape={shapes}")
        sizes = [s[axis] for s in shapes]
        total = None if None in sizes else sum(sizes)
        out = (batch, *rest[:axis - 1], total, *rest[axis - 1:])
        return out, axis, shapes

    def build(self, input_shape):
        _, self._axis, shapes = self._merged_shape(input_shape)
        self._count = len(shapes)
        self.built = True

    def compute_output_shape(self, input_shape):
        return self._merged_shape(input_shape)[0]

    def _columns(self, a):
        """a as (outer, inner) around the concatenation axis."""
        outer = int(np.prod(a.shape[:self._axis], dtype=np.int64))
        return a.reshape((outer, a.size // outer if outer else 0))

    def _check_count(self, xs):
        if not isinstance(xs, (list, tuple)) or len(xs) != self._count:
            got = len(xs) if isinstance(xs, (list, tuple)) else type(xs).__name__
            raise ValueError(f"Concatenate '{self.name}': built for {self._count} inputs; "
                             f"received {got}")

    def forward(self, y, x, training):
        self._check_count(x)
        y2, offset = self._columns(y), 0
        for xi in x:
            x2 = self._columns(xi)
            ops.copy_columns(y2, x2, offset)
            offset += x2.shape[1]

    def backward(self, dx, dy, x, y):
        dy2, offset = self._columns(dy), 0
        for d, xi in zip(dx, x):
            width = self._columns(xi).shape[1]
            if d is not None:
                ops.take_columns(self._columns(d), dy2, offset)
            offset += width

    def get_config(self):
        return {**super().get_config(), "axis": self.axis}


def add(inputs, **kwargs):
    """Functional form of Add: `add([a, b])` is `Add()([a, b])`."""
    return Add(**kwargs)(inputs)


def subtract(inputs, **kwargs):
    """Functional form of Subtract."""
    return Subtract(**kwargs)(inputs)


def multiply(inputs, **kwargs):
    """Functional form of Multiply."""
    return Multiply(**kwargs)(inputs)


def average(inputs, **kwargs):
    """Functional form of Average."""
    return Average(**kwargs)(inputs)


def maximum(inputs, **kwargs):
    """Functional form of Maximum."""
    return Maximum(**kwargs)(inputs)


def minimum(inputs, **kwargs):
    """Functional form of Minimum."""
    return Minimum(**kwargs)(inputs)


def concatenate(inputs, axis=-1, **kwargs):
    """Functional form of Concatenate."""
    return Concatenate(axis=axis, **kwargs)(inputs)
