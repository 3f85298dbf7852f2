"""Strided index spaces: the descriptors the broadcast, reduce and layout kernels walk.

A descriptor is an int64 array
    [nk, nr, nops, size[0..n), strides of operand 0[0..n), ..., of operand nops-1]
with n = nk + nr dimensions: the first nk are "kept" (one output element per index),
the last nr are "reduced" (walked by one thread/loop per kept index). Strides are in
elements, 0 where an operand is broadcast. Dimensions of size 1 are dropped and
neighbours that every operand walks contiguously are merged, so a bias add over
(N, T, F) is 2 dimensions and a same-shape add is 1. Built in Python, cached by shape.
"""

import numpy as np

MAX_DIMS = 8  # after merging; more is refused by name


def contiguous_strides(shape):
    strides, acc = [], 1
    for s in reversed(shape):
        strides.append(acc)
        acc *= int(s)
    return list(reversed(strides))


def broadcast_strides(shape, target):
    """Strides of a C-contiguous `shape` walked over `target` (right-aligned, 0 where
    broadcast)."""
    pad = len(target) - len(shape)
    full = [1] * pad + list(shape)
    own = [0] * pad + contiguous_strides(shape)
    return [0 if full[d] == 1 and target[d] != 1 else own[d] for d in range(len(target))]


def _merge(dims):
    """dims: list of (size, [stride per operand]) in order; drop 1s, merge neighbours."""
    out = []
    for size, strides in dims:
        if size == 1:
            continue
        if out:
            psize, pstrides = out[-1]
            if all(ps == s * size for ps, s in zip(pstrides, strides)):
                out[-1] = (psize * size, list(strides))
                continue
        out.append((size, list(strides)))
    return out


def describe(op, kept, reduced, nops):
    """The descriptor of kept and reduced dimension lists (see the module doc)."""
    kept, reduced = _merge(kept), _merge(reduced)
    n = len(kept) + len(reduced)
    if n > MAX_DIMS:
        raise ValueError(f"{op}: expected at most {MAX_DIMS} non-mergeable dimensions; "
                         f"received {n}")
    meta = np.zeros(3 + n * (1 + nops), np.int64)
    meta[0], meta[1], meta[2] = len(kept), len(reduced), nops
    for d, (size, strides) in enumerate(kept + reduced):
        meta[3 + d] = size
        for j, s in enumerate(strides):
            meta[3 + n * (1 + j) + d] = s
    return meta


def count(meta, first, num):
    return int(np.prod(meta[3 + first:3 + first + num], dtype=np.int64))
