"""Whole time loops of a recurrent cell in one op, cuDNN-style (see ops.recurrent).

`rnn_sequence_forward` / `rnn_sequence_backward` run every step of one cell (per step
the recurrent GEMM + the fused step kernel) in one call: the CPU twin compiles the loop,
the CUDA twin launches the per-step GEMMs and step kernels without the per-op checks.
`rnn_gemm` is the layers' big GEMMs (the input projection of all steps, the weight
gradients over all steps), optionally on a column range (GRU reset_after=False's
recurrent kernel, whose z, r and h columns have different left operands).

Cells: "lstm" (gate order i, f, c, o), "gru" (z, r, h) and "simple". GRU with
reset_after=True (Keras 3's default): hh = act(xh + r * (h_prev @ R_h + b_rh)), bias
(2, 3U); reset_after=False (the original GRU): hh = act(xh + (r * h_prev) @ R_h), bias
(3U,). The latter needs r before the h third of the recurrent GEMM, so each of its
steps runs two GEMMs (z, r columns; then r * h_prev on the h columns) around two fused
kernels, forward and backward.
"""

from kernels_numba import _check
from kernels_numba.cpu._rnn_cells import (
    GRU,
    GRU_RB,
    HARD_SIGMOID,
    LINEAR,
    LSTM,
    RELU,
    SIGMOID,
    SIMPLE,
    TANH,
)
from kernels_numba.dispatch import impl

__all__ = ["rnn_gemm", "rnn_sequence_forward", "rnn_sequence_backward", "RNN_ACTIVATIONS",
           "RNN_CELLS"]
FAMILY = "rnn_sequence"

RNN_ACTIVATIONS = {"linear": LINEAR, "tanh": TANH, "sigmoid": SIGMOID, "relu": RELU,
                   "hard_sigmoid": HARD_SIGMOID}
RNN_CELLS = {"lstm": (LSTM, 4), "gru": (GRU, 3), "simple": (SIMPLE, 1)}


def _code(op, name, kind):
    _check.choice(op, name, kind, RNN_ACTIVATIONS)
    return RNN_ACTIVATIONS[kind]


def _dummy3(a):
    return a.reshape((1, *a.shape))


def _seq_arrays(op, cell, reset_after, h, gates, rk, c, inner):
    _check.choice(op, "cell", cell, RNN_CELLS)
    code, g = RNN_CELLS[cell]
    if not isinstance(reset_after, bool):
        raise TypeError(f"{op}: expected reset_after to be a bool; received {reset_after!r}")
    t1, n, u = _check.array(op, "h", h, ndim=3)
    if t1 < 1:
        raise ValueError(f"{op}: expected h of shape (T+1, N, U); received {h.shape}")
    _check.array(op, "gates", gates, shape=(t1 - 1, n, g * u))
    _check.array(op, "recurrent_kernel", rk, shape=(u, g * u))
    if cell == "lstm":
        _check.array(op, "c", c, shape=(t1, n, u))
    if cell == "gru":
        _check.array(op, "inner", inner, shape=(t1 - 1, n, 3 * u if reset_after else u))
        if not reset_after:
            code = GRU_RB
    return code, t1 - 1, n, u


def _seq_mask(op, mask, rmask, other, other_name, n, t, u):
    if mask is not None:
        _check.array(op, "mask", mask, shape=(n, t))
    if rmask is not None:
        _check.array(op, "rmask", rmask, shape=(n, u))
        if other is None:
            raise ValueError(f"{op}: rmask needs {other_name}; received {other_name}=None")


def rnn_gemm(c, a, b, *, trans_a=False, beta=0.0, columns=None):
    """c = op(a) @ b + beta * c (beta 0 or 1) for a recurrent layer's big GEMMs: the input
    projection of all steps and the weight gradients over all steps.

    The same product as ops.matmul; the CPU twin cuts c into column blocks that threads
    claim (as the sequence ops do), so no thread waits on a descheduled one.

    Args:
        c: (M, N) float32. a: (M, K) float32, or (K, M) with trans_a. b: (K, N) float32.
        columns: (lo, hi) or None: only c[:, lo:hi] = op(a) @ b[:, lo:hi] (+ beta c[:, lo:hi]).
    """
    op = "rnn_gemm"
    rows, cols = _check.array(op, "a", a, ndim=2)
    m, k = (cols, rows) if trans_a else (rows, cols)
    n = _check.array(op, "b", b, shape=(k, None))[1]
    _check.array(op, "c", c, shape=(m, n))
    if beta not in (0, 1):
        raise ValueError(f"{op}: expected beta 0 or 1; received {beta!r}")
    lo, hi = (0, n) if columns is None else columns
    if not (isinstance(lo, int) and isinstance(hi, int) and 0 <= lo <= hi <= n):
        raise ValueError(f"{op}: expected columns (lo, hi) with 0 <= lo <= hi <= {n}; "
                         f"received {columns!r}")
    impl(op, FAMILY, c=c, a=a, b=b)(c, a, b, bool(trans_a), float(beta), lo, hi)


