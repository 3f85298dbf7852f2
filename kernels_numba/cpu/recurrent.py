"""CPU twin of kernels_numba.ops.recurrent.

The cell math (and the activations both devices share) is kernels_numba.cpu._rnn_cells.
Step ops run batch rows in parallel. The sequence ops run a whole time loop in one
compiled call per block of batch rows: rows do not interact through time, so each
thread takes a block through all T steps (no synchronisation per step), calling one
single-threaded cblas_sgemm per step on its rows (kernels_numba.cpu.gemm's binding)
next to the fused gate math; Python is out of the per-step path.
"""

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from kernels_numba.cpu import gemm as _gemm
from kernels_numba.cpu._rnn_cells import (  # noqa: F401  (act/act_grad: the CUDA kernels')
    HARD_SIGMOID, LINEAR, RELU, SIGMOID, TANH, act, act_grad, gru_rows_backward,
    gru_rows_forward, lstm_rows_backward, lstm_rows_forward, simple_rows_backward,
    simple_rows_forward)
from kernels_numba._blas import NO_TRANS, ROW_MAJOR as _ROW_MAJOR, TRANS

_ZERO = np.float32(0.0)
_HALF = np.float32(0.5)
# merge modes of Bidirectional (ops.recurrent.MERGE_MODES); cells of the sequence ops
CONCAT, SUM, MUL, AVE = 0, 1, 2, 3
LSTM, GRU, SIMPLE = 0, 1, 2


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


# whole sequences: each thread runs every step of its own block of batch rows (rows do
# not interact through time), so there is no synchronisation per step; the recurrent
# GEMM of a step is one single-threaded cblas_sgemm on the block's rows.


@numba.njit(nogil=True, cache=True)
def _forward_rows(cell, address, marker, h, c, gates, inner, hd, rk, bias, use_bias, mask,
                  use_mask, rmask, use_rmask, reverse, act_code, ract_code, r0, r1):
    t_len, n, g = gates.shape
    u = h.shape[2]
    work = np.empty((3, g), np.float32)
    for s in range(t_len):
        col = t_len - 1 - s if reverse else s
        src = h
        if use_rmask:  # the GEMM reads h_prev * recurrent-dropout mask (kept in hd)
            for i in range(r0, r1):
                for j in range(u):
                    hd[s, i, j] = h[s, i, j] * rmask[i, j]
            src = hd
        out, beta = (inner, 0.0) if cell == GRU else (gates, 1.0)
        _gemm._sgemm_at(address, NO_TRANS, NO_TRANS, r1 - r0, g, u,
                        src.ctypes.data + 4 * (s * n + r0) * u, u, rk.ctypes.data, g, beta,
                        out.ctypes.data + 4 * (s * n + r0) * g, g, marker)
        if cell == LSTM:
            lstm_rows_forward(h[s + 1], c[s + 1], gates[s], h[s], c[s], bias, use_bias, mask,
                              use_mask, col, act_code, ract_code, r0, r1, work)
        elif cell == GRU:
            gru_rows_forward(h[s + 1], gates[s], inner[s], h[s], bias, use_bias, mask,
                             use_mask, col, act_code, ract_code, r0, r1, work)
        else:
            simple_rows_forward(h[s + 1], gates[s], h[s], bias, use_bias, mask, use_mask, col,
                                act_code, r0, r1, work)


