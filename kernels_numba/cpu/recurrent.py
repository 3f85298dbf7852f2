"""CPU twin of kernels_numba.ops.recurrent, and the gate activations both devices share.

`act` / `act_grad` are plain Python on float32 scalars: njit'd here and compiled as
CUDA device functions by kernels_numba.gpu.recurrent, so both devices run one formula.
act_grad takes the activation's OUTPUT (every supported kind's derivative is a
function of it), so backward needs no pre-activations. Step kernels loop over
(sample, unit); sample rows run in parallel.
"""

import math

import numba
import numpy as np

LINEAR, TANH, SIGMOID, RELU, HARD_SIGMOID = 0, 1, 2, 3, 4
_ZERO = np.float32(0.0)
_HALF = np.float32(0.5)
_ONE = np.float32(1.0)
_SIXTH = np.float32(1.0 / 6.0)
# merge modes of Bidirectional (ops.recurrent.MERGE_CODES)
CONCAT, SUM, MUL, AVE = 0, 1, 2, 3


# scalar math (shared with the CUDA kernels)


def act(v, code):
    """Keras's activation `code` of float32 v."""
    if code == TANH:
        return math.tanh(v)
    if code == SIGMOID:  # split on the sign: exp never overflows into inf/inf
        if v >= _ZERO:
            return _ONE / (_ONE + math.exp(-v))
        e = math.exp(v)
        return e / (_ONE + e)
    if code == RELU:
        return v if v > _ZERO else _ZERO * v  # 0 * NaN keeps NaN
    if code == HARD_SIGMOID:  # Keras 3: relu6(x + 3) / 6
        w = v * _SIXTH + _HALF
        if w <= _ZERO:
            return _ZERO
        return _ONE if w >= _ONE else w
    return v


def act_grad(y, code):
    """d act / d v written with the output y = act(v)."""
    if code == TANH:
        return _ONE - y * y
    if code == SIGMOID:
        return y * (_ONE - y)
    if code == RELU:
        return _ONE if y > _ZERO else _ZERO
    if code == HARD_SIGMOID:
        return _SIXTH if (y > _ZERO and y < _ONE) else _ZERO
    return _ONE


_act = numba.njit(cache=True)(act)
_act_grad = numba.njit(cache=True)(act_grad)


# layout


@numba.njit(parallel=True, cache=True)
def _to_time_major(y, x, reverse, scale, use_scale):
    n, t_len, f = x.shape
    r = 1 if reverse else 0
    for t in numba.prange(t_len):
        src = (t_len - 1 - t) * r + t * (1 - r)  # (a conditional confuses parfor typing)
        for i in range(n):
            for k in range(f):
                v = x[i, src, k]
                y[t, i, k] = v * scale[i, k] if use_scale else v


@numba.njit(parallel=True, cache=True)
def _from_time_major(y, x, reverse, scale, use_scale):
    t_len, n, f = x.shape
    r = 1 if reverse else 0
    for i in numba.prange(n):
        for t in range(t_len):
            src = (t_len - 1 - t) * r + t * (1 - r)
            for k in range(f):
                v = x[src, i, k]
                y[i, t, k] = v * scale[i, k] if use_scale else v


def to_time_major(y, x, reverse, scale, use_scale):
    _to_time_major(y, x, reverse, scale, use_scale)


def from_time_major(y, x, reverse, scale, use_scale):
    _from_time_major(y, x, reverse, scale, use_scale)


# LSTM (gates i, f, c, o)


@numba.njit(parallel=True, cache=True)
def _lstm_step_forward(h, c, gates, h_prev, c_prev, bias, use_bias, mask, use_mask, t,
                       act_code, ract_code):
    n, u = h.shape
    for i in numba.prange(n):
        keep = (not use_mask) or mask[i, t] != _ZERO
        for j in range(u):
            zi, zf = gates[i, j], gates[i, u + j]
            zg, zo = gates[i, 2 * u + j], gates[i, 3 * u + j]
            if use_bias:
                zi += bias[j]
                zf += bias[u + j]
                zg += bias[2 * u + j]
                zo += bias[3 * u + j]
            gi, gf = _act(zi, ract_code), _act(zf, ract_code)
            gg, go = _act(zg, act_code), _act(zo, ract_code)
            gates[i, j], gates[i, u + j], gates[i, 2 * u + j], gates[i, 3 * u + j] = \
                gi, gf, gg, go
            if keep:
                cn = gf * c_prev[i, j] + gi * gg
                c[i, j] = cn
                h[i, j] = go * _act(cn, act_code)
            else:  # masked step: the state is carried through
                c[i, j] = c_prev[i, j]
                h[i, j] = h_prev[i, j]


@numba.njit(parallel=True, cache=True)
def _lstm_step_backward(gates, dh, dc, c, c_prev, mask, use_mask, t, dy, t_out,
                        act_code, ract_code):
    n, u = dh.shape
    for i in numba.prange(n):
        keep = (not use_mask) or mask[i, t] != _ZERO
        for j in range(u):
            dht = dh[i, j]
            if t_out >= 0:
                dht += dy[i, t_out, j]
            if not keep:
                gates[i, j] = _ZERO
                gates[i, u + j] = _ZERO
                gates[i, 2 * u + j] = _ZERO
                gates[i, 3 * u + j] = _ZERO
                dh[i, j] = dht  # dc is carried unchanged
                continue
            gi, gf = gates[i, j], gates[i, u + j]
            gg, go = gates[i, 2 * u + j], gates[i, 3 * u + j]
            a = _act(c[i, j], act_code)
            dct = dc[i, j] + dht * go * _act_grad(a, act_code)
            gates[i, j] = dct * gg * _act_grad(gi, ract_code)
            gates[i, u + j] = dct * c_prev[i, j] * _act_grad(gf, ract_code)
            gates[i, 2 * u + j] = dct * gi * _act_grad(gg, act_code)
            gates[i, 3 * u + j] = dht * a * _act_grad(go, ract_code)
            dc[i, j] = dct * gf
            dh[i, j] = _ZERO  # the recurrent GEMM adds dgates @ R.T


