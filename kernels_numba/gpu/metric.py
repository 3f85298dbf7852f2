"""CUDA kernels for kernels_numba.ops.metric.

confusion_update: one block per threshold (grid-strided), each thread sums its strided
share of the elements, then four fixed-order block sums; thread 0 adds the totals to
that threshold's accumulator slots, which no other block touches (no atomics).
top-k: one thread per row, the math of kernels_numba.cpu.metric.
"""

from numba import float32, int32

from kernels_numba._cuda import cuda, device_function, grid_1d, kernel, launch
from kernels_numba.cpu import metric as _math
from kernels_numba.gpu import _blocks
from kernels_numba.gpu.reduction import BLOCK, block_sum

F32_1D = "float32[::1]"
F32_2D = "float32[:, ::1]"
I32_1D = "int32[::1]"
ROW_BLOCK = _blocks.size("ROW_BLOCK")

_top_k_row = device_function(_math.top_k_row, inline="always")
_argmax_row = device_function(_math.argmax_row, inline="always")
_prepare = device_function(_math.prepare, inline="always")


@kernel(f"void({F32_1D}, {F32_1D}, {F32_1D}, {F32_1D}, {F32_1D}, {F32_1D}, {F32_1D}, "
        f"{F32_1D}, int32, int32)")
def _confusion_kernel(tp, fp, tn, fn, preds, targets, thresholds, weights, clip, sigmoid):
    buf = cuda.shared.array(BLOCK, float32)
    zero = float32(0.0)
    one = float32(1.0)
    weighted = weights.size > 0
    for i in range(cuda.blockIdx.x, thresholds.size, cuda.gridDim.x):
        thr = thresholds[i]
        a, b, c, d = zero, zero, zero, zero
        for e in range(cuda.threadIdx.x, preds.size, cuda.blockDim.x):
            p = _prepare(preds[e], clip, sigmoid)
            w = weights[e] if weighted else one
            pos = targets[e] != zero
            if p > thr:
                if pos:
                    a += w
                else:
                    b += w
            elif pos:
                d += w
            else:
                c += w
        a = block_sum(buf, a)
        b = block_sum(buf, b)
        c = block_sum(buf, c)
        d = block_sum(buf, d)
        if cuda.threadIdx.x == 0:
            tp[i] += a
            fp[i] += b
            tn[i] += c
            fn[i] += d


@kernel(f"void({F32_1D}, {F32_2D}, {I32_1D}, int32)")
def _top_k_kernel(out, probs, labels, k):
    for n in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[n] = _top_k_row(probs, labels[n], k, n)


@kernel(f"void({F32_1D}, {F32_2D}, {F32_2D}, int32)")
def _top_k_onehot_kernel(out, probs, targets, k):
    for n in range(cuda.grid(1), out.size, cuda.gridsize(1)):
        out[n] = _top_k_row(probs, _argmax_row(targets, n), k, n)


def confusion_update(tp, fp, tn, fn, preds, targets, thresholds, weights, clip, sigmoid):
    size = preds.size
    block = min(BLOCK, max(32, size))
    launch(_confusion_kernel, min(thresholds.size, 65535), block, tp, fp, tn, fn,
           preds.reshape(size), targets.reshape(size), thresholds, weights, int32(clip),
           int32(sigmoid))


def top_k_matches(out, probs, labels, k):
    grid, block = grid_1d(out.size, ROW_BLOCK)
    launch(_top_k_kernel, grid, block, out, probs, labels, int32(k))


def top_k_matches_onehot(out, probs, targets, k):
    grid, block = grid_1d(out.size, ROW_BLOCK)
    launch(_top_k_onehot_kernel, grid, block, out, probs, targets, int32(k))
