"""attention ops: forward against a float64 NumPy reference (the full score matrix),
backward against finite differences of it, masks, causal, fully masked rows, NaN,
shapes that cross the tile edges, argument errors; both devices."""

import numpy as np
import pytest

from kernels_numba.ops import attention as A
from kernels_numba.testing import assert_close, host, numeric_grad, on, randn

MASKED = -1e9


def _keep(b, tq, tk, mask, causal):
    keep = np.ones((b, 1, tq, tk), bool)
    if mask is not None:
        keep &= (mask > 0.5)[:, None]
    if causal:
        keep &= np.tril(np.ones((tq, tk), bool))[None, None]
    return keep


def _ref(q, k, v, mask=None, causal=False, scale=None):
    """Keras 3's rule in float64: where(keep, s, -1e9), softmax over keys."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    b, tq, h, d = q.shape
    scale = 1 / np.sqrt(d) if scale is None else scale
    s = np.einsum("bihd,bjhd->bhij", q, k) * scale
    s = np.where(_keep(b, tq, k.shape[1], mask, causal), s, MASKED)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    return np.einsum("bhij,bjhd->bihd", p, v)


def _run(device, q, k, v, mask=None, causal=False, scale=None):
    b, tq, h, _ = q.shape
    dv = v.shape[3]
    qb, kb, vb = on(device, q, k, v)
    mb = None if mask is None else on(device, mask)
    out = on(device, np.full((b, tq, h, dv), 7, np.float32))
    lse = on(device, np.full((b, h, tq), 7, np.float32))
    ws = on(device, np.zeros(A.attention_workspace_shape(q.shape, v.shape, device),
                             np.float32))
    A.attention_forward(out, lse, qb, kb, vb, mb, ws, scale=scale, causal=causal)
    return (qb, kb, vb, mb, out, lse, ws)


def _grads(device, bufs, g, scale=None, causal=False):
    qb, kb, vb, mb, out, lse, ws = bufs
    dq, dk, dv = (on(device, np.full(host(x).shape, 9, np.float32)) for x in (qb, kb, vb))
    A.attention_backward(dq, dk, dv, on(device, g), qb, kb, vb, out, lse, mb, ws,
                         scale=scale, causal=causal)
    return host(dq), host(dk), host(dv)


# (B, Tq, Tk, H, D, Dv): T=1, odd D, Tq != Tk; the cpu tile is 64, the cuda tile 16
SHAPES = [(1, 1, 1, 1, 1, 1), (2, 3, 5, 2, 3, 2), (1, 17, 6, 1, 5, 4), (1, 5, 19, 3, 2, 3)]
# the simulator runs a subset (its stage is near its time budget): every kind once, and
# query tiles (Tq 17) and key tiles (Tk 19) crossed
CUDA_CASES = {(0, "plain"), (1, "mask+causal"), (2, "causal"), (3, "mask")}


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("kind", ["plain", "mask", "causal", "mask+causal"])
def test_attention_forward_backward(device, shape, kind):
    if device == "cuda" and (SHAPES.index(shape), kind) not in CUDA_CASES:
        pytest.skip("simulator: the CUDA_CASES subset covers this kernel path")
    b, tq, tk, h, d, dvs = shape
    q, k = randn((b, tq, h, d), seed=1), randn((b, tk, h, d), seed=2)
    v, g = randn((b, tk, h, dvs), seed=3), randn((b, tq, h, dvs), seed=4)
    mask = None
    if "mask" in kind:
        mask = (np.random.default_rng(5).random((b, tq, tk)) > 0.4).astype(np.float32)
        mask[0, 0, 0] = 1.0
    causal = "causal" in kind
    bufs = _run(device, q, k, v, mask, causal)
    want = _ref(q, k, v, mask, causal)
    assert_close(host(bufs[4]), want, rtol=1e-4, atol=1e-5, what="out")
    dq, dk, dv = _grads(device, bufs, g, causal=causal)
    loss = lambda qq, kk, vv: np.sum(_ref(qq, kk, vv, mask, causal) * g)  # noqa: E731
    assert_close(dq, numeric_grad(lambda t: loss(t, k, v), q), rtol=2e-3, atol=2e-4,
                 what="dq")
    assert_close(dk, numeric_grad(lambda t: loss(q, t, v), k), rtol=2e-3, atol=2e-4,
                 what="dk")
    assert_close(dv, numeric_grad(lambda t: loss(q, k, t), v), rtol=2e-3, atol=2e-4,
                 what="dv")


def _ref_probs(q, k, mask=None, causal=False):
    """Keras's return_attention_scores path: softmax of where(keep, s, -1e9) * keep."""
    q, k = np.asarray(q, np.float64), np.asarray(k, np.float64)
    b, tq, h, d = q.shape
    keep = _keep(b, tq, k.shape[1], mask, causal)
    s = np.where(keep, np.einsum("bihd,bjhd->bhij", q, k) / np.sqrt(d), MASKED)
    p = np.exp(s - s.max(-1, keepdims=True))
    return p / p.sum(-1, keepdims=True) * keep


