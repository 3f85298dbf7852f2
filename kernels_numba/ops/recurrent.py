"""Recurrent ops in the cuDNN style: layout changes, one fused gate/cell kernel per step.

A recurrent layer runs, per sequence: the input projection of all T steps as ONE GEMM on
the time-major input (`to_time_major`, then ops.matmul into gates (T*N, G*U)); per step
one recurrent GEMM (ops.matmul with beta=1 adds h_prev @ recurrent_kernel into the
step's gate rows) and one `*_step_forward`; backward walks the steps in reverse with one
`*_step_backward` per step (it turns the step's gate activations into gate gradients in
place and leaves in dh the part of dL/dh_prev that bypasses the GEMM; the caller then adds
dgates @ recurrent_kernel.T with ops.matmul), and the weight gradients are one GEMM over
all steps at the end. Nothing here allocates.

Shapes: N batch, T steps, F features, U units. Gate layouts are Keras's: LSTM i, f, c, o
(G = 4); GRU z, r, h (G = 3, reset_after=True: bias (2, 3U) = input row, recurrent row);
SimpleRNN G = 1. `mask` (N, T) float32: 0 marks a step whose state is carried through
(Keras's masking). `t` is the mask column of the step; `t_out` the column of dy (N, T_out,
U) added into dh at this step (-1: none).

`rnn_sequence_forward` / `rnn_sequence_backward` / `rnn_gemm` (kernels_numba.ops.rnn_sequence,
re-exported here) run the whole time loop of one cell in one call, GRU reset_after=False
included (the step ops here are reset_after=True's).
"""

from kernels_numba import _check
from kernels_numba.cpu.recurrent import AVE, CONCAT, MUL, SUM
from kernels_numba.dispatch import impl
from kernels_numba.ops.rnn_sequence import (
    RNN_ACTIVATIONS,
    RNN_CELLS,
    _code,
    _dummy3,
    rnn_gemm,
    rnn_sequence_backward,
    rnn_sequence_forward,
)

__all__ = ["to_time_major", "from_time_major", "lstm_step_forward", "lstm_step_backward",
           "gru_step_forward", "gru_step_backward", "simple_step_forward",
           "simple_step_backward", "rnn_gemm", "rnn_sequence_forward", "rnn_sequence_backward",
           "merge_forward", "merge_backward", "RNN_ACTIVATIONS", "MERGE_MODES", "RNN_CELLS"]
FAMILY = "recurrent"

MERGE_MODES = {"concat": CONCAT, "sum": SUM, "mul": MUL, "ave": AVE}


def _index(op, name, value, size, allow_none=False):
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{op}: expected {name} to be an int; received {value!r}")
    low = -1 if allow_none else 0
    if not low <= value < size:
        raise ValueError(f"{op}: expected {low} <= {name} < {size}; received {value}")
    return value


def _mask(op, mask, n, t):
    if mask is None:
        return False
    _check.array(op, "mask", mask, shape=(n, None))
    _index(op, "t", t, mask.shape[1])
    return True


def _dy(op, dy, n, u, t_out):
    if dy is None:
        if t_out != -1:
            raise ValueError(f"{op}: t_out={t_out} needs dy; received dy=None")
        return
    _check.array(op, "dy", dy, shape=(n, None, u))
    _index(op, "t_out", t_out, dy.shape[1], allow_none=True)


def to_time_major(y, x, *, reverse=False, scale=None):
    """y[t, n] = x[n, t'] * scale[n], t' = T-1-t when reverse (go_backwards) else t.

    Args:
        y: (T, N, F) float32, output.
        x: (N, T, F) float32.
        reverse: read the steps in reverse order.
        scale: (N, F) float32 multiplier applied at every step (a dropout mask), or None.
    """
    op = "to_time_major"
    n, t, f = _check.array(op, "x", x, ndim=3)
    _check.array(op, "y", y, shape=(t, n, f))
    if scale is not None:
        _check.array(op, "scale", scale, shape=(n, f))
    impl(op, FAMILY, y=y, x=x, scale=scale)(
        y, x, bool(reverse), x[0] if scale is None else scale, scale is not None)


