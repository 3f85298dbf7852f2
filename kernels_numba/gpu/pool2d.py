"""CUDA kernels for kernels_numba.ops.pool2d. One thread per output element (grid-stride),
channels fastest so neighbouring threads touch neighbouring addresses.

Both backwards are gathers (no atomics: the same bits every run): each dx element
sums, in (oh, ow) order, over the windows that contain it - max-pool the dy of those
whose argmax is that element (one lookup when windows do not overlap), average-pool
dy / count. A NaN in a window wins it (argmax at the last NaN, as the CPU twin).
"""

from numba import float32

from kernels_numba._cuda import cuda, device_function, grid_1d, kernel, launch
from kernels_numba.ops.pool2d import pool_plan

F32_3D = "float32[:, :, ::1]"
F32_4D = "float32[:, :, :, ::1]"
I32_4D = "int32[:, :, :, ::1]"
GEOM = ", ".join(["int64"] * 6)  # ph, pw, sh, sw, pt, pl
MAX_THREADS = 65536 * 256


# kernels

@device_function
def _pooled_value(x, b, ih, iw, ch, bias, relu):
    # x, or (relu_bias given: a ReLU conv's linear output) relu(x + bias), as its
    # epilogue would have written it
    v = x[b, ih, iw, ch]
    if relu:
        v = v + bias[ch]
        v = float32(0.0) if v <= float32(0.0) else v  # NaN passes through
    return v


@kernel(f"void({F32_4D}, {I32_4D}, {F32_4D}, float32[::1], int64, {GEOM})")
def _maxpool_forward_kernel(y, argmax, x, bias, relu, ph, pw, sh, sw, pt, pl):
    h = x.shape[1]
    w = x.shape[2]
    c = x.shape[3]
    ho = y.shape[1]
    wo = y.shape[2]
    for idx in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        ch = idx % c
        p = idx // c
        ow = p % wo
        p = p // wo
        oh = p % ho
        b = p // ho
        h0 = max(oh * sh - pt, 0)
        h1 = min(oh * sh - pt + ph, h)
        w0 = max(ow * sw - pl, 0)
        w1 = min(ow * sw - pl + pw, w)
        # Padded cells count as -inf, so they never win: start from the first real cell
        # (every window holds one, for "same" padding too).
        best = _pooled_value(x, b, h0, w0, ch, bias, relu)
        arg = (h0 * w + w0) * c + ch
        for ih in range(h0, h1):
            for iw in range(w0, w1):
                v = _pooled_value(x, b, ih, iw, ch, bias, relu)
                if v > best or v != v:  # NaN wins; nothing beats a NaN best
                    best = v
                    arg = (ih * w + iw) * c + ch
        y[b, oh, ow, ch] = best
        argmax[b, oh, ow, ch] = arg


