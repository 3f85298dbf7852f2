"""Layer: the base class every kerasish layer (and every custom layer) subclasses.

Contract for subclasses (see docs/custom_layers.md):
- `build(input_shape)`: create weights with `add_weight`; input_shape has a None batch.
- `compute_output_shape(input_shape)`: output shape, None batch.
- `forward(y, x, training)`: write the output for input buffer x into the preallocated y.
- `backward(dx, dy, x, y)`: write dL/dx into dx (dx is None for the first layer) and
  ACCUMULATE dL/dw into each trainable weight's `.grad`. dy may be overwritten.
- `scratch_shapes(batch_size)`: {name: (shape, dtype)} for buffers kept between forward
  and backward (masks, argmax, statistics); the executor allocates them once into
  `self.scratch`, sized for the largest batch: slice `[:n]` for smaller batches.
- `get_config()`: constructor arguments, so the layer can be re-created from config.
Buffers are NumPy arrays on the CPU and device arrays on CUDA; call kernels_numba.ops.
"""

import re
from collections import Counter

import numpy as np

from kerasish import config as kconfig
from kerasish import initializers
from kerasish.variables import Variable

_name_counts = Counter()

# Keras config keys accepted and ignored when they hold their default (so configs
# written by Keras load): regularizers, constraints, dtype policies.
_IGNORED_WHEN_NONE = (
    "kernel_regularizer", "bias_regularizer", "activity_regularizer", "kernel_constraint",
    "bias_constraint", "beta_regularizer", "gamma_regularizer", "beta_constraint",
    "gamma_constraint", "lora_rank", "lora_alpha", "quantization_config",
)


def unique_name(base):
    """Keras-style auto names: dense, dense_1, dense_2, ..."""
    n = _name_counts[base]
    _name_counts[base] += 1
    return base if n == 0 else f"{base}_{n}"


def reset_names():
    _name_counts.clear()


def snake_case(name):
    s = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower().replace("2_d", "2d")


class Layer:
    """Base layer. Subclasses set weights in build and implement forward/backward."""

    def __init__(self, trainable=True, name=None, dtype=None, input_shape=None,
                 input_dim=None, batch_input_shape=None, **kwargs):
        for key in _IGNORED_WHEN_NONE:
            if kwargs.get(key, None) is None:
                kwargs.pop(key, None)
        if kwargs:
            raise ValueError(
                f"Unrecognized keyword arguments passed to {type(self).__name__}: {kwargs}"
            )
        if dtype not in (None, "float32") and not isinstance(dtype, dict):
            raise ValueError(f"{type(self).__name__}: only dtype float32 is supported; "
                             f"received dtype={dtype!r}")
        self.name = name or unique_name(snake_case(type(self).__name__))
        self.trainable = trainable
        self.built = False
        self._weights = []
        self.scratch = {}
        self.input_shape = None
        self.output_shape = None
        if input_dim is not None and input_shape is None:
            input_shape = (input_dim,)
        if batch_input_shape is not None and input_shape is None:
            input_shape = tuple(batch_input_shape)[1:]
        self._input_shape_arg = tuple(input_shape) if input_shape is not None else None
        self._path_prefix = ""

    # -- weights --------------------------------------------------------------------

    def add_weight(self, name, shape, initializer="glorot_uniform", trainable=True,
                   dtype="float32"):
        """Create a weight initialised on the host and copied to the model's device."""
        init = initializers.get(initializer)
        shape = tuple(int(s) for s in shape)
        value = np.asarray(init(shape), dtype=np.float32).reshape(shape)
        var = Variable(value, name, trainable=trainable, device=kconfig.get_device(),
                       path=f"{self._path_prefix}{self.name}/{name}")
        self._weights.append(var)
        return var

    @property
    def weights(self):
        return list(self.trainable_weights) + list(self.non_trainable_weights)

    @property
    def trainable_weights(self):
        return [w for w in self._weights if w.trainable] if self.trainable else []

    @property
    def non_trainable_weights(self):
        if not self.trainable:
            return list(self._weights)
        return [w for w in self._weights if not w.trainable]

    def get_weights(self):
        return [w.numpy() for w in self.weights]

    def set_weights(self, weights):
        mine = self.weights
        if len(weights) != len(mine):
            raise ValueError(
                f"Layer {self.name} weight shape mismatch: set_weights was called with a weight "
                f"list of length {len(weights)}, but the layer was expecting {len(mine)} weights."
            )
        for var, value in zip(mine, weights):
            if tuple(np.shape(value)) != var.shape:
                raise ValueError(
                    f"Layer {self.name} weight shape mismatch for {var.name}: expected "
                    f"{var.shape}; received {tuple(np.shape(value))}"
                )
        for var, value in zip(mine, weights):
            var.assign(value)

    def count_params(self):
        if not self.built:
            raise ValueError(f"Layer {self.name} is not built yet: call build() or fit first.")
        return int(sum(np.prod(w.shape) for w in self._weights))

    # -- graph contract ---------------------------------------------------------------

    def build(self, input_shape):
        """Create weights for `input_shape` (None batch). Default: no weights."""
        self.built = True

    def _build_once(self, input_shape):
        input_shape = tuple(input_shape)
        if not self.built:
            self.build(input_shape)
            self.built = True
        self.input_shape = input_shape
        self.output_shape = tuple(self.compute_output_shape(input_shape))
        return self.output_shape

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def scratch_shapes(self, batch_size):
        return {}

    def forward(self, y, x, training):
        raise NotImplementedError(f"{type(self).__name__}.forward is not implemented")

    def backward(self, dx, dy, x, y):
        raise NotImplementedError(f"{type(self).__name__}.backward is not implemented")

    def scratch_view(self, name, n):
        """The first n rows of scratch buffer `name`."""
        buf = self.scratch[name]
        return buf if buf.shape[0] == n else buf[:n]

    # -- config ---------------------------------------------------------------------

    def get_config(self):
        config = {"name": self.name, "trainable": self.trainable, "dtype": "float32"}
        if self._input_shape_arg is not None:
            config["batch_input_shape"] = [None, *self._input_shape_arg]
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("dtype"), dict):  # Keras 3 DTypePolicy config
            config["dtype"] = None
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}, built={self.built}>"
