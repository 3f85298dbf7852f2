"""MultiHeadAttention (Keras 3's arguments, weights and numerics) on the fused kernel.

call(query, value, key=None, attention_mask=None, use_causal_mask=False, ...) becomes a
node on the list [query, value(, key)(, attention_mask)]. Per call: three projections
(dense_forward on (batch*T, d_model) rows, giving Keras's (B, T, heads, dim) layout
directly), ops.attention_forward (scores, mask, softmax and the weighted sum over
tiles: the (Tq, Tk) matrix is never stored; lse kept for the backward), and the output
projection. The backward is the same chain reversed (dense_backward, then
ops.attention_backward recomputing the scores).

Weights, as Keras 3 (legacy .h5 paths `<name>/query/kernel`, ...): query/key/value
kernels (d_in, heads, dim) and biases (heads, dim), attention_output kernel
(heads, value_dim, d_out) and bias (d_out,). `native_groups()` names Keras 3's
`.weights.h5` subgroups (query_dense, key_dense, value_dense, output_dense).

Masks: attention_mask (B, Tq, Tk), kept where > 0.5 (Keras's rule), and the causal flag;
a fully masked row attends uniformly (Keras 3's default path). Not supported (refused by
name): attention_axes other than None/(1,) (inputs of rank 3 only), query_mask/value_mask/
key_mask, a `None` sequence length, use_gate, sliding_window.

Dropout (training only, as Keras: on the attention probabilities after the softmax,
kept ones scaled by 1/(1-rate); the returned scores are the pre-dropout ones) runs inside
the fused kernel: a counter-based keep decision per (batch, head, query, key) from
(seed, step), regenerated in the backward. Seed and step are Dropout's
(layers/step_buffer.py StepCounter: set_random_seed, checkpoints, the device step
buffer a replayed launch plan advances with `advance_step()`). Attention (dot
product) and AdditiveAttention, Keras's list-input family, are in layers/additive_attention.py
(Attention is re-exported here).
"""

import math

import numpy as np

from kerasish.layers.attention_dropout import _AttentionDropout
from kerasish.layers.core import _init_config
from kerasish.layers.dot_attention import Attention  # noqa: F401 (re-exported)
from kerasish.layers.layer import Layer
from kernels_numba import device_of, ops
from kernels_numba.ops import attention as attention_ops

_GROUPS = (("query", "query_dense"), ("key", "key_dense"), ("value", "value_dense"),
           ("attention_output", "output_dense"))