def test_attention_probs_materialised(device):
    """probs= (return_attention_scores): P written, fully masked rows zero (probs and
    out), and the gradient through both outputs."""
    b, tq, tk, h, d = 1, 3, 5, 2, 3
    q, k = randn((b, tq, h, d), seed=21), randn((b, tk, h, d), seed=22)
    v, g = randn((b, tk, h, d), seed=23), randn((b, tq, h, d), seed=24)
    gp = randn((b, h, tq, tk), seed=25)
    mask = (np.random.default_rng(26).random((b, tq, tk)) > 0.3).astype(np.float32)
    mask[0, 1] = 0.0
    mask[0, 0, 0] = 1.0
    qb, kb, vb, mb = on(device, q, k, v, mask)
    out, lse = on(device, np.zeros((b, tq, h, d), np.float32), np.zeros((b, h, tq), np.float32))
    probs = on(device, np.full((b, h, tq, tk), 7, np.float32))
    ws = on(device, np.zeros(A.attention_workspace_shape(q.shape, v.shape, device), np.float32))
    A.attention_forward(out, lse, qb, kb, vb, mb, ws, probs=probs)
    p = _ref_probs(q, k, mask)
    assert_close(host(probs), p, rtol=1e-5, atol=1e-6, what="probs")
    assert_close(host(out), np.einsum("bhij,bjhd->bihd", p, v), rtol=1e-4, atol=1e-5,
                 what="out")
    assert (host(out)[0, 1] == 0).all()
    grads = [on(device, np.full(a.shape, 9, np.float32)) for a in (q, k, v)]
    A.attention_backward(*grads, on(device, g), qb, kb, vb, out, lse, mb, ws, probs=probs,
                         dprobs=on(device, gp))

    def loss(qq, kk, vv):
        pp = _ref_probs(qq, kk, mask)
        return np.sum(np.einsum("bhij,bjhd->bihd", pp, vv) * g) + np.sum(pp * gp)

    for got, arg, what in zip(grads, range(3), "qkv"):
        args = [q, k, v]

        def f(t, i=arg):
            a = list(args)
            a[i] = t
            return loss(*a)
        assert_close(host(got), numeric_grad(f, args[arg]), rtol=2e-3, atol=2e-4,
                     what=f"d{what}")


