"""rnn_sequence_forward / rnn_sequence_backward (whole time loops) on both devices: every
step's state vs the float64 NumPy reference, and the gradients of the initial states and
(through the gate gradients the op leaves) of the weights vs finite differences.
"gru_rb" is cell="gru" with reset_after=False (two GEMMs per step)."""

import numpy as np
import pytest

from kernels_numba import ops
from kernels_numba._cuda import SIMULATOR
from kernels_numba.cpu import gemm as cpu_gemm
from kernels_numba.testing import assert_close, host, numeric_grad, on, randn
from tests.kerasish.test_sequence_layers import seq_ref as rnn_ref

GATES = {"lstm": 4, "gru": 3, "gru_rb": 3, "simple": 1}
CELLS = list(GATES)
CASES = [  # n, t, u, go_backwards, masked, recurrent dropout, dy for every step
    (1, 1, 1, False, False, False, True), (3, 4, 5, True, True, False, True),
    (2, 3, 33, False, True, True, False), (17, 3, 3, True, False, True, True)]
# The simulator runs each CUDA thread as a Python thread (a GEMM launch is 256 of them per
# block, per step): there the 33-unit case runs 2 steps of 9 units (masking, recurrent
# dropout, no dy as before; gru_rb's 2u = 18 columns still cross the strided GEMM's tile).
SIM_SHAPES = {(2, 3, 33): (2, 2, 9)}


def _problem(cell, n, t, u, masked, rdrop, f=2):
    g = GATES[cell] * u
    x, k, r = randn((n, t, f), 1), randn((f, g), 2), randn((u, g), 3) * 0.5
    b = randn((2, g) if cell == "gru" else (g,), 4)
    h0, c0 = randn((n, u), 5), randn((n, u), 6)
    mask = rmask = None
    if masked:
        mask = np.ones((n, t), np.float32)
        mask[0, min(1, t - 1)] = 0
        mask[-1, 0] = 0
    if rdrop:
        rmask = np.where(randn((n, u), 7) > 0, 1.25, 0.0).astype(np.float32)
    return x, k, r, b, h0, c0, mask, rmask


def _run(device, cell, x, k, r, b, h0, c0, mask, rmask, go_backwards, w, wh, wc):
    n, t, _ = x.shape
    u = r.shape[0]
    rb = cell == "gru_rb"
    xs = np.ascontiguousarray(np.transpose(x[:, ::-1] if go_backwards else x, (1, 0, 2)))
    gates = (xs @ k).astype(np.float32)
    h = np.zeros((t + 1, n, u), np.float32)
    h[0] = h0
    c = np.zeros_like(h)
    c[0] = c0
    dev = dict(h=on(device, h), gates=on(device, gates), rk=on(device, r),
               c=on(device, c) if cell == "lstm" else None,
               inner=on(device, np.zeros((t, n, u) if rb else gates.shape, np.float32))
               if cell.startswith("gru") else None,
               mask=None if mask is None else on(device, mask),
               rmask=None if rmask is None else on(device, rmask),
               hd=None if rmask is None else on(device, np.zeros((t, n, u), np.float32)))
    kw = dict(cell="gru" if rb else cell, c=dev["c"], inner=dev["inner"], mask=dev["mask"],
              rmask=dev["rmask"], go_backwards=go_backwards, reset_after=not rb)
    ops.rnn_sequence_forward(dev["h"], dev["gates"], dev["rk"],
                             bias=None if b is None else on(device, b),
                             hd=dev["hd"], **kw)
    states = host(dev["h"]).copy(), host(dev["c"]).copy() if cell == "lstm" else None
    dh = on(device, wh)
    dc = on(device, wc) if cell == "lstm" else None
    ops.rnn_sequence_backward(dev["gates"], dh, dev["h"], dev["rk"], dc=dc,
                              dy=None if w is None else on(device, w),
                              rtmp=None if rmask is None and not rb
                              else on(device, np.zeros_like(h0)),
                              **kw)
    dg = host(dev["gates"]).astype(np.float64)
    di = host(dev["inner"]).astype(np.float64) if cell.startswith("gru") else dg
    hp = host(dev["hd"]) if rmask is not None else host(dev["h"])[:t]
    if rb:  # R_h's left operand is r * h_prev, which the op left in inner
        dr = np.concatenate([np.einsum("tnu,tng->ug", hp, dg[..., :2 * u]),
                             np.einsum("tnu,tng->ug", di, dg[..., 2 * u:])], axis=1)
    else:
        dr = np.einsum("tnu,tng->ug", hp, di)
    grads = {"k": np.einsum("tnf,tng->fg", xs, dg), "r": dr,
             "b": np.stack([dg.sum((0, 1)), di.sum((0, 1))]) if cell == "gru"
             else dg.sum((0, 1)), "h0": host(dh)}
    if b is None:
        del grads["b"]
    if cell == "lstm":
        grads["c0"] = host(dc)
    return states, grads


