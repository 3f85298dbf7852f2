"""SimpleRNN, LSTM and GRU on kernels_numba's recurrent ops (Keras 3 weight layout).

Per call: the input, time-major, goes through ONE GEMM with the kernel for all steps;
then ops.rnn_sequence_forward runs the T steps (each one recurrent GEMM into the step's
gate rows plus one fused step kernel) in one call; backward, ops.rnn_sequence_backward
walks the steps in reverse (one fused kernel + one GEMM per step) and the layer ends
with one GEMM per weight over all steps. Every buffer is layer scratch.

Inputs: x (N, T, F), or [x, h0] / [x, h0, c0] (initial states). Outputs: the last h
(N, U) or the sequence (N, T, U) (return_sequences), plus the final states as a list
with return_state. A float32 (N, T) mask (0 = padded step) carries the state through.
Dropout: one input mask (N, F) and one recurrent mask (N, U) per batch, the same at every
step, from the counter-based dropout hash (seeded by kerasish.random).
"""

import math

import numpy as np

from kerasish import activations
from kerasish import random as kr
from kerasish.layers.core import _init_config, _positive_int
from kerasish.layers.layer import Layer
from kerasish.layers.recurrent_init import (  # noqa: F401 - Orthogonal stays importable here
    Orthogonal,
    _initializer,
    _UnitForgetBias,
)
from kernels_numba import ops

_REFUSED = {"stateful": False, "unroll": False, "use_cudnn": "auto", "time_major": False}
# passed on to Layer.__init__ (left out when None, as Keras configs write them)
_WEIGHT_EXTRAS = ("kernel_regularizer", "recurrent_regularizer", "bias_regularizer",
                  "kernel_constraint", "recurrent_constraint", "bias_constraint")


