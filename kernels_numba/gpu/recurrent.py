"""CUDA kernels for kernels_numba.ops.recurrent: one thread per (sample, unit) per step.

The gate math is kernels_numba.cpu._rnn_cells's `act`/`act_grad` compiled as inlined
device functions, so both devices evaluate the same float32 formulas. Each thread
reads and writes only its own unit's gate columns: the step kernels run in place on
the gate buffers (activations overwritten by their gradients) with no races and no
atomics. The whole-sequence ops are kernels_numba.gpu.rnn_sequence.
"""

from numba import float32

from kernels_numba._cuda import cuda, device_function, grid_1d, kernel, launch
from kernels_numba.cpu import recurrent as _cpu

F32_1D = "float32[::1]"
F32_2D = "float32[:, ::1]"
F32_3D = "float32[:, :, ::1]"

_act = device_function(_cpu.act)
_act_grad = device_function(_cpu.act_grad)
CONCAT, SUM, MUL = _cpu.CONCAT, _cpu.SUM, _cpu.MUL
_MAX_THREADS = 65536 * 256


# per-(sample, unit) helpers, shared with kernels_numba.gpu.rnn_sequence's GRU kernels


@device_function
def live_step(mask, use_mask, i, t):
    """True when sample i's step t is real (not padded): its state moves on."""
    return (not use_mask) or mask[i, t] != float32(0.0)


@device_function
def incoming_dh(dh, dy, t_out, i, j):
    """The gradient reaching step's h[i, j]: the carried dh, plus dy's when the step's
    output is part of the result (t_out >= 0)."""
    dht = dh[i, j]
    if t_out >= 0:
        dht += dy[i, t_out, j]
    return dht


# kernels