def test_attention_crosses_cpu_tiles():
    """Tq, Tk past 64 (several CPU tiles, a partial last one), causal and not."""
    b, tq, tk, h, d = 1, 70, 130, 2, 4
    q, k = randn((b, tq, h, d), seed=6), randn((b, tk, h, d), seed=7)
    v, g = randn((b, tk, h, d), seed=8), randn((b, tq, h, d), seed=9)
    for causal in (False, True):
        bufs = _run("cpu", q, k, v, None, causal, scale=0.7)
        assert_close(host(bufs[4]), _ref(q, k, v, None, causal, 0.7), rtol=1e-4, atol=1e-5,
                     what=f"out causal={causal}")
        dq, dk, dv = _grads("cpu", bufs, g, scale=0.7, causal=causal)
        # the analytic float64 gradient of the reference (numeric_grad is slow here)
        q64, k64, v64, g64 = (a.astype(np.float64) for a in (q, k, v, g))
        s = np.einsum("bihd,bjhd->bhij", q64, k64) * 0.7
        keep = _keep(b, tq, tk, None, causal)
        s = np.where(keep, s, MASKED)
        p = np.exp(s - s.max(-1, keepdims=True))
        p /= p.sum(-1, keepdims=True)
        dp = np.einsum("bihd,bjhd->bhij", g64, v64)
        ds = p * (dp - (dp * p).sum(-1, keepdims=True)) * keep * 0.7
        assert_close(dv, np.einsum("bhij,bihd->bjhd", p, g64), rtol=1e-4, atol=1e-5,
                     what="dv")
        assert_close(dq, np.einsum("bhij,bjhd->bihd", ds, k64), rtol=1e-4, atol=1e-5,
                     what="dq")
        assert_close(dk, np.einsum("bhij,bihd->bjhd", ds, q64), rtol=1e-4, atol=1e-5,
                     what="dk")


def test_fully_masked_row_attends_uniformly(device):
    """Keras 3 (MultiHeadAttention's dot_product_attention path): a row with every key
    masked gets the mean of v; its scores get no gradient, v gets 1/Tk of its dout."""
    b, tq, tk, h, d = 1, 3, 4, 2, 3
    q, k = randn((b, tq, h, d), seed=10), randn((b, tk, h, d), seed=11)
    v, g = randn((b, tk, h, d), seed=12), randn((b, tq, h, d), seed=13)
    mask = np.ones((b, tq, tk), np.float32)
    mask[0, 1] = 0.0
    bufs = _run(device, q, k, v, mask)
    out = host(bufs[4])
    assert_close(out[0, 1], v[0].mean(axis=0), rtol=1e-5, atol=1e-6, what="uniform row")
    assert np.isneginf(host(bufs[5])[0, :, 1]).all()
    dq, dk, dv = _grads(device, bufs, g)
    assert (dq[0, 1] == 0).all()
    loss = lambda vv: np.sum(_ref(q, k, vv, mask) * g)  # noqa: E731
    assert_close(dv, numeric_grad(loss, v), rtol=2e-3, atol=2e-4, what="dv")


def test_nan_stays_in_its_rows(device):
    b, tq, tk, h, d = 1, 3, 4, 1, 2
    q, k, v = randn((b, tq, h, d), seed=14), randn((b, tk, h, d), seed=15), \
        randn((b, tk, h, d), seed=16)
    q[0, 1, 0, 0] = np.nan  # one query row: its scores, its output
    out = host(_run(device, q, k, v)[4])
    assert np.isnan(out[0, 1]).all() and np.isfinite(out[0, [0, 2]]).all()
    k2 = k.copy()
    k2[0, 2, 0, 1] = np.inf  # an infinite score: NaN in every row (exp(inf - inf))
    out = host(_run(device, q * 0 + 1, k2, v)[4])
    assert np.isnan(out).all()


def test_skipped_gradients_and_default_scale(device):
    b, tq, tk, h, d = 2, 2, 3, 1, 4
    q, k, v = randn((b, tq, h, d), seed=17), randn((b, tk, h, d), seed=18), \
        randn((b, tk, h, d), seed=19)
    g = randn((b, tq, h, d), seed=20)
    bufs = _run(device, q, k, v, scale=None)
    assert_close(host(bufs[4]), _ref(q, k, v, scale=0.5), rtol=1e-4, atol=1e-5, what="out")
    full = _grads(device, bufs, g)
    qb, kb, vb, mb, out, lse, ws = bufs
    dk = on(device, np.zeros(k.shape, np.float32))
    A.attention_backward(None, dk, None, on(device, g), qb, kb, vb, out, lse, None, ws)
    assert_close(host(dk), full[1], rtol=0, atol=0, what="dk alone")