class _RNN(Layer):
    config_none_keys = ("activity_regularizer", "kernel_regularizer", "kernel_constraint",
                        "recurrent_regularizer", "recurrent_constraint", "bias_regularizer",
                        "bias_constraint")
    GATES = 1
    KIND = "simple"
    CELL = "simple_rnn_cell"
    STATES = 1
    reset_after = True  # GRU's choice; the other cells' gates have no such variant
    supports_masking = True

    def __init__(self, units, activation="tanh", recurrent_activation="sigmoid", use_bias=True,
                 kernel_initializer="glorot_uniform", recurrent_initializer="orthogonal",
                 bias_initializer="zeros", dropout=0.0, recurrent_dropout=0.0,
                 return_sequences=False, return_state=False, go_backwards=False,
                 zero_output_for_mask=False, seed=None, **kwargs):
        cls = type(self).__name__
        for key, default in _REFUSED.items():
            if kwargs.get(key, default) != default:
                raise ValueError(f"{cls}: {key}={kwargs[key]!r} is not supported by kerasish "
                                 f"(only {key}={default!r})")
            kwargs.pop(key, None)
        for key in _WEIGHT_EXTRAS:  # Layer attaches (or refuses) these by weight name
            if kwargs.get(key, 0) is None:
                kwargs.pop(key)
        super().__init__(**kwargs)
        self.units = _positive_int(cls, "units", units)
        self.activation = self._kind("activation", activation)
        self.recurrent_activation = self._kind("recurrent_activation", recurrent_activation)
        self.use_bias = bool(use_bias)
        self.kernel_initializer = kernel_initializer
        self.recurrent_initializer = recurrent_initializer
        self.bias_initializer = bias_initializer
        for name, rate in (("dropout", dropout), ("recurrent_dropout", recurrent_dropout)):
            if not isinstance(rate, (int, float)) or math.isnan(rate) or not 0 <= rate < 1:
                raise ValueError(f"{cls}: expected {name} in [0, 1); received {rate!r}")
        self.dropout, self.recurrent_dropout = float(dropout), float(recurrent_dropout)
        self.return_sequences = bool(return_sequences)
        self.return_state = bool(return_state)
        self.go_backwards = bool(go_backwards)
        self.zero_output_for_mask = bool(zero_output_for_mask)
        self.seed = seed
        self._seed, self._step = None, 0
        self._dropped = False

    def _kind(self, name, value):
        try:
            kind = activations.get(value)
        except ValueError:
            kind = value
        if kind not in ops.RNN_ACTIVATIONS:
            raise ValueError(f"{type(self).__name__}: {name}={value!r} is not supported; "
                             f"expected one of {sorted(ops.RNN_ACTIVATIONS)}")
        return kind

    @property
    def propagates_mask(self):
        return self.return_sequences

    def __call__(self, inputs, initial_state=None, *args, **kwargs):
        """Keras's `layer(sequences, initial_state=states)` (keras-io's seq2seq decoder):
        the states become the list input [sequences, *states] the kernels take."""
        return super().__call__(with_initial_state(self, inputs, initial_state), *args,
                                **kwargs)

    # -- shapes and weights ---------------------------------------------------------

    def _split_shape(self, input_shape):
        if isinstance(input_shape, list):
            input_shape = input_shape[0]
        shape = tuple(input_shape)
        if len(shape) != 3:
            raise ValueError(f"{type(self).__name__} {self.name}: expected input of rank 3 "
                             f"(batch, timesteps, features); received shape {shape}")
        return shape

    def _bias_shape(self):
        return (self.GATES * self.units,)

    def _bias_initializer(self):
        return _initializer(self.bias_initializer)

    def build(self, input_shape):
        f = self._split_shape(input_shape)[-1]
        g = self.GATES * self.units
        self.kernel = self.add_weight("kernel", (f, g), _initializer(self.kernel_initializer))
        self.recurrent_kernel = self.add_weight("recurrent_kernel", (self.units, g),
                                                _initializer(self.recurrent_initializer))
        self.bias = self.add_weight("bias", self._bias_shape(), self._bias_initializer()) \
            if self.use_bias else None
        for w in self._weights:  # Keras's variable paths: <layer>/<cell>/<weight>
            w.path = f"{self._path_prefix}{self.name}/{self.CELL}/{w.name}"
        self._seed = int(self.seed) if self.seed is not None else kr.new_seed()
        self.built = True

    def compute_output_shape(self, input_shape):
        if isinstance(input_shape, list) and len(input_shape) > 1:
            states = [tuple(s)[1:] for s in input_shape[1:]]
            if states != [(self.units,)] * self.STATES:
                raise ValueError(f"{type(self).__name__} {self.name}: expected {self.STATES} "
                                 f"initial state(s) of shape (batch, {self.units}); received "
                                 f"shapes {[tuple(s) for s in input_shape[1:]]}")
        n, t, _ = self._split_shape(input_shape)
        out = (n, t, self.units) if self.return_sequences else (n, self.units)
        if self.return_state:
            return [out] + [(n, self.units)] * self.STATES
        return out

    def scratch_shapes(self, batch_size):
        _, t, f = self._split_shape(self.input_shape)
        b, u, g = batch_size, self.units, self.GATES * self.units
        shapes = {"xs": (t * b * f,), "gates": (t * b * g,), "h": ((t + 1) * b * u,),
                  "dh": (b * u,)}
        if self.STATES == 2:
            shapes.update(c=((t + 1) * b * u,), dc=(b * u,))
        if self.GATES == 3:
            shapes["inner"] = (t * b * g if self.reset_after else t * b * u,)
            if not self.reset_after:
                shapes["rtmp"] = (b * u,)
        if self.dropout:
            shapes.update(dmask=(b * f,), dtmp=(b * f,))
        if self.recurrent_dropout:
            shapes.update(rmask=(b * u,), rtmp=(b * u,), hd=(t * b * u,))
        return {k: (s, np.float32) for k, s in shapes.items()}

    def _inner(self, t, n):
        if self.GATES != 3:
            return None
        return self._buf("inner", t, n, self.GATES * self.units if self.reset_after
                         else self.units)

    def _buf(self, name, *shape):
        flat = self.scratch[name]
        size = int(np.prod(shape))
        return (flat if flat.shape[0] == size else flat[:size]).reshape(shape)

    # -- forward --------------------------------------------------------------------

    def _unpack(self, x, y):
        states = []
        if isinstance(x, (list, tuple)):
            x, states = x[0], list(x[1:])
            if states and len(states) != self.STATES:
                raise ValueError(f"{type(self).__name__} {self.name}: expected {self.STATES} "
                                 f"initial state(s); received {len(states)}")
        outs = []
        if isinstance(y, (list, tuple)):
            y, outs = y[0], list(y[1:])
        return x, states, y, outs

    def _masks(self, n, training):
        """Draw this batch's dropout masks (same for every step)."""
        self._dropped = bool(training) and (self.dropout > 0 or self.recurrent_dropout > 0)
        if not self._dropped:
            return
        for k, (rate, mask, tmp, width) in enumerate((
                (self.dropout, "dmask", "dtmp", None),
                (self.recurrent_dropout, "rmask", "rtmp", self.units))):
            if rate > 0:
                w = width or self.kernel.shape[0]
                m, scratch = self._buf(mask, n, w), self._buf(tmp, n, w)
                ops.fill(scratch, 1.0)
                ops.dropout_forward(scratch, m, scratch, rate=rate, seed=self._seed + k,
                                    step=self._step)
        self._step += 1

    def forward(self, y, x, training, mask=None):
        x, states, y, outs = self._unpack(x, y)
        n, t, f = x.shape
        u, g = self.units, self.GATES * self.units
        self._masks(n, training)
        drop = self._dropped and self.dropout > 0
        rdrop = self._dropped and self.recurrent_dropout > 0
        xs = self._buf("xs", t, n, f)
        gates = self._buf("gates", t, n, g)
        h = self._buf("h", t + 1, n, u)
        ops.to_time_major(xs, x, reverse=self.go_backwards,
                          scale=self._buf("dmask", n, f) if drop else None)
        ops.rnn_gemm(gates.reshape((t * n, g)), xs.reshape((t * n, f)), self.kernel.value)
        c = self._buf("c", t + 1, n, u) if self.STATES == 2 else None
        for k, buf in enumerate((h, c)[:self.STATES]):
            if states:
                ops.copy(buf[0], states[k])
            else:
                ops.fill(buf[0], 0.0)
        ops.rnn_sequence_forward(
            h, gates, self.recurrent_kernel.value, cell=self.KIND, c=c,
            inner=self._inner(t, n), bias=self.bias.value if self.use_bias else None,
            mask=mask, rmask=self._buf("rmask", n, u) if rdrop else None,
            hd=self._buf("hd", t, n, u) if rdrop else None, go_backwards=self.go_backwards,
            reset_after=self.reset_after, activation=self.activation,
            recurrent_activation=self.recurrent_activation)
        if self.return_sequences:
            ops.from_time_major(y, h[1:])
            if self.zero_output_for_mask and mask is not None:
                self._zero_masked(y, mask)
        else:
            ops.copy(y, h[t])
        for k, out in enumerate(outs):
            ops.copy(out, (h, c)[k][t])

    def _zero_masked(self, seq, mask):
        if getattr(self, "_wrapped", False):  # Bidirectional zeroes after its merge
            return
        if self.go_backwards:
            raise NotImplementedError(f"{type(self).__name__} {self.name}: "
                                      "zero_output_for_mask with go_backwards and a mask")
        ops.masking_backward(seq, seq, mask)

    # -- backward -------------------------------------------------------------------

    def backward(self, dx, dy, x, y, mask=None):
        x, states, y, outs = self._unpack(x, y)
        dstates = []
        if isinstance(dx, (list, tuple)):
            dx, dstates = dx[0], list(dx[1:])
        dout = []
        if isinstance(dy, (list, tuple)):
            dy, dout = dy[0], list(dy[1:])
        n, t, f = x.shape
        u, g = self.units, self.GATES * self.units
        rdrop = self._dropped and self.recurrent_dropout > 0
        xs, gates = self._buf("xs", t, n, f), self._buf("gates", t, n, g)
        h = self._buf("h", t + 1, n, u)
        dh = self._buf("dh", n, u)
        dc = self._buf("dc", n, u) if self.STATES == 2 else None
        if self.return_sequences:
            if self.zero_output_for_mask and mask is not None:
                self._zero_masked(dy, mask)
            ops.fill(dh, 0.0)
        else:
            ops.copy(dh, dy)
        if dc is not None:
            ops.fill(dc, 0.0)
        for k, d in enumerate(dout):
            if d is not None:
                ops.axpy((dh, dc)[k], d, 1.0)
        ops.rnn_sequence_backward(
            gates, dh, h, self.recurrent_kernel.value, cell=self.KIND, dc=dc,
            c=self._buf("c", t + 1, n, u) if self.STATES == 2 else None,
            inner=self._inner(t, n), mask=mask, dy=dy if self.return_sequences else None,
            rmask=self._buf("rmask", n, u) if rdrop else None,
            rtmp=self._buf("rtmp", n, u) if rdrop or not self.reset_after else None,
            go_backwards=self.go_backwards, reset_after=self.reset_after,
            activation=self.activation, recurrent_activation=self.recurrent_activation)
        g2 = gates.reshape((t * n, g))
        i2 = self._buf("inner", t * n, g) if self.GATES == 3 and self.reset_after else g2
        if self.trainable:
            hp = (self._buf("hd", t, n, u) if rdrop else h[:t]).reshape((t * n, u))
            ops.rnn_gemm(self.kernel.grad, xs.reshape((t * n, f)), g2, trans_a=True, beta=1.0)
            if self.reset_after:
                ops.rnn_gemm(self.recurrent_kernel.grad, hp, i2, trans_a=True, beta=1.0)
            else:  # R_zr's left operand is h_prev, R_h's r * h_prev (left in inner)
                ops.rnn_gemm(self.recurrent_kernel.grad, hp, g2, trans_a=True, beta=1.0,
                             columns=(0, 2 * u))
                ops.rnn_gemm(self.recurrent_kernel.grad, self._buf("inner", t * n, u), g2,
                             trans_a=True, beta=1.0, columns=(2 * u, 3 * u))
            if self.use_bias:
                self._bias_grad(g2, i2)
        if dx is not None:
            drop = self._dropped and self.dropout > 0
            ops.matmul(xs.reshape((t * n, f)), g2, self.kernel.value, trans_b=True)
            ops.from_time_major(dx, xs, reverse=self.go_backwards,
                                scale=self._buf("dmask", n, f) if drop else None)
        for k, d in enumerate(dstates):
            if d is not None:
                ops.copy(d, (dh, dc)[k])

    def _bias_grad(self, g2, i2):
        ops.batch_sum(self.bias.grad, g2)

    # -- config ---------------------------------------------------------------------

    def get_config(self):
        config = super().get_config()
        config.update({
            "return_sequences": self.return_sequences, "return_state": self.return_state,
            "go_backwards": self.go_backwards, "stateful": False, "unroll": False,
            "zero_output_for_mask": self.zero_output_for_mask, "units": self.units,
            "activation": self.activation, "use_bias": self.use_bias,
            "kernel_initializer": _init_config(_initializer(self.kernel_initializer)),
            "recurrent_initializer": _init_config(_initializer(self.recurrent_initializer)),
            "bias_initializer": _init_config(_initializer(self.bias_initializer)),
            "dropout": self.dropout, "recurrent_dropout": self.recurrent_dropout,
            "seed": self.seed,
        })
        return config

    def get_extra_state(self):
        """Dropout seed and step, so resumed training draws the same masks."""
        return {"seed": np.int64(self._seed), "step": np.int64(self._step)}

    def set_extra_state(self, state):
        self._seed, self._step = int(state["seed"]), int(state["step"])


