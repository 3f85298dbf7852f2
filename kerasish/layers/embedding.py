"""Embedding (token ids -> vectors, optional mask_zero) and Masking.

Ids arrive as float32 (the engine's input buffers); an id outside [0, input_dim) gives a
NaN row. Both layers write a float32 (N, T) mask into the plan's mask buffer through
`write_mask(mask, x)`; `compute_mask(inputs, mask=None)` is Keras's (a bool array for
array inputs, what an eager call's result carries as `_keras_mask`).
"""

import numpy as np

from kerasish.initializers import RandomUniform
from kerasish.initializers import get as get_initializer
from kerasish.layers.core import _init_config, _positive_int
from kerasish.layers.layer import Layer
from kernels_numba import ops


class Embedding(Layer):
    """Turns ids (batch, ...) into vectors (batch, ..., output_dim) from a (V, D) table."""

    def __init__(self, input_dim, output_dim, embeddings_initializer="uniform", mask_zero=False,
                 input_length=None, embeddings_regularizer=None, embeddings_constraint=None,
                 sparse=False, weights=None, **kwargs):
        if sparse:
            raise ValueError("Embedding: sparse=True is not supported")
        if weights is not None:
            raise ValueError("Embedding: weights= is not supported; call set_weights after "
                             "building")
        super().__init__(embeddings_regularizer=embeddings_regularizer,
                         embeddings_constraint=embeddings_constraint, **kwargs)
        self.input_dim = _positive_int("Embedding", "input_dim", input_dim)
        self.output_dim = _positive_int("Embedding", "output_dim", output_dim)
        self.embeddings_initializer = embeddings_initializer
        self.mask_zero = bool(mask_zero)

    def _init(self):
        if self.embeddings_initializer == "uniform":  # Keras's alias for RandomUniform
            return RandomUniform()
        return get_initializer(self.embeddings_initializer)

    def build(self, input_shape):
        self.embeddings = self.add_weight("embeddings", (self.input_dim, self.output_dim),
                                          self._init())
        self.built = True

    def compute_output_shape(self, input_shape):
        return (*tuple(input_shape), self.output_dim)

    def mask_shape(self, input_shape):
        return tuple(input_shape)

    def forward(self, y, x, training):
        ops.embedding_forward(y.reshape((x.size, self.output_dim)), x.reshape(x.size),
                              self.embeddings.value)

    def backward(self, dx, dy, x, y):
        if dx is not None:
            ops.fill(dx, 0.0)  # ids are not differentiable
        if self.trainable:
            ops.embedding_backward(self.embeddings.grad, dy.reshape((x.size, self.output_dim)),
                                   x.reshape(x.size))

    def write_mask(self, mask, x):
        if not self.mask_zero:
            raise ValueError(f"Embedding {self.name}: write_mask needs mask_zero=True")
        ops.embedding_mask(mask.reshape(mask.size), x.reshape(x.size))

    def compute_mask(self, inputs, mask=None):
        """Keras's: None without mask_zero, else inputs != 0."""
        if not self.mask_zero:
            return None
        return _array_mask(f"Embedding {self.name}", inputs, lambda a: a != 0)

    @property
    def produces_mask(self):
        return self.mask_zero

    def get_config(self):
        off = {"embeddings_regularizer": None, "activity_regularizer": None,
               "embeddings_constraint": None}  # Keras writes them; Layer's set ones win
        return {**off, **super().get_config(), "input_dim": self.input_dim,
                "output_dim": self.output_dim,
                "embeddings_initializer": _init_config(self._init()),
                "mask_zero": self.mask_zero}


class Masking(Layer):
    """Marks steps whose features all equal mask_value as padding (mask 0) and zeroes them."""

    produces_mask = True

    def __init__(self, mask_value=0.0, **kwargs):
        super().__init__(**kwargs)
        if isinstance(mask_value, bool) or not isinstance(mask_value, (int, float, np.number)):
            raise TypeError(f"Masking: expected a number for mask_value; received {mask_value!r}")
        self.mask_value = float(mask_value)

    def compute_output_shape(self, input_shape):
        if len(input_shape) != 3:
            raise ValueError(f"Masking {self.name}: expected input (batch, timesteps, features);"
                             f" received shape {tuple(input_shape)}")
        return tuple(input_shape)

    def mask_shape(self, input_shape):
        return tuple(input_shape[:2])

    def scratch_shapes(self, batch_size):
        t, f = self.input_shape[1:]
        return {"mask": ((batch_size, t), np.float32), "y": ((batch_size, t, f), np.float32)}

    def forward(self, y, x, training):
        ops.masking_forward(y, self.scratch_view("mask", x.shape[0]), x,
                            mask_value=self.mask_value)

    def backward(self, dx, dy, x, y):
        if dx is not None:
            ops.masking_backward(dx, dy, self.scratch_view("mask", dy.shape[0]))

    def write_mask(self, mask, x):
        ops.masking_forward(self.scratch_view("y", x.shape[0]), mask, x,
                            mask_value=self.mask_value)

    def compute_mask(self, inputs, mask=None):
        """Keras's: a step is kept when any of its features differs from mask_value."""
        return _array_mask(f"Masking {self.name}", inputs,
                           lambda a: np.any(a != np.float32(self.mask_value), axis=-1))

    def get_config(self):
        return {**super().get_config(), "mask_value": self.mask_value}


def _array_mask(where, inputs, rule):
    """Keras's compute_mask on concrete inputs (a NumPy bool array)."""
    if hasattr(inputs, "_keras_history"):
        raise TypeError(f"{where}: compute_mask of a symbolic tensor is not supported by "
                        f"kerasish (its mask flows through the model); expected an array")
    return rule(np.asarray(inputs))
