"""CPU twin of kernels_numba.ops.rnn_sequence: whole time loops of a recurrent cell.

Each call runs a whole time loop in one compiled call per block of batch rows: rows do
not interact through time, so each thread takes a block through all T steps (no
synchronisation per step), calling one single-threaded cblas_sgemm per step on its rows
(kernels_numba.cpu.gemm's binding) next to the fused gate math of
kernels_numba.cpu._rnn_cells; Python is out of the per-step path. GRU reset_after=False
makes two GEMMs per step (z, r columns, then the h third on r * h_prev), each over only
its own columns of the recurrent kernel (BLAS leading dimensions, no copies).
"""

import os
import threading
from concurrent.futures import ThreadPoolExecutor

import numba
import numpy as np

from kernels_numba._blas import NO_TRANS, TRANS
from kernels_numba._blas import ROW_MAJOR as _ROW_MAJOR
from kernels_numba.cpu import gemm as _gemm
from kernels_numba.cpu._rnn_cells import (
    GRU,
    GRU_RB,
    LSTM,
    gru_rb_rows_dh,
    gru_rb_rows_dr,
    gru_rb_rows_h,
    gru_rb_rows_zr,
    gru_rows_backward,
    gru_rows_forward,
    lstm_rows_backward,
    lstm_rows_forward,
    simple_rows_backward,
    simple_rows_forward,
)


