"""additive attention ops: forward against a float64 NumPy reference (Keras's formula with
the (Tq, Tk, D) tanh tensor), backward (q, k, v, scale) against finite differences of
it, value/query masks, causal, fully masked rows, probs and their gradient, dropout with
attention_keep_mask's factors, NaN, argument errors; both devices."""

import numpy as np
import pytest

from kernels_numba.ops import additive_attention as AA
from kernels_numba.ops import attention as A
from kernels_numba.testing import assert_close, host, numeric_grad, on, randn

MASKED = -1e9


def _ref(q, k, v, scale, vmask=None, qmask=None, causal=False, drop=None):
    """(out, probs) in float64, as Keras's AdditiveAttention (drop: the factors)."""
    q, k, v = (np.asarray(a, np.float64) for a in (q, k, v))
    t = np.tanh(q[:, :, None, :] + k[:, None, :, :])
    s = (t * (1.0 if scale is None else np.asarray(scale, np.float64))).sum(-1)
    keep = np.ones(s.shape, bool)
    if vmask is not None:
        keep &= (vmask > 0.5)[:, None, :]
    if causal:
        keep &= np.tril(np.ones(s.shape[1:], bool))[None]
    s = np.where(keep, s, MASKED)
    p = np.exp(s - s.max(-1, keepdims=True))
    p /= p.sum(-1, keepdims=True)
    if drop is not None:
        p = p * drop
    out = p @ v
    if qmask is not None:
        out = np.where((qmask > 0.5)[:, :, None], out, 0.0)
    return out, p


def _drop(device, b, tq, tk, rate, seed, step):
    m = on(device, np.zeros((b, 1, tq, tk), np.float32))
    A.attention_keep_mask(m, rate=rate, seed=seed, step=step)
    return host(m)[:, 0].astype(np.float64)


# (B, Tq, Tk, D, Dv, kind)
CASES = [(1, 1, 1, 1, 1, "plain"), (2, 3, 5, 4, 2, "vmask+qmask"), (1, 4, 3, 3, 2, "causal"),
         (2, 3, 4, 2, 3, "all+probs"), (2, 3, 5, 3, 2, "dropout+probs")]
CUDA_CASES = {"vmask+qmask", "all+probs", "dropout+probs"}


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize("use_scale", [True, False])
def test_forward_backward(device, case, use_scale):
    b, tq, tk, d, dvs, kind = case
    if device == "cuda" and (kind not in CUDA_CASES or not use_scale):
        pytest.skip("simulator: a subset covers every CUDA path")
    rng = np.random.default_rng(7)
    q, k, v = randn((b, tq, d), seed=1), randn((b, tk, d), seed=2), randn((b, tk, dvs), seed=3)
    g, gp = randn((b, tq, dvs), seed=4), randn((b, tq, tk), seed=5)
    scale = randn((d,), seed=6) if use_scale else None
    vmask = qmask = None
    if "vmask" in kind or kind.startswith("all"):
        vmask = (rng.random((b, tk)) > 0.4).astype(np.float32)
        vmask[0] = 0.0  # batch 0: every row fully masked (uniform)
    if "qmask" in kind or kind.startswith("all"):
        qmask = (rng.random((b, tq)) > 0.4).astype(np.float32)
    causal = kind in ("causal",) or kind.startswith("all")
    want_probs = "probs" in kind
    opts, drop = dict(causal=causal), None
    if kind.startswith("dropout"):
        opts.update(dropout_rate=0.3, seed=9, step=2)
        drop = _drop(device, b, tq, tk, 0.3, 9, 2)
    qb, kb, vb = on(device, q, k, v)
    sb, vmb, qmb = (None if a is None else on(device, a) for a in (scale, vmask, qmask))
    out = on(device, np.full((b, tq, dvs), 7, np.float32))
    lse = on(device, np.full((b, tq), 7, np.float32))
    probs = on(device, np.full((b, tq, tk), 7, np.float32)) if want_probs else None
    AA.additive_attention_forward(out, lse, qb, kb, vb, sb, vmb, qmb, probs=probs, **opts)
    want_out, want_p = _ref(q, k, v, scale, vmask, qmask, causal, drop)
    assert_close(host(out), want_out, rtol=1e-4, atol=1e-5, what="out")
    if want_probs:
        assert_close(host(probs), want_p, rtol=1e-4, atol=1e-6, what="probs")
    grads = [on(device, np.full(a.shape, 9, np.float32)) for a in (q, k, v)]
    ds = on(device, np.full((d,), 9, np.float32)) if use_scale else None
    ws = on(device, np.zeros(AA.additive_attention_workspace_shape(q.shape), np.float32))
    AA.additive_attention_backward(*grads, ds, on(device, g), qb, kb, vb, sb, vmb, qmb, out,
                                   lse, ws, probs=probs,
                                   dprobs=on(device, gp) if want_probs else None, **opts)

    def loss(qq, kk, vv, ss):
        o, p = _ref(qq, kk, vv, ss, vmask, qmask, causal, drop)
        return np.sum(o * g) + (np.sum(p * gp) if want_probs else 0.0)

    args = [q, k, v, scale]
    checks = list(zip(grads + [ds], range(4), ["dq", "dk", "dv", "dscale"]))
    for got, i, what in checks:
        if got is None:
            continue

        def f(t, i=i):
            a = list(args)
            a[i] = t
            return loss(*a)
        assert_close(host(got), numeric_grad(f, args[i]), rtol=2e-3, atol=2e-4, what=what)


