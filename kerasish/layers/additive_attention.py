"""keras.layers.AdditiveAttention (Bahdanau) on ops.additive_attention:
call([query, value(, key)], mask=[query_mask, value_mask], return_attention_scores,
use_causal_mask, training) becomes a node on [query, value(, key)(, query_mask)
(, value_mask)]. Scores sum_d scale_d tanh(q_i + k_j) (scale: a trainable (dim,)
weight, glorot_uniform, when use_scale; ones otherwise), softmax over the keys kept by
value_mask and causality (a fully masked row attends uniformly, as Keras's -1e9),
dropout on the softmax weights in training (MultiHeadAttention's seed and step), the
weighted sum of value, zero rows where query_mask is False. ops.additive_attention
never stores the (Tq, Tk, dim) tanh tensor nor the scores (unless they are returned:
Keras's weights, after dropout). Masks are float tensors, kept where > 0.5.
"""

import numpy as np

from kerasish.layers.attention_dropout import _AttentionDropout
from kerasish.layers.attention_inputs import ListInputAttention
from kerasish.layers.layer import Layer
from kernels_numba import ops
from kernels_numba.ops import additive_attention as additive_ops


class AdditiveAttention(ListInputAttention, _AttentionDropout, Layer):
    """Additive attention: softmax(sum(scale * tanh(query + key), -1)) @ value."""

    def __init__(self, use_scale=True, dropout=0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        self.use_scale = bool(use_scale)
        self._init_dropout(f"AdditiveAttention '{self.name}'", dropout, seed)
        self._options = None  # (has_key, has_query_mask, has_value_mask, causal, scores)

    def __call__(self, inputs, mask=None, training=None, return_attention_scores=False,
                 use_causal_mask=False, **kwargs):
        who = f"AdditiveAttention '{self.name}'"
        if self.__dict__.get("_flat_call"):  # an eager call's inner call on its node list
            return super().__call__(list(inputs), training=training, **kwargs)
        qm, vm = self._check_list(who, inputs, mask, (2,))
        options = (len(inputs) == 3, qm is not None, vm is not None, bool(use_causal_mask),
                   bool(return_attention_scores))
        return self._call_flat(who, options, "key, query_mask, value_mask, use_causal_mask, "
                               "return_attention_scores", inputs, qm, vm, training, kwargs)

    def _flags(self):
        return self._options

    def _split(self, x):
        has_key, has_qm, has_vm = self._options[:3]
        n = 3 if has_key else 2
        q, v = x[0], x[1]
        k = x[2] if has_key else v
        return q, k, v, (x[n] if has_qm else None), (x[-1] if has_vm else None)

    def _shapes(self, input_shape):
        return self._check_shapes(f"AdditiveAttention '{self.name}'",
                                  *self._split([tuple(s) for s in input_shape]))

    def build(self, input_shape):
        q, _, _ = self._shapes(input_shape)
        self.scale = None
        if self.use_scale:
            self.scale = self.add_weight(name="scale", shape=(q[2],),
                                         initializer="glorot_uniform")
        self._build_seed()

    def compute_output_shape(self, input_shape):
        q, k, v = self._shapes(input_shape)
        out = (q[0], q[1], v[2])
        return [out, (q[0], q[1], k[1])] if self._options[4] else out

    def scratch_shapes(self, batch_size):
        q, k, _ = self._shapes(self.input_shape)
        ws = additive_ops.additive_attention_workspace_shape((batch_size, q[1], q[2]))
        return {"lse": ((batch_size, q[1]), np.float32),
                "ws": ((batch_size, q[1] * ws[1]), np.float32),
                "dx_tmp": ((batch_size, k[1], k[2]), np.float32)}

    def _ws(self, q):
        n, tq, d = q.shape
        return self.scratch_view("ws", n).reshape((n * tq, d + 1)) if n * tq else \
            self.scratch["ws"].reshape(-1)[:d + 1].reshape((1, d + 1))

    def forward(self, y, x, training):
        q, k, v, qm, vm = self._split(x)
        out, probs = (y[0], y[1]) if self._options[4] else (y, None)
        additive_ops.additive_attention_forward(
            out, self.scratch_view("lse", q.shape[0]), q, k, v,
            None if self.scale is None else self.scale.value, vm, qm,
            causal=self._options[3], probs=probs, **self._dropout_args(training, q))

    def backward(self, dx, dy, x, y):
        has_key, has_qm, has_vm, causal, scores = self._options
        q, k, v, qm, vm = self._split(x)
        out, probs = (y[0], y[1]) if scores else (y, None)
        dout, dprobs = (dy[0], dy[1]) if scores else (dy, None)
        dscale = self.scale.grad if self.scale is not None and self.trainable else None
        dq, dv = dx[0], dx[1]
        dk = dx[2] if has_key else (None if dv is None else
                                    self.scratch_view("dx_tmp", q.shape[0]))
        additive_ops.additive_attention_backward(
            dq, dk, dv, dscale, dout, q, k, v, None if self.scale is None else self.scale.value,
            vm, qm, out, self.scratch_view("lse", q.shape[0]), self._ws(q), causal=causal,
            probs=probs, dprobs=dprobs, **self._drop)
        if not has_key and dv is not None:  # key is value: both paths' gradients
            ops.axpy(dv, dk, 1.0)
        n = 3 if has_key else 2
        for m in dx[n:]:
            if m is not None:
                ops.fill(m, 0.0)  # masks are not differentiable

    def get_config(self):
        # Keras 3's AdditiveAttention: Attention's config without score_mode.
        return {**super().get_config(), "use_scale": self.use_scale, "dropout": self.dropout,
                "seed": self.seed}
