"""kerasish.ops op nodes: forward on device buffers vs a float64 NumPy reference and
op.backward (called with buffers, as the plan calls it) vs finite differences of the
op's own forward, on both devices. Shapes are tiny and odd; broadcasting included."""

import numpy as np
import pytest

from kerasish.ops.creation import FillLikeOp, StopGradientOp
from kerasish.ops.elementwise import ActivationOp, BinaryOp, UnaryOp, WhereOp
from kerasish.ops.indexing import GetItemOp
from kerasish.ops.linalg import MatmulOp
from kerasish.ops.nn import OneHotOp
from kerasish.ops.reductions import ReduceOp
from kerasish.ops.shapes import ConcatenateOp, SplitOp, TakeOp, TransposeOp, _resolve
from kerasish.ops.shapes import ReshapeOp
from kernels_numba import empty
from kernels_numba.testing import assert_close, host, numeric_grad, on, randn


def _forward(op, xs, device, many):
    out = op.output_shape
    outs = [on(device, np.full(s, np.nan, np.float32)) for s in (out if isinstance(out, list)
                                                               else [out])]
    op.scratch = {k: empty(s, dt, device) for k, (s, dt) in op.scratch_shapes(1).items()}
    bufs = [on(device, x) for x in xs]
    op.forward(outs if isinstance(out, list) else outs[0], bufs if many else bufs[0], False)
    return outs, bufs


def check(op, xs, ref, device, grads=None, eps=1e-2, tol=3e-3):
    """ref: float64 function of the inputs; grads: which inputs get a gradient."""
    xs = [np.asarray(x, np.float32) for x in xs]
    many = len(xs) > 1 or isinstance(op, (ConcatenateOp,))
    op._build_once([x.shape for x in xs] if many else xs[0].shape)
    outs, bufs = _forward(op, xs, device, many)
    want = ref(*[x.astype(np.float64) for x in xs])
    want = want if isinstance(want, list) else [want]
    for o, w in zip(outs, want):
        assert_close(host(o).reshape(np.shape(w)), w, rtol=1e-5, atol=1e-5,
                     what=f"{type(op).__name__} forward")
    ws = [randn(np.shape(w), seed=9 + i) for i, w in enumerate(want)]
    grads = range(len(xs)) if grads is None else grads
    dxs = [on(device, np.full(x.shape, np.nan, np.float32)) if i in grads else None
           for i, x in enumerate(xs)]
    dys = [on(device, w) for w in ws]
    op.backward(dxs if many else dxs[0], dys if isinstance(op.output_shape, list) else dys[0],
                bufs if many else bufs[0], outs if isinstance(op.output_shape, list) else outs[0])

    def loss(i, v):
        args = [x.copy() for x in xs]
        args[i] = v.astype(np.float32)
        o, _ = _forward(op, args, "cpu", many)
        return sum(float((host(a).astype(np.float64) * w).sum()) for a, w in zip(o, ws))

    for i in grads:
        g = numeric_grad(lambda v: loss(i, v), xs[i], eps=eps)
        assert_close(host(dxs[i]), g, rtol=tol * 10, atol=tol,
                     what=f"{type(op).__name__} d input {i}")


BINARY = {"add": np.add, "subtract": np.subtract, "multiply": np.multiply,
          "divide": np.divide, "maximum": np.maximum, "minimum": np.minimum,
          "power": np.power}


@pytest.mark.parametrize("kind", list(BINARY))
def test_binary_with_broadcasting(device, kind):
    a = randn((3, 1, 4), seed=1)
    b = randn((2, 4), seed=2)
    if kind == "power":
        a = np.abs(a) + 0.5
    if kind == "divide":
        b = np.sign(b) * (np.abs(b) + 0.5)
    check(BinaryOp(kind), [a, b], BINARY[kind], device)


def test_comparison_has_zero_gradient(device):
    a, b = randn((3, 4), seed=1), randn((4,), seed=2)
    check(BinaryOp("less"), [a, b], lambda u, v: (u < v) * 1.0, device)


@pytest.mark.parametrize("kind,ref", [
    ("sqrt", np.sqrt), ("log", np.log), ("exp", np.exp), ("square", np.square),
    ("silu", lambda x: x / (1 + np.exp(-x)))])
