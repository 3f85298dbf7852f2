"""The recurrent cells' float32 math, shared by the step and the sequence kernels.

`act` / `act_grad` are plain Python on float32 scalars, compiled as CUDA device
functions by kernels_numba.gpu.recurrent. act_grad takes the activation's OUTPUT (every
supported kind's derivative is a function of it), so backward needs no pre-activations.

The CPU twins apply activations to whole gate rows with `_vact`, the same formulas but
written so LLVM vectorises them: sigmoid = 1 / (1 + exp(-v)), tanh = 1 - 2 / (1 +
exp(2v)) (a Taylor polynomial below |v| = 1/16, where that form loses relative
precision), with exp a Cephes-style polynomial (max relative error ~1e-7) scaled by
2^n built from its bits. libm's tanhf costs ~40 ns a call here and expf ~4 ns; the
vector forms ~1.2 ns per value, and an LSTM evaluates five per unit and step. Both are
exact at +-inf and propagate NaN (error_model="numpy": IEEE division, no checks).

The `*_rows_*` functions run one cell step on the batch rows r0..r1 (the caller
splits rows across threads); `work` is (3, G*U) float32 scratch of the caller. Bias is
2-D: (1, G*U) for LSTM / SimpleRNN / GRU reset_after=False, (2, 3U) for GRU's input and
recurrent rows.

GRU reset_after=False (Keras's original GRU: hh = act(xh + (r * h_prev) @ R_h)) needs r
before the h third of the recurrent GEMM, so its step is split in two halves around that
GEMM (`gru_rb_rows_zr`, `gru_rb_rows_h`), and likewise its backward (`gru_rb_rows_dh`,
`gru_rb_rows_dr`).
"""

import math

import numba
import numpy as np

LINEAR, TANH, SIGMOID, RELU, HARD_SIGMOID = 0, 1, 2, 3, 4
# cells of the sequence ops (GRU_RB: GRU with reset_after=False)
LSTM, GRU, SIMPLE, GRU_RB = 0, 1, 2, 3
_ZERO = np.float32(0.0)
_HALF = np.float32(0.5)
_ONE = np.float32(1.0)
_TWO = np.float32(2.0)
_SIXTH = np.float32(1.0 / 6.0)
# tanh(v) = v (1 + v^2 (T1 + v^2 (T2 + v^2 T3))) for |v| < SMALL (error < 1e-12)
_SMALL = np.float32(0.0625)
_T1, _T2, _T3 = np.float32(-1.0 / 3.0), np.float32(2.0 / 15.0), np.float32(-17.0 / 315.0)
# exp: v = n ln2 + r (ln2 = C1 + C2, C1 exact in float32), exp(r) by a degree-7 polynomial
_LOG2E = np.float32(1.4426950408889634)
_C1, _C2 = np.float32(0.693359375), np.float32(-2.12194440e-4)
_P = (np.float32(1.9875691500e-4), np.float32(1.3981999507e-3), np.float32(8.3334519073e-3),
      np.float32(4.1665795894e-2), np.float32(1.6666665459e-1), np.float32(5.0000001201e-1))
_EXP_HI, _EXP_LO = np.float32(88.0), np.float32(-87.0)  # 2^n stays a normal float
_BIAS_EXP, _MANTISSA = np.int32(127), np.int32(23)

_JIT = dict(nogil=True, cache=True, error_model="numpy")


def act(v, code):
    """Keras's activation `code` of float32 v."""
    if code == TANH:
        if abs(v) < _SMALL:
            w = v * v
            return v + v * w * (_T1 + w * (_T2 + w * _T3))
        return _ONE - _TWO / (_ONE + math.exp(v + v))
    if code == SIGMOID:
        return _ONE / (_ONE + math.exp(-v))
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


_act = numba.njit(inline="always", **_JIT)(act)
_act_grad = numba.njit(inline="always", **_JIT)(act_grad)


@numba.njit(**_JIT)
def _vexp(x, scale, out, pow2):
    """out = exp(scale * x) over the 1-D x; pow2 is float32 scratch as long as x."""
    bits = pow2.view(np.int32)
    for j in range(x.size):
        v = x[j] * scale
        v = _EXP_LO if v < _EXP_LO else v
        v = _EXP_HI if v > _EXP_HI else v  # (NaN passes both)
        n = np.floor(v * _LOG2E + _HALF)
        n = n if n == n else _ZERO
        r = v - n * _C1 - n * _C2
        p = ((((_P[0] * r + _P[1]) * r + _P[2]) * r + _P[3]) * r + _P[4]) * r + _P[5]
        out[j] = p * r * r + r + _ONE
        bits[j] = (np.int32(n) + _BIAS_EXP) << _MANTISSA
    for j in range(x.size):
        out[j] *= pow2[j]


