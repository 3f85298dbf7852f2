"""CPU twin of kernels_numba.ops.recurrent (layouts, single steps, Bidirectional's merge).

The cell math (and the activations both devices share) is kernels_numba.cpu._rnn_cells;
the whole-sequence ops are kernels_numba.cpu.rnn_sequence. Step ops run blocks of batch
rows in parallel.
"""

import numba
import numpy as np

from kernels_numba.cpu._rnn_cells import (  # noqa: F401  (act/act_grad: the CUDA kernels')
    GRU,
    GRU_RB,
    HARD_SIGMOID,
    LINEAR,
    LSTM,
    RELU,
    SIGMOID,
    SIMPLE,
    TANH,
    act,
    act_grad,
    gru_rows_backward,
    gru_rows_forward,
    lstm_rows_backward,
    lstm_rows_forward,
    simple_rows_backward,
    simple_rows_forward,
)
from kernels_numba.cpu.rnn_sequence import parts as _parts

_ZERO = np.float32(0.0)
_HALF = np.float32(0.5)
# merge modes of Bidirectional (ops.recurrent.MERGE_MODES)
CONCAT, SUM, MUL, AVE = 0, 1, 2, 3


# layout


def _to_time_major_py(y, x, reverse, scale, use_scale):
    n, t_len, f = x.shape
    r = 1 if reverse else 0
    for t in numba.prange(t_len):
        src = (t_len - 1 - t) * r + t * (1 - r)  # (a conditional confuses parfor typing)
        for i in range(n):
            for k in range(f):
                v = x[i, src, k]
                y[t, i, k] = v * scale[i, k] if use_scale else v


def _from_time_major_py(y, x, reverse, scale, use_scale):
    t_len, n, f = x.shape
    r = 1 if reverse else 0
    for i in numba.prange(n):
        for t in range(t_len):
            src = (t_len - 1 - t) * r + t * (1 - r)
            for k in range(f):
                v = x[src, i, k]
                y[i, t, k] = v * scale[i, k] if use_scale else v


# A copy of a batch (~1e5 floats) takes ~50 us on one core; a parallel region waits for
# the slowest thread, which on a loaded machine costs milliseconds: only big ones split.
PARALLEL_MIN_SIZE = 1 << 20
_TO_TM = (numba.njit(cache=True)(_to_time_major_py),
          numba.njit(parallel=True, cache=True)(_to_time_major_py))
_FROM_TM = (numba.njit(cache=True)(_from_time_major_py),
            numba.njit(parallel=True, cache=True)(_from_time_major_py))


def to_time_major(y, x, reverse, scale, use_scale):
    _TO_TM[x.size >= PARALLEL_MIN_SIZE](y, x, reverse, scale, use_scale)


def from_time_major(y, x, reverse, scale, use_scale):
    _FROM_TM[x.size >= PARALLEL_MIN_SIZE](y, x, reverse, scale, use_scale)


# one step (the step ops): blocks of rows in parallel, each with its own scratch


@numba.njit(parallel=True, cache=True)
def _lstm_step_forward(h, c, gates, h_prev, c_prev, bias, use_bias, mask, use_mask, t,
                       act_code, ract_code, parts):
    n, g = gates.shape
    for p in numba.prange(parts):
        lstm_rows_forward(h, c, gates, h_prev, c_prev, bias, use_bias, mask, use_mask, t,
                          act_code, ract_code, n * p // parts, n * (p + 1) // parts,
                          np.empty((3, g), np.float32))


@numba.njit(parallel=True, cache=True)
def _lstm_step_backward(gates, dh, dc, c, c_prev, mask, use_mask, t, dy, t_out, act_code,
                        ract_code, parts):
    n, g = gates.shape
    for p in numba.prange(parts):
        lstm_rows_backward(gates, dh, dc, c, c_prev, mask, use_mask, t, dy, t_out, act_code,
                           ract_code, n * p // parts, n * (p + 1) // parts,
                           np.empty((3, g), np.float32))


@numba.njit(parallel=True, cache=True)
def _gru_step_forward(h, gates, inner, h_prev, bias, use_bias, mask, use_mask, t, act_code,
                      ract_code, parts):
    n, g = gates.shape
    for p in numba.prange(parts):
        gru_rows_forward(h, gates, inner, h_prev, bias, use_bias, mask, use_mask, t, act_code,
                         ract_code, n * p // parts, n * (p + 1) // parts,
                         np.empty((3, g), np.float32))


@numba.njit(parallel=True, cache=True)
def _gru_step_backward(gates, inner, dh, h_prev, mask, use_mask, t, dy, t_out, act_code,
                       ract_code, parts):
    n, g = gates.shape
    for p in numba.prange(parts):
        gru_rows_backward(gates, inner, dh, h_prev, mask, use_mask, t, dy, t_out, act_code,
                          ract_code, n * p // parts, n * (p + 1) // parts,
                          np.empty((3, g), np.float32))


