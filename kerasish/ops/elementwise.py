"""Elementwise ops: broadcasting binary arithmetic and comparisons, unary math,
activations, where and clip (Keras 3 names and arguments).

Binary ops follow NumPy broadcasting (dispatch.broadcast_shapes); Python numbers
become constant tensors of shape (). Comparisons return float32 0.0/1.0 and pass
no gradient. Each op's forward and backward are single kernels_numba launches.
"""

from kernels_numba import ops as K
from kerasish.ops.dispatch import broadcast_shapes, run
from kerasish.ops.operation import Operation

COMPARISONS = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")


class BinaryOp(Operation):
    """a (kind) b with broadcasting: kernels_numba.ops.broadcast_binary."""

    def __init__(self, kind):
        super().__init__()
        self.kind = kind

    def compute_output_shape(self, input_shape):
        return broadcast_shapes(self.kind, *input_shape)

    def forward(self, y, x, training):
        K.broadcast_binary(y, x[0], x[1], kind=self.kind)

    def backward(self, dx, dy, x, y):
        if self.kind in COMPARISONS:
            for d in dx:
                if d is not None:
                    K.fill(d, 0.0)
            return
        if dx[0] is not None or dx[1] is not None:
            K.broadcast_binary_backward(dx[0], dx[1], dy, x[0], x[1], kind=self.kind)


class UnaryOp(Operation):
    """f(x) for a kernels_numba.ops.unary kind (alpha/beta: clip's bounds)."""

    def __init__(self, kind, alpha=0.0, beta=0.0):
        super().__init__()
        self.kind, self.alpha, self.beta = kind, float(alpha), float(beta)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def forward(self, y, x, training):
        K.unary_forward(y, x, kind=self.kind, alpha=self.alpha, beta=self.beta)

    def backward(self, dx, dy, x, y):
        if dx is not None:
            K.unary_backward(dx, dy, x, kind=self.kind, alpha=self.alpha, beta=self.beta)


class ActivationOp(Operation):
    """An ops.activation kind (the fused kernels the built-in layers use)."""

    def __init__(self, kind, alpha=0.0):
        super().__init__()
        self.kind, self.alpha = kind, float(alpha)

    def compute_output_shape(self, input_shape):
        if self.kind == "softmax" and len(input_shape) == 0:
            raise ValueError("ops.softmax: expected an input of rank >= 1; received shape ()")
        return tuple(input_shape)

    def forward(self, y, x, training):
        K.activation_forward(y, x, kind=self.kind, alpha=self.alpha)

    def backward(self, dx, dy, x, y):
        if dx is not None:
            K.activation_backward(dx, dy, x, y, kind=self.kind, alpha=self.alpha)


class WhereOp(Operation):
    """where(condition, x1, x2): x1 where condition != 0, else x2 (broadcasting)."""

    def compute_output_shape(self, input_shape):
        return broadcast_shapes("where", *input_shape)

    def forward(self, y, x, training):
        K.broadcast_where(y, x[0], x[1], x[2])

    def backward(self, dx, dy, x, y):
        if dx[0] is not None:
            K.fill(dx[0], 0.0)
        if dx[1] is not None or dx[2] is not None:
            K.broadcast_where_backward(dx[1], dx[2], dy, x[0])


def _binary(kind):
    def fn(x1, x2):
        return run(BinaryOp(kind), [x1, x2], as_list=True)

    fn.__name__ = kind
    fn.__doc__ = f"Keras 3 `ops.{kind}(x1, x2)`: elementwise, NumPy broadcasting."
    return fn


def _unary(kind, name=None):
    def fn(x):
        return run(UnaryOp(kind), [x])

    fn.__name__ = name or kind
    fn.__doc__ = f"Keras 3 `ops.{name or kind}(x)`: elementwise."
    return fn


add = _binary("add")
subtract = _binary("subtract")
multiply = _binary("multiply")
divide = _binary("divide")
true_divide = divide
power = _binary("power")
maximum = _binary("maximum")
minimum = _binary("minimum")
equal = _binary("equal")
not_equal = _binary("not_equal")
less = _binary("less")
less_equal = _binary("less_equal")
greater = _binary("greater")
greater_equal = _binary("greater_equal")

negative = _unary("negative")
square = _unary("square")
sqrt = _unary("sqrt")
exp = _unary("exp")
expm1 = _unary("expm1")
log = _unary("log")
log1p = _unary("log1p")
abs = absolute = _unary("abs")  # noqa: A001 - Keras's name
sign = _unary("sign")
reciprocal = _unary("reciprocal")
silu = swish = _unary("silu")


def clip(x, x_min, x_max):
    """Keras 3 `ops.clip(x, x_min, x_max)`; numbers are kernel arguments, tensors
    compose maximum/minimum. NaN stays NaN."""
    if isinstance(x_min, (int, float)) and isinstance(x_max, (int, float)):
        return run(UnaryOp("clip", x_min, x_max), [x])
    return minimum(maximum(x, x_min), x_max)


def where(condition, x1=None, x2=None):
    """Keras 3 `ops.where(condition, x1, x2)` (the 3-argument form)."""
    if x1 is None or x2 is None:
        raise ValueError("ops.where: expected x1 and x2 (the one-argument form returns "
                         "indices, which kerasish does not support); received "
                         f"x1={x1!r}, x2={x2!r}")
    return run(WhereOp(), [condition, x1, x2], as_list=True)


def _activation(kind, x, alpha=0.0):
    return run(ActivationOp(kind, alpha), [x])


def relu(x):
    return _activation("relu", x)


def sigmoid(x):
    return _activation("sigmoid", x)


def tanh(x):
    return _activation("tanh", x)


def softplus(x):
    return _activation("softplus", x)


def elu(x, alpha=1.0):
    return _activation("elu", x, alpha)


def leaky_relu(x, negative_slope=0.2):
    return _activation("leaky_relu", x, negative_slope)


def gelu(x, approximate=True):
    """Keras 3 default approximate=True (the tanh form); False: the exact erf form."""
    return run(UnaryOp("gelu_tanh"), [x]) if approximate else _activation("gelu", x)