def from_time_major(y, x, *, reverse=False, scale=None):
    """y[n, t] = x[t', n] * scale[n], t' = T-1-t when reverse else t (the inverse layout).

    Args:
        y: (N, T, F) float32, output.
        x: (T, N, F) float32.
        reverse, scale: as to_time_major (scale (N, F) or None).
    """
    op = "from_time_major"
    t, n, f = _check.array(op, "x", x, ndim=3)
    _check.array(op, "y", y, shape=(n, t, f))
    if scale is not None:
        _check.array(op, "scale", scale, shape=(n, f))
    impl(op, FAMILY, y=y, x=x, scale=scale)(
        y, x, bool(reverse), x[0] if scale is None else scale, scale is not None)


def lstm_step_forward(h, c, gates, h_prev, c_prev, bias=None, mask=None, *, t=0,
                      activation="tanh", recurrent_activation="sigmoid"):
    """One LSTM step: gates (pre-activations without bias) -> activated gates, c, h.

    i, f, o = ract(z + b), g = act(z + b); c = f*c_prev + i*g; h = o*act(c); where
    mask[n, t] == 0 the state is carried (h = h_prev, c = c_prev).

    Args:
        h, c: (N, U) float32, outputs.
        gates: (N, 4U) float32, x@W + h_prev@R on input, activated gates on output.
        h_prev, c_prev: (N, U) float32.
        bias: (4U,) float32 or None.
        mask: (N, T) float32 or None; t: its column for this step.
        activation, recurrent_activation: kinds in RNN_ACTIVATIONS.
    """
    op = "lstm_step_forward"
    n, u = _check.array(op, "h", h, ndim=2)
    for name, a in (("c", c), ("h_prev", h_prev), ("c_prev", c_prev)):
        _check.array(op, name, a, shape=(n, u))
    _check.array(op, "gates", gates, shape=(n, 4 * u))
    if bias is not None:
        _check.array(op, "bias", bias, shape=(4 * u,))
    use_mask = _mask(op, mask, n, t)
    a, r = _code(op, "activation", activation), _code(op, "recurrent_activation",
                                                     recurrent_activation)
    fn = impl(op, FAMILY, h=h, c=c, gates=gates, h_prev=h_prev, c_prev=c_prev, bias=bias,
              mask=mask)
    fn(h, c, gates, h_prev, c_prev, gates.reshape(gates.size) if bias is None else bias,
       bias is not None, gates if mask is None else mask, use_mask, int(t), a, r)


def lstm_step_backward(gates, dh, dc, c, c_prev, mask=None, dy=None, *, t=0, t_out=-1,
                       activation="tanh", recurrent_activation="sigmoid"):
    """Reverse of one LSTM step, in place.

    On input dh, dc hold dL/dh_t, dL/dc_t from later steps (dy[:, t_out] is added to dh);
    on output gates holds dL/d(pre-activation gates), dc holds dL/dc_prev and dh the part
    of dL/dh_prev that bypasses the recurrent GEMM (nonzero only on masked steps).

    Args:
        gates: (N, 4U) float32, the step's activated gates (overwritten with gradients).
        dh, dc: (N, U) float32, updated in place.
        c, c_prev: (N, U) float32, the step's cell state and the previous one.
        mask, t: as lstm_step_forward. dy: (N, T_out, U) float32 or None; t_out: column.
    """
    op = "lstm_step_backward"
    n, u = _check.array(op, "dh", dh, ndim=2)
    for name, a in (("dc", dc), ("c", c), ("c_prev", c_prev)):
        _check.array(op, name, a, shape=(n, u))
    _check.array(op, "gates", gates, shape=(n, 4 * u))
    use_mask = _mask(op, mask, n, t)
    _dy(op, dy, n, u, t_out)
    a, r = _code(op, "activation", activation), _code(op, "recurrent_activation",
                                                     recurrent_activation)
    fn = impl(op, FAMILY, gates=gates, dh=dh, dc=dc, c=c, c_prev=c_prev, mask=mask, dy=dy)
    fn(gates, dh, dc, c, c_prev, gates if mask is None else mask, use_mask, int(t),
       _dummy3(dh) if dy is None else dy, int(t_out), a, r)