def with_initial_state(layer, inputs, initial_state):
    """[sequences, *states] for `initial_state` (one tensor or a list; None: inputs)."""
    if initial_state is None:
        return inputs
    states = list(initial_state) if isinstance(initial_state, (list, tuple)) else \
        [initial_state]
    if isinstance(inputs, (list, tuple)):
        raise ValueError(f"{type(layer).__name__} '{layer.name}': expected the initial "
                         f"states either in the input list or as initial_state=; received "
                         f"both")
    return [inputs, *states]


class SimpleRNN(_RNN):
    """Fully connected RNN: h_t = activation(x_t @ kernel + h_{t-1} @ recurrent_kernel + b)."""

    def __init__(self, units, activation="tanh", **kwargs):
        super().__init__(units, activation=activation, **kwargs)

    def get_config(self):
        config = super().get_config()
        for key in ("recurrent_activation", "seed"):  # Keras's SimpleRNN writes neither
            config.pop(key, None)
        return config


class LSTM(_RNN):
    """Long short-term memory (Hochreiter 1997), Keras gate order i, f, c, o."""

    GATES, STATES, CELL, KIND = 4, 2, "lstm_cell", "lstm"

    def __init__(self, units, unit_forget_bias=True, implementation=2, **kwargs):
        super().__init__(units, **kwargs)
        self.unit_forget_bias = bool(unit_forget_bias)

    def _bias_initializer(self):
        base = _initializer(self.bias_initializer)
        return _UnitForgetBias(base, self.units) if self.unit_forget_bias else base

    def get_config(self):
        return {**super().get_config(), "recurrent_activation": self.recurrent_activation,
                "unit_forget_bias": self.unit_forget_bias}


class GRU(_RNN):
    """Gated recurrent unit (Cho 2014), Keras gate order z, r, h.

    reset_after=True (Keras 3's default): hh = act(x W_h + b_xh + r * (h R_h + b_rh)), bias
    (2, 3U); reset_after=False (the original GRU): hh = act(x W_h + (r * h) R_h + b_h),
    bias (3U,), two recurrent GEMMs per step (r is needed before the R_h product)."""

    GATES, STATES, CELL, KIND = 3, 1, "gru_cell", "gru"

    def __init__(self, units, reset_after=True, implementation=2, **kwargs):
        self.reset_after = bool(reset_after)
        super().__init__(units, **kwargs)

    def _bias_shape(self):
        return (2, 3 * self.units) if self.reset_after else (3 * self.units,)

    def _bias_grad(self, g2, i2):
        if not self.reset_after:
            ops.batch_sum(self.bias.grad, g2)
            return
        ops.batch_sum(self.bias.grad[0], g2)
        ops.batch_sum(self.bias.grad[1], i2)

    def get_config(self):
        return {**super().get_config(), "recurrent_activation": self.recurrent_activation,
                "reset_after": self.reset_after}
