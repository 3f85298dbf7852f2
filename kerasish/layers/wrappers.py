"""Bidirectional and TimeDistributed: wrappers that own inner layers.

The inner layers' weights are the wrapper's weights, in Keras's order and with Keras's
paths (`bidirectional/forward_lstm/lstm_cell/kernel`, `time_distributed/dense/kernel`),
so .h5 files cross with Keras. Inner scratch buffers are the wrapper's, prefixed.
"""

import numpy as np

from kerasish.layers.layer import Layer
from kernels_numba import ops

MERGE_MODES = ("concat", "sum", "mul", "ave", None)


def _deserialize(config):
    from kerasish import layers

    return layers.deserialize(config)


def _serialize(layer):
    from kerasish import layers

    return {"module": "keras.layers", **layers.serialize(layer), "registered_name": None}


class _Wrapper(Layer):
    def _inner(self):
        raise NotImplementedError

    def _build_inner(self, layer, input_shape):
        layer._path_prefix = f"{self._path_prefix}{self.name}/"
        layer.trainable = self.trainable
        return layer._build_once(input_shape)

    def _share_scratch(self):
        for prefix, layer in self._inner():
            layer.trainable = self.trainable
            layer.scratch = {k[len(prefix):]: v for k, v in self.scratch.items()
                             if k.startswith(prefix)}

    def _inner_scratch(self, batch_size):
        out = {}
        for prefix, layer in self._inner():
            out.update({prefix + k: v for k, v in layer.scratch_shapes(batch_size).items()})
        return out


class Bidirectional(_Wrapper):
    """Runs a recurrent layer forward and a copy with go_backwards flipped; merges them."""

    supports_masking = True

    def __init__(self, layer, merge_mode="concat", weights=None, backward_layer=None, **kwargs):
        if weights is not None:
            raise ValueError("Bidirectional: weights= is not supported; use set_weights")
        if merge_mode not in MERGE_MODES:
            raise ValueError(f"Bidirectional: expected merge_mode in {MERGE_MODES}; received "
                             f"{merge_mode!r}")
        if isinstance(layer, dict):
            layer = _deserialize(layer)
        if isinstance(backward_layer, dict):
            backward_layer = _deserialize(backward_layer)
        if getattr(layer, "return_state", False):
            raise ValueError("Bidirectional: return_state=True inner layers are not supported")
        super().__init__(**kwargs)
        self.merge_mode = merge_mode
        self.return_sequences = bool(layer.return_sequences)
        fwd_cfg = layer.get_config()
        if not fwd_cfg["name"].startswith("forward_"):
            fwd_cfg["name"] = f"forward_{fwd_cfg['name']}"
        fwd_cfg["zero_output_for_mask"] = self.return_sequences
        self.forward_layer = type(layer).from_config(fwd_cfg)
        if backward_layer is None:
            bwd_cfg = dict(fwd_cfg, go_backwards=not layer.go_backwards,
                           name="backward_" + fwd_cfg["name"][len("forward_"):])
            backward_layer = type(layer).from_config(bwd_cfg)
        self.backward_layer = backward_layer
        for inner in (self.forward_layer, self.backward_layer):
            inner._wrapped = True  # the wrapper zeroes masked outputs after the merge

    def _inner(self):
        return (("f:", self.forward_layer), ("b:", self.backward_layer))

    def build(self, input_shape):
        for _, inner in self._inner():
            self._build_inner(inner, tuple(input_shape))
        self._weights = self.forward_layer._weights + self.backward_layer._weights
        self.built = True

    def _direction_shape(self, batch):
        return self.forward_layer.compute_output_shape((batch, *self.input_shape[1:]))

    def compute_output_shape(self, input_shape):
        one = self.forward_layer.compute_output_shape(tuple(input_shape))
        if self.merge_mode is None:
            return [tuple(one), tuple(one)]
        return (*one[:-1], one[-1] * 2) if self.merge_mode == "concat" else tuple(one)

    def scratch_shapes(self, batch_size):
        shape = self._direction_shape(batch_size)
        shapes = {k: (shape, np.float32) for k in ("yf", "yb", "dyf", "dyb")}
        shapes["dxb"] = ((batch_size, *self.input_shape[1:]), np.float32)
        shapes.update(self._inner_scratch(batch_size))
        return shapes

    def _three(self, a):
        return a if a.ndim == 3 else a.reshape((a.shape[0], 1, a.shape[1]))

    def forward(self, y, x, training, mask=None):
        self._share_scratch()
        n = x.shape[0]
        yf, yb = self.scratch_view("yf", n), self.scratch_view("yb", n)
        self.forward_layer.forward(yf, x, training, mask=mask)
        self.backward_layer.forward(yb, x, training, mask=mask)
        rev = self.return_sequences
        if self.merge_mode is None:
            ops.copy(y[0], yf)
            if rev:  # flip the backward sequence into time order (two layout passes)
                tm = self.scratch_view("dyb", n)
                tm = tm.reshape((tm.shape[1], n, tm.shape[2]))
                ops.to_time_major(tm, yb, reverse=True)
                ops.from_time_major(y[1], tm)
            else:
                ops.copy(y[1], yb)
            outs = list(y)
        else:
            ops.merge_forward(self._three(y), self._three(yf), self._three(yb),
                              mode=self.merge_mode, reverse=rev)
            outs = [y]
        if rev and mask is not None:  # Keras: zero_output_for_mask inside Bidirectional
            for out in outs:
                ops.masking_backward(out, out, mask)

    def backward(self, dx, dy, x, y, mask=None):
        n = x.shape[0]
        rev = self.return_sequences
        yf, yb = self.scratch_view("yf", n), self.scratch_view("yb", n)
        dyf, dyb = self.scratch_view("dyf", n), self.scratch_view("dyb", n)
        if rev and mask is not None:
            for d in (dy if isinstance(dy, list) else [dy]):
                ops.masking_backward(d, d, mask)
        if self.merge_mode is None:
            ops.copy(dyf, dy[0])
            if rev:  # flip back to step order, through yb (not read again without mul)
                tm = yb.reshape((yb.shape[1], n, yb.shape[2]))
                ops.to_time_major(tm, dy[1], reverse=True)
                ops.from_time_major(dyb, tm)
            else:
                ops.copy(dyb, dy[1])
        else:
            ops.merge_backward(self._three(dyf), self._three(dyb), self._three(dy),
                               self._three(yf), self._three(yb), mode=self.merge_mode,
                               reverse=rev)
        dxb = self.scratch_view("dxb", n) if dx is not None else None
        self.forward_layer.backward(dx, dyf, x, yf, mask=mask)
        self.backward_layer.backward(dxb, dyb, x, yb, mask=mask)
        if dx is not None:
            ops.axpy(dx, dxb, 1.0)

    @property
    def propagates_mask(self):
        return self.return_sequences

    def get_config(self):
        return {**super().get_config(), "merge_mode": self.merge_mode,
                "layer": _serialize(self.forward_layer),
                "backward_layer": _serialize(self.backward_layer)}


