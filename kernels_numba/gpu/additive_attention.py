"""CUDA kernels for kernels_numba.ops.additive_attention: one thread per query row (the
forward, the row deltas, dq and the dscale partials) or per key (dk, dv), grid-stride.

The row code is the CPU twin's (cpu/additive_attention.py), compiled here as device
functions with the device's helpers bound (the dropout factor is gpu/attention_tiles
.keep_factor, the CPU's keep): the same arithmetic in the same order on both devices.
Each thread owns its rows of the outputs and dscale is summed over the partial rows in
row order by one thread per feature: no atomics.
"""

from numba import float32

from kernels_numba._cuda import cuda, device_function, grid_1d, kernel, launch
from kernels_numba.cpu import additive_attention as _twin
from kernels_numba.gpu.attention_tiles import keep_factor
from kernels_numba.gpu.dropout import resolve_key, steps_args

_row_delta, _fwd_row, _bwd_row, _bwd_key = _twin.compile_family(device_function, keep_factor)
F1, F2, F3 = "float32[::1]", "float32[:, ::1]", "float32[:, :, ::1]"
DROP = "float32, float32, uint64, boolean, uint32[::1]"  # rate, keep_scale, key/seed, steps
_MAX_THREADS = 65536 * 256
# q k v scale use_scale vmask has_vm qmask has_qm causal
INPUTS = f"{F3}, {F3}, {F3}, {F1}, boolean, {F2}, boolean, {F2}, boolean, boolean"


@kernel(f"void({F3}, {F2}, {INPUTS}, {F3}, boolean, {DROP})")
def _forward_kernel(out, lse, q, k, v, scale, use_scale, vmask, has_vm, qmask, has_qm, causal,
                    probs, want_probs, rate, keep_scale, key, use_steps, steps):
    key = resolve_key(key, use_steps, steps)
    tq = q.shape[1]
    for t in range(cuda.grid(1), q.shape[0] * tq, cuda.gridsize(1)):
        _fwd_row(out, lse, q, k, v, scale, use_scale, vmask, has_vm, qmask, has_qm, causal,
                 probs, want_probs, rate > float32(0.0), key, rate, keep_scale, t // tq,
                 t % tq)


@kernel(f"void({F2}, {F3}, {F3}, {F3}, {F3}, boolean, int32)")
def _delta_kernel(ws, dout, out, probs, dprobs, has_dprobs, d):
    tq = out.shape[1]
    for t in range(cuda.grid(1), out.shape[0] * tq, cuda.gridsize(1)):
        ws[t, d] = _row_delta(dout, out, probs, dprobs, has_dprobs, t // tq, t % tq)


@kernel(f"void({F3}, boolean, {F2}, boolean, {F3}, {INPUTS}, {F3}, {F2}, {F3}, {F3}, boolean, "
        f"{DROP})")
def _row_kernel(dq, want_q, ws, want_s, dout, q, k, v, scale, use_scale, vmask, has_vm, qmask,
                has_qm, causal, out, lse, probs, dprobs, has_dprobs, rate, keep_scale, key,
                use_steps, steps):
    key = resolve_key(key, use_steps, steps)
    tq = q.shape[1]
    for t in range(cuda.grid(1), q.shape[0] * tq, cuda.gridsize(1)):
        _bwd_row(dq, want_q, ws, want_s, dout, q, k, v, scale, use_scale, vmask, has_vm,
                 qmask, has_qm, causal, out, lse, probs, dprobs, has_dprobs,
                 rate > float32(0.0), key, rate, keep_scale, t // tq, t % tq)


@kernel(f"void({F3}, boolean, {F3}, boolean, {F2}, {F3}, {INPUTS}, {F3}, {F2}, {F3}, {F3}, "
        f"boolean, {DROP})")
def _key_kernel(dk, want_k, dv, want_v, ws, dout, q, k, v, scale, use_scale, vmask, has_vm,
                qmask, has_qm, causal, out, lse, probs, dprobs, has_dprobs, rate, keep_scale,
                key, use_steps, steps):
    key = resolve_key(key, use_steps, steps)
    tk = k.shape[1]
    for t in range(cuda.grid(1), k.shape[0] * tk, cuda.gridsize(1)):
        _bwd_key(dk, want_k, dv, want_v, ws, dout, q, k, v, scale, use_scale, vmask, has_vm,
                 qmask, has_qm, causal, out, lse, probs, dprobs, has_dprobs,
                 rate > float32(0.0), key, rate, keep_scale, t // tk, t % tk)


@kernel(f"void({F1}, {F2}, int32)")
def _sum_rows_kernel(dscale, ws, rows):
    """dscale[d] = sum of the row partials in row order (the CPU twin's order)."""
    for dd in range(cuda.grid(1), dscale.size, cuda.gridsize(1)):
        acc = float32(0.0)
        for r in range(rows):
            acc += ws[r, dd]
        dscale[dd] = acc


# launchers

def _opt(a, like):
    return (a, True) if a is not None else (like, False)  # like: never indexed


def _drop_args(drop):
    if drop is None:
        return (float32(0.0), float32(1.0), *steps_args(0, None))
    rate, keep_scale, key, steps = drop
    return (float32(rate), float32(keep_scale), *steps_args(key, steps))


def _grid(n):
    return grid_1d(min(max(n, 1), _MAX_THREADS))


def _inputs(q, k, v, scale, value_mask, query_mask, causal, lse):
    return (q, k, v, *_opt(scale, lse[0]), *_opt(value_mask, lse), *_opt(query_mask, lse),
            bool(causal))


def additive_attention_forward(out, lse, q, k, v, scale, value_mask, query_mask, causal,
                               probs, drop):
    if lse.size == 0:
        return
    launch(_forward_kernel, *_grid(lse.size), out, lse,
           *_inputs(q, k, v, scale, value_mask, query_mask, causal, lse),
           *_opt(probs, out), *_drop_args(drop))


def additive_attention_backward(dq, dk, dv, dscale, dout, q, k, v, scale, value_mask,
                                query_mask, out, lse, workspace, causal, probs, dprobs, drop):
    rows, d = lse.size, q.shape[2]
    if rows == 0 and k.shape[0] * k.shape[1] == 0:
        return
    inputs = _inputs(q, k, v, scale, value_mask, query_mask, causal, lse)
    extra = (probs, dprobs, True) if dprobs is not None else (out, out, False)
    dargs = _drop_args(drop)
    if rows:
        launch(_delta_kernel, *_grid(rows), workspace, dout, out, *extra, d)
    if (dq is not None or dscale is not None) and rows:
        launch(_row_kernel, *_grid(rows), *_opt(dq, q), workspace, dscale is not None, dout,
               *inputs, out, lse, *extra, *dargs)
    if dk is not None or dv is not None:
        launch(_key_kernel, *_grid(k.shape[0] * k.shape[1]), *_opt(dk, k), *_opt(dv, v),
               workspace, dout, *inputs, out, lse, *extra, *dargs)
    if dscale is not None and dscale.size:
        launch(_sum_rows_kernel, *_grid(dscale.size), dscale, workspace, rows)