def test_workspace_does_not_grow_with_sequence_length():
    small = A.attention_workspace_shape((32, 128, 4, 32), (32, 128, 4, 32))
    large = A.attention_workspace_shape((32, 2048, 4, 32), (32, 2048, 4, 32))
    assert small == large


def test_errors_name_the_op():
    q = np.zeros((1, 2, 1, 3), np.float32)
    k = np.zeros((1, 4, 1, 3), np.float32)
    ws = np.zeros(A.attention_workspace_shape(q.shape, k.shape), np.float32)
    out, lse = np.zeros((1, 2, 1, 3), np.float32), np.zeros((1, 1, 2), np.float32)
    with pytest.raises(ValueError, match=r"attention_forward: expected k.shape == "
                                         r"\(1, \?, 1, 3\); received \(1, 4, 1, 2\)"):
        A.attention_forward(out, lse, q, np.zeros((1, 4, 1, 2), np.float32), k, None, ws)
    with pytest.raises(ValueError, match=r"attention_forward: expected mask.shape == "
                                         r"\(1, 2, 4\)"):
        A.attention_forward(out, lse, q, k, k, np.zeros((1, 4, 2), np.float32), ws)
    with pytest.raises(TypeError, match="attention_forward: expected mask.dtype == float32"):
        A.attention_forward(out, lse, q, k, k, np.zeros((1, 2, 4), np.int8), ws)
    with pytest.raises(TypeError, match="attention_backward: expected causal to be a bool"):
        A.attention_backward(None, None, None, out, q, k, k, out, lse, None, ws, causal=1)
    with pytest.raises(ValueError, match="attention_forward: expected a finite scale"):
        A.attention_forward(out, lse, q, k, k, None, ws, scale=float("nan"))


def test_cpu_loop_path_without_blas_matches():
    """The CPU twin's plain-loop tile products (no bound cblas_sgemm) give the same
    results as the BLAS ones."""
    from kernels_numba.cpu import attention as C

    b, tq, tk, h, d = 1, 5, 7, 2, 3
    q, k, v, g = (randn(s, seed=i) for i, s in enumerate(
        [(b, tq, h, d), (b, tk, h, d), (b, tk, h, d), (b, tq, h, d)]))
    mask = (np.random.default_rng(3).random((b, tq, tk)) > 0.3).astype(np.float32)
    ws = np.zeros(A.attention_workspace_shape(q.shape, v.shape), np.float32)
    results = []
    for use_blas in (False, True):
        if use_blas and not C._BLAS:
            continue
        out, lse = np.zeros((b, tq, h, d), np.float32), np.zeros((b, h, tq), np.float32)
        grads = [np.zeros(a.shape, np.float32) for a in (q, k, v)]
        sc = np.float32(0.6)
        C._forward(use_blas, C._address(), C._MARKER, out, lse, q.reshape(-1), k.reshape(-1),
                   v.reshape(-1), mask.reshape(-1), True, ws, b, tq, tk, h, d, d, sc, True,
                   C._DUMMY4, False, *C._drop_key(None))
        C._backward(use_blas, C._address(), C._MARKER, *grads, True, True, True, g,
                    q.reshape(-1), k.reshape(-1), v.reshape(-1), out, lse, mask.reshape(-1),
                    True, ws, b, tq, tk, h, d, d, sc, True, C._DUMMY4, C._DUMMY4, False,
                    *C._drop_key(None))
        results.append([out, *grads])
    assert_close(results[0][0], _ref(q, k, v, mask, True, 0.6), rtol=1e-4, atol=1e-5,
                 what="loop path out")
    for got, want in zip(results[0], results[-1]):
        assert_close(got, want, rtol=1e-5, atol=1e-6, what="loops vs BLAS")