@numba.njit(**_JIT)
def _vact(x, code, work):
    """x = act(x, code) in place over the 1-D x; work: (>= 2, >= x.size) scratch."""
    m = x.size
    e, pow2 = work[0, :m], work[1, :m]
    if code == SIGMOID:
        _vexp(x, -_ONE, e, pow2)
        for j in range(m):
            x[j] = _ONE / (_ONE + e[j])
    elif code == TANH:
        _vexp(x, _TWO, e, pow2)
        for j in range(m):
            v = x[j]
            w = v * v
            small = v + v * w * (_T1 + w * (_T2 + w * _T3))
            x[j] = small if abs(v) < _SMALL else _ONE - _TWO / (_ONE + e[j])
    elif code != LINEAR:
        for j in range(m):
            x[j] = _act(x[j], code)


@numba.njit(**_JIT)
def lstm_rows_forward(h, c, gates, h_prev, c_prev, bias, use_bias, mask, use_mask, t,
                      act_code, ract_code, r0, r1, work):
    u = h.shape[1]
    tc = work[2, :u]
    for i in range(r0, r1):
        row = gates[i]
        if use_bias:
            for j in range(4 * u):
                row[j] += bias[0, j]
        _vact(row[:2 * u], ract_code, work)
        _vact(row[2 * u:3 * u], act_code, work)
        _vact(row[3 * u:], ract_code, work)
        if use_mask and mask[i, t] == _ZERO:  # masked step: the state is carried through
            for j in range(u):
                c[i, j] = c_prev[i, j]
                h[i, j] = h_prev[i, j]
            continue
        for j in range(u):
            cn = row[u + j] * c_prev[i, j] + row[j] * row[2 * u + j]
            c[i, j] = cn
            tc[j] = cn
        _vact(tc, act_code, work)
        for j in range(u):
            h[i, j] = row[3 * u + j] * tc[j]


@numba.njit(**_JIT)
def lstm_rows_backward(gates, dh, dc, c, c_prev, mask, use_mask, t, dy, t_out, act_code,
                       ract_code, r0, r1, work):
    u = dh.shape[1]
    a = work[2, :u]
    for i in range(r0, r1):
        if use_mask and mask[i, t] == _ZERO:
            for j in range(u):
                dht = dh[i, j]
                if t_out >= 0:
                    dht += dy[i, t_out, j]
                dh[i, j] = dht  # dc is carried unchanged
            for j in range(4 * u):
                gates[i, j] = _ZERO
            continue
        for j in range(u):
            a[j] = c[i, j]
        _vact(a, act_code, work)
        for j in range(u):
            dht = dh[i, j]
            if t_out >= 0:
                dht += dy[i, t_out, j]
            gi, gf = gates[i, j], gates[i, u + j]
            gg, go = gates[i, 2 * u + j], gates[i, 3 * u + j]
            dct = dc[i, j] + dht * go * _act_grad(a[j], act_code)
            gates[i, j] = dct * gg * _act_grad(gi, ract_code)
            gates[i, u + j] = dct * c_prev[i, j] * _act_grad(gf, ract_code)
            gates[i, 2 * u + j] = dct * gi * _act_grad(gg, act_code)
            gates[i, 3 * u + j] = dht * a[j] * _act_grad(go, ract_code)
            dc[i, j] = dct * gf
            dh[i, j] = _ZERO  # the recurrent GEMM adds dgates @ R.T


@numba.njit(**_JIT)
def gru_rows_forward(h, gates, inner, h_prev, bias, use_bias, mask, use_mask, t, act_code,
                     ract_code, r0, r1, work):
    u = h.shape[1]
    for i in range(r0, r1):
        row, rec = gates[i], inner[i]
        for j in range(2 * u):
            row[j] += rec[j] + (bias[0, j] + bias[1, j] if use_bias else _ZERO)
        _vact(row[:2 * u], ract_code, work)
        for j in range(u):
            rh = rec[2 * u + j] + (bias[1, 2 * u + j] if use_bias else _ZERO)
            rec[2 * u + j] = rh
            xh = row[2 * u + j] + (bias[0, 2 * u + j] if use_bias else _ZERO)
            row[2 * u + j] = xh + row[u + j] * rh
        _vact(row[2 * u:], act_code, work)
        keep = (not use_mask) or mask[i, t] != _ZERO
        for j in range(u):
            z, hp = row[j], h_prev[i, j]
            h[i, j] = z * hp + (_ONE - z) * row[2 * u + j] if keep else hp


