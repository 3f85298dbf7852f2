"""CPU twins of kernels_numba.ops.optim, and the per-element update math of both devices.

The `*_step` functions are plain Python over float32 scalars: the CPU parts below
inline them and kernels_numba.gpu.optim compiles the same functions as CUDA device
functions, so both devices run one formula. Each loop reads the gradient through
`grad_at` (clipping or a device-side scale, see ops.optim; on the CPU its segment
search only in the segmented part, the other modes as `scaled_clipped`, the same
bits), hands the step that value `gi`, then zeroes g[i] when asked. Unused slots (velocity=None,
momentum_buf/average_grad when off) are replaced by w and never touched.
`decay` = weight_decay * lr: Keras 3's decoupled weight decay w -= w * decay, applied
before the update (its base optimizer does this for every optimizer).

Per-step values (lr, Adam's alpha, decay, ...) are read from the float32 `scalars`
buffer inside the compiled loop (layouts in ops.optim), never passed by value: a
recorded launch stays valid from step to step. Each update is one lazily compiled
part (kernels_numba.cpu._parallel): one compile, run serially for small tensors and
split over threads for large ones, bit-identical either way.
"""

import math
import weakref

import numba
import numpy as np
from llvmlite import ir
from numba.core import types

from kernels_numba.cpu._parallel import (
    PARALLEL_MIN_WORK,
    _pointer_intrinsic,
    bound_op,
    f32_1d,
    f32_bits,
    f32_pointer,
    f32_run,
    from_f32_bits,
    lazy_part,
    pack,
    part_call,
)

_ZERO = np.float32(0.0)
_ONE = np.float32(1.0)
# Optimizer slots store values below float32's smallest normal as 0 (flush to zero, as
# TensorFlow's CPU kernels run; NaN and Inf are kept). A slot that decays, Adam's m for a
# unit whose gradient stays 0 (0.9^n), reaches the denormals after ~700 steps, and x86
# arithmetic on them takes microcode assists: the reference CNN's Adam update went 0.06 ->
# 0.6 ms per step after 4 epochs. A weight moves by at most m * alpha / eps there, which
# its own rounding drops. One formula on both devices (these functions also build the
# CUDA kernels).
_TINY = np.float32(np.finfo(np.float32).tiny)

# grad_at modes (ops.optim picks one per call)
PLAIN, CLIP_VALUE, SCALE_ONE, SCALE_SEGMENTS = 0, 1, 2, 3
# Stand-ins for the scale/segment buffers when a call has none.
NO_SCALES = np.ones(1, np.float32)
NO_SEGMENTS = np.zeros((1, 2), np.int64)
# Below this many elements an update runs on the calling thread. Above it, split: the
# gradient was just written by GEMMs split over the same threads, so each thread updates
# the half its own cache holds; one thread would pull the other core's half across
# (2-core AVX-512 machine, alternating fit epochs, 2026-12-03: reference MLP's SGD on 203k
# floats, epoch 0.664 -> 0.547 s; reference CNN's Adam on 122k, 0.698 -> 0.658 s).
PARALLEL_MIN_SIZE = PARALLEL_MIN_WORK


# per-element math (shared with the CUDA kernels)


def grad_at(g, i, mode, clipvalue, scales, segments):
    """The gradient the update uses for element i.

    CLIP_VALUE: g clipped to [-clipvalue, clipvalue] (NaN stays NaN, as torch.clamp).
    SCALE_ONE: g * scales[0] (global_clipnorm, or one variable's clipnorm).
    SCALE_SEGMENTS: g * scales[k] for the segment k = [segments[k,0], segments[k,1])
    holding i (sorted, found by binary search); elements in no segment (alignment
    gaps between the variables of a block) read 0, so they stay 0 whatever the scale.
    """
    gi = g[i]
    if mode == CLIP_VALUE:
        if gi > clipvalue:
            gi = clipvalue
        elif gi < -clipvalue:
            gi = -clipvalue
    elif mode == SCALE_ONE:
        gi = gi * scales[0]
    elif mode == SCALE_SEGMENTS:
        if i < segments[0, 0]:
            return _ZERO
        lo = 0
        hi = segments.shape[0] - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if segments[mid, 0] <= i:
                lo = mid
            else:
                hi = mid - 1
        if i < segments[lo, 1]:
            gi = gi * scales[lo]
        else:
            gi = _ZERO
    return gi