@numba.njit(nogil=True, cache=True)
def _backward_rows(cell, address, marker, gates, inner, dh, dc, h, c, rk, mask, use_mask, dy,
                   has_dy, rmask, use_rmask, rtmp, reverse, act_code, ract_code, r0, r1):
    t_len, n, g = gates.shape
    u = dh.shape[1]
    work = np.empty((3, g), np.float32)
    for s in range(t_len - 1, -1, -1):
        col = t_len - 1 - s if reverse else s
        t_out = s if has_dy else -1
        src = gates
        if cell == LSTM:
            lstm_rows_backward(gates[s], dh, dc, c[s + 1], c[s], mask, use_mask, col, dy,
                               t_out, act_code, ract_code, r0, r1, work)
        elif cell == GRU:
            gru_rows_backward(gates[s], inner[s], dh, h[s], mask, use_mask, col, dy, t_out,
                              act_code, ract_code, r0, r1, work)
            src = inner
        else:
            simple_rows_backward(gates[s], dh, h[s + 1], mask, use_mask, col, dy, t_out,
                                 act_code, r0, r1, work)
        a_ptr = src.ctypes.data + 4 * (s * n + r0) * g
        if use_rmask:  # dh += (dgates @ R.T) * mask
            _gemm._sgemm_at(address, NO_TRANS, TRANS, r1 - r0, u, g, a_ptr, g, rk.ctypes.data,
                            g, 0.0, rtmp.ctypes.data + 4 * r0 * u, u, marker)
            for i in range(r0, r1):
                for j in range(u):
                    dh[i, j] += rtmp[i, j] * rmask[i, j]
        else:
            _gemm._sgemm_at(address, NO_TRANS, TRANS, r1 - r0, u, g, a_ptr, g, rk.ctypes.data,
                            g, 1.0, dh.ctypes.data + 4 * r0 * u, u, marker)


_helpers = {"pool": None, "size": 0, "pid": None}


def _pool(size):
    if _helpers["size"] != size or _helpers["pid"] != os.getpid():  # (a fork has no threads)
        _helpers.update(pool=ThreadPoolExecutor(size, thread_name_prefix="kernels_numba_rnn"),
                        size=size, pid=os.getpid())
    return _helpers["pool"]


