"""keras.random's draws on kernels_numba's counter-based noise.

Eager (outside a traced call()), a draw fills a NumPy array with the CPU twin of the
kernel and returns it. Inside a traced `call()` (a VAE's sampling layer:
`z_mean + ops.exp(0.5 * z_log_var) * keras.random.normal(ops.shape(z_mean))`) a draw
is a graph op with no inputs whose shape may have the None batch: the plan allocates
it per batch and its forward is the kernel launch (either device), a fresh step each
run unless the seed is an int (Keras's stateless draw: the same values every step).
`dropout` is `inputs * mask` with a traced mask, so gradients flow to `inputs`.
categorical, randint and shuffle are eager only (their results are integers or
permutations, which traced float32 graphs do not carry): in a traced call() they raise.
"""

import numpy as np

from kernels_numba import ops as K
from kerasish.graph.nodes import Node
from kerasish.graph.tracing import current_owner
from kerasish.layers.step_buffer import StepCounter
from kerasish.ops.operation import Operation, as_array, eager, is_symbolic
from kerasish.random import state
from kerasish.random.seed_generator import SeedGenerator

_FLOATS = ("float16", "float32", "float64", "bfloat16")
_INTS = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")


def _dtype_name(dtype):
    if dtype is None:
        return None
    try:
        return np.dtype(dtype).name if not isinstance(dtype, str) else dtype
    except TypeError:
        return str(dtype)


def _float_dtype(name, dtype, traced):
    dtype = _dtype_name(dtype) or "float32"
    if dtype not in _FLOATS:
        raise ValueError(f"keras.random.{name}: expected a floating dtype; received "
                         f"dtype={dtype!r}")
    if traced and dtype != "float32":
        raise ValueError(f"keras.random.{name}: inside a traced call() only dtype float32 is "
                         f"supported; received dtype={dtype!r}")
    return dtype


def _check_seed(name, seed):
    if seed is None or isinstance(seed, SeedGenerator):
        return
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"keras.random.{name}: expected seed to be an int, a "
                         f"keras.random.SeedGenerator or None; received seed={seed!r}")


def _eager_key(seed):
    """(seed, step) of one eager draw under Keras's seed contract."""
    if isinstance(seed, SeedGenerator):
        return seed.next()
    if seed is None:
        return state.new_seed(), 0
    return int(seed) & 0xFFFFFFFF, 0


def _shape(name, shape, traced):
    if isinstance(shape, (int, np.integer)):
        shape = (shape,)
    try:
        shape = tuple(None if s is None else int(s) for s in shape)
    except (TypeError, ValueError):
        raise ValueError(f"keras.random.{name}: expected shape to be a tuple of ints; "
                         f"received shape={shape!r}") from None
    bad = [s for i, s in enumerate(shape) if (s is None and (i > 0 or not traced)) or
           (s is not None and s < 0)]
    if bad:
        where = "only the batch (first) axis may be None inside a traced call()" if traced \
            else "None sizes exist only inside a traced call()"
        raise ValueError(f"keras.random.{name}: expected a concrete shape ({where}); "
                         f"received shape={shape}")
    return shape


def _tracing(shape):
    """Inside a traced call(), or given a shape with the None batch: a graph op."""
    sizes = (shape,) if isinstance(shape, (int, np.integer)) else tuple(shape)
    return current_owner() is not None or any(s is None for s in sizes)


def _fill(kind, out, seed, step, a, b):
    if kind == "normal":
        K.gaussian_fill(out, mean=a, stddev=b, seed=seed, step=step)
    elif kind == "truncated_normal":
        K.truncated_normal_fill(out, mean=a, stddev=b, seed=seed, step=step)
    elif kind == "uniform":
        K.uniform_fill(out, minval=a, maxval=b, seed=seed, step=step)
    else:  # "dropout": the keep mask, 1/(1-rate) or 0
        K.dropout_mask(out, rate=a, seed=seed, step=step)


class RandomFillOp(StepCounter, Operation):
    """A traced draw: no inputs, output `shape` (batch None allowed), one fill launch per
    run. An int seed keeps step 0 (the same draw every run); otherwise steps advance."""

    def __init__(self, kind, shape, seed, a, b):
        super().__init__()
        self.kind, self.shape, self.a, self.b = kind, shape, a, b
        self._init_steps()
        self.fixed = isinstance(seed, (int, np.integer))
        if self.fixed:
            self._seed = int(seed) & 0xFFFFFFFF
        elif isinstance(seed, SeedGenerator):
            self._seed = seed.fork()
        else:
            self._seed = state.new_seed()

    def _advance(self, like):
        if self.fixed:
            self._step = 0
        return super()._advance(like)

    def compute_output_shape(self, input_shape):
        return self.shape

    def forward(self, y, x, training):
        _fill(self.kind, y, self._seed, self._advance(y), self.a, self.b)

    def backward(self, dx, dy, x, y):
        pass  # no inputs: nothing to differentiate


def _draw(name, kind, shape, seed, dtype, a, b):
    _check_seed(name, seed)
    traced = _tracing(shape)
    dtype = _float_dtype(name, dtype, traced)
    shape = _shape(name, shape, traced)
    if traced:
        op = RandomFillOp(kind, shape, seed, a, b)
        op._build_once(())
        return Node(op, [], [op.output_shape], False).outputs
    out = np.empty(shape, np.float32)
    key, step = _eager_key(seed)
    _fill(kind, out, key, step, a, b)
    return eager(out if dtype == "float32" else out.astype(dtype))


