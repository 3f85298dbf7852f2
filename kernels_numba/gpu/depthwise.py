"""CUDA kernels for kernels_numba.ops.depthwise.

Forward and backward-data: one thread per output element (grid-stride), a gather.
Backward-filter: one block per weight; its threads stride over the N*Ho*Wo positions,
then a shared-memory tree reduction (fixed order) adds the partials: deterministic,
no atomics. A missing bias is a flag plus a dummy buffer the kernel never indexes.
"""

from numba import float32

from kernels_numba._cuda import cuda, grid_1d, kernel, launch

F32_1D = "float32[::1]"
F32_4D = "float32[:, :, :, ::1]"
GEOM = ", ".join(["int64"] * 8)  # kh, kw, sh, sw, pt, pl, dh, dw
_MAX_THREADS = 65536 * 256
_REDUCE_THREADS = 64  # threads per weight in backward-filter (a power of two)
_MAX_BLOCKS = 65535


# kernels

@kernel(f"void({F32_4D}, {F32_4D}, {F32_4D}, {F32_1D}, int32, {GEOM})")
def _forward_kernel(y, x, w, b, has_bias, kh, kw, sh, sw, pt, pl, dh, dw):
    h = x.shape[1]
    wd = x.shape[2]
    ho = y.shape[1]
    wo = y.shape[2]
    co = y.shape[3]
    dm = w.shape[3]
    for idx in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        o = idx % co
        p = idx // co
        ow = p % wo
        p = p // wo
        oh = p % ho
        bb = p // ho
        ch = o // dm
        m = o - ch * dm
        acc = b[o] if has_bias else float32(0.0)
        for i in range(kh):
            ih = oh * sh - pt + i * dh
            if ih >= 0 and ih < h:
                for j in range(kw):
                    iw = ow * sw - pl + j * dw
                    if iw >= 0 and iw < wd:
                        acc += x[bb, ih, iw, ch] * w[i, j, ch, m]
        y[bb, oh, ow, o] = acc


@kernel(f"void({F32_4D}, {F32_4D}, {F32_4D}, {GEOM})")
def _backward_data_kernel(dx, dy, w, kh, kw, sh, sw, pt, pl, dh, dw):
    h = dx.shape[1]
    wd = dx.shape[2]
    c = dx.shape[3]
    ho = dy.shape[1]
    wo = dy.shape[2]
    dm = w.shape[3]
    for idx in range(cuda.grid(1), dx.size, cuda.gridsize(1)):
        ch = idx % c
        p = idx // c
        iw = p % wd
        p = p // wd
        ih = p % h
        bb = p // h
        acc = float32(0.0)
        for i in range(kh):
            t = ih + pt - i * dh
            if t >= 0 and t % sh == 0 and t // sh < ho:
                for j in range(kw):
                    u = iw + pl - j * dw
                    if u >= 0 and u % sw == 0 and u // sw < wo:
                        for m in range(dm):
                            acc += dy[bb, t // sh, u // sw, ch * dm + m] * w[i, j, ch, m]
        dx[bb, ih, iw, ch] = acc


@kernel(f"void({F32_4D}, {F32_4D}, {F32_4D}, {GEOM})")
def _backward_filter_kernel(dwt, dy, x, kh, kw, sh, sw, pt, pl, dh, dw):
    part = cuda.shared.array(_REDUCE_THREADS, float32)
    tid = cuda.threadIdx.x
    h = x.shape[1]
    wd = x.shape[2]
    c = x.shape[3]
    ho = dy.shape[1]
    wo = dy.shape[2]
    dm = dwt.shape[3]
    positions = x.shape[0] * ho * wo
    for e in range(cuda.blockIdx.x, dwt.size, cuda.gridDim.x):
        m = e % dm
        q = e // dm
        ch = q % c
        q = q // c
        j = q % kw
        i = q // kw
        acc = float32(0.0)
        for pos in range(tid, positions, _REDUCE_THREADS):
            ow = pos % wo
            r = pos // wo
            oh = r % ho
            bb = r // ho
            ih = oh * sh - pt + i * dh
            iw = ow * sw - pl + j * dw
            if ih >= 0 and ih < h and iw >= 0 and iw < wd:
                acc += dy[bb, oh, ow, ch * dm + m] * x[bb, ih, iw, ch]
        part[tid] = acc
        cuda.syncthreads()
        s = _REDUCE_THREADS // 2
        while s > 0:
            if tid < s:
                part[tid] += part[tid + s]
            cuda.syncthreads()
            s //= 2
        if tid == 0:
            dwt[i, j, ch, m] += part[0]
        cuda.syncthreads()  # part is rewritten for the next weight


# launchers

def _grid(n):
    return grid_1d(min(max(n, 1), _MAX_THREADS))


def depthwise_conv2d_forward(y, x, w, b, *geom):
    grid, block = _grid(y.size)
    bias = w.reshape(w.size) if b is None else b
    launch(_forward_kernel, grid, block, y, x, w, bias, int(b is not None), *geom)


def depthwise_conv2d_backward_data(dx, dy, w, *geom):
    grid, block = _grid(dx.size)
    launch(_backward_data_kernel, grid, block, dx, dy, w, *geom)


def depthwise_conv2d_backward_filter(dwt, dy, x, *geom):
    blocks = max(1, min(dwt.size, _MAX_BLOCKS))
    launch(_backward_filter_kernel, blocks, _REDUCE_THREADS, dwt, dy, x, *geom)