@kernel(f"void({F32_4D}, {F32_4D}, {I32_4D}, {GEOM})")
def _maxpool_backward_kernel(dx, dy, argmax, ph, pw, sh, sw, pt, pl):
    h = dx.shape[1]
    w = dx.shape[2]
    c = dx.shape[3]
    ho = dy.shape[1]
    wo = dy.shape[2]
    for idx in range(cuda.grid(1), dx.size, cuda.gridsize(1)):
        ch = idx % c
        p = idx // c
        iw = p % w
        p = p // w
        ih = p % h
        b = p // h
        k = (ih * w + iw) * c + ch  # this element's flat index in its sample
        lo = ih + pt - ph + 1  # windows o*s - pad .. o*s - pad + k - 1 containing (ih, iw)
        oh0 = 0 if lo <= 0 else (lo + sh - 1) // sh
        oh1 = min((ih + pt) // sh + 1, ho)
        lo = iw + pl - pw + 1
        ow0 = 0 if lo <= 0 else (lo + sw - 1) // sw
        ow1 = min((iw + pl) // sw + 1, wo)
        s = float32(0.0)
        for oh in range(oh0, oh1):
            for ow in range(ow0, ow1):
                if argmax[b, oh, ow, ch] == k:
                    s += dy[b, oh, ow, ch]
        dx[b, ih, iw, ch] = s


@kernel(f"void({F32_4D}, {F32_4D}, {GEOM})")
def _avgpool_forward_kernel(y, x, ph, pw, sh, sw, pt, pl):
    h = x.shape[1]
    w = x.shape[2]
    c = x.shape[3]
    ho = y.shape[1]
    wo = y.shape[2]
    for idx in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        ch = idx % c
        p = idx // c
        ow = p % wo
        p = p // wo
        oh = p % ho
        b = p // ho
        h0 = max(oh * sh - pt, 0)
        h1 = min(oh * sh - pt + ph, h)
        w0 = max(ow * sw - pl, 0)
        w1 = min(ow * sw - pl + pw, w)
        s = float32(0.0)
        for ih in range(h0, h1):
            for iw in range(w0, w1):
                s += x[b, ih, iw, ch]
        y[b, oh, ow, ch] = s / float32((h1 - h0) * (w1 - w0))  # in-bounds cells only


@kernel(f"void({F32_4D}, {F32_4D}, {GEOM})")
def _avgpool_backward_kernel(dx, dy, ph, pw, sh, sw, pt, pl):
    h = dx.shape[1]
    w = dx.shape[2]
    c = dx.shape[3]
    ho = dy.shape[1]
    wo = dy.shape[2]
    for idx in range(cuda.grid(1), dx.size, cuda.gridsize(1)):
        ch = idx % c
        p = idx // c
        iw = p % w
        p = p // w
        ih = p % h
        b = p // h
        # Output rows/cols whose window o*s - pad .. o*s - pad + k - 1 contains (ih, iw).
        lo = ih + pt - ph + 1
        oh0 = 0 if lo <= 0 else (lo + sh - 1) // sh
        oh1 = min((ih + pt) // sh + 1, ho)
        lo = iw + pl - pw + 1
        ow0 = 0 if lo <= 0 else (lo + sw - 1) // sw
        ow1 = min((iw + pl) // sw + 1, wo)
        s = float32(0.0)
        for oh in range(oh0, oh1):
            hc = min(oh * sh - pt + ph, h) - max(oh * sh - pt, 0)
            for ow in range(ow0, ow1):
                wc = min(ow * sw - pl + pw, w) - max(ow * sw - pl, 0)
                s += dy[b, oh, ow, ch] / float32(hc * wc)
        dx[b, ih, iw, ch] = s


@kernel(f"void(float32[:, ::1], {F32_3D}, float32)")
def _global_avgpool_forward_kernel(y, x, inv):
    hw = x.shape[1]
    c = x.shape[2]
    for idx in range(cuda.grid(1), y.size, cuda.gridsize(1)):
        b = idx // c
        ch = idx - b * c
        s = float32(0.0)
        for p in range(hw):
            s += x[b, p, ch]
        y[b, ch] = s * inv


@kernel(f"void({F32_3D}, float32[:, ::1], float32)")
def _global_avgpool_backward_kernel(dx, dy, inv):
    hw = dx.shape[1]
    c = dx.shape[2]
    for idx in range(cuda.grid(1), dx.size, cuda.gridsize(1)):
        ch = idx % c
        p = idx // c
        dx[p // hw, p % hw, ch] = dy[p // hw, ch] * inv


# launchers

def _launch(k, n, *args):
    grid, block = grid_1d(min(max(n, 1), MAX_THREADS))
    launch(k, grid, block, *args)


def maxpool2d_forward(y, argmax, x, *, pool_size, strides, padding="valid", relu_bias=None):
    ph, pw, sh, sw, _, _, pt, pl = pool_plan(x.shape, pool_size, strides, padding)
    if y.size == 0:
        return
    relu = relu_bias is not None
    bias = relu_bias if relu else y[0, 0, 0]  # (a plain pool's bias: never read)
    _launch(_maxpool_forward_kernel, y.size, y, argmax, x, bias, int(relu), ph, pw, sh, sw,
            pt, pl)


def maxpool2d_backward(dx, dy, argmax, *, pool_size, strides, padding="valid"):
    ph, pw, sh, sw, _, _, pt, pl = pool_plan(dx.shape, pool_size, strides, padding)
    _launch(_maxpool_backward_kernel, dx.size, dx, dy, argmax, ph, pw, sh, sw, pt, pl)


def avgpool2d_forward(y, x, *, pool_size, strides, padding="valid"):
    ph, pw, sh, sw, _, _, pt, pl = pool_plan(x.shape, pool_size, strides, padding)
    _launch(_avgpool_forward_kernel, y.size, y, x, ph, pw, sh, sw, pt, pl)


def avgpool2d_backward(dx, dy, *, pool_size, strides, padding="valid"):
    ph, pw, sh, sw, _, _, pt, pl = pool_plan(dx.shape, pool_size, strides, padding)
    _launch(_avgpool_backward_kernel, dx.size, dx, dy, ph, pw, sh, sw, pt, pl)


def _hw_view(a):
    n, h, w, c = a.shape
    return a.reshape(n, h * w, c), float32(1.0 / max(h * w, 1))


def global_avgpool2d_forward(y, x):
    x3, inv = _hw_view(x)
    _launch(_global_avgpool_forward_kernel, y.size, y, x3, inv)


def global_avgpool2d_backward(dx, dy):
    dx3, inv = _hw_view(dx)
    _launch(_global_avgpool_backward_kernel, dx.size, dx3, dy, inv)