def _number(name, arg, value):
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TypeError(f"keras.random.{name}: expected {arg} to be a number; received "
                        f"{arg}={value!r}") from None


def normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Draws from N(mean, stddev**2)."""
    return _draw("normal", "normal", shape, seed, dtype, _number("normal", "mean", mean),
                 _number("normal", "stddev", stddev))


def truncated_normal(shape, mean=0.0, stddev=1.0, dtype=None, seed=None):
    """Normal draws, those more than two stddev from the mean drawn again."""
    return _draw("truncated_normal", "truncated_normal", shape, seed, dtype,
                 _number("truncated_normal", "mean", mean),
                 _number("truncated_normal", "stddev", stddev))


def uniform(shape, minval=0.0, maxval=1.0, dtype=None, seed=None):
    """Draws from U[minval, maxval)."""
    return _draw("uniform", "uniform", shape, seed, dtype, _number("uniform", "minval", minval),
                 _number("uniform", "maxval", maxval))


def dropout(inputs, rate, noise_shape=None, seed=None):
    """inputs * mask, mask 1/(1-rate) with probability 1-rate (else 0), drawn with
    `noise_shape` (None: the inputs' shape) and broadcast over the inputs."""
    from kerasish.ops import multiply, shape as ops_shape

    rate = _number("dropout", "rate", rate)
    if not 0.0 <= rate < 1.0:
        raise ValueError(f"keras.random.dropout: expected rate in [0, 1); received rate={rate}")
    if noise_shape is None:
        noise_shape = ops_shape(inputs)
    elif any(s is None for s in noise_shape):
        full = ops_shape(inputs)
        noise_shape = tuple(f if s is None and i > 0 else s
                            for i, (s, f) in enumerate(zip(noise_shape, full)))
    if is_symbolic(inputs) or current_owner() is not None:
        mask = _draw("dropout", "dropout", noise_shape, seed, None, rate, None)
        return multiply(inputs, mask)
    x = as_array(inputs)
    mask = _draw("dropout", "dropout", noise_shape, seed, None, rate, None)
    return eager((x * np.asarray(mask)).astype(np.float32))


def _eager_only(name, *values):
    if is_symbolic(*values) or current_owner() is not None:
        raise NotImplementedError(f"keras.random.{name} inside a traced call() is not "
                                  f"supported in kerasish (its result is integers); call it "
                                  f"eagerly on arrays")


def _int_dtype(name, dtype):
    dtype = _dtype_name(dtype) or "int32"
    if dtype not in _INTS + _FLOATS:
        raise ValueError(f"keras.random.{name}: expected an integer or floating dtype; "
                         f"received dtype={dtype!r}")
    return dtype


def _uniforms(shape, seed):
    u = np.empty(shape, np.float32)
    key, step = _eager_key(seed)
    K.uniform_fill(u, minval=0.0, maxval=1.0, seed=key, step=step)
    return u


def randint(shape, minval, maxval, dtype="int32", seed=None):
    """Integers drawn uniformly from [minval, maxval)."""
    _eager_only("randint", shape)
    _check_seed("randint", seed)
    dtype = _int_dtype("randint", dtype)
    shape = _shape("randint", shape, False)
    lo, hi = int(minval), int(maxval)
    if hi <= lo:
        raise ValueError(f"keras.random.randint: expected maxval > minval; received "
                         f"minval={minval!r}, maxval={maxval!r}")
    u = _uniforms(shape, seed).astype(np.float64)
    return eager(np.minimum(lo + np.floor(u * (hi - lo)), hi - 1).astype(dtype))


def categorical(logits, num_samples, dtype="int32", seed=None):
    """For each row of logits (batch, num_classes), `num_samples` class indices drawn
    with probabilities softmax(row): shape (batch, num_samples)."""
    _eager_only("categorical", logits)
    _check_seed("categorical", seed)
    dtype = _int_dtype("categorical", dtype)
    z = np.asarray(as_array(logits), np.float64)
    if z.ndim != 2:
        raise ValueError(f"keras.random.categorical: expected logits of shape (batch, "
                         f"num_classes); received shape {z.shape}")
    num_samples = int(num_samples)
    p = np.exp(z - z.max(axis=1, keepdims=True))
    cdf = np.cumsum(p / p.sum(axis=1, keepdims=True), axis=1)
    u = _uniforms((z.shape[0], num_samples), seed).astype(np.float64)
    idx = np.stack([np.searchsorted(cdf[r], u[r], side="right") for r in range(z.shape[0])]) \
        if z.shape[0] else np.zeros((0, num_samples), np.int64)
    return eager(np.minimum(idx, z.shape[1] - 1).astype(dtype))


def shuffle(x, axis=0, seed=None):
    """x with its entries along `axis` in a random order (one permutation)."""
    _eager_only("shuffle", x)
    _check_seed("shuffle", seed)
    a = np.asarray(x)
    if a.ndim == 0:
        raise ValueError("keras.random.shuffle: expected an input of rank >= 1; received a "
                         "scalar")
    axis = int(axis)
    if not -a.ndim <= axis < a.ndim:
        raise ValueError(f"keras.random.shuffle: expected axis in [-{a.ndim}, {a.ndim}); "
                         f"received axis={axis}")
    order = np.argsort(_uniforms((a.shape[axis],), seed), kind="stable")
    return eager(np.take(a, order, axis=axis))
