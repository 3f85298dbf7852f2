"""CUDA twin of kernels_numba.ops.rnn_sequence: per step the recurrent GEMM and the fused
step kernel (kernels_numba.gpu.recurrent's), launched straight from here (the op checked
the arguments once; one launch shape for all steps).

GRU reset_after=False multiplies column slices of the gate rows and of the recurrent
kernel (z, r columns; the h third), which are strided views: `_strided_gemm_kernel` is a
16 x 16 shared-memory tiled GEMM on such views (the tuned kernels_numba.gpu.dense GEMM
takes C-contiguous arrays only). Its four fused kernels split the step around the
h-third GEMM as the CPU twin's gru_rb_rows_* do: one thread per (sample, unit), each
writing only its own unit's columns.
"""

import numpy as np
from numba import float32

from kernels_numba._cuda import MAX_GRID_YZ, ceil_div, cuda, kernel, launch
from kernels_numba.cpu._rnn_cells import GRU, GRU_RB, LSTM
from kernels_numba.gpu import recurrent as _k
from kernels_numba.gpu.dense import gemm as _gemm
from kernels_numba.gpu.dropout import dropout_backward as _times
from kernels_numba.gpu.elementwise import axpy as _axpy

F32_1D = "float32[::1]"
F32_2D = "float32[:, ::1]"
F32_3D = "float32[:, :, ::1]"
ANY_2D = "float32[:, :]"
TILE = 16
_act, _act_grad = _k._act, _k._act_grad
_live_step, _incoming_dh = _k.live_step, _k.incoming_dh


@kernel(f"void({ANY_2D}, {ANY_2D}, {ANY_2D}, boolean, boolean, float32)")
def _strided_gemm_kernel(c, a, b, trans_a, trans_b, beta):
    """c = op(a) @ op(b) + beta * c on strided 2-D views; block (TILE, TILE)."""
    m, n = c.shape
    k_total = a.shape[0] if trans_a else a.shape[1]
    tx, ty = cuda.threadIdx.x, cuda.threadIdx.y
    row = cuda.blockIdx.y * TILE + ty
    col = cuda.blockIdx.x * TILE + tx
    a_s = cuda.shared.array((TILE, TILE), float32)
    b_s = cuda.shared.array((TILE, TILE), float32)
    acc = float32(0.0)
    for k0 in range(0, k_total, TILE):
        ka, kb = k0 + tx, k0 + ty
        v = float32(0.0)
        if row < m and ka < k_total:
            v = a[ka, row] if trans_a else a[row, ka]
        a_s[ty, tx] = v
        w = float32(0.0)
        if col < n and kb < k_total:
            w = b[col, kb] if trans_b else b[kb, col]
        b_s[ty, tx] = w
        cuda.syncthreads()
        for kk in range(TILE):
            acc += a_s[ty, kk] * b_s[kk, tx]
        cuda.syncthreads()
    if row < m and col < n:
        if beta != float32(0.0):
            acc += beta * c[row, col]
        c[row, col] = acc


@kernel(f"void({F32_2D}, {F32_2D}, {F32_2D}, {F32_1D}, boolean, int32)")
def _gru_rb_zr_kernel(gates, rh, src, bias, use_bias, ract_code):
    n, u = rh.shape
    for k in range(cuda.grid(1), n * u, cuda.gridsize(1)):
        i = k // u
        j = k % u
        vz, vr = gates[i, j], gates[i, u + j]
        if use_bias:
            vz += bias[j]
            vr += bias[u + j]
        r = _act(vr, ract_code)
        gates[i, j] = _act(vz, ract_code)
        gates[i, u + j] = r
        rh[i, j] = r * src[i, j]


@kernel(f"void({F32_2D}, {F32_2D}, {F32_2D}, {F32_1D}, boolean, {F32_2D}, boolean, int32, "
        "int32)")
