"""keras.layers.Attention: dot-product (Luong) attention on ops.attention (masks,
use_scale, returned scores, Embedding masks; see the class docstring)."""

import numpy as np

from kerasish.layers.attention_dropout import _AttentionDropout
from kerasish.layers.attention_inputs import ListInputAttention
from kerasish.layers.layer import Layer
from kernels_numba import device_of, ops
from kernels_numba.ops import attention as attention_ops


def _carries_mask(tensor):
    """Whether a symbolic tensor has a Keras mask (from Embedding(mask_zero=True) or
    Masking, passed on by mask-propagating layers): the walk the flat graph's mask flow
    makes, along first inputs."""
    while getattr(tensor, "_keras_history", None) is not None:
        node = tensor.node
        if getattr(node.layer, "produces_mask", False):
            return True
        if not getattr(node.layer, "propagates_mask", False) or not node.input_tensors:
            return False
        tensor = node.input_tensors[0]
    return False


class Attention(ListInputAttention, _AttentionDropout, Layer):
    """Dot-product (Luong) attention, as keras.layers.Attention: call([query, value]) or
    [query, value, key] (mask=[query_mask, value_mask], return_attention_scores,
    use_causal_mask, training) becomes a node on [query, value(, key)(, query_mask)
    (, value_mask)]. out = softmax(scale * query key^T) value on the fused kernel (one
    head: the (B, T, D) inputs are (B, T, 1, D) views); scale: a trainable scalar
    (ones) when use_scale, applied to the query first (q' = scale q: the kernel's
    gradient wrt q' gives both dq and dscale). value_mask and causality drop keys
    (value_mask broadcast to the kernel's (B, Tq, Tk) mask; a fully masked row attends
    uniformly, as Keras's -1e9), query_mask zeroes output rows (Keras's where), dropout
    in training inside the kernel (MultiHeadAttention's). Returned scores are the
    softmax weights after dropout, as Keras's (the kernel's pre-dropout probabilities
    times its keep mask). Masks are float tensors: keys kept where > 0.5, rows where
    != 0 (Keras's booleans are 0/1). Masks from Embedding(mask_zero=True) inputs flow
    as Keras's: the query's mask zeroes rows and is the output's mask; the value's is
    used when value is the query tensor (self-attention), and refused by name
    otherwise (the flat graph hands a layer its first input's mask only); explicit
    masks win over them, as Keras's, but the query's still flows on. Known difference:
    with return_attention_scores, a fully masked row gets the kernel's zeros (weights
    and output row) where Keras's -1e9 gives uniform weights and mean(value).
    Refused by name: score_mode="concat"."""

    supports_masking = True  # the query's implicit mask arrives as forward(mask=)
    propagates_mask = True  # Keras's compute_mask: the query's mask

    def __init__(self, use_scale=False, score_mode="dot", dropout=0.0, seed=None, **kwargs):
        super().__init__(**kwargs)
        who = f"Attention '{self.name}'"
        if score_mode not in ("dot", "concat"):
            raise ValueError(f"{who}: Invalid value for argument score_mode. Expected one of "
                             f"{{'dot', 'concat'}}. Received: score_mode={score_mode}")
        if score_mode != "dot":
            raise ValueError(f"{who}: score_mode='concat' is not supported (the fused "
                             f"kernel computes dot-product scores); expected "
                             f"score_mode='dot', received score_mode={score_mode!r}")
        self.use_scale, self.score_mode = bool(use_scale), "dot"
        self._init_dropout(who, dropout, seed)
        # (has_key, explicit mask, has_qm, has_vm, causal, scores, value shares the
        # query's implicit mask): the first call's
        self._options = None

    @property
    def _causal(self):
        """The calls' use_causal_mask (None before the first call)."""
        return None if self._options is None else self._options[4]

    def __call__(self, inputs, mask=None, training=None, return_attention_scores=False,
                 use_causal_mask=False, **kwargs):
        who = f"Attention '{self.name}'"
        if self.__dict__.get("_flat_call"):  # an eager call's inner call on its node list
            return super().__call__(list(inputs), training=training, **kwargs)
        qm, vm = self._check_list(who, inputs, mask, (2, 3))
        shared = False
        if mask is None and _carries_mask(inputs[1]):
            if inputs[1] is not inputs[0]:
                raise ValueError(f"{who}: the value tensor carries a mask (Embedding "
                                 f"mask_zero=True or Masking) and is not the query; pass it "
                                 f"explicitly: mask=[query_mask, value_mask]")
            shared = True
        options = (len(inputs) == 3, mask is not None, qm is not None, vm is not None,
                   bool(use_causal_mask), bool(return_attention_scores), shared)
        return self._call_flat(who, options, "key, mask, query_mask, value_mask, "
                               "use_causal_mask, return_attention_scores, implicit value "
                               "mask", inputs, qm, vm, training, kwargs)

    def _flags(self):
        has_key, _, has_qm, has_vm, causal, scores, _ = self._options
        return has_key, has_qm, has_vm, causal, scores

    def _split(self, x, mask=None):
        has_key, explicit, has_qm, has_vm, _, _, shared = self._options
        n = 3 if has_key else 2
        q, v = x[0], x[1]
        k = x[2] if has_key else v
        if explicit:
            return q, k, v, (x[n] if has_qm else None), (x[-1] if has_vm else None)
        return q, k, v, mask, (mask if shared else None)

    def _shapes(self, input_shape):
        shapes = [tuple(s) for s in input_shape]
        if self._options is None:  # a direct build([q, v(, k)]), as Keras's
            self._options = (len(shapes) == 3, False, False, False, False, False, False)
        return self._check_shapes(f"Attention '{self.name}'", *self._split(shapes))

    def build(self, input_shape):
        self._shapes(input_shape)
        self.scale = None
        if self.use_scale:
            self.scale = self.add_weight(name="scale", shape=(), initializer="ones")
        self._build_seed()

    def compute_output_shape(self, input_shape):
        q, k, v = self._shapes(input_shape)
        out = (q[0], q[1], v[2])
        return [out, (q[0], q[1], k[1])] if self._options[5] else out

    def scratch_shapes(self, batch_size):
        q, k, v = self._shapes(self.input_shape)
        n, tq, tk, f32 = batch_size, q[1], k[1], np.float32
        ws = attention_ops.attention_workspace_shape((n, tq, 1, q[2]), (1, 1, 1, v[2]))
        out = {"lse": ((n, 1, tq), f32), "ws": ((n, ws[0] // max(n, 1) * ws[1]), f32),
               "dx_tmp": ((n, tk, k[2]), f32), "mask": ((n, tq, tk), f32),
               "o": ((n, tq, v[2]), f32), "do": ((n, tq, v[2]), f32), "zero": ((1,), f32)}
        if self.use_scale:
            out.update(qs=((n, tq, q[2]), f32), dqs=((n, tq, q[2]), f32), ds=((1,), f32))
        if self._options[5] and self.dropout > 0:  # scores after dropout
            out.update(probs=((n, 1, tq, tk), f32), keep=((n, 1, tq, tk), f32),
                       dprobs=((n, 1, tq, tk), f32))
        return out

    def _views(self, x, mask):
        n = x[0].shape[0]
        q, k, v, qm, vm = self._split(x, mask)
        as4 = lambda a: a.reshape((a.shape[0], a.shape[1], 1, a.shape[2]))  # noqa: E731
        shape = attention_ops.attention_workspace_shape((n, q.shape[1], 1, q.shape[2]),
                                                        (n, 1, 1, v.shape[2]), device_of(q))
        ws = self.scratch["ws"].reshape(-1)[:1] if shape == (1,) else \
            self.scratch_view("ws", n).reshape(-1)[:int(np.prod(shape))].reshape(shape)
        if self.scale is not None:  # the kernel sees q' = scale * q
            q = self.scratch_view("qs", n)
        keys = None
        if vm is not None:  # (B, Tk) -> the kernel's (B, Tq, Tk): a stride-0 query axis
            keys = self.scratch_view("mask", n)
            b, tq, tk = keys.shape
            ops.strided_copy(keys, vm, shape=(b, tq, tk), y_offset=0,
                             y_strides=(tq * tk, tk, 1), x_offset=0, x_strides=(tk, 0, 1))
        return as4(q), as4(k), as4(v), qm, keys, self.scratch_view("lse", n), ws, as4

    def _rows(self, qm):
        """qm (B, Tq) as the (B, Tq, 1) condition of Keras's where(query_mask, out, 0)."""
        return qm.reshape((qm.shape[0], qm.shape[1], 1))

    def forward(self, y, x, training, mask=None):
        scores = self._options[5]
        out, probs = (y[0], y[1]) if scores else (y, None)
        if self.scale is not None:
            ops.broadcast_binary(self.scratch_view("qs", x[0].shape[0]), x[0],
                                 self.scale.value, kind="multiply")
        q, k, v, qm, keys, lse, ws, as4 = self._views(x, mask)
        n = x[0].shape[0]
        raw = out if qm is None else self.scratch_view("o", n)
        drop = self._dropout_args(training, q)
        pre = probs
        if probs is not None and drop:  # Keras returns the weights after dropout
            pre = self.scratch_view("probs", n)
        attention_ops.attention_forward(as4(raw), lse, q, k, v, keys, ws, scale=1.0,
                                        causal=self._options[4],
                                        probs=None if pre is None else pre.reshape(
                                            (n, 1) + pre.shape[-2:]), **drop)
        if pre is not None and pre is not probs:
            keep = self.scratch_view("keep", n)
            attention_ops.attention_keep_mask(keep, rate=drop["dropout_rate"],
                                              seed=drop["seed"], step=drop["step"])
            ops.multiply(probs.reshape(keep.shape), pre, keep)
        if qm is not None:
            zero = self.scratch["zero"]
            ops.fill(zero, 0.0)
            ops.broadcast_where(out, self._rows(qm), raw, zero)

    def backward(self, dx, dy, x, y, mask=None):
        has_key, scores = self._options[0], self._options[5]
        n = x[0].shape[0]
        q, k, v, qm, keys, lse, ws, as4 = self._views(x, mask)
        out, probs = (y[0], y[1]) if scores else (y, None)
        dout, dprobs = (dy[0], dy[1]) if scores else (dy, None)
        raw = out if qm is None else self.scratch_view("o", n)
        if qm is not None:  # where(query_mask, out, 0): masked rows get no gradient
            dout = self.scratch_view("do", n)
            ops.broadcast_where_backward(dout, None, dy[0] if scores else dy, self._rows(qm))
        if probs is not None:
            probs, dprobs = (a.reshape((n, 1) + a.shape[-2:]) for a in (probs, dprobs))
            if self._drop:  # the kernel's probs are pre-dropout: d(pre) = d(post) * keep
                keep = self.scratch_view("keep", n)
                probs, pre_d = self.scratch_view("probs", n), self.scratch_view("dprobs", n)
                ops.multiply(pre_d, dprobs, keep)
                dprobs = pre_d
        dscale = self.scale is not None and self.trainable
        dq = self.scratch_view("dqs", n) if self.scale is not None and \
            (dscale or dx[0] is not None) else dx[0]
        view = lambda a: None if a is None else as4(a)  # noqa: E731
        # key is value: its gradient is the sum of the key and value paths
        dk = dx[2] if has_key else (None if dx[1] is None else self.scratch_view("dx_tmp", n))
        attention_ops.attention_backward(view(dq), view(dk), view(dx[1]), as4(dout), q, k, v,
                                         as4(raw), lse, keys, ws, scale=1.0,
                                         causal=self._options[4], probs=probs,
                                         dprobs=dprobs, **self._drop)
        if not has_key and dx[1] is not None:
            ops.axpy(dx[1], dk, 1.0)
        if self.scale is not None and dq is not None:  # q' = scale * q
            ds = self.scratch["ds"] if dscale else None
            ops.broadcast_binary_backward(dx[0], ds, dq, x[0], self.scale.value.reshape((1,)),
                                          kind="multiply")
            if dscale:
                ops.axpy(self.scale.grad.reshape((1,)), ds, 1.0)
        for m in dx[(3 if has_key else 2):]:
            if m is not None:
                ops.fill(m, 0.0)  # masks are not differentiable

    def get_config(self):
        return {**super().get_config(), "use_scale": self.use_scale, "score_mode": "dot",
                "dropout": self.dropout, "seed": self.seed}