def gru_step_forward(h, gates, inner, h_prev, bias=None, mask=None, *, t=0, activation="tanh",
                     recurrent_activation="sigmoid"):
    """One GRU step (reset_after=True, Keras's default).

    z = ract(xz + rz), r = ract(xr + rr), hh = act(xh + r*rh), h = z*h_prev + (1-z)*hh,
    with x* = gates + bias[0] and r* = inner + bias[1]; masked steps carry h_prev.

    Args:
        h: (N, U) float32, output.
        gates: (N, 3U) float32, x@W on input; activated z, r, hh on output.
        inner: (N, 3U) float32, h_prev@R on input; its h third gets + bias[1] (kept).
        h_prev: (N, U) float32.
        bias: (2, 3U) float32 or None.
        mask, t, activation, recurrent_activation: as lstm_step_forward.
    """
    op = "gru_step_forward"
    n, u = _check.array(op, "h", h, ndim=2)
    _check.array(op, "h_prev", h_prev, shape=(n, u))
    _check.array(op, "gates", gates, shape=(n, 3 * u))
    _check.array(op, "inner", inner, shape=(n, 3 * u))
    if bias is not None:
        _check.array(op, "bias", bias, shape=(2, 3 * u))
    use_mask = _mask(op, mask, n, t)
    a, r = _code(op, "activation", activation), _code(op, "recurrent_activation",
                                                     recurrent_activation)
    fn = impl(op, FAMILY, h=h, gates=gates, inner=inner, h_prev=h_prev, bias=bias, mask=mask)
    fn(h, gates, inner, h_prev, gates if bias is None else bias, bias is not None,
       gates if mask is None else mask, use_mask, int(t), a, r)


def gru_step_backward(gates, inner, dh, h_prev, mask=None, dy=None, *, t=0, t_out=-1,
                      activation="tanh", recurrent_activation="sigmoid"):
    """Reverse of one GRU step, in place: gates <- dL/d(x-side gates), inner <- dL/d(h-side
    gates) (the caller adds inner @ R.T into dh), dh <- the bypass part of dL/dh_prev.

    Args:
        gates, inner: (N, 3U) float32, as left by gru_step_forward.
        dh: (N, U) float32, dL/dh_t from later steps; updated in place.
        h_prev: (N, U) float32.
        mask, t, dy, t_out: as lstm_step_backward.
    """
    op = "gru_step_backward"
    n, u = _check.array(op, "dh", dh, ndim=2)
    _check.array(op, "h_prev", h_prev, shape=(n, u))
    _check.array(op, "gates", gates, shape=(n, 3 * u))
    _check.array(op, "inner", inner, shape=(n, 3 * u))
    use_mask = _mask(op, mask, n, t)
    _dy(op, dy, n, u, t_out)
    a, r = _code(op, "activation", activation), _code(op, "recurrent_activation",
                                                     recurrent_activation)
    fn = impl(op, FAMILY, gates=gates, inner=inner, dh=dh, h_prev=h_prev, mask=mask, dy=dy)
    fn(gates, inner, dh, h_prev, gates if mask is None else mask, use_mask, int(t),
       _dummy3(dh) if dy is None else dy, int(t_out), a, r)


