"""keras.ops on arrays: NumPy-like math, reductions, shapes and nn functions."""

import numpy as np

from kerasish import ops

rng = np.random.default_rng(84)
a = rng.normal(size=(2, 3)).astype("float32")
b = rng.normal(size=(3, 4)).astype("float32")
c = ops.convert_to_numpy
RESULT = {
    "matmul": c(ops.matmul(a, b)), "add": c(ops.add(a, 1.0)), "where": c(ops.where(a > 0, a, -a)),
    "clip": c(ops.clip(a, -0.5, 0.5)), "exp": c(ops.exp(a)), "log": c(ops.log(ops.abs(a) + 1)),
    "sum": c(ops.sum(a, axis=1)), "mean": c(ops.mean(a)), "max": c(ops.max(a, axis=0)),
    "var": c(ops.var(a, axis=1)), "std": c(ops.std(a)), "argmax": c(ops.argmax(a, axis=1)),
    "lse": c(ops.logsumexp(a, axis=1)), "reshape": c(ops.reshape(a, (3, 2))),
    "transpose": c(ops.transpose(a)), "expand": c(ops.expand_dims(a, 0)).shape,
    "concat": c(ops.concatenate([a, a], axis=0)), "stack": c(ops.stack([a, a])).shape,
    "split": [c(p) for p in ops.split(b, 2, axis=1)], "take": c(ops.take(b, [0, 2], axis=1)),
    "softmax": c(ops.softmax(a)), "log_softmax": c(ops.log_softmax(a)), "gelu": c(ops.gelu(a)),
    "one_hot": c(ops.one_hot(np.array([0, 2]), 3)), "cast": str(c(ops.cast(a, "int32")).dtype),
    "zeros": c(ops.zeros((2, 2))), "arange": c(ops.arange(5)), "full": c(ops.full((2,), 3.0)),
    "moments": [c(m) for m in ops.moments(a, axes=[0])],
}
TOLERANCE = {"rtol": 1e-4, "atol": 1e-5}