@kernel(f"void({F32_3D}, {F32_3D}, boolean, {F32_2D}, boolean)")
def _to_time_major_kernel(y, x, reverse, scale, use_scale):
    n, t_len, f = x.shape
    for k in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        t = k // (n * f)
        i = (k // f) % n
        c = k % f
        src = t_len - 1 - t if reverse else t
        v = x[i, src, c]
        y[t, i, c] = v * scale[i, c] if use_scale else v


@kernel(f"void({F32_3D}, {F32_3D}, boolean, {F32_2D}, boolean)")
def _from_time_major_kernel(y, x, reverse, scale, use_scale):
    t_len, n, f = x.shape
    for k in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        i = k // (t_len * f)
        t = (k // f) % t_len
        c = k % f
        src = t_len - 1 - t if reverse else t
        v = x[src, i, c]
        y[i, t, c] = v * scale[i, c] if use_scale else v


@kernel(f"void({F32_2D}, {F32_2D}, {F32_2D}, {F32_2D}, {F32_2D}, {F32_1D}, boolean, "
        f"{F32_2D}, boolean, int32, int32, int32)")
def _lstm_step_forward_kernel(h, c, gates, h_prev, c_prev, bias, use_bias, mask, use_mask, t,
                              act_code, ract_code):
    n, u = h.shape
    for k in range(cuda.grid(1), n * u, cuda.gridsize(1)):
        i = k // u
        j = k % u
        zi, zf = gates[i, j], gates[i, u + j]
        zg, zo = gates[i, 2 * u + j], gates[i, 3 * u + j]
        if use_bias:
            zi += bias[j]
            zf += bias[u + j]
            zg += bias[2 * u + j]
            zo += bias[3 * u + j]
        gi, gf = _act(zi, ract_code), _act(zf, ract_code)
        gg, go = _act(zg, act_code), _act(zo, ract_code)
        gates[i, j] = gi
        gates[i, u + j] = gf
        gates[i, 2 * u + j] = gg
        gates[i, 3 * u + j] = go
        if live_step(mask, use_mask, i, t):
            cn = gf * c_prev[i, j] + gi * gg
            c[i, j] = cn
            h[i, j] = go * _act(cn, act_code)
        else:
            c[i, j] = c_prev[i, j]
            h[i, j] = h_prev[i, j]


@kernel(f"void({F32_2D}, {F32_2D}, {F32_2D}, {F32_2D}, {F32_2D}, {F32_2D}, boolean, int32, "
        f"{F32_3D}, int32, int32, int32)")
def _lstm_step_backward_kernel(gates, dh, dc, c, c_prev, mask, use_mask, t, dy, t_out,
                               act_code, ract_code):
    n, u = dh.shape
    zero = float32(0.0)
    for k in range(cuda.grid(1), n * u, cuda.gridsize(1)):
        i = k // u
        j = k % u
        dht = incoming_dh(dh, dy, t_out, i, j)
        if not live_step(mask, use_mask, i, t):
            gates[i, j] = zero
            gates[i, u + j] = zero
            gates[i, 2 * u + j] = zero
            gates[i, 3 * u + j] = zero
            dh[i, j] = dht
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
        dh[i, j] = zero


@kernel(f"void({F32_2D}, {F32_2D}, {F32_2D}, {F32_2D}, {F32_2D}, boolean, {F32_2D}, boolean, "
        f"int32, int32, int32)")
def _gru_step_forward_kernel(h, gates, inner, h_prev, bias, use_bias, mask, use_mask, t,
                             act_code, ract_code):
    n, u = h.shape
    for k in range(cuda.grid(1), n * u, cuda.gridsize(1)):
        i = k // u
        j = k % u
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
        gates[i, j] = z
        gates[i, u + j] = r
        gates[i, 2 * u + j] = hh
        inner[i, 2 * u + j] = rh
        hp = h_prev[i, j]
        if live_step(mask, use_mask, i, t):
            h[i, j] = z * hp + (float32(1.0) - z) * hh
        else:
            h[i, j] = hp


@kernel(f"void({F32_2D}, {F32_2D}, {F32_2D}, {F32_2D}, {F32_2D}, boolean, int32, {F32_3D}, "
        f"int32, int32, int32)")
def _gru_step_backward_kernel(gates, inner, dh, h_prev, mask, use_mask, t, dy, t_out, act_code,
                              ract_code):
    n, u = dh.shape
    zero = float32(0.0)
    for k in range(cuda.grid(1), n * u, cuda.gridsize(1)):
        i = k // u
        j = k % u
        dht = incoming_dh(dh, dy, t_out, i, j)
        if not live_step(mask, use_mask, i, t):
            for g in range(3):
                gates[i, g * u + j] = zero
                inner[i, g * u + j] = zero
            dh[i, j] = dht
            continue
        z, r, hh = gates[i, j], gates[i, u + j], gates[i, 2 * u + j]
        rh = inner[i, 2 * u + j]
        dz = dht * (h_prev[i, j] - hh) * _act_grad(z, ract_code)
        dhh = dht * (float32(1.0) - z) * _act_grad(hh, act_code)
        dr = dhh * rh * _act_grad(r, ract_code)
        gates[i, j] = dz
        gates[i, u + j] = dr
        gates[i, 2 * u + j] = dhh
        inner[i, j] = dz
        inner[i, u + j] = dr
        inner[i, 2 * u + j] = dhh * r
        dh[i, j] = dht * z


@kernel(f"void({F32_2D}, {F32_2D}, {F32_2D}, {F32_1D}, boolean, {F32_2D}, boolean, int32, int32)")
def _simple_step_forward_kernel(h, z, h_prev, bias, use_bias, mask, use_mask, t, act_code):
    n, u = h.shape
    for k in range(cuda.grid(1), n * u, cuda.gridsize(1)):
        i = k // u
        j = k % u
        v = z[i, j] + bias[j] if use_bias else z[i, j]
        if live_step(mask, use_mask, i, t):
            h[i, j] = _act(v, act_code)
        else:
            h[i, j] = h_prev[i, j]


@kernel(f"void({F32_2D}, {F32_2D}, {F32_2D}, {F32_2D}, boolean, int32, {F32_3D}, int32, int32)")
def _simple_step_backward_kernel(dz, dh, h, mask, use_mask, t, dy, t_out, act_code):
    n, u = dh.shape
    zero = float32(0.0)
    for k in range(cuda.grid(1), n * u, cuda.gridsize(1)):
        i = k // u
        j = k % u
        dht = incoming_dh(dh, dy, t_out, i, j)
        if live_step(mask, use_mask, i, t):
            dz[i, j] = dht * _act_grad(h[i, j], act_code)
            dh[i, j] = zero
        else:
            dz[i, j] = zero
            dh[i, j] = dht


@kernel(f"void({F32_3D}, {F32_3D}, {F32_3D}, int32, boolean)")
def _merge_forward_kernel(y, fwd, bwd, mode, reverse):
    n, t_len, u = fwd.shape
    for k in range(cuda.grid(1), fwd.size, cuda.gridsize(1)):
        i = k // (t_len * u)
        t = (k // u) % t_len
        j = k % u
        tb = t_len - 1 - t if reverse else t
        a, b = fwd[i, t, j], bwd[i, tb, j]
        if mode == CONCAT:
            y[i, t, j] = a
            y[i, t, u + j] = b
        elif mode == SUM:
            y[i, t, j] = a + b
        elif mode == MUL:
            y[i, t, j] = a * b
        else:
            y[i, t, j] = (a + b) * float32(0.5)


@kernel(f"void({F32_3D}, {F32_3D}, {F32_3D}, {F32_3D}, {F32_3D}, int32, boolean)")
def _merge_backward_kernel(dfwd, dbwd, dy, fwd, bwd, mode, reverse):
    n, t_len, u = fwd.shape
    for k in range(cuda.grid(1), fwd.size, cuda.gridsize(1)):
        i = k // (t_len * u)
        t = (k // u) % t_len
        j = k % u
        tb = t_len - 1 - t if reverse else t
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
            dfwd[i, t, j] = dy[i, t, j] * float32(0.5)
            dbwd[i, tb, j] = dy[i, t, j] * float32(0.5)


# launchers


def step_grid(size):
    """(grid, block) for a grid-stride kernel over `size` elements (rnn_sequence computes
    it once per sequence and launches every step with it)."""
    return grid_1d(min(max(size, 1), _MAX_THREADS))


def _go(k, size, *args):
    grid, block = step_grid(size)
    launch(k, grid, block, *args)


def to_time_major(y, x, reverse, scale, use_scale):
    _go(_to_time_major_kernel, x.size, y, x, reverse, scale, use_scale)


def from_time_major(y, x, reverse, scale, use_scale):
    _go(_from_time_major_kernel, x.size, y, x, reverse, scale, use_scale)


def lstm_step_forward(h, c, gates, h_prev, c_prev, bias, use_bias, mask, use_mask, t,
                      act_code, ract_code):
    _go(_lstm_step_forward_kernel, h.size, h, c, gates, h_prev, c_prev, bias, use_bias, mask,
        use_mask, t, act_code, ract_code)


def lstm_step_backward(gates, dh, dc, c, c_prev, mask, use_mask, t, dy, t_out, act_code,
                       ract_code):
    _go(_lstm_step_backward_kernel, dh.size, gates, dh, dc, c, c_prev, mask, use_mask, t, dy,
        t_out, act_code, ract_code)


def gru_step_forward(h, gates, inner, h_prev, bias, use_bias, mask, use_mask, t, act_code,
                     ract_code):
    _go(_gru_step_forward_kernel, h.size, h, gates, inner, h_prev, bias, use_bias, mask,
        use_mask, t, act_code, ract_code)


def gru_step_backward(gates, inner, dh, h_prev, mask, use_mask, t, dy, t_out, act_code,
                      ract_code):
    _go(_gru_step_backward_kernel, dh.size, gates, inner, dh, h_prev, mask, use_mask, t, dy,
        t_out, act_code, ract_code)


def simple_step_forward(h, z, h_prev, bias, use_bias, mask, use_mask, t, act_code):
    _go(_simple_step_forward_kernel, h.size, h, z, h_prev, bias, use_bias, mask, use_mask, t,
        act_code)


def simple_step_backward(dz, dh, h, mask, use_mask, t, dy, t_out, act_code):
    _go(_simple_step_backward_kernel, dh.size, dz, dh, h, mask, use_mask, t, dy, t_out,
        act_code)


def merge_forward(y, fwd, bwd, mode, reverse):
    _go(_merge_forward_kernel, fwd.size, y, fwd, bwd, mode, reverse)


def merge_backward(dfwd, dbwd, dy, fwd, bwd, mode, reverse):
    _go(_merge_backward_kernel, fwd.size, dfwd, dbwd, dy, fwd, bwd, mode, reverse)