def _rows(a, c):
    return a.reshape((a.size // c, c))


class MultiHeadAttention(_AttentionDropout, Layer):
    """Multi-head (scaled dot-product) attention, as keras.layers.MultiHeadAttention."""

    def __init__(self, num_heads, key_dim, value_dim=None, dropout=0.0, use_bias=True,
                 output_shape=None, attention_axes=None, flash_attention=None,
                 kernel_initializer="glorot_uniform", bias_initializer="zeros",
                 kernel_regularizer=None, bias_regularizer=None, activity_regularizer=None,
                 kernel_constraint=None, bias_constraint=None, seed=None, use_gate=False,
                 sliding_window=None, **kwargs):
        super().__init__(**kwargs)
        who = f"MultiHeadAttention '{self.name}'"
        for arg, value in (("num_heads", num_heads), ("key_dim", key_dim),
                           ("value_dim", key_dim if value_dim is None else value_dim)):
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 1:
                raise ValueError(f"{who}: expected {arg} to be a positive integer; received "
                                 f"{arg}={value!r}")
        self.num_heads, self.key_dim = int(num_heads), int(key_dim)
        self.value_dim = int(key_dim if value_dim is None else value_dim)
        self._init_dropout(who, dropout, seed)
        self.use_bias = bool(use_bias)
        if output_shape is not None:
            dims = [output_shape] if isinstance(output_shape, (int, np.integer)) else \
                list(output_shape)
            if len(dims) != 1:
                raise ValueError(f"{who}: only a one-dimensional output_shape is supported; "
                                 f"received output_shape={output_shape!r}")
            output_shape = int(dims[0])
        self._output_dim = output_shape
        axes = None if attention_axes is None else \
            ([attention_axes] if isinstance(attention_axes, int) else list(attention_axes))
        if axes not in (None, [1], [-2]):
            raise ValueError(f"{who}: only attention_axes=None (attention over the sequence "
                             f"axis of (batch, seq, features) inputs) is supported; received "
                             f"attention_axes={attention_axes!r}")
        for arg, value in (("kernel_regularizer", kernel_regularizer),
                           ("bias_regularizer", bias_regularizer),
                           ("activity_regularizer", activity_regularizer),
                           ("kernel_constraint", kernel_constraint),
                           ("bias_constraint", bias_constraint),
                           ("sliding_window", sliding_window)):
            if value is not None:
                raise ValueError(f"{who}: {arg} is not supported; expected None, received "
                                 f"{value!r}")
        if use_gate:
            raise ValueError(f"{who}: use_gate=True is not supported; expected False")
        self.kernel_initializer, self.bias_initializer = kernel_initializer, bias_initializer
        self._options = None  # (has_key, has_mask, causal, scores): the first call's

    # -- calls ----------------------------------------------------------------------

    def __call__(self, query, value=None, key=None, query_mask=None, value_mask=None,
                 key_mask=None, attention_mask=None, return_attention_scores=False,
                 training=None, use_causal_mask=False, **kwargs):
        who = f"MultiHeadAttention '{self.name}'"
        if isinstance(query, (list, tuple)) and value is None:  # [query, value(, key)]
            if self._options is None:
                if len(query) not in (2, 3):
                    raise ValueError(f"{who}: a list input is [query, value] or [query, "
                                     f"value, key]; received {len(query)} tensors")
                self._options = (len(query) == 3, False, False, False)
            return super().__call__(list(query), training=training, **kwargs)
        if value is None:
            raise TypeError(f"{who}: call(query, value, key=None, ...) needs `value`")
        for arg, m in (("query_mask", query_mask), ("value_mask", value_mask),
                       ("key_mask", key_mask)):
            if m is not None:
                raise ValueError(f"{who}: {arg} is not supported; pass attention_mask "
                                 f"(batch, Tq, Tk) instead")
        options = (key is not None, attention_mask is not None, bool(use_causal_mask),
                   bool(return_attention_scores))
        if self._options is not None and options != self._options:
            raise ValueError(f"{who}: every call of one layer must pass the same kind of "
                             f"arguments (key given, attention_mask given, use_causal_mask, "
                             f"return_attention_scores); "
                             f"first call {self._options}, this call {options}")
        self._options = options
        inputs = [query, value] + ([key] if key is not None else []) + \
            ([attention_mask] if attention_mask is not None else [])
        return super().__call__(inputs, training=training, **kwargs)

    def node_arguments(self, inputs):
        """Keras 3's inbound-node form of one call on the tensor list `inputs`:
        (args, kwargs) = ([query, value], {"key": .., "attention_mask": ..,
        "use_causal_mask": ..}); `layer(*args, **kwargs)` records the same node."""
        has_key, has_mask, causal, scores = self._options
        kwargs = {"return_attention_scores": True} if scores else {}
        if has_key:
            kwargs["key"] = inputs[2]
        if has_mask:
            kwargs["attention_mask"] = inputs[-1]
        if causal:
            kwargs["use_causal_mask"] = True
        return [inputs[0], inputs[1]], kwargs

    # -- graph contract ---------------------------------------------------------------

    def _shapes(self, input_shape):
        who = f"MultiHeadAttention '{self.name}'"
        has_key, has_mask = self._options[:2]
        shapes = [tuple(s) for s in input_shape]
        q, v = shapes[0], shapes[1]
        k = shapes[2] if has_key else v
        for arg, s in (("query", q), ("value", v), ("key", k)):
            if len(s) != 3 or s[1] is None or s[2] is None:
                raise ValueError(f"{who}: expected {arg} of shape (batch, seq, features) with "
                                 f"known seq and features; received {s}")
        if k[1] != v[1]:
            raise ValueError(f"{who}: key and value must have the same sequence length; "
                             f"received key {k}, value {v}")
        if has_mask:
            m = shapes[-1]
            if tuple(m[1:]) != (q[1], v[1]):
                raise ValueError(f"{who}: expected attention_mask of shape (batch, {q[1]}, "
                                 f"{v[1]}); received {m}")
        return q, k, v

    def build(self, input_shape):
        q, k, v = self._shapes(input_shape)
        h = self.num_heads
        out = self._output_dim or q[2]
        specs = (("query", (q[2], h, self.key_dim), (h, self.key_dim)),
                 ("key", (k[2], h, self.key_dim), (h, self.key_dim)),
                 ("value", (v[2], h, self.value_dim), (h, self.value_dim)),
                 ("attention_output", (h, self.value_dim, out), (out,)))
        self._params = {}
        for group, kshape, bshape in specs:
            kern = self.add_weight(name="kernel", shape=kshape,
                                   initializer=self.kernel_initializer)
            kern.path = f"{self._path_prefix}{self.name}/{group}/kernel"
            bias = None
            if self.use_bias:
                bias = self.add_weight(name="bias", shape=bshape,
                                       initializer=self.bias_initializer)
                bias.path = f"{self._path_prefix}{self.name}/{group}/bias"
            self._params[group] = (kern, bias)
        self._build_seed()
        self.built = True

    def get_build_config(self):
        """Keras 3's build_config: its build() takes the query/value(/key) shapes by name
        (the mask is a call argument, not a build shape)."""
        if not self.built:
            return None
        shapes = [list(s) for s in self.input_shape]
        names = ["query_shape", "value_shape"] + (["key_shape"] if self._options[0] else [])
        return {"shapes_dict": dict(zip(names, shapes))}

    def native_groups(self):
        """Keras 3's `.weights.h5` subgroups: {group: ("EinsumDense", name, [vars])}."""
        return {attr: ("EinsumDense", group, [w for w in self._params[group] if w is not None])
                for group, attr in _GROUPS}

    def compute_output_shape(self, input_shape):
        q, k, _ = self._shapes(input_shape)
        out = (q[0], q[1], self._output_dim or q[2])
        return [out, (q[0], self.num_heads, q[1], k[1])] if self._options[3] else out

    def scratch_shapes(self, batch_size):
        q, k, v = self._shapes(self.input_shape)
        n, h, dk, dv = batch_size, self.num_heads, self.key_dim, self.value_dim
        tq, tk = q[1], k[1]
        device = self._device = device_of(self._params["query"][0].value)
        f32 = np.float32
        qs, ks, vs, os_ = (n, tq, h, dk), (n, tk, h, dk), (n, tk, h, dv), (n, tq, h, dv)
        ws = attention_ops.attention_workspace_shape(qs, vs, device)
        if device != "cuda":
            ws = (n, ws[0] // max(n, 1) * ws[1])  # batch first, for scratch_view
        return {"q": (qs, f32), "k": (ks, f32), "v": (vs, f32), "o": (os_, f32),
                "lse": ((n, h, tq), f32), "ws": (ws, f32), "do": (os_, f32),
                "dq": (qs, f32), "dk": (ks, f32), "dv": (vs, f32),
                "dx_tmp": ((n, tk, k[2]), f32)}

    def _views(self, n):
        names = ("q", "k", "v", "o", "lse", "do", "dq", "dk", "dv", "dx_tmp")
        views = {name: self.scratch_view(name, n) for name in names}
        ws = self.scratch["ws"]
        if self._device != "cuda":  # (batch, ...) rows -> the op's (B*H, ...) rows
            ws = self.scratch_view("ws", n).reshape(attention_ops.attention_workspace_shape(
                views["q"].shape, views["v"].shape))
        views["ws"] = ws
        return views

    def _inputs(self, x):
        has_key, has_mask, causal, _ = self._options
        q, v = x[0], x[1]
        k = x[2] if has_key else v
        mask = x[-1] if has_mask else None
        return q, k, v, mask, causal

    def forward(self, y, x, training):
        q, k, v, mask, causal = self._inputs(x)
        y, probs = (y[0], y[1]) if self._options[3] else (y, None)
        n = q.shape[0]
        s = self._views(n)
        for group, src, dst in (("query", q, s["q"]), ("key", k, s["k"]), ("value", v, s["v"])):
            kern, bias = self._params[group]
            width = dst.shape[2] * dst.shape[3]
            ops.dense_forward(_rows(dst, width), _rows(src, src.shape[2]),
                              kern.value.reshape((src.shape[2], width)),
                              None if bias is None else bias.value.reshape((width,)))
        attention_ops.attention_forward(s["o"], s["lse"], s["q"], s["k"], s["v"], mask, s["ws"],
                                        scale=1.0 / math.sqrt(self.key_dim), causal=causal,
                                        probs=probs, **self._dropout_args(training, q))
        kern, bias = self._params["attention_output"]
        hv = self.num_heads * self.value_dim
        ops.dense_forward(_rows(y, y.shape[2]), _rows(s["o"], hv),
                          kern.value.reshape((hv, y.shape[2])),
                          None if bias is None else bias.value)

    def _grads(self, group):
        kern, bias = self._params[group]
        if not self.trainable:
            return None, None
        return kern.grad, None if bias is None else bias.grad

    def backward(self, dx, dy, x, y):
        has_key, has_mask, causal, scores = self._options
        q, k, v, mask, _ = self._inputs(x)
        probs, dprobs = (y[1], dy[1]) if scores else (None, None)
        dy = dy[0] if scores else dy
        n = q.shape[0]
        s = self._views(n)
        hv = self.num_heads * self.value_dim
        kern, _ = self._params["attention_output"]
        dw, db = self._grads("attention_output")
        ops.dense_backward(_rows(s["do"], hv), None if dw is None else dw.reshape((hv, -1)),
                           db, _rows(dy, dy.shape[2]), _rows(s["o"], hv),
                           kern.value.reshape((hv, dy.shape[2])))
        attention_ops.attention_backward(s["dq"], s["dk"], s["dv"], s["do"], s["q"], s["k"],
                                         s["v"], s["o"], s["lse"], mask, s["ws"],
                                         scale=1.0 / math.sqrt(self.key_dim), causal=causal,
                                         probs=probs, dprobs=dprobs, **self._drop)
        dx_q, dx_v = dx[0], dx[1]
        dx_k = dx[2] if has_key else None
        self._project_back("query", dx_q, s["dq"], q)
        if has_key:
            self._project_back("key", dx_k, s["dk"], k)
            self._project_back("value", dx_v, s["dv"], v)
        else:  # key is value: its gradient is the sum of both projections' (in order)
            self._project_back("value", dx_v, s["dv"], v)
            tmp = None if dx_v is None else s["dx_tmp"]
            self._project_back("key", tmp, s["dk"], v)
            if dx_v is not None:
                ops.axpy(dx_v, tmp, 1.0)
        if has_mask and dx[-1] is not None:
            ops.fill(dx[-1], 0.0)  # the mask is not differentiable

    def _project_back(self, group, dx, dproj, src):
        kern, _ = self._params[group]
        dw, db = self._grads(group)
        c = src.shape[2]
        width = dproj.shape[2] * dproj.shape[3]
        if dx is None and dw is None:
            return
        ops.dense_backward(None if dx is None else _rows(dx, c),
                           None if dw is None else dw.reshape((c, width)),
                           None if db is None else db.reshape((width,)),
                           _rows(dproj, width), _rows(src, c), kern.value.reshape((c, width)))

    def get_config(self):
        return {**super().get_config(), "num_heads": self.num_heads, "key_dim": self.key_dim,
                "value_dim": self.value_dim, "dropout": self.dropout, "use_bias": self.use_bias,
                "use_gate": False, "output_shape": self._output_dim, "attention_axes": None,
                "sliding_window": None,
                "kernel_initializer": _init_config(self.kernel_initializer),
                "bias_initializer": _init_config(self.bias_initializer),
                "kernel_regularizer": None, "bias_regularizer": None,
                "activity_regularizer": None, "kernel_constraint": None,
                "bias_constraint": None, "seed": self.seed}
