"""CUDA kernels for kernels_numba.ops.conv2d_pool: the backward of maxpool(relu(conv2d)),
from the pooled gradient straight to dx, dw and db.

All three are gathers, not scatters from the pooled elements (no float atomics: the
same bits every run), each thread summing in a fixed order into a float32 register:
- dx: one thread per dx element (n, ih, iw, c), channels fastest. For each tap (i, j)
  the conv output (oh, ow) that reads this cell, then the pool windows that contain it
  in (ohp, owp) order (one for disjoint pools), then f: each entry whose argmax is
  (oh, ow, f) adds g * w[i, j, c, f]. f innermost reads argmax, dp, p, w contiguously.
- dw: one thread per dw element (i, j, c, f), f fastest (argmax reads coalesce): over
  n and the pooled positions, each valid argmax adds g * x at its tap; += at the end.
- db: one thread per f, the same walk summing g.
g = dp if p > 0 else p - p (relu's gradient at the pooled value, NaN for a NaN p).
An argmax that is not a cell of its own window contributes nothing (_picked).
"""

from numba import float32

from kernels_numba._cuda import cuda, device_function, grid_1d, kernel, launch
from kernels_numba.ops.conv2d_pool import pooled_plan

F32_1D = "float32[::1]"
F32_4D = "float32[:, :, :, ::1]"
I32_4D = "int32[:, :, :, ::1]"
# kh, kw, sh, sw, pt, pl, ho, wo, dh, dw (the conv's), ph, pw, psh, psw, ppt, ppl (the pool's)
GEOM = ", ".join(["int64"] * 16)
MAX_THREADS = 65536 * 256  # grid-stride loops cover anything larger


@device_function
def _relu_grad(g, s):
    # s is the pooled value, NaN exactly where z was; s - s is +0 for finite s
    return g if s > float32(0.0) else s - s


@device_function
def _picked(a, f, nf, ohp, owp, ho, wo, ph, pw, psh, psw, ppt, ppl):
    """The conv output q = oh*wo + ow that argmax entry `a` of window (ohp, owp, f)
    selects, or -1 when `a` is not a cell of that window."""
    if a < 0 or a >= ho * wo * nf or a % nf != f:
        return -1
    q = a // nf
    oh = q // wo
    ow = q - oh * wo
    h0 = ohp * psh - ppt
    w0 = owp * psw - ppl
    if oh < h0 or oh >= h0 + ph or ow < w0 or ow >= w0 + pw:
        return -1
    return q


# kernels