def _gru_rb_h_kernel(h, gates, h_prev, bias, use_bias, mask, use_mask, t, act_code):
    n, u = h.shape
    for k in range(cuda.grid(1), n * u, cuda.gridsize(1)):
        i = k // u
        j = k % u
        v = gates[i, 2 * u + j]
        if use_bias:
            v += bias[2 * u + j]
        hh = _act(v, act_code)
        gates[i, 2 * u + j] = hh
        z, hp = gates[i, j], h_prev[i, j]
        if _live_step(mask, use_mask, i, t):
            h[i, j] = z * hp + (float32(1.0) - z) * hh
        else:
            h[i, j] = hp


@kernel(f"void({F32_2D}, {F32_2D}, {F32_2D}, {F32_2D}, boolean, int32, {F32_3D}, int32, int32, "
        "int32)")
def _gru_rb_dh_kernel(gates, dh, h_prev, mask, use_mask, t, dy, t_out, act_code, ract_code):
    n, u = dh.shape
    zero = float32(0.0)
    for k in range(cuda.grid(1), n * u, cuda.gridsize(1)):
        i = k // u
        j = k % u
        dht = _incoming_dh(dh, dy, t_out, i, j)
        if not _live_step(mask, use_mask, i, t):
            gates[i, j] = zero
            gates[i, 2 * u + j] = zero
            dh[i, j] = dht
            continue
        z, hh = gates[i, j], gates[i, 2 * u + j]
        gates[i, j] = dht * (h_prev[i, j] - hh) * _act_grad(z, ract_code)
        gates[i, 2 * u + j] = dht * (float32(1.0) - z) * _act_grad(hh, act_code)
        dh[i, j] = dht * z


@kernel(f"void({F32_2D}, {F32_2D}, {F32_2D}, {F32_2D}, {F32_2D}, boolean, {F32_2D}, boolean, "
        "int32, int32)")
def _gru_rb_dr_kernel(gates, drh, dh, h_prev, rmask, use_rmask, mask, use_mask, t, ract_code):
    n, u = dh.shape
    zero = float32(0.0)
    for k in range(cuda.grid(1), n * u, cuda.gridsize(1)):
        i = k // u
        j = k % u
        if not _live_step(mask, use_mask, i, t):
            gates[i, u + j] = zero
            drh[i, j] = zero
            continue
        d, r = drh[i, j], gates[i, u + j]
        src = h_prev[i, j] * rmask[i, j] if use_rmask else h_prev[i, j]
        gates[i, u + j] = d * src * _act_grad(r, ract_code)
        if use_rmask:
            drh[i, j] = d * r
        else:
            dh[i, j] += d * r


def _sgemm(c, a, b, trans_a=False, trans_b=False, beta=0.0):
    m, n = c.shape
    if m == 0 or n == 0:
        return
    if ceil_div(m, TILE) > MAX_GRID_YZ:  # row tiles go on gridDim.y
        raise ValueError(f"rnn gemm: expected at most {MAX_GRID_YZ * TILE} rows (CUDA's "
                         f"gridDim.y limit); received {m}")
    launch(_strided_gemm_kernel, (ceil_div(n, TILE), ceil_div(m, TILE)), (TILE, TILE), c, a, b,
           bool(trans_a), bool(trans_b), np.float32(beta))


def rnn_gemm(c, a, b, trans_a, beta, lo, hi):
    if lo == 0 and hi == c.shape[1]:
        _gemm(c, a, b, trans_a=trans_a, beta=beta)
    else:
        _sgemm(c[:, lo:hi], a, b[:, lo:hi], trans_a=trans_a, beta=beta)