@pytest.mark.parametrize("cell", CELLS)
@pytest.mark.parametrize("n,t,u,go_backwards,masked,rdrop,seq", CASES)
def test_sequence_matches_reference(device, cell, n, t, u, go_backwards, masked, rdrop, seq):
    if device == "cuda" and SIMULATOR:
        n, t, u = SIM_SHAPES.get((n, t, u), (n, t, u))
    x, k, r, b, h0, c0, mask, rmask = _problem(cell, n, t, u, masked, rdrop)
    w = randn((n, t, u), 8) if seq else None
    wh, wc = randn((n, u), 9), randn((n, u), 10)
    (h, c), grads = _run(device, cell, x, k, r, b, h0, c0, mask, rmask, go_backwards, w, wh, wc)
    ref = dict(kind=cell, mask=mask, go_backwards=go_backwards, rmask=rmask)
    seq_ref, _, c_ref = rnn_ref(x=x, K=k, R=r, b=b, h0=h0, c0=c0, **ref)
    assert_close(np.transpose(h[1:], (1, 0, 2)), seq_ref, rtol=1e-5, atol=1e-5, what="h")
    if cell == "lstm":
        assert_close(c[-1], c_ref, rtol=1e-5, atol=1e-5, what="c")

    def loss(**over):
        args = {**dict(x=x, K=k, R=r, b=b, h0=h0, c0=c0), **over}
        s, hT, cT = rnn_ref(**ref, **args)
        total = (hT * wh).sum() + ((cT * wc).sum() if cell == "lstm" else 0.0)
        return float(total + (0.0 if w is None else (s * w).sum()))
    for name, key in (("k", "K"), ("r", "R"), ("b", "b"), ("h0", "h0"), ("c0", "c0")):
        if name in grads:
            base = {"K": k, "R": r, "b": b, "h0": h0, "c0": c0}[key]
            num = numeric_grad(lambda v, key=key: loss(**{key: v}), base)
            assert_close(grads[name], num, rtol=1e-4, atol=1e-4, what=f"d{name}")


@pytest.mark.parametrize("cell", CELLS)
def test_step_by_step_fallback_matches(cell, monkeypatch):
    """Without a bound cblas_sgemm the CPU twin loops in Python; same numbers."""
    x, k, r, b, h0, c0, mask, rmask = _problem(cell, 3, 4, 5, True, True)
    w, wh, wc = randn((3, 4, 5), 8), randn((3, 5), 9), randn((3, 5), 10)
    fused = _run("cpu", cell, x, k, r, b, h0, c0, mask, rmask, True, w, wh, wc)
    monkeypatch.setattr(cpu_gemm, "_SGEMM", None)
    steps = _run("cpu", cell, x, k, r, b, h0, c0, mask, rmask, True, w, wh, wc)
    assert_close(steps[0][0], fused[0][0], rtol=1e-6, atol=1e-6, what="h")
    for name in fused[1]:
        assert_close(steps[1][name], fused[1][name], rtol=1e-5, atol=1e-5, what=name)


