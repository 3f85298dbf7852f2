"""CPU twin of kernels_numba.ops.dropout, and the counter-based RNG both devices share.

The keep decision for element i is a pure function of (seed, step, i): a murmur3
finalizer (fmix32) applied to the key and the flat index, in 32-bit arithmetic
held in uint64 and masked after every multiply (numba widens uint32 math to 64
bits anyway, and the simulator's NumPy scalars must not overflow). The top 24 bits
become a float32 uniform in [0, 1). kernels_numba.gpu.dropout compiles the same
`hash_uniform` as a device function, so masks match across devices and launch shapes.

The key is `step_key(seed, step)`: computed on the host for a by-value step, or inside
the kernel from a uint32 (2,) `steps` buffer (the step's low and high words) when the
caller keeps the step on the device, so a recorded launch needs no new arguments per
step. Both give the same key, hence the same masks.
"""

import numba
import numpy as np
from llvmlite import ir
from numba.core import types

from kernels_numba.cpu._parallel import (
    _pointer_intrinsic,
    f32_1d,
    f32_bits,
    from_f32_bits,
    lazy_part,
    pack,
    run,
)

_M32 = np.uint64(0xFFFFFFFF)
_C1 = np.uint64(0x85EBCA6B)
_C2 = np.uint64(0xC2B2AE35)
_GOLDEN = np.uint64(0x9E3779B9)
_S8 = np.uint64(8)
_S13 = np.uint64(13)
_S16 = np.uint64(16)
_S32 = np.uint64(32)
_INV_2_24 = np.float32(1.0 / (1 << 24))
_ZERO = np.float32(0.0)


# RNG (shared with the CUDA kernels)


def fmix32(h):
    """murmur3's 32-bit finalizer: a bijection on [0, 2**32) with full avalanche."""
    h ^= h >> _S16
    h = (h * _C1) & _M32
    h ^= h >> _S13
    h = (h * _C2) & _M32
    h ^= h >> _S16
    return h


def hash_uniform(key, i):
    """float32 uniform in [0, 1) for flat index i under `key` (a uint64 below 2**32).

    Two fmix32 rounds written out: device code cannot call a plain Python helper.
    """
    i = numba.uint64(i)
    h = (i & _M32) ^ key
    h ^= h >> _S16
    h = (h * _C1) & _M32
    h ^= h >> _S13
    h = (h * _C2) & _M32
    h ^= h >> _S16
    h = (h + (i >> _S32) * _GOLDEN + _GOLDEN) & _M32  # second round folds in the high index bits
    h ^= h >> _S16
    h = (h * _C1) & _M32
    h ^= h >> _S13
    h = (h * _C2) & _M32
    h ^= h >> _S16
    return numba.float32(h >> _S8) * _INV_2_24


def step_key(seed, lo, hi):
    """The key of (seed, step): three fmix32 rounds folding in the seed, then the step's
    low and high 32-bit words (all uint64 below 2**32). Shared with the CUDA kernels."""
    k = seed ^ _GOLDEN
    for r in range(3):
        if r == 1:
            k = (k + lo) & _M32
        elif r == 2:
            k = k ^ hi
        k ^= k >> _S16
        k = (k * _C1) & _M32
        k ^= k >> _S13
        k = (k * _C2) & _M32
        k ^= k >> _S16
    return k


def dropout_key(seed, step):
    """Per-(seed, step) key, computed on the host once per launch (Python ints, any size)."""
    step = int(step)
    return np.uint64(step_key(np.uint64(int(seed) & 0xFFFFFFFF), np.uint64(step & 0xFFFFFFFF),
                              np.uint64((step >> 32) & 0xFFFFFFFF)))


def step_words(out, step):
    """Write step (an int >= 0) as the uint32 words (low, high) into out[:2]."""
    step = int(step)
    out[0] = step & 0xFFFFFFFF
    out[1] = (step >> 32) & 0xFFFFFFFF


_hash_uniform = numba.njit(cache=True)(hash_uniform)
_step_key = numba.njit(inline="always")(step_key)
_u32_pointer = _pointer_intrinsic(types.uint32, ir.IntType(32))
NO_STEPS = np.zeros(2, np.uint32)  # stands in for the steps buffer of a by-value call


@numba.njit(inline="always")
def key_of(a, k):
    """The key packed at a[k] (by value), or, when a[k+1] != 0, step_key(seed=a[k], the
    uint32 (low, high) steps buffer at a[k+2])."""
    if a[k + 1] == 0:
        return numba.uint64(a[k])
    steps = numba.carray(_u32_pointer(a[k + 2]), (2,))
    return _step_key(numba.uint64(a[k]), numba.uint64(steps[0]), numba.uint64(steps[1]))


def key_entries(key, steps):
    """pack() entries for key_of: (key or seed, use_steps, steps buffer)."""
    return int(key), int(steps is not None), NO_STEPS if steps is None else steps


@numba.njit(inline="always")
def _dropout_forward(y, mask, x, rate, keep_scale, key, i0, i1):
    for i in range(i0, i1):
        m = keep_scale if _hash_uniform(key, i) >= rate else _ZERO
        mask[i] = m
        y[i] = x[i] * m


@lazy_part
def _dropout_forward_part(args, p, parts):
    # y, mask, x (1-D), rate, keep_scale (float32 bits), key entries (key_of)
    a = numba.carray(args, 12)
    y, mask, x = f32_1d(a, 0), f32_1d(a, 2), f32_1d(a, 4)
    n = x.size
    _dropout_forward(y, mask, x, from_f32_bits(a[6]), from_f32_bits(a[7]), key_of(a, 8),
                     n * p // parts, n * (p + 1) // parts)


def _flat(a):
    return a.reshape(a.size)


def dropout_forward(y, mask, x, rate, keep_scale, key, steps=None):
    """key: the key (steps None), or the seed when `steps` is the uint32 (2,) buffer."""
    args = pack(_flat(y), _flat(mask), _flat(x), f32_bits(rate), f32_bits(keep_scale),
                *key_entries(key, steps))  # key < 2**32: fits an int64
    run(_dropout_forward_part, args, x.size)


def dropout_backward(dx, dy, mask):
    np.multiply(dy, mask, out=dx)