class TimeDistributed(_Wrapper):
    """Applies a layer to every step: (batch, T, ...) -> (batch, T, ...out) via (batch*T, ...)."""

    def __init__(self, layer, **kwargs):
        if isinstance(layer, dict):
            layer = _deserialize(layer)
        super().__init__(**kwargs)
        self.layer = layer

    def _inner(self):
        return (("l:", self.layer),)

    def build(self, input_shape):
        self._build_inner(self.layer, (None, *tuple(input_shape)[2:]))
        self._weights = self.layer._weights
        self.built = True

    def compute_output_shape(self, input_shape):
        if len(input_shape) < 3:
            raise ValueError(f"TimeDistributed {self.name}: expected input of rank >= 3 "
                             f"(batch, timesteps, ...); received shape {tuple(input_shape)}")
        out = self.layer.compute_output_shape((None, *input_shape[2:]))
        return (input_shape[0], input_shape[1], *out[1:])

    def scratch_shapes(self, batch_size):
        return self._inner_scratch(batch_size * self.input_shape[1])

    def _flat(self, a):
        return None if a is None else a.reshape((a.shape[0] * a.shape[1], *a.shape[2:]))

    def forward(self, y, x, training):
        self._share_scratch()
        self.layer.forward(self._flat(y), self._flat(x), training)

    def backward(self, dx, dy, x, y):
        self.layer.backward(self._flat(dx), self._flat(dy), self._flat(x), self._flat(y))

    def get_config(self):
        return {**super().get_config(), "layer": _serialize(self.layer)}