def sgd_step(w, velocity, i, gi, lr, momentum, nesterov, use_velocity, decay):
    # One store to w, the decay and nesterov cases as selects: with conditional stores
    # the CPU loop did not vectorize (momentum SGD on 203k floats 0.23 -> 0.05 ms).
    wi = w[i]
    wi = wi - wi * decay if decay != _ZERO else wi
    if use_velocity:
        m = momentum * velocity[i] - lr * gi
        m = _ZERO if abs(m) < _TINY else m
        velocity[i] = m
        wi += (momentum * m - lr * gi) if nesterov else m
    else:
        wi -= lr * gi
    w[i] = wi


def adam_step(w, m, v, i, gi, alpha, one_minus_beta_1, one_minus_beta_2, epsilon, decay):
    wi = w[i]
    if decay != _ZERO:  # AdamW: decoupled decay before the Adam step
        wi -= wi * decay
    mi = m[i] + (gi - m[i]) * one_minus_beta_1
    vi = v[i] + (gi * gi - v[i]) * one_minus_beta_2
    mi = _ZERO if abs(mi) < _TINY else mi
    vi = _ZERO if vi < _TINY else vi  # (v >= 0)
    m[i] = mi
    v[i] = vi
    w[i] = wi - mi * alpha / (math.sqrt(vi) + epsilon)


def rmsprop_step(w, velocity, momentum_buf, average_grad, i, gi, lr, rho, momentum, epsilon,
                 centered, use_momentum, decay):
    if decay != _ZERO:
        w[i] -= w[i] * decay
    vi = rho * velocity[i] + (_ONE - rho) * gi * gi
    vi = _ZERO if vi < _TINY else vi
    velocity[i] = vi
    if centered:
        ai = rho * average_grad[i] + (_ONE - rho) * gi
        ai = _ZERO if abs(ai) < _TINY else ai
        average_grad[i] = ai
        denominator = vi - ai * ai + epsilon
    else:
        denominator = vi + epsilon
    increment = lr * gi / math.sqrt(denominator)  # Keras: epsilon inside the sqrt
    if use_momentum:
        mi = momentum * momentum_buf[i] + increment
        mi = _ZERO if abs(mi) < _TINY else mi
        momentum_buf[i] = mi
        w[i] -= mi
    else:
        w[i] -= increment


def adagrad_step(w, accumulator, i, gi, lr, epsilon, decay):
    if decay != _ZERO:
        w[i] -= w[i] * decay
    acc = accumulator[i] + gi * gi
    accumulator[i] = acc
    w[i] -= lr * gi / math.sqrt(acc + epsilon)


# inline="always": folded into the one part that uses them, never compiled on their own.
_grad_at = numba.njit(inline="always")(grad_at)
_sgd_step = numba.njit(inline="always")(sgd_step)
_adam_step = numba.njit(inline="always")(adam_step)
_rmsprop_step = numba.njit(inline="always")(rmsprop_step)
_adagrad_step = numba.njit(inline="always")(adagrad_step)
i64_pointer = _pointer_intrinsic(types.int64, ir.IntType(64))


# The argument vector of every update part: its arrays, then its integer entries.
# Arrays (address, size; segments flattened): w, g, scalars, scales, segments (0-9), then
# the op's slots from 10. Entries (from V = 10 + 2 * slots): zero_grad, grad mode,
# clipvalue (float32 bits), then the op's constants.


def head(w, g, scalars, grad, zero_grad):
    """(arrays, entries) common to every update."""
    mode, clipvalue, scales, segments = grad
    return ((w, g, scalars, NO_SCALES if scales is None else scales,
             NO_SEGMENTS if segments is None else segments),
            (bool(zero_grad), int(mode), clipvalue))


# Each update comes as two parts (`update_parts`): "segmented" (grad mode SCALE_SEGMENTS,
# whose segment search needs each element's index in w) loops over [i0, i1) of the whole
# arrays; "plain", for every other mode, loops from 0 over views of this block: from a
# run-time i0 LLVM keeps the negative-index checks and the loop does not vectorize (Adam
# on the reference CNN's 102400-float dense kernel: 0.44 -> 0.32 ms, same bits). A model
# compiles only the part its mode uses. `segmented` is a constant of the part's code (a
# closure cell holding a bool: numba's cache key hashes it, so it must stay picklable to
# the same bytes; a captured dispatcher would not): its dead branches are pruned before
# typing, so the plain part types no segment search and no mode switch (Adam's compile
# 0.72 -> 0.40 CPU s).


def update_parts(make):
    """(plain, segmented) lazy parts from make(segmented), named after make."""
    out = []
    for segmented in (False, True):
        fn = make(segmented)
        fn.__name__ = fn.__qualname__ = make.__name__[:-1] + ("_segmented" if segmented else "")
        out.append(lazy_part(fn))
    return tuple(out)