@numba.njit(nogil=True, cache=True)
def _forward_rows(cell, address, marker, h, c, gates, inner, hd, rk, bias, use_bias, mask,
                  use_mask, rmask, use_rmask, reverse, act_code, ract_code, r0, r1):
    t_len, n, g = gates.shape
    u = h.shape[2]
    work = np.empty((3, g), np.float32)
    rows, pk = r1 - r0, rk.ctypes.data
    for s in range(t_len):
        col = t_len - 1 - s if reverse else s
        src = h
        if use_rmask:  # the GEMM reads h_prev * recurrent-dropout mask (kept in hd)
            for i in range(r0, r1):
                for j in range(u):
                    hd[s, i, j] = h[s, i, j] * rmask[i, j]
            src = hd
        ps = src.ctypes.data + 4 * (s * n + r0) * u
        pg = gates.ctypes.data + 4 * (s * n + r0) * g
        if cell == GRU_RB:  # z, r columns; then rh @ R_h into the h third
            _gemm._sgemm_at(address, NO_TRANS, NO_TRANS, rows, 2 * u, u, ps, u, pk, g, 1.0,
                            pg, g, marker)
            gru_rb_rows_zr(gates[s], inner[s], src[s], bias, use_bias, ract_code, r0, r1,
                           work)
            _gemm._sgemm_at(address, NO_TRANS, NO_TRANS, rows, u, u,
                            inner.ctypes.data + 4 * (s * n + r0) * u, u, pk + 8 * u, g, 1.0,
                            pg + 8 * u, g, marker)
            gru_rb_rows_h(h[s + 1], gates[s], h[s], bias, use_bias, mask, use_mask, col,
                          act_code, r0, r1, work)
            continue
        if cell == GRU:
            _gemm._sgemm_at(address, NO_TRANS, NO_TRANS, rows, g, u, ps, u, pk, g, 0.0,
                            inner.ctypes.data + 4 * (s * n + r0) * g, g, marker)
            gru_rows_forward(h[s + 1], gates[s], inner[s], h[s], bias, use_bias, mask,
                             use_mask, col, act_code, ract_code, r0, r1, work)
            continue
        _gemm._sgemm_at(address, NO_TRANS, NO_TRANS, rows, g, u, ps, u, pk, g, 1.0, pg, g,
                        marker)
        if cell == LSTM:
            lstm_rows_forward(h[s + 1], c[s + 1], gates[s], h[s], c[s], bias, use_bias, mask,
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
    rows, pk = r1 - r0, rk.ctypes.data
    p_tmp, p_dh = rtmp.ctypes.data + 4 * r0 * u, dh.ctypes.data + 4 * r0 * u
    for s in range(t_len - 1, -1, -1):
        col = t_len - 1 - s if reverse else s
        t_out = s if has_dy else -1
        pg = gates.ctypes.data + 4 * (s * n + r0) * g
        k = g  # columns of R the dh GEMM reads (GRU_RB: the z, r ones)
        if cell == GRU_RB:  # drh = dhh @ R_h.T into rtmp, then dr and the r * src path
            gru_rb_rows_dh(gates[s], dh, h[s], mask, use_mask, col, dy, t_out, act_code,
                           ract_code, r0, r1)
            _gemm._sgemm_at(address, NO_TRANS, TRANS, rows, u, u, pg + 8 * u, g, pk + 8 * u,
                            g, 0.0, p_tmp, u, marker)
            gru_rb_rows_dr(gates[s], rtmp, dh, h[s], rmask, use_rmask, mask, use_mask, col,
                           ract_code, r0, r1)
            k = 2 * u
        elif cell == LSTM:
            lstm_rows_backward(gates[s], dh, dc, c[s + 1], c[s], mask, use_mask, col, dy,
                               t_out, act_code, ract_code, r0, r1, work)
        elif cell == GRU:
            gru_rows_backward(gates[s], inner[s], dh, h[s], mask, use_mask, col, dy, t_out,
                              act_code, ract_code, r0, r1, work)
            pg = inner.ctypes.data + 4 * (s * n + r0) * g
        else:
            simple_rows_backward(gates[s], dh, h[s + 1], mask, use_mask, col, dy, t_out,
                                 act_code, r0, r1, work)
        if use_rmask:  # dh += (dgates @ R.T (+ GRU_RB's r * src path)) * mask
            _gemm._sgemm_at(address, NO_TRANS, TRANS, rows, u, k, pg, g, pk, g,
                            1.0 if cell == GRU_RB else 0.0, p_tmp, u, marker)
            for i in range(r0, r1):
                for j in range(u):
                    dh[i, j] += rtmp[i, j] * rmask[i, j]
        else:
            _gemm._sgemm_at(address, NO_TRANS, TRANS, rows, u, k, pg, g, pk, g, 1.0, p_dh, u,
                            marker)


_helpers = {"pool": None, "size": 0, "pid": None}


def _pool(size):
    if _helpers["size"] != size or _helpers["pid"] != os.getpid():  # (a fork has no threads)
        _helpers.update(pool=ThreadPoolExecutor(size, thread_name_prefix="kernels_numba_rnn"),
                        size=size, pid=os.getpid())
    return _helpers["pool"]


def parts(n):
    """Blocks of batch rows: >= 8 rows each (a thinner sgemm costs more than the second
    core saves)."""
    return max(1, min(numba.get_num_threads(), n // 8))


def _run_blocks(fn, args, n):
    """fn(*args, r0, r1) for each block of batch rows (see _run_claimed)."""
    count = parts(n)
    if count == 1:
        fn(*args, 0, n)
        return
    _run_claimed(count, lambda b: fn(*args, n * b // count, n * (b + 1) // count))


def _run_claimed(count, task):
    """task(b) for b < count, on this thread and helper threads.

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
                if b >= count or state["error"] is not None:
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

    pool = _pool(count - 1)
    for _ in range(count - 1):
        pool.submit(work)
    work()
    with done:
        while state["running"]:
            done.wait()
    if state["error"] is not None:
        raise state["error"]


def rnn_gemm(c, a, b, trans_a, beta, lo, hi):
    """c[:, lo:hi] = op(a) @ b[:, lo:hi] + beta * c[:, lo:hi] in column blocks, each one
    cblas_sgemm (ctypes drops the GIL), claimed by threads as in _run_claimed."""
    m = c.shape[0]
    k = a.shape[0] if trans_a else a.shape[1]
    if m == 0 or hi == lo:
        return
    if _gemm._SGEMM is None or k == 0:
        _gemm.gemm(c[:, lo:hi], a.T if trans_a else a, b[:, lo:hi], accumulate=beta != 0)
        return
    n = hi - lo
    count = max(1, min(numba.get_num_threads(), n // 64))
    ta = TRANS if trans_a else NO_TRANS
    lda, ldb, ldc = a.strides[0] // 4, b.strides[0] // 4, c.strides[0] // 4
    pa, pb, pc = a.ctypes.data, b.ctypes.data, c.ctypes.data
    sgemm = _gemm.sgemm_callable()

    def task(p):
        q0, q1 = lo + n * p // count, lo + n * (p + 1) // count
        sgemm(_ROW_MAJOR, ta, NO_TRANS, m, q1 - q0, k, 1.0, pa, lda, pb + 4 * q0, ldb,
              float(beta), pc + 4 * q0, ldc)
    if count == 1:
        task(0)
    else:
        _run_claimed(count, task)


def _rows2(bias):
    return bias.reshape((1, bias.shape[0])) if bias.ndim == 1 else bias


def rnn_sequence_forward(cell, h, c, gates, inner, hd, rk, bias, use_bias, mask, use_mask,
                         rmask, use_rmask, reverse, act_code, ract_code):
    if gates.shape[0] == 0 or gates.shape[1] == 0:
        return
    bias = _rows2(bias)
    if _gemm._SGEMM is None:  # no bound cblas_sgemm: step by step through np.matmul
        _forward_steps(cell, h, c, gates, inner, hd, rk, bias, use_bias, mask, use_mask,
                       rmask, use_rmask, reverse, act_code, ract_code)
        return
    def run(address, h, c, gates, inner, hd):
        _run_blocks(_forward_rows, (cell, address, _gemm._INT_MARKER, h, c, gates, inner, hd,
                                    rk, bias, use_bias, mask, use_mask, rmask, use_rmask,
                                    reverse, act_code, ract_code), gates.shape[1])

    key = _key(cell, gates, rk, reverse, use_rmask)
    names = _gemm.sgemm_names()
    choice = names[0]
    if len(names) > 1:
        from kernels_numba import autotune

        known = autotune.recorded(_OP, key)
        if known in names:
            choice = known
        elif autotune.pending(_OP, key):
            copies = {}  # never the caller's arrays; aliases (c = h when unused) kept
            for x in (h, c, gates, inner, hd):
                if id(x) not in copies:
                    copies[id(x)] = x.copy()
            scratch = [copies[id(x)] for x in (h, c, gates, inner, hd)]
            choice = autotune.decide(_OP, key, {
                name: (lambda name=name: run(_gemm.sgemm_address_of(name), *scratch))
                for name in names}, names[0])
    run(_gemm.sgemm_address_of(choice), h, c, gates, inner, hd)


# The recurrent sgemm (kernels_numba/autotune.py): the forward times the time loop with
# each sgemm on scratch copies at a shape's first call; the backward (whose GEMMs have the
# same M, the batch block) takes the forward's recorded choice, else the fixed one.
_OP = "cpu.rnn_sequence"


def _key(cell, gates, rk, reverse, use_rmask):
    t, n, g = gates.shape
    return (f"cell{cell}|t{t}|n{n}|g{g}|rk{rk.shape[0]}x{rk.shape[1]}|rev{int(reverse)}|"
            f"rmask{int(use_rmask)}|threads{numba.get_num_threads()}")


def rnn_sequence_backward(cell, gates, inner, dh, dc, h, c, rk, mask, use_mask, dy, has_dy,
                          rmask, use_rmask, rtmp, reverse, act_code, ract_code):
    if gates.shape[0] == 0 or gates.shape[1] == 0:
        return
    if _gemm._SGEMM is None:
        _backward_steps(cell, gates, inner, dh, dc, h, c, rk, mask, use_mask, dy, has_dy,
                        rmask, use_rmask, rtmp, reverse, act_code, ract_code)
        return
    from kernels_numba import autotune

    names = _gemm.sgemm_names()
    chosen = autotune.recorded(_OP, _key(cell, gates, rk, reverse, use_rmask))
    address = _gemm.sgemm_address_of(chosen if chosen in names else names[0])
    _run_blocks(_backward_rows, (cell, address, _gemm._INT_MARKER, gates, inner, dh, dc, h, c,
                                 rk, mask, use_mask, dy, has_dy, rmask, use_rmask, rtmp,
                                 reverse, act_code, ract_code), gates.shape[1])


def _forward_steps(cell, h, c, gates, inner, hd, rk, bias, use_bias, mask, use_mask, rmask,
                   use_rmask, reverse, act_code, ract_code):
    t_len, n, g = gates.shape
    u = h.shape[2]
    work = np.empty((3, g), np.float32)
    for s in range(t_len):
        col = t_len - 1 - s if reverse else s
        src = h[s]
        if use_rmask:
            src = np.multiply(h[s], rmask, out=hd[s])
        if cell == GRU_RB:
            _gemm.gemm(gates[s][:, :2 * u], src, rk[:, :2 * u], accumulate=True)
            gru_rb_rows_zr(gates[s], inner[s], src, bias, use_bias, ract_code, 0, n, work)
            _gemm.gemm(gates[s][:, 2 * u:], inner[s], rk[:, 2 * u:], accumulate=True)
            gru_rb_rows_h(h[s + 1], gates[s], h[s], bias, use_bias, mask, use_mask, col,
                          act_code, 0, n, work)
        elif cell == GRU:
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
    u = dh.shape[1]
    work = np.empty((3, g), np.float32)
    for s in range(t_len - 1, -1, -1):
        col, t_out = (t_len - 1 - s if reverse else s), (s if has_dy else -1)
        src, r = gates[s], rk
        if cell == GRU_RB:
            gru_rb_rows_dh(gates[s], dh, h[s], mask, use_mask, col, dy, t_out, act_code,
                           ract_code, 0, n)
            _gemm.gemm(rtmp, gates[s][:, 2 * u:], rk[:, 2 * u:].T)
            gru_rb_rows_dr(gates[s], rtmp, dh, h[s], rmask, use_rmask, mask, use_mask, col,
                           ract_code, 0, n)
            src, r = gates[s][:, :2 * u], rk[:, :2 * u]
            if use_rmask:
                _gemm.gemm(rtmp, src, r.T, accumulate=True)
                dh += rtmp * rmask
                continue
        elif cell == LSTM:
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
            _gemm.gemm(rtmp, src, r.T)
            dh += rtmp * rmask
        else:
            _gemm.gemm(dh, src, r.T, accumulate=True)