@numba.njit(parallel=True, cache=True)
def _simple_step_forward(h, z, h_prev, bias, use_bias, mask, use_mask, t, act_code, parts):
    n, u = h.shape
    for p in numba.prange(parts):
        simple_rows_forward(h, z, h_prev, bias, use_bias, mask, use_mask, t, act_code,
                            n * p // parts, n * (p + 1) // parts, np.empty((3, u), np.float32))


@numba.njit(parallel=True, cache=True)
def _simple_step_backward(dz, dh, h, mask, use_mask, t, dy, t_out, act_code, parts):
    n, u = dh.shape
    for p in numba.prange(parts):
        simple_rows_backward(dz, dh, h, mask, use_mask, t, dy, t_out, act_code,
                             n * p // parts, n * (p + 1) // parts, np.empty((3, u), np.float32))


def _rows2(bias):
    return bias.reshape((1, bias.shape[0])) if bias.ndim == 1 else bias


def lstm_step_forward(h, c, gates, h_prev, c_prev, bias, use_bias, mask, use_mask, t,
                      act_code, ract_code):
    _lstm_step_forward(h, c, gates, h_prev, c_prev, _rows2(bias), use_bias, mask, use_mask, t,
                       act_code, ract_code, _parts(h.shape[0]))


def lstm_step_backward(gates, dh, dc, c, c_prev, mask, use_mask, t, dy, t_out, act_code,
                       ract_code):
    _lstm_step_backward(gates, dh, dc, c, c_prev, mask, use_mask, t, dy, t_out, act_code,
                        ract_code, _parts(dh.shape[0]))


def gru_step_forward(h, gates, inner, h_prev, bias, use_bias, mask, use_mask, t, act_code,
                     ract_code):
    _gru_step_forward(h, gates, inner, h_prev, bias, use_bias, mask, use_mask, t, act_code,
                      ract_code, _parts(h.shape[0]))


def gru_step_backward(gates, inner, dh, h_prev, mask, use_mask, t, dy, t_out, act_code,
                      ract_code):
    _gru_step_backward(gates, inner, dh, h_prev, mask, use_mask, t, dy, t_out, act_code,
                       ract_code, _parts(dh.shape[0]))


def simple_step_forward(h, z, h_prev, bias, use_bias, mask, use_mask, t, act_code):
    _simple_step_forward(h, z, h_prev, _rows2(bias), use_bias, mask, use_mask, t, act_code,
                         _parts(h.shape[0]))


def simple_step_backward(dz, dh, h, mask, use_mask, t, dy, t_out, act_code):
    _simple_step_backward(dz, dh, h, mask, use_mask, t, dy, t_out, act_code,
                          _parts(dh.shape[0]))


# Bidirectional merge


@numba.njit(parallel=True, cache=True)
def _merge_forward(y, fwd, bwd, mode, reverse):
    n, t_len, u = fwd.shape
    r = 1 if reverse else 0
    for i in numba.prange(n):
        for t in range(t_len):
            tb = (t_len - 1 - t) * r + t * (1 - r)
            for j in range(u):
                a, b = fwd[i, t, j], bwd[i, tb, j]
                if mode == CONCAT:
                    y[i, t, j] = a
                    y[i, t, u + j] = b
                elif mode == SUM:
                    y[i, t, j] = a + b
                elif mode == MUL:
                    y[i, t, j] = a * b
                else:
                    y[i, t, j] = (a + b) * _HALF


@numba.njit(parallel=True, cache=True)
def _merge_backward(dfwd, dbwd, dy, fwd, bwd, mode, reverse):
    n, t_len, u = fwd.shape
    r = 1 if reverse else 0
    for i in numba.prange(n):
        for t in range(t_len):
            tb = (t_len - 1 - t) * r + t * (1 - r)
            for j in range(u):
                if mode == CONCAT:
                    dfwd[i, t, j] = dy[i, t, j]
                    dbwd[i, tb, j] = dy[i, t, u + j]
                elif mode == SUM:
                    dfwd[i, t, j] = dy[i, t, j]
                    dbwd[i, tb, j] = dy[i, t, j]
                elif mode == MUL:
                    dfwd[i, t, j] = dy[i, t, j] * bwd[i, tb, j]
                    dbwd[i, tb, j] = dy[i, t, j] * fwd[i, t, j]
                else:
                    dfwd[i, t, j] = dy[i, t, j] * _HALF
                    dbwd[i, tb, j] = dy[i, t, j] * _HALF


def merge_forward(y, fwd, bwd, mode, reverse):
    _merge_forward(y, fwd, bwd, mode, reverse)


def merge_backward(dfwd, dbwd, dy, fwd, bwd, mode, reverse):
    _merge_backward(dfwd, dbwd, dy, fwd, bwd, mode, reverse)