@numba.njit(inline="always")
def span(a, p, parts, segmented):
    """(offset, n, lo, hi) of block p: views of n floats from element `offset`, looped over
    [lo, hi) (see update_parts)."""
    i0, i1 = a[1] * p // parts, a[1] * (p + 1) // parts
    if segmented:
        return 0, a[1], i0, i1
    return i0, i1 - i0, 0, i1 - i0


# n floats of the array packed at a[k] from element `offset` on (an intrinsic: no IR
# inlining, no carray constructor to compile)
view = f32_run


@numba.njit(inline="always")
def grad_mode(a, v):
    """(zero_grad, clipping, clip, scale) from the head's entries at a[v:] (see head)."""
    mode = a[v + 1]
    scale = f32_pointer(a[6])[0] if mode == SCALE_ONE else _ONE
    return a[v] != 0, mode == CLIP_VALUE, from_f32_bits(a[v + 2]), scale


@numba.njit(inline="always")
def segment_grad(g, i, a):
    """grad_at in mode SCALE_SEGMENTS, its scales and segments from the head."""
    return _grad_at(g, i, SCALE_SEGMENTS, _ZERO, numba.carray(f32_pointer(a[6]), (a[7],)),
                    numba.carray(i64_pointer(a[8]), (a[9] // 2, 2)))


@numba.njit(inline="always")
def scaled_clipped(gi, scale, clipping, clip):
    """grad_at's PLAIN, CLIP_VALUE and SCALE_ONE modes as one read: g * scale (1 when off:
    x * 1 leaves every value's bits alone, NaN included), then clipped when clipping (a
    loop-invariant test: LLVM unswitches it)."""
    gi = gi * scale
    if clipping:
        gi = clip if gi > clip else (-clip if gi < -clip else gi)
    return gi


def _sgd_parts(segmented):
    def part(args, p, parts):
        a = numba.carray(args, 18)  # slot velocity; constants momentum, nesterov, use_velocity
        offset, n, lo, hi = span(a, p, parts, segmented)
        w, g, velocity = view(a, 0, offset, n), view(a, 2, offset, n), view(a, 10, offset, n)
        zero_grad, clipping, clip, scale = grad_mode(a, 12)
        momentum, nesterov, use_velocity = from_f32_bits(a[15]), a[16] != 0, a[17] != 0
        s = f32_1d(a, 4)
        lr, decay = s[0], s[1]
        for i in range(lo, hi):
            if segmented:
                gi = segment_grad(g, i, a)
            else:
                gi = scaled_clipped(g[i], scale, clipping, clip)
            _sgd_step(w, velocity, i, gi, lr, momentum, nesterov, use_velocity, decay)
            # a select, not a conditional store: with clipping and decay in the loop too,
            # LLVM no longer vectorized it (plain SGD on 203k floats 0.12 -> 0.04 ms)
            g[i] = _ZERO if zero_grad else g[i]
    return part


def _adam_parts(segmented):
    def part(args, p, parts):
        a = numba.carray(args, 20)  # slots m, v; constants 1-beta_1, 1-beta_2, epsilon
        offset, n, lo, hi = span(a, p, parts, segmented)
        w, g, m, v = (view(a, 0, offset, n), view(a, 2, offset, n), view(a, 10, offset, n),
                      view(a, 12, offset, n))
        zero_grad, clipping, clip, scale = grad_mode(a, 14)
        b1, b2, eps = from_f32_bits(a[17]), from_f32_bits(a[18]), from_f32_bits(a[19])
        s = f32_1d(a, 4)
        alpha, decay = s[0], s[1]
        for i in range(lo, hi):
            if segmented:
                gi = segment_grad(g, i, a)
            else:
                gi = scaled_clipped(g[i], scale, clipping, clip)
            _adam_step(w, m, v, i, gi, alpha, b1, b2, eps, decay)
            if zero_grad:
                g[i] = _ZERO
    return part


def _rmsprop_parts(segmented):
    def part(args, p, parts):
        # slots velocity, momentum_buf, average_grad; constants rho, momentum, epsilon,
        # centered, use_momentum
        a = numba.carray(args, 24)
        offset, n, lo, hi = span(a, p, parts, segmented)
        w, g = view(a, 0, offset, n), view(a, 2, offset, n)
        velocity, momentum_buf, average_grad = (view(a, 10, offset, n), view(a, 12, offset, n),
                                                view(a, 14, offset, n))
        zero_grad, clipping, clip, scale = grad_mode(a, 16)
        rho, momentum, eps = from_f32_bits(a[19]), from_f32_bits(a[20]), from_f32_bits(a[21])
        centered, use_momentum = a[22] != 0, a[23] != 0
        s = f32_1d(a, 4)
        lr, decay = s[0], s[1]
        for i in range(lo, hi):
            if segmented:
                gi = segment_grad(g, i, a)
            else:
                gi = scaled_clipped(g[i], scale, clipping, clip)
            _rmsprop_step(w, velocity, momentum_buf, average_grad, i, gi, lr, rho, momentum,
                          eps, centered, use_momentum, decay)
            if zero_grad:
                g[i] = _ZERO
    return part


def _adagrad_parts(segmented):
    def part(args, p, parts):
        a = numba.carray(args, 16)  # slot accumulator; constant epsilon
        offset, n, lo, hi = span(a, p, parts, segmented)
        w, g, accumulator = view(a, 0, offset, n), view(a, 2, offset, n), view(a, 10, offset, n)
        zero_grad, clipping, clip, scale = grad_mode(a, 12)
        eps = from_f32_bits(a[15])
        s = f32_1d(a, 4)
        lr, decay = s[0], s[1]
        for i in range(lo, hi):
            if segmented:
                gi = segment_grad(g, i, a)
            else:
                gi = scaled_clipped(g[i], scale, clipping, clip)
            _adagrad_step(w, accumulator, i, gi, lr, eps, decay)
            if zero_grad:
                g[i] = _ZERO
    return part


_sgd_part = update_parts(_sgd_parts)
_adam_part = update_parts(_adam_parts)
_rmsprop_part = update_parts(_rmsprop_parts)
_adagrad_part = update_parts(_adagrad_parts)


def flat(a):
    return a.reshape(a.size)


# (part, id(w), entries) -> (weak references to the arrays, entries, packed vector, its
# address). A training loop calls each update with the same buffers every step: packing
# (an address lookup per array, ~5 us each) is done once, not per call. A hit needs
# every array to be the very same live object, so the packed addresses are valid.
_packed = {}
_PACKED_MAX = 512


def update_call(part, head_parts, slots, constants):
    """`part` over w (the first array) with the head's arrays and entries, then the op's
    slots and constants (floats become float32 bits, others ints), as a Bound call: one
    block, or split across threads when large."""
    (arrays, entries) = head_parts
    if isinstance(part, tuple):  # (plain, segmented): see update_parts
        part = part[1] if entries[1] == SCALE_SEGMENTS else part[0]
    arrays, entries = arrays + tuple(slots), entries + tuple(constants)
    key = (part, id(arrays[0]), entries)
    hit = _packed.get(key)
    if hit is None or not all(ref() is a for ref, a in zip(hit[0], arrays)):
        # float entries travel as float32 bits (see _parallel)
        args = pack(*[flat(a) for a in arrays],
                    *[f32_bits(e) if isinstance(e, (float, np.floating)) else int(e)
                      for e in entries])
        if len(_packed) >= _PACKED_MAX:
            _packed.clear()
        hit = _packed[key] = ([weakref.ref(a) for a in arrays], entries, args,
                              args.ctypes.data)
    threads = numba.get_num_threads()
    return part_call(part, hit[2], threads if arrays[0].size >= PARALLEL_MIN_SIZE and
                     threads > 1 else 1, arrays)


@bound_op
def sgd_update(w, g, velocity, *, scalars, momentum, nesterov, zero_grad, grad):
    use_velocity = velocity is not None
    return update_call(_sgd_part, head(w, g, scalars, grad, zero_grad),
                       (velocity if use_velocity else w,),
                       (momentum, bool(nesterov), use_velocity))


@bound_op
def adam_update(w, g, m, v, *, scalars, one_minus_beta_1, one_minus_beta_2, epsilon, zero_grad,
                grad):
    return update_call(_adam_part, head(w, g, scalars, grad, zero_grad), (m, v),
                       (one_minus_beta_1, one_minus_beta_2, epsilon))


@bound_op
def rmsprop_update(w, g, velocity, momentum_buf, average_grad, *, scalars, rho, momentum,
                   epsilon, centered, zero_grad, grad):
    use_momentum = momentum_buf is not None
    return update_call(_rmsprop_part, head(w, g, scalars, grad, zero_grad),
                       (velocity, momentum_buf if use_momentum else w,
                        average_grad if centered else w),
                       (rho, momentum, epsilon, bool(centered), use_momentum))


@bound_op
def adagrad_update(w, g, accumulator, *, scalars, epsilon, zero_grad, grad):
    return update_call(_adagrad_part, head(w, g, scalars, grad, zero_grad), (accumulator,),
                       (epsilon,))