def test_unary(device, kind, ref):
    x = randn((2, 5), seed=3)
    if kind in ("sqrt", "log"):
        x = np.abs(x) + 0.5
    check(UnaryOp(kind), [x], ref, device)


@pytest.mark.parametrize("kind,ref", [
    ("relu", lambda x: np.maximum(x, 0)), ("tanh", np.tanh),
    ("sigmoid", lambda x: 1 / (1 + np.exp(-x))),
    ("softmax", lambda x: np.exp(x) / np.exp(x).sum(-1, keepdims=True))])
def test_activation(device, kind, ref):
    x = randn((3, 5), seed=4)
    x = np.where(np.abs(x) < 0.1, 0.5, x)  # away from relu's kink (finite differences)
    check(ActivationOp(kind), [x], ref, device)


def test_where(device):
    c = (randn((3, 1), seed=5) > 0).astype(np.float32)
    check(WhereOp(), [c, randn((3, 4), seed=6), randn((4,), seed=7)],
          lambda c, a, b: np.where(c != 0, a, b), device, grads=[1, 2])


@pytest.mark.parametrize("kind", ["sum", "mean", "max", "logsumexp"])
@pytest.mark.parametrize("axis,keepdims", [(None, False), (1, True), ((0, 2), False)])
def test_reductions(device, kind, axis, keepdims):
    x = randn((3, 4, 2), seed=8)

    def ref(v):
        if kind == "logsumexp":
            m = v.max(axis=axis, keepdims=True)
            r = np.log(np.exp(v - m).sum(axis=axis, keepdims=True)) + m
            return r if keepdims else np.squeeze(r, axis=axis)
        return getattr(np, kind)(v, axis=axis, keepdims=keepdims)
    check(ReduceOp(kind, axis, keepdims), [x], ref, device)


def test_argmax_is_a_float_index_without_gradient(device):
    x = randn((3, 5), seed=9)
    check(ReduceOp("argmax", -1), [x], lambda v: np.argmax(v, -1).astype(np.float64), device)


def test_matmul_flat_and_batched(device):
    check(MatmulOp(), [randn((2, 3, 4), seed=1), randn((4, 5), seed=2)], np.matmul, device)
    check(MatmulOp(), [randn((2, 1, 3, 4), seed=3), randn((3, 4, 2), seed=4)], np.matmul,
          device)
    check(MatmulOp(), [randn((4,), seed=5), randn((4, 3), seed=6)], np.matmul, device)


def test_layout_ops(device):
    x = randn((2, 3, 4), seed=1)
    check(TransposeOp((0, 2, 1)), [x], lambda v: v.transpose(0, 2, 1), device)
    check(ReshapeOp("reshape", lambda s: _resolve("reshape", s, (4, -1))), [x],
          lambda v: v.reshape(4, -1), device)
    check(ConcatenateOp(1), [x, randn((2, 1, 4), seed=2)],
          lambda a, b: np.concatenate([a, b], 1), device)
    check(ConcatenateOp(-1, stack=True), [x, x * 2], lambda a, b: np.stack([a, b], -1), device)
    check(SplitOp([1, 3], 2), [x], lambda v: np.split(v, [1, 3], 2), device)
    key = (slice(None), -1, slice(None, None, -2))
    check(GetItemOp(key), [x], lambda v: v[key], device)
    key = (Ellipsis, None, 1)
    check(GetItemOp(key), [x], lambda v: v[key], device)


def test_take_and_one_hot(device):
    x = randn((4, 3), seed=3)
    idx = np.array([[2, 0], [2, 3]], np.float32)
    check(TakeOp(0), [x, idx], lambda v, i: np.take(v, i.astype(int), 0), device, grads=[0])
    check(OneHotOp(4, -1), [idx], lambda i: np.eye(4)[i.astype(int)], device, grads=[])


def test_stop_gradient_and_fill_like(device):
    x = randn((2, 3), seed=4)
    check(StopGradientOp(), [x], lambda v: v, device, grads=[])
    op = StopGradientOp()
    op._build_once(x.shape)
    (y,), (xb,) = _forward(op, [x], device, False)
    dx = on(device, np.full(x.shape, np.nan, np.float32))
    op.backward(dx, on(device, np.ones_like(x)), xb, y)
    assert_close(host(dx), np.zeros(x.shape), rtol=0, atol=0)
    check(FillLikeOp(2.5), [x], lambda v: np.full(v.shape, 2.5), device, grads=[])