@kernel(f"void({F32_4D}, {F32_4D}, {F32_4D}, {I32_4D}, {F32_4D}, {GEOM})")
def _dx_kernel(dx, dp, p, argmax, w, kh, kw, sh, sw, pt, pl, ho, wo, dh, dw,
               ph, pw, psh, psw, ppt, ppl):
    h = dx.shape[1]
    wd = dx.shape[2]
    c = dx.shape[3]
    nf = w.shape[3]
    hp = dp.shape[1]
    wp = dp.shape[2]
    for idx in range(cuda.grid(1), dx.size, cuda.gridsize(1)):
        ch = idx % c
        r = idx // c
        iw = r % wd
        r = r // wd
        ih = r % h
        b = r // h
        s = float32(0.0)
        for i in range(kh):
            t = ih + pt - i * dh  # oh * sh for the output row whose tap i reads ih
            if t < 0 or t % sh != 0 or t // sh >= ho:
                continue
            oh = t // sh
            lo = oh + ppt - ph + 1  # pool rows whose window contains oh
            ohp0 = 0 if lo <= 0 else (lo + psh - 1) // psh
            ohp1 = min((oh + ppt) // psh + 1, hp)
            for j in range(kw):
                u = iw + pl - j * dw
                if u < 0 or u % sw != 0 or u // sw >= wo:
                    continue
                ow = u // sw
                lo = ow + ppl - pw + 1
                owp0 = 0 if lo <= 0 else (lo + psw - 1) // psw
                owp1 = min((ow + ppl) // psw + 1, wp)
                base = (oh * wo + ow) * nf
                for ohp in range(ohp0, ohp1):
                    for owp in range(owp0, owp1):
                        for f in range(nf):
                            if argmax[b, ohp, owp, f] == base + f:
                                g = _relu_grad(dp[b, ohp, owp, f], p[b, ohp, owp, f])
                                s += g * w[i, j, ch, f]
        dx[b, ih, iw, ch] = s


@kernel(f"void({F32_4D}, {F32_4D}, {F32_4D}, {I32_4D}, {F32_4D}, {GEOM})")
def _dw_kernel(dwt, dp, p, argmax, x, kh, kw, sh, sw, pt, pl, ho, wo, dh, dw,
               ph, pw, psh, psw, ppt, ppl):
    n = x.shape[0]
    h = x.shape[1]
    wd = x.shape[2]
    c = dwt.shape[2]
    nf = dwt.shape[3]
    hp = dp.shape[1]
    wp = dp.shape[2]
    for idx in range(cuda.grid(1), dwt.size, cuda.gridsize(1)):
        f = idx % nf
        r = idx // nf
        ch = r % c
        r = r // c
        j = r % kw
        i = r // kw
        s = float32(0.0)
        for b in range(n):
            for ohp in range(hp):
                for owp in range(wp):
                    q = _picked(argmax[b, ohp, owp, f], f, nf, ohp, owp, ho, wo,
                                ph, pw, psh, psw, ppt, ppl)
                    if q < 0:
                        continue
                    oh = q // wo
                    ih = oh * sh - pt + i * dh
                    iw = (q - oh * wo) * sw - pl + j * dw
                    if ih >= 0 and ih < h and iw >= 0 and iw < wd:
                        g = _relu_grad(dp[b, ohp, owp, f], p[b, ohp, owp, f])
                        s += g * x[b, ih, iw, ch]
        dwt[i, j, ch, f] += s


@kernel(f"void({F32_1D}, {F32_4D}, {F32_4D}, {I32_4D}, {GEOM})")
def _db_kernel(db, dp, p, argmax, kh, kw, sh, sw, pt, pl, ho, wo, dh, dw,
               ph, pw, psh, psw, ppt, ppl):
    nf = db.shape[0]
    for f in range(cuda.grid(1), nf, cuda.gridsize(1)):
        s = float32(0.0)
        for b in range(dp.shape[0]):
            for ohp in range(dp.shape[1]):
                for owp in range(dp.shape[2]):
                    q = _picked(argmax[b, ohp, owp, f], f, nf, ohp, owp, ho, wo,
                                ph, pw, psh, psw, ppt, ppl)
                    if q >= 0:
                        s += _relu_grad(dp[b, ohp, owp, f], p[b, ohp, owp, f])
        db[f] += s


# launcher

def _launch(k, n, *args):
    grid, block = grid_1d(min(max(n, 1), MAX_THREADS))
    launch(k, grid, block, *args)


def conv2d_relu_maxpool_backward(dx, dw, db, dp, p, argmax, x, w, workspace, dz, *, strides,
                                 padding, dilation_rate, pool_size, pool_strides,
                                 pool_padding, columns_ready=False):
    # workspace, dz: the CPU twin's scratch (its masked dz and GEMM columns); unused here
    conv, pool = pooled_plan(x.shape, w.shape, strides, padding, dilation_rate, pool_size,
                             pool_strides, pool_padding)
    geom = conv + pool
    if dx is not None:
        _launch(_dx_kernel, dx.size, dx, dp, p, argmax, w, *geom)
    if dw is not None:
        _launch(_dw_kernel, dw.size, dw, dp, p, argmax, x, *geom)
    if db is not None:
        _launch(_db_kernel, db.size, db, dp, p, argmax, *geom)
