"""Variable updates inside a traced function (a Metric's update_state): `var.assign_add
(value)` / `var.assign(value)` become nodes whose forward writes the variable's own
buffer (kernels_numba axpy/copy); they have no gradient."""

from kerasish.graph import tracing
from kerasish.ops.dispatch import run
from kerasish.ops.operation import Operation
from kernels_numba import ops as kops


class AssignOp(Operation):
    def __init__(self, variable, mode):
        super().__init__()
        self.variable, self.mode = variable, mode

    def compute_output_shape(self, input_shape):
        if tuple(input_shape[1:] if input_shape and input_shape[0] is None else input_shape) \
                != tuple(self.variable.shape) and int(_size(input_shape)) != \
                int(_size(self.variable.shape)):
            raise ValueError(f"{self.variable.path}.assign{'_add' if self.mode else ''}: "
                             f"expected a value of shape {self.variable.shape}; received "
                             f"{input_shape}")
        return ()

    def forward(self, y, x, training):
        target = self.variable.value.reshape(x.shape)
        if self.mode == "add":
            kops.axpy(target, x, 1.0)
        elif self.mode == "sub":
            kops.axpy(target, x, -1.0)
        else:
            kops.copy(target, x)

    def backward(self, dx, dy, x, y):
        pass


def _size(shape):
    n = 1
    for s in shape:
        n *= 1 if s is None else s
    return n


def update(variable, value, mode):
    """Record the update in the trace in progress; its output is a dummy () tensor."""
    out = run(AssignOp(variable, mode), [value])
    tracing.record_effect(out)
    return out