def lstm_step_forward(h, c, gates, h_prev, c_prev, bias, use_bias, mask, use_mask, t,
                      act_code, ract_code):
    _lstm_step_forward(h, c, gates, h_prev, c_prev, bias, use_bias, mask, use_mask, t,
                       act_code, ract_code)


def lstm_step_backward(gates, dh, dc, c, c_prev, mask, use_mask, t, dy, t_out, act_code,
                       ract_code):
    _lstm_step_backward(gates, dh, dc, c, c_prev, mask, use_mask, t, dy, t_out, act_code,
                        ract_code)


# GRU, reset_after=True (gates z, r, h; bias rows: input, recurrent)


@numba.njit(parallel=True, cache=True)
def _gru_step_forward(h, gates, inner, h_prev, bias, use_bias, mask, use_mask, t, act_code,
                      ract_code):
    n, u = h.shape
    for i in numba.prange(n):
        keep = (not use_mask) or mask[i, t] != _ZERO
        for j in range(u):
            xz, xr, xh = gates[i, j], gates[i, u + j], gates[i, 2 * u + j]
            rz, rr, rh = inner[i, j], inner[i, u + j], inner[i, 2 * u + j]
            if use_bias:
                xz += bias[0, j]
                xr += bias[0, u + j]
                xh += bias[0, 2 * u + j]
                rz += bias[1, j]
                rr += bias[1, u + j]
                rh += bias[1, 2 * u + j]
            z = _act(xz + rz, ract_code)
            r = _act(xr + rr, ract_code)
            hh = _act(xh + r * rh, act_code)
            gates[i, j], gates[i, u + j], gates[i, 2 * u + j] = z, r, hh
            inner[i, 2 * u + j] = rh
            hp = h_prev[i, j]
            h[i, j] = z * hp + (_ONE - z) * hh if keep else hp


@numba.njit(parallel=True, cache=True)
def _gru_step_backward(gates, inner, dh, h_prev, mask, use_mask, t, dy, t_out, act_code,
                       ract_code):
    n, u = dh.shape
    for i in numba.prange(n):
        keep = (not use_mask) or mask[i, t] != _ZERO
        for j in range(u):
            dht = dh[i, j]
            if t_out >= 0:
                dht += dy[i, t_out, j]
            if not keep:
                for g in range(3):
                    gates[i, g * u + j] = _ZERO
                    inner[i, g * u + j] = _ZERO
                dh[i, j] = dht
                continue
            z, r, hh = gates[i, j], gates[i, u + j], gates[i, 2 * u + j]
            rh = inner[i, 2 * u + j]
            dz = dht * (h_prev[i, j] - hh) * _act_grad(z, ract_code)
            dhh = dht * (_ONE - z) * _act_grad(hh, act_code)
            dr = dhh * rh * _act_grad(r, ract_code)
            gates[i, j], gates[i, u + j], gates[i, 2 * u + j] = dz, dr, dhh
            inner[i, j], inner[i, u + j], inner[i, 2 * u + j] = dz, dr, dhh * r
            dh[i, j] = dht * z


def gru_step_forward(h, gates, inner, h_prev, bias, use_bias, mask, use_mask, t, act_code,
                     ract_code):
    _gru_step_forward(h, gates, inner, h_prev, bias, use_bias, mask, use_mask, t, act_code,
                      ract_code)


def gru_step_backward(gates, inner, dh, h_prev, mask, use_mask, t, dy, t_out, act_code,
                      ract_code):
    _gru_step_backward(gates, inner, dh, h_prev, mask, use_mask, t, dy, t_out, act_code,
                       ract_code)


# SimpleRNN


@numba.njit(parallel=True, cache=True)
def _simple_step_forward(h, z, h_prev, bias, use_bias, mask, use_mask, t, act_code):
    n, u = h.shape
    for i in numba.prange(n):
        keep = (not use_mask) or mask[i, t] != _ZERO
        for j in range(u):
            v = z[i, j] + bias[j] if use_bias else z[i, j]
            h[i, j] = _act(v, act_code) if keep else h_prev[i, j]


@numba.njit(parallel=True, cache=True)
def _simple_step_backward(dz, dh, h, mask, use_mask, t, dy, t_out, act_code):
    n, u = dh.shape
    for i in numba.prange(n):
        keep = (not use_mask) or mask[i, t] != _ZERO
        for j in range(u):
            dht = dh[i, j]
            if t_out >= 0:
                dht += dy[i, t_out, j]
            if keep:
                dz[i, j] = dht * _act_grad(h[i, j], act_code)
                dh[i, j] = _ZERO
            else:
                dz[i, j] = _ZERO
                dh[i, j] = dht


def simple_step_forward(h, z, h_prev, bias, use_bias, mask, use_mask, t, act_code):
    _simple_step_forward(h, z, h_prev, bias, use_bias, mask, use_mask, t, act_code)


def simple_step_backward(dz, dh, h, mask, use_mask, t, dy, t_out, act_code):
    _simple_step_backward(dz, dh, h, mask, use_mask, t, dy, t_out, act_code)


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
