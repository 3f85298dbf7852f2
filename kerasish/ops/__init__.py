"""kerasish.ops: Keras 3's `keras.ops` on kernels_numba.

Each function works on NumPy arrays (eagerly, returning float32 arrays) and on symbolic
tensors inside a traced `call()`, loss or metric (recording an op node whose forward
and backward are kernels_numba launches). See dispatch.py for the eager/symbolic rule
and the batch-axis conventions; every tensor is float32 (integer results such as
argmax are float32 holding integers).
"""

from kerasish.ops import image, nn  # noqa: F401
from kerasish.ops.creation import (  # noqa: F401
    arange, cast, convert_to_numpy, convert_to_tensor, full, full_like, ones, ones_like,
    shape, stop_gradient, zeros, zeros_like)
from kerasish.ops.elementwise import (  # noqa: F401
    abs, absolute, add, clip, divide, elu, equal, exp, expm1, gelu, greater, greater_equal,
    leaky_relu, less, less_equal, log, log1p, maximum, minimum, multiply, negative,
    not_equal, power, reciprocal, relu, sigmoid, sign, silu, softplus, sqrt, square,
    subtract, swish, tanh, true_divide, where)
from kerasish.ops.indexing import getitem  # noqa: F401
from kerasish.ops.linalg import dot, matmul, tensordot  # noqa: F401
from kerasish.ops.nn import (  # noqa: F401
    binary_crossentropy, categorical_crossentropy, log_softmax, moments, one_hot, softmax,
    sparse_categorical_crossentropy)
from kerasish.ops.operation import Operation  # noqa: F401
from kerasish.ops.operators import install_operators  # noqa: F401
from kerasish.ops.reductions import (  # noqa: F401
    amax, amin, argmax, argmin, logsumexp, max, mean, min, std, sum, var)
from kerasish.ops.shapes import (  # noqa: F401
    concatenate, expand_dims, reshape, split, squeeze, stack, take, transpose)

from kerasish.graph.nodes import KerasTensor as _KerasTensor  # noqa: E402

install_operators(_KerasTensor)  # x + y, x[..., 0], x @ w on symbolic tensors