@numba.njit(**_JIT)
def gru_rows_backward(gates, inner, dh, h_prev, mask, use_mask, t, dy, t_out, act_code,
                      ract_code, r0, r1, work):
    u = dh.shape[1]
    for i in range(r0, r1):
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


@numba.njit(**_JIT)
def simple_rows_forward(h, z, h_prev, bias, use_bias, mask, use_mask, t, act_code, r0, r1,
                        work):
    u = h.shape[1]
    v = work[2, :u]
    for i in range(r0, r1):
        if use_mask and mask[i, t] == _ZERO:
            for j in range(u):
                h[i, j] = h_prev[i, j]
            continue
        for j in range(u):
            v[j] = z[i, j] + bias[0, j] if use_bias else z[i, j]
        _vact(v, act_code, work)
        for j in range(u):
            h[i, j] = v[j]


@numba.njit(**_JIT)
def simple_rows_backward(dz, dh, h, mask, use_mask, t, dy, t_out, act_code, r0, r1, work):
    u = dh.shape[1]
    for i in range(r0, r1):
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


@numba.njit(**_JIT)
def gru_rb_rows_zr(gates, rh, src, bias, use_bias, ract_code, r0, r1, work):
    """z, r = ract(gates + b) on the first 2U columns (they already hold x@W + src@R_zr);
    rh = r * src, the left operand of the h third's GEMM (kept for its weight gradient)."""
    u = rh.shape[1]
    for i in range(r0, r1):
        row = gates[i]
        if use_bias:
            for j in range(2 * u):
                row[j] += bias[0, j]
        _vact(row[:2 * u], ract_code, work)
        for j in range(u):
            rh[i, j] = row[u + j] * src[i, j]


@numba.njit(**_JIT)
def gru_rb_rows_h(h, gates, h_prev, bias, use_bias, mask, use_mask, t, act_code, r0, r1,
                  work):
    """hh = act(gates_h + b_h) (gates_h holds x@W_h + rh@R_h); h = z*h_prev + (1-z)*hh."""
    u = h.shape[1]
    for i in range(r0, r1):
        row = gates[i]
        if use_bias:
            for j in range(u):
                row[2 * u + j] += bias[0, 2 * u + j]
        _vact(row[2 * u:], act_code, work)
        keep = (not use_mask) or mask[i, t] != _ZERO
        for j in range(u):
            z, hp = row[j], h_prev[i, j]
            h[i, j] = z * hp + (_ONE - z) * row[2 * u + j] if keep else hp


@numba.njit(**_JIT)
def gru_rb_rows_dh(gates, dh, h_prev, mask, use_mask, t, dy, t_out, act_code, ract_code,
                   r0, r1):
    """First half of the reverse step: gates' z and hh columns <- dL/d(pre-activation),
    dh <- dL/dh_t * z (the direct path); r is left for gru_rb_rows_dr."""
    u = dh.shape[1]
    for i in range(r0, r1):
        keep = (not use_mask) or mask[i, t] != _ZERO
        for j in range(u):
            dht = dh[i, j]
            if t_out >= 0:
                dht += dy[i, t_out, j]
            if not keep:
                gates[i, j] = _ZERO
                gates[i, 2 * u + j] = _ZERO
                dh[i, j] = dht
                continue
            z, hh = gates[i, j], gates[i, 2 * u + j]
            gates[i, j] = dht * (h_prev[i, j] - hh) * _act_grad(z, ract_code)
            gates[i, 2 * u + j] = dht * (_ONE - z) * _act_grad(hh, act_code)
            dh[i, j] = dht * z


@numba.njit(**_JIT)
def gru_rb_rows_dr(gates, drh, dh, h_prev, rmask, use_rmask, mask, use_mask, t, ract_code,
                   r0, r1):
    """Second half: drh (= dhh @ R_h.T, dL/d(r * src)) gives the r column's gradient; the
    src path drh * r goes into dh (no recurrent dropout) or replaces drh (with it: the
    caller adds the z, r GEMM and then dh += drh * rmask)."""
    u = dh.shape[1]
    for i in range(r0, r1):
        keep = (not use_mask) or mask[i, t] != _ZERO
        for j in range(u):
            if not keep:
                gates[i, u + j] = _ZERO
                drh[i, j] = _ZERO
                continue
            d, r = drh[i, j], gates[i, u + j]
            src = h_prev[i, j] * rmask[i, j] if use_rmask else h_prev[i, j]
            gates[i, u + j] = d * src * _act_grad(r, ract_code)
            if use_rmask:
                drh[i, j] = d * r
            else:
                dh[i, j] += d * r