def test_sequence_ops_reject_bad_arguments():
    h, g, r = (np.zeros(s, np.float32) for s in ((3, 2, 4), (2, 2, 16), (4, 16)))
    with pytest.raises(ValueError, match="rnn_sequence_forward: expected c.shape"):
        ops.rnn_sequence_forward(h, g, r, cell="lstm", c=np.zeros((2, 2, 4), np.float32))
    with pytest.raises(ValueError, match="rnn_sequence_forward: rmask needs hd"):
        ops.rnn_sequence_forward(h, g, r, cell="lstm", c=h, rmask=np.ones((2, 4), np.float32))
    with pytest.raises(ValueError, match="expected cell in"):
        ops.rnn_sequence_forward(h, g, r, cell="qrnn")
    with pytest.raises(ValueError, match="rnn_sequence_backward: expected gates.shape"):
        ops.rnn_sequence_backward(g[:, :, :12], h[0], h, r, cell="lstm", dc=h[0], c=h)


@pytest.mark.parametrize("m,k,n,trans_a,beta", [(5, 3, 7, False, 0.0), (33, 130, 129, True, 1.0),
                                                (1, 1, 1, True, 0.0), (70, 9, 300, False, 1.0)])
def test_rnn_gemm(device, m, k, n, trans_a, beta):
    if device == "cuda" and SIMULATOR and m * n > 1000:
        pytest.skip("simulator: the full-width GEMM is dense's (its tiles are test_dense's); "
                    "the large cases are for the CPU twin's column blocks")
    a = randn((k, m) if trans_a else (m, k), 1)
    b, c0 = randn((k, n), 2), randn((m, n), 3)
    c = on(device, c0)
    ops.rnn_gemm(c, on(device, a), on(device, b), trans_a=trans_a, beta=beta)
    a64 = a.astype(np.float64)
    ref = (a64.T if trans_a else a64) @ b + beta * c0
    assert_close(host(c), ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match="rnn_gemm: expected beta 0 or 1"):
        ops.rnn_gemm(c, on(device, a), on(device, b), trans_a=trans_a, beta=0.5)


@pytest.mark.parametrize("m,k,n,lo,hi,trans_a,beta", [(5, 3, 9, 6, 9, True, 1.0),
                                                      (17, 20, 12, 0, 8, False, 0.0)])
def test_rnn_gemm_columns(device, m, k, n, lo, hi, trans_a, beta):
    """columns=(lo, hi): only c[:, lo:hi] = op(a) @ b[:, lo:hi] (+ c); the rest untouched."""
    a = randn((k, m) if trans_a else (m, k), 1)
    b, c0 = randn((k, n), 2), randn((m, n), 3)
    c = on(device, c0)
    ops.rnn_gemm(c, on(device, a), on(device, b), trans_a=trans_a, beta=beta, columns=(lo, hi))
    ref = c0.astype(np.float64)
    a64 = a.astype(np.float64)
    ref[:, lo:hi] = (a64.T if trans_a else a64) @ b[:, lo:hi] + beta * c0[:, lo:hi]
    assert_close(host(c), ref, rtol=1e-5, atol=1e-5)
    with pytest.raises(ValueError, match=r"rnn_gemm: expected columns \(lo, hi\)"):
        ops.rnn_gemm(c, on(device, a), on(device, b), trans_a=trans_a, columns=(2, n + 1))


def test_gru_reset_before_rejects_bad_arguments():
    h, g, r = (np.zeros(s, np.float32) for s in ((3, 2, 4), (2, 2, 12), (4, 12)))
    inner = np.zeros((2, 2, 4), np.float32)
    kw = dict(cell="gru", inner=inner, reset_after=False)
    with pytest.raises(ValueError, match=r"rnn_sequence_forward: expected inner.shape == "
                                         r"\(2, 2, 4\)"):
        ops.rnn_sequence_forward(h, g, r, **{**kw, "inner": np.zeros_like(g)})
    with pytest.raises(ValueError, match=r"expected bias.shape == \(12,\)"):
        ops.rnn_sequence_forward(h, g, r, bias=np.zeros((2, 12), np.float32), **kw)
    with pytest.raises(ValueError, match="reset_after=False needs rtmp"):
        ops.rnn_sequence_backward(g, h[0], h, r, **kw)
    with pytest.raises(TypeError, match="expected reset_after to be a bool"):
        ops.rnn_sequence_forward(h, g, r, **{**kw, "reset_after": 0})