def rnn_sequence_forward(h, gates, recurrent_kernel, *, cell, c=None, inner=None, bias=None,
                         mask=None, rmask=None, hd=None, go_backwards=False, reset_after=True,
                         activation="tanh", recurrent_activation="sigmoid"):
    """All T steps of a cell: per step s, gates[s] (+)= h_prev @ R, then the fused step.

    Args:
        h: (T+1, N, U) float32; h[0] is the initial state, h[s+1] the output of step s.
        gates: (T, N, G*U) float32, x@W per step on input; activated gates on output.
        recurrent_kernel: (U, G*U) float32.
        cell: "lstm" (G=4, needs c (T+1, N, U), c[0] initial), "gru" (G=3, needs inner:
            reset_after=True (T, N, 3U) scratch; reset_after=False (T, N, U), on output
            r * h_prev of every step, the left operand of R_h's weight gradient) or
            "simple" (G=1).
        bias: (G*U,) float32 (GRU reset_after=True: (2, 3U)), or None.
        mask: (N, T) float32 or None; step s reads column T-1-s when go_backwards.
        rmask: (N, U) float32 recurrent-dropout multiplier or None; with it the GEMM
            reads hd[s] = h[s] * rmask, hd (T, N, U) float32 written (kept for dW).
    """
    op = "rnn_sequence_forward"
    code, t, n, u = _seq_arrays(op, cell, reset_after, h, gates, recurrent_kernel, c, inner)
    g = RNN_CELLS[cell][1]
    if bias is not None:
        _check.array(op, "bias", bias,
                     shape=(2, 3 * u) if cell == "gru" and reset_after else (g * u,))
    _seq_mask(op, mask, rmask, hd, "hd", n, t, u)
    if hd is not None:
        _check.array(op, "hd", hd, shape=(t, n, u))
    a, r = _code(op, "activation", activation), _code(op, "recurrent_activation",
                                                     recurrent_activation)
    fn = impl(op, FAMILY, h=h, gates=gates, recurrent_kernel=recurrent_kernel, c=c,
              inner=inner, bias=bias, mask=mask, rmask=rmask, hd=hd)
    b = gates[0] if bias is None else bias
    fn(code, h, h if c is None else c, gates, gates if inner is None else inner,
       h if hd is None else hd, recurrent_kernel, b.reshape((1, b.size)) if b.ndim == 1 else b,
       bias is not None, h[0] if mask is None else mask, mask is not None,
       h[0] if rmask is None else rmask, rmask is not None, bool(go_backwards), a, r)


def rnn_sequence_backward(gates, dh, h, recurrent_kernel, *, cell, dc=None, c=None,
                          inner=None, mask=None, dy=None, rmask=None, rtmp=None,
                          go_backwards=False, reset_after=True, activation="tanh",
                          recurrent_activation="sigmoid"):
    """Back through all T steps of rnn_sequence_forward, last step first.

    On input dh (and dc for LSTM) (N, U) hold dL/d(final state); dy (N, T, U) float32
    (or None) is dL/d h[s+1] for every step. On output gates (and GRU reset_after=True's
    inner) hold dL/d(pre-activation gates) of every step (ready for the weight-gradient
    GEMMs) and dh, dc dL/d(initial state); GRU reset_after=False's inner keeps
    r * h_prev. rtmp (N, U) float32 is scratch, needed with rmask and by GRU
    reset_after=False.
    """
    op = "rnn_sequence_backward"
    code, t, n, u = _seq_arrays(op, cell, reset_after, h, gates, recurrent_kernel, c, inner)
    _check.array(op, "dh", dh, shape=(n, u))
    if cell == "lstm":
        _check.array(op, "dc", dc, shape=(n, u))
    if dy is not None:
        _check.array(op, "dy", dy, shape=(n, t, u))
    _seq_mask(op, mask, rmask, rtmp, "rtmp", n, t, u)
    if code == GRU_RB and rtmp is None:
        raise ValueError(f"{op}: cell='gru' with reset_after=False needs rtmp (N, U) scratch; "
                         "received rtmp=None")
    if rtmp is not None:
        _check.array(op, "rtmp", rtmp, shape=(n, u))
    a, r = _code(op, "activation", activation), _code(op, "recurrent_activation",
                                                     recurrent_activation)
    fn = impl(op, FAMILY, gates=gates, dh=dh, h=h, recurrent_kernel=recurrent_kernel, dc=dc,
              c=c, inner=inner, mask=mask, dy=dy, rmask=rmask, rtmp=rtmp)
    fn(code, gates, gates if inner is None else inner, dh, dh if dc is None else dc, h,
       h if c is None else c, recurrent_kernel, dh if mask is None else mask,
       mask is not None, _dummy3(dh) if dy is None else dy, dy is not None,
       dh if rmask is None else rmask, rmask is not None, dh if rtmp is None else rtmp,
       bool(go_backwards), a, r)
