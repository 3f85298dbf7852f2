"""Public, device-agnostic ops: validate arguments, then dispatch on the buffers' device.

Every family module defines __all__; all of them are re-exported here, so
`from kernels_numba import ops; ops.dense_forward(...)` reaches every op.
"""
from kernels_numba.ops import (  # noqa: F401
    activation,
    additive_attention,
    attention,
    augment_color,
    augment_geometric,
    constraint,
    regularize,
    rnn_sequence,
    broadcast,
    conv1d,
    conv2d,
    conv2d_pool,
    conv_transpose,
    dense,
    depthwise,
    embedding,
    dropout,
    elementwise,
    layout,
    loss,
    layernorm,
    merge,
    metric,
    noise,
    norms,
    normalization,
    optim,
    optim_more,
    optim_factored,
    permute,
    pointwise_loss,
    pool2d,
    recurrent,
    reduce,
    reduction,
    resample,
    unary,
)
from kernels_numba.ops.activation import *  # noqa: F401,F403
from kernels_numba.ops.broadcast import *  # noqa: F401,F403
from kernels_numba.ops.conv1d import *  # noqa: F401,F403
from kernels_numba.ops.conv2d import *  # noqa: F401,F403
from kernels_numba.ops.conv2d_pool import *  # noqa: F401,F403
from kernels_numba.ops.conv_transpose import *  # noqa: F401,F403
from kernels_numba.ops.depthwise import *  # noqa: F401,F403
from kernels_numba.ops.dense import *  # noqa: F401,F403
from kernels_numba.ops.dropout import *  # noqa: F401,F403
from kernels_numba.ops.elementwise import *  # noqa: F401,F403
from kernels_numba.ops.embedding import *  # noqa: F401,F403
from kernels_numba.ops.layout import *  # noqa: F401,F403
from kernels_numba.ops.layernorm import *  # noqa: F401,F403
from kernels_numba.ops.loss import *  # noqa: F401,F403
from kernels_numba.ops.merge import *  # noqa: F401,F403
from kernels_numba.ops.metric import *  # noqa: F401,F403
from kernels_numba.ops.noise import *  # noqa: F401,F403
from kernels_numba.ops.normalization import *  # noqa: F401,F403
from kernels_numba.ops.optim import *  # noqa: F401,F403
from kernels_numba.ops.permute import *  # noqa: F401,F403
from kernels_numba.ops.pool2d import *  # noqa: F401,F403
from kernels_numba.ops.recurrent import *  # noqa: F401,F403
from kernels_numba.ops.reduce import *  # noqa: F401,F403
from kernels_numba.ops.reduction import *  # noqa: F401,F403
from kernels_numba.ops.unary import *  # noqa: F401,F403
from kernels_numba.ops.resample import *  # noqa: F401,F403
from kernels_numba.ops.additive_attention import *  # noqa: F401,F403
from kernels_numba.ops.attention import *  # noqa: F401,F403
from kernels_numba.ops.augment_color import *  # noqa: F401,F403
from kernels_numba.ops.augment_geometric import *  # noqa: F401,F403
from kernels_numba.ops.constraint import *  # noqa: F401,F403
from kernels_numba.ops.regularize import *  # noqa: F401,F403
from kernels_numba.ops.rnn_sequence import *  # noqa: F401,F403

FAMILIES = ("elementwise", "dense", "activation", "conv2d", "pool2d", "normalization",
            "dropout", "loss", "reduction", "optim", "recurrent",
            "embedding", "conv1d", "merge", "layernorm", "resample", "depthwise",
            "conv_transpose", "noise", "permute", "broadcast", "unary", "reduce", "layout",
            "pointwise_loss", "metric", "norms", "optim_more", "attention", "additive_attention", "augment_color",
            "augment_geometric", "constraint", "regularize", "rnn_sequence", "conv2d_pool",
            "optim_factored")