def test_skipped_gradients_and_nan(device):
    b, tq, tk, d = 1, 3, 4, 2
    q, k, v = randn((b, tq, d), seed=1), randn((b, tk, d), seed=2), randn((b, tk, d), seed=3)
    q[0, 1, 0] = np.nan
    qb, kb, vb = on(device, q, k, v)
    out, lse = on(device, np.zeros((b, tq, d), np.float32), np.zeros((b, tq), np.float32))
    AA.additive_attention_forward(out, lse, qb, kb, vb, None)
    o = host(out)
    assert np.isnan(o[0, 1]).all() and np.isfinite(o[0, [0, 2]]).all()
    dv = on(device, np.full(v.shape, 9, np.float32))
    ws = on(device, np.zeros(AA.additive_attention_workspace_shape(q.shape), np.float32))
    g = randn((b, tq, d), seed=4)
    g[0, 1] = 0.0
    q[0, 1, 0] = 0.5
    qb = on(device, q)
    AA.additive_attention_forward(out, lse, qb, kb, vb, None)
    AA.additive_attention_backward(None, None, dv, None, on(device, g), qb, kb, vb, None,
                                   None, None, out, lse, ws)
    want = numeric_grad(lambda t: np.sum(_ref(q, k, t, None)[0] * g), v)
    assert_close(host(dv), want, rtol=2e-3, atol=2e-4, what="dv alone")


def test_errors_name_the_op():
    q = np.zeros((1, 2, 3), np.float32)
    out, lse = np.zeros((1, 2, 3), np.float32), np.zeros((1, 2), np.float32)
    with pytest.raises(ValueError, match="additive_attention_forward.*scale"):
        AA.additive_attention_forward(out, lse, q, q, q, np.ones(4, np.float32))
    with pytest.raises(ValueError, match="additive_attention_forward.*value_mask"):
        AA.additive_attention_forward(out, lse, q, q, q, None, np.ones((1, 3), np.float32))
    ws = np.zeros(AA.additive_attention_workspace_shape(q.shape), np.float32)
    with pytest.raises(ValueError, match="additive_attention_backward.*scale=None"):
        AA.additive_attention_backward(None, None, None, np.zeros(3, np.float32), out, q, q,
                                       q, None, None, None, out, lse, ws)
    with pytest.raises(ValueError, match="additive_attention_backward.*workspace"):
        AA.additive_attention_backward(None, None, None, None, out, q, q, q, None, None,
                                       None, out, lse, ws[:, :2])
