"""`ops.nn` (also `keras.ops.nn`): activations, softmax/log_softmax, one_hot, moments
and the cross-entropies, with Keras 3's arguments and semantics.

The cross-entropies return one value per sample (the class axis reduced), composed of
elementwise ops, reductions and log_softmax/logsumexp, so their gradients are those
ops' kernels: categorical/sparse normalise probabilities over the axis and clip them
to [1e-7, 1 - 1e-7] (Keras's epsilon) unless from_logits; binary_crossentropy is
elementwise (as keras.ops.binary_crossentropy; the loss function averages it).
"""

from kernels_numba import ops as K
from kerasish.ops.dispatch import run
from kerasish.tape import recording
from kerasish.ops.elementwise import (  # noqa: F401 - ops.nn re-exports the activations
    ActivationOp, abs, add, clip, elu, exp, gelu, leaky_relu, log, log1p, multiply,
    negative, relu, sigmoid, silu, softplus, subtract, swish, tanh, divide)
from kerasish.ops.operation import Operation
from kerasish.ops.reductions import logsumexp, mean, sum, var

EPSILON = 1e-7  # keras.config.epsilon()


def softmax(x, axis=-1):
    """Last axis: the fused softmax kernel; other axes: exp(x - logsumexp(x, axis))."""
    nd = len(_shape(x))
    if axis is not None and nd > 0 and axis in (-1, nd - 1):
        return run(ActivationOp("softmax"), [x])
    return exp(subtract(x, logsumexp(x, axis=axis, keepdims=True)))


def log_softmax(x, axis=-1):
    return subtract(x, logsumexp(x, axis=axis, keepdims=True))


class OneHotOp(Operation):
    def __init__(self, num_classes, axis):
        super().__init__()
        self.num_classes, self.axis = int(num_classes), axis

    def compute_output_shape(self, input_shape):
        if self.axis not in (-1, len(input_shape)):
            raise ValueError(f"ops.one_hot: only axis=-1 (classes last) is supported; "
                             f"received axis={self.axis}")
        if self.num_classes <= 0:
            raise ValueError(f"ops.one_hot: expected num_classes >= 1; received "
                             f"{self.num_classes}")
        return (*input_shape, self.num_classes)

    def forward(self, y, x, training):
        K.one_hot(y, x, num_classes=self.num_classes)

    def backward(self, dx, dy, x, y):
        if dx is not None:
            K.fill(dx, 0.0)


def one_hot(x, num_classes, axis=-1, dtype=None, sparse=False):
    """float32 0/1 (integer indices given as floats or ints); out-of-range: a zero row."""
    if sparse:
        raise ValueError("ops.one_hot: sparse=True is not supported; received sparse=True")
    if dtype not in (None, "float32"):
        raise ValueError(f"ops.one_hot: only dtype float32 is supported; received "
                         f"dtype={dtype!r}")
    return run(OneHotOp(num_classes, axis), [x])


def moments(x, axes, keepdims=False, synchronized=False):
    """(mean, variance) over axes, as Keras 3's ops.moments."""
    return mean(x, axis=axes, keepdims=keepdims), var(x, axis=axes, keepdims=keepdims)


def categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """-sum(target * log(p), axis) per sample (Keras 3 semantics)."""
    _same_shape("categorical_crossentropy", target, output)
    if from_logits:
        logp = log_softmax(output, axis=axis)
    else:
        p = divide(output, sum(output, axis=axis, keepdims=True))
        logp = log(clip(p, EPSILON, 1.0 - EPSILON))
    return negative(sum(multiply(target, logp), axis=axis))


def sparse_categorical_crossentropy(target, output, from_logits=False, axis=-1):
    """categorical_crossentropy of one_hot(target): integer labels (a trailing axis of 1
    is squeezed, as Keras does)."""
    from kerasish.ops.shapes import squeeze

    target, output = recording.align(target, output)  # a GradientTape's arrays
    ts, os_ = _shape(target), _shape(output)
    if axis not in (-1, len(os_) - 1):
        raise ValueError(f"ops.sparse_categorical_crossentropy: only axis=-1 is supported; "
                         f"received axis={axis}")
    if len(ts) == len(os_) and ts and ts[-1] == 1:
        target = squeeze(target, axis=-1)
        ts = ts[:-1]
    if tuple(ts) != tuple(os_[:-1]):
        raise ValueError(f"ops.sparse_categorical_crossentropy: expected target of shape "
                         f"{tuple(os_[:-1])} (output {tuple(os_)} without its class axis); "
                         f"received {tuple(ts)}")
    return categorical_crossentropy(one_hot(target, os_[-1]), output, from_logits, axis)


def binary_crossentropy(target, output, from_logits=False):
    """Elementwise -(t log p + (1 - t) log(1 - p)); logits use the stable form
    max(x, 0) - x t + log1p(exp(-|x|))."""
    _same_shape("binary_crossentropy", target, output)
    if from_logits:
        return add(subtract(relu(output), multiply(output, target)),
                   log1p(exp(negative(abs(output)))))
    p = clip(output, EPSILON, 1.0 - EPSILON)
    one_minus_t = subtract(1.0, target)
    return negative(add(multiply(target, log(p)), multiply(one_minus_t, log(subtract(1.0, p)))))


def _shape(x):
    import numpy as np

    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)


def _same_shape(name, target, output):
    ts, os_ = (_shape(t) for t in recording.align(target, output))
    if len(ts) != len(os_) or any(a != b for a, b in zip(ts, os_) if a is not None and
                                  b is not None):
        raise ValueError(f"ops.{name}: expected target and output of the same shape; "
                         f"received target {ts}, output {os_}")