def simple_step_forward(h, z, h_prev, bias=None, mask=None, *, t=0, activation="tanh"):
    """One SimpleRNN step: h = act(z + bias) (z = x@W + h_prev@R); masked steps carry h_prev.

    Args:
        h: (N, U) float32, output. z: (N, U) float32. h_prev: (N, U) float32.
        bias: (U,) float32 or None. mask, t, activation: as lstm_step_forward.
    """
    op = "simple_step_forward"
    n, u = _check.array(op, "h", h, ndim=2)
    _check.array(op, "z", z, shape=(n, u))
    _check.array(op, "h_prev", h_prev, shape=(n, u))
    if bias is not None:
        _check.array(op, "bias", bias, shape=(u,))
    use_mask = _mask(op, mask, n, t)
    a = _code(op, "activation", activation)
    fn = impl(op, FAMILY, h=h, z=z, h_prev=h_prev, bias=bias, mask=mask)
    fn(h, z, h_prev, z.reshape(z.size) if bias is None else bias, bias is not None,
       z if mask is None else mask, use_mask, int(t), a)


def simple_step_backward(dz, dh, h, mask=None, dy=None, *, t=0, t_out=-1, activation="tanh"):
    """Reverse of one SimpleRNN step: dz = dL/dz, dh <- the bypass part of dL/dh_prev.

    Args:
        dz: (N, U) float32, output (may be the step's z buffer).
        dh: (N, U) float32, dL/dh_t from later steps; updated in place.
        h: (N, U) float32, the step's output. mask, t, dy, t_out: as lstm_step_backward.
    """
    op = "simple_step_backward"
    n, u = _check.array(op, "dh", dh, ndim=2)
    _check.array(op, "dz", dz, shape=(n, u))
    _check.array(op, "h", h, shape=(n, u))
    use_mask = _mask(op, mask, n, t)
    _dy(op, dy, n, u, t_out)
    a = _code(op, "activation", activation)
    fn = impl(op, FAMILY, dz=dz, dh=dh, h=h, mask=mask, dy=dy)
    fn(dz, dh, h, h if mask is None else mask, use_mask, int(t),
       _dummy3(dh) if dy is None else dy, int(t_out), a)


def _merge_shapes(op, y, fwd, bwd, mode):
    _check.choice(op, "mode", mode, MERGE_MODES)
    n, t, u = _check.array(op, "fwd", fwd, ndim=3)
    _check.array(op, "bwd", bwd, shape=(n, t, u))
    _check.array(op, "dy" if op.endswith("backward") else "y", y,
                 shape=(n, t, 2 * u if mode == "concat" else u))


def merge_forward(y, fwd, bwd, *, mode="concat", reverse=False):
    """Bidirectional's merge: y = concat/sum/mul/ave of fwd[:, t] and bwd[:, t'] (t' = T-1-t
    when reverse: a go_backwards sequence put back in time order).

    Args:
        y: (N, T, 2U) float32 for concat, else (N, T, U). fwd, bwd: (N, T, U) float32.
    """
    op = "merge_forward"
    _merge_shapes(op, y, fwd, bwd, mode)
    impl(op, FAMILY, y=y, fwd=fwd, bwd=bwd)(y, fwd, bwd, MERGE_MODES[mode], bool(reverse))


def merge_backward(dfwd, dbwd, dy, fwd, bwd, *, mode="concat", reverse=False):
    """Gradients of merge_forward: dfwd, dbwd (N, T, U) overwritten (fwd, bwd read by mul)."""
    op = "merge_backward"
    _merge_shapes(op, dy, fwd, bwd, mode)
    _check.array(op, "dfwd", dfwd, shape=fwd.shape)
    _check.array(op, "dbwd", dbwd, shape=fwd.shape)
    impl(op, FAMILY, dfwd=dfwd, dbwd=dbwd, dy=dy, fwd=fwd, bwd=bwd)(
        dfwd, dbwd, dy, fwd, bwd, MERGE_MODES[mode], bool(reverse))
