"""keras.activations.<name>(tensor) inside a traced call(): one node on the activation
kernels (kernels_numba ops.activation_forward/backward), the same ones layers use."""

from kerasish.ops.dispatch import run
from kerasish.ops.operation import Operation
from kernels_numba import ops


class ActivationOp(Operation):
    def __init__(self, kind, alpha):
        super().__init__()
        self.kind, self.alpha = kind, float(alpha)

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def forward(self, y, x, training):
        ops.activation_forward(y, x, kind=self.kind, alpha=self.alpha)

    def backward(self, dx, dy, x, y):
        if dx is not None:
            ops.activation_backward(dx, dy, x, y, kind=self.kind, alpha=self.alpha)


def activation(x, kind, alpha=0.0):
    """The activation `kind` of x (a symbolic tensor or an array)."""
    return run(ActivationOp(kind, alpha), [x])