def rnn_sequence_forward(cell, h, c, gates, inner, hd, rk, bias, use_bias, mask, use_mask,
                         rmask, use_rmask, reverse, act_code, ract_code):
    t_len, n = gates.shape[:2]
    if t_len == 0 or n == 0:
        return
    u = h.shape[2]
    grid, block = _k.step_grid(n * u)
    b = bias if cell == GRU else bias.reshape(bias.size)
    for s in range(t_len):
        col = t_len - 1 - s if reverse else s
        src = h[s]
        if use_rmask:
            src = hd[s]
            _times(src, h[s], rmask)
        if cell == GRU_RB:  # z, r columns; r * src; its h-third GEMM; hh and h
            _sgemm(gates[s][:, :2 * u], src, rk[:, :2 * u], beta=1.0)
            launch(_gru_rb_zr_kernel, grid, block, gates[s], inner[s], src, b, use_bias,
                   ract_code)
            _sgemm(gates[s][:, 2 * u:], inner[s], rk[:, 2 * u:], beta=1.0)
            launch(_gru_rb_h_kernel, grid, block, h[s + 1], gates[s], h[s], b, use_bias, mask,
                   use_mask, col, act_code)
        elif cell == GRU:
            _gemm(inner[s], src, rk)
            launch(_k._gru_step_forward_kernel, grid, block, h[s + 1], gates[s], inner[s], h[s],
                   b, use_bias, mask, use_mask, col, act_code, ract_code)
        elif cell == LSTM:
            _gemm(gates[s], src, rk, beta=1.0)
            launch(_k._lstm_step_forward_kernel, grid, block, h[s + 1], c[s + 1], gates[s],
                   h[s], c[s], b, use_bias, mask, use_mask, col, act_code, ract_code)
        else:
            _gemm(gates[s], src, rk, beta=1.0)
            launch(_k._simple_step_forward_kernel, grid, block, h[s + 1], gates[s], h[s], b,
                   use_bias, mask, use_mask, col, act_code)


def rnn_sequence_backward(cell, gates, inner, dh, dc, h, c, rk, mask, use_mask, dy, has_dy,
                          rmask, use_rmask, rtmp, reverse, act_code, ract_code):
    t_len, n = gates.shape[:2]
    if t_len == 0 or n == 0:
        return
    u = dh.shape[1]
    grid, block = _k.step_grid(dh.size)
    for s in range(t_len - 1, -1, -1):
        col, t_out = (t_len - 1 - s if reverse else s), (s if has_dy else -1)
        src = gates[s]
        if cell == GRU_RB:  # drh = dhh @ R_h.T (rtmp); dr, r * src path; z, r GEMM
            launch(_gru_rb_dh_kernel, grid, block, gates[s], dh, h[s], mask, use_mask, col,
                   dy, t_out, act_code, ract_code)
            _sgemm(rtmp, gates[s][:, 2 * u:], rk[:, 2 * u:], trans_b=True)
            launch(_gru_rb_dr_kernel, grid, block, gates[s], rtmp, dh, h[s], rmask, use_rmask,
                   mask, use_mask, col, ract_code)
            if use_rmask:
                _sgemm(rtmp, gates[s][:, :2 * u], rk[:, :2 * u], trans_b=True, beta=1.0)
                _times(rtmp, rtmp, rmask)
                _axpy(dh, rtmp, np.float32(1.0))
            else:
                _sgemm(dh, gates[s][:, :2 * u], rk[:, :2 * u], trans_b=True, beta=1.0)
            continue
        if cell == LSTM:
            launch(_k._lstm_step_backward_kernel, grid, block, src, dh, dc, c[s + 1], c[s],
                   mask, use_mask, col, dy, t_out, act_code, ract_code)
        elif cell == GRU:
            src = inner[s]
            launch(_k._gru_step_backward_kernel, grid, block, gates[s], src, dh, h[s], mask,
                   use_mask, col, dy, t_out, act_code, ract_code)
        else:
            launch(_k._simple_step_backward_kernel, grid, block, src, dh, h[s + 1], mask,
                   use_mask, col, dy, t_out, act_code)
        if use_rmask:  # dh += (dgates @ R.T) * rmask
            _gemm(rtmp, src, rk, trans_b=True)
            _times(rtmp, rtmp, rmask)
            _axpy(dh, rtmp, np.float32(1.0))
        else:
            _gemm(dh, src, rk, trans_b=True, beta=1.0)