def _parts(n):
    # blocks of >= 8 rows: a thinner sgemm costs more than the second core saves
    return max(1, min(numba.get_num_threads(), n // 8))


def _run_blocks(fn, args, n):
    """fn(*args, r0, r1) for each block of batch rows (see _run_claimed)."""
    parts = _parts(n)
    if parts == 1:
        fn(*args, 0, n)
        return
    _run_claimed(parts, lambda b: fn(*args, n * b // parts, n * (b + 1) // parts))


def _run_claimed(parts, task):
    """task(b) for b < parts, on this thread and helper threads.

    Blocks are claimed, not assigned: a helper the OS has not scheduled yet (tens of ms
    on a loaded 2-core machine, which stalled a parallel region at every call) claims
    nothing, this thread runs the blocks left and returns without waiting for it. Each
    task is one call that releases the GIL; the tasks write disjoint memory."""
    done = threading.Condition()
    state = {"next": 0, "running": 0, "error": None}

    def work():
        while True:
            with done:
                b = state["next"]
                if b >= parts or state["error"] is not None:
                    return
                state["next"], state["running"] = b + 1, state["running"] + 1
            try:
                task(b)
            except BaseException as exc:  # noqa: BLE001 - re-raised on the calling thread
                state["error"] = exc
            finally:
                with done:
                    state["running"] -= 1
                    done.notify_all()

    pool = _pool(parts - 1)
    for _ in range(parts - 1):
        pool.submit(work)
    work()
    with done:
        while state["running"]:
            done.wait()
    if state["error"] is not None:
        raise state["error"]


def rnn_gemm(c, a, b, trans_a, beta):
    """c = op(a) @ b + beta * c in column blocks of c, each one cblas_sgemm (ctypes drops
    the GIL), claimed by threads as in _run_claimed."""
    m, n = c.shape
    k = a.shape[0] if trans_a else a.shape[1]
    if c.size == 0:
        return
    if _gemm._SGEMM is None or k == 0:
        _gemm.gemm(c, a.T if trans_a else a, b, accumulate=beta != 0)
        return
    parts = max(1, min(numba.get_num_threads(), n // 64))
    ta = TRANS if trans_a else NO_TRANS
    lda, ldb, ldc = a.strides[0] // 4, b.strides[0] // 4, c.strides[0] // 4
    pa, pb, pc = a.ctypes.data, b.ctypes.data, c.ctypes.data

    def task(p):
        q0, q1 = n * p // parts, n * (p + 1) // parts
        _gemm._SGEMM(_ROW_MAJOR, ta, NO_TRANS, m, q1 - q0, k, 1.0, pa, lda, pb + 4 * q0, ldb,
                     float(beta), pc + 4 * q0, ldc)
    if parts == 1:
        task(0)
    else:
        _run_claimed(parts, task)


def rnn_sequence_forward(cell, h, c, gates, inner, hd, rk, bias, use_bias, mask, use_mask,
                         rmask, use_rmask, reverse, act_code, ract_code):
    if gates.shape[0] == 0 or gates.shape[1] == 0:
        return
    bias = _rows2(bias)
    if _gemm._SGEMM is None:  # no bound cblas_sgemm: step by step through np.matmul
        _forward_steps(cell, h, c, gates, inner, hd, rk, bias, use_bias, mask, use_mask,
                       rmask, use_rmask, reverse, act_code, ract_code)
        return
    _run_blocks(_forward_rows, (cell, _gemm._ADDRESS, _gemm._INT_MARKER, h, c, gates, inner, hd,
                                rk, bias, use_bias, mask, use_mask, rmask, use_rmask, reverse,
                                act_code, ract_code), gates.shape[1])


def rnn_sequence_backward(cell, gates, inner, dh, dc, h, c, rk, mask, use_mask, dy, has_dy,
                          rmask, use_rmask, rtmp, reverse, act_code, ract_code):
    if gates.shape[0] == 0 or gates.shape[1] == 0:
        return
    if _gemm._SGEMM is None:
        _backward_steps(cell, gates, inner, dh, dc, h, c, rk, mask, use_mask, dy, has_dy,
                        rmask, use_rmask, rtmp, reverse, act_code, ract_code)
        return
    _run_blocks(_backward_rows, (cell, _gemm._ADDRESS, _gemm._INT_MARKER, gates, inner, dh, dc,
                                 h, c, rk, mask, use_mask, dy, has_dy, rmask, use_rmask, rtmp,
                                 reverse, act_code, ract_code), gates.shape[1])


def _forward_steps(cell, h, c, gates, inner, hd, rk, bias, use_bias, mask, use_mask, rmask,
                   use_rmask, reverse, act_code, ract_code):
    t_len, n, g = gates.shape
    work = np.empty((3, g), np.float32)
    for s in range(t_len):
        col = t_len - 1 - s if reverse else s
        src = h[s]
        if use_rmask:
            src = np.multiply(h[s], rmask, out=hd[s])
        if cell == GRU:
            _gemm.gemm(inner[s], src, rk)
            gru_rows_forward(h[s + 1], gates[s], inner[s], h[s], bias, use_bias, mask,
                             use_mask, col, act_code, ract_code, 0, n, work)
        else:
            _gemm.gemm(gates[s], src, rk, accumulate=True)
            if cell == LSTM:
                lstm_rows_forward(h[s + 1], c[s + 1], gates[s], h[s], c[s], bias, use_bias,
                                  mask, use_mask, col, act_code, ract_code, 0, n, work)
            else:
                simple_rows_forward(h[s + 1], gates[s], h[s], bias, use_bias, mask, use_mask,
                                    col, act_code, 0, n, work)


def _backward_steps(cell, gates, inner, dh, dc, h, c, rk, mask, use_mask, dy, has_dy, rmask,
                    use_rmask, rtmp, reverse, act_code, ract_code):
    t_len, n, g = gates.shape
    work = np.empty((3, g), np.float32)
    for s in range(t_len - 1, -1, -1):
        col, t_out = (t_len - 1 - s if reverse else s), (s if has_dy else -1)
        src = gates[s]
        if cell == LSTM:
            lstm_rows_backward(gates[s], dh, dc, c[s + 1], c[s], mask, use_mask, col, dy,
                               t_out, act_code, ract_code, 0, n, work)
        elif cell == GRU:
            gru_rows_backward(gates[s], inner[s], dh, h[s], mask, use_mask, col, dy, t_out,
                              act_code, ract_code, 0, n, work)
            src = inner[s]
        else:
            simple_rows_backward(gates[s], dh, h[s + 1], mask, use_mask, col, dy, t_out,
                                 act_code, 0, n, work)
        if use_rmask:
            _gemm.gemm(rtmp, src, rk.T)
            dh += rtmp * rmask
        else:
            _gemm.gemm(dh, src, rk.T, accumulate=True)


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
