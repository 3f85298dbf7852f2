"""The memory plan of one (graph, batch size, mode): which buffer each tensor lives in.

Time runs over one step: forward call k at time k, the losses at K, backward of call
k at 2K - k. Every activation, activation gradient and accumulation temporary gets
an interval of times it must survive; intervals that never overlap share a block
(greedy best fit, as tinygrad's memory planner does), so activations that backward
no longer needs hold the gradients that come after them. Zero-copy layers (Flatten,
Reshape) put their output in their input's storage; their input gradient shares the
output gradient's storage when nothing else writes it.
"""

import numpy as np

FOREVER = 1 << 60


class Storage:
    """Tensors (activations or gradients) that share one buffer: its size and interval."""

    __slots__ = ("size", "start", "end", "block", "slot_input", "external")

    def __init__(self, size, start, end):
        self.size, self.start, self.end = size, start, end
        self.block = None
        self.slot_input = None  # a model input's index: lives in the input slots, not a block
        self.external = None  # a buffer owned elsewhere (a weight, a constant), not a block

    def cover(self, size, start, end):
        self.size = max(self.size, size)
        self.start, self.end = min(self.start, start), max(self.end, end)


def batched(shape):
    """A tensor with a batch axis (first dim None); the others have a fixed size."""
    return bool(shape) and shape[0] is None


def elements(shape, batch):
    if batched(shape):
        return batch * int(np.prod(shape[1:], dtype=np.int64))
    return int(np.prod(shape, dtype=np.int64))


class Arena:
    """Blocks of float32 reused across storages whose intervals do not overlap."""

    def __init__(self):
        self.sizes, self.busy_until = [], []

    def place(self, storage):
        best = None
        for k, (size, until) in enumerate(zip(self.sizes, self.busy_until)):
            if until >= storage.start:
                continue
            fits = size >= storage.size
            key = (not fits, size if fits else -size)  # smallest that fits, else largest
            if best is None or key < best[0]:
                best = (key, k)
        if best is None:
            self.sizes.append(storage.size)
            self.busy_until.append(storage.end)
            storage.block = len(self.sizes) - 1
            return
        k = best[1]
        self.sizes[k] = max(self.sizes[k], storage.size)
        self.busy_until[k] = storage.end
        storage.block = k


def plan_storage(storages):
    """Assign blocks to every storage not in an input slot; returns the block sizes."""
    arena = Arena()
    for st in sorted((s for s in storages if s.slot_input is None and s.external is None),
                     key=lambda s: (s.start, -s.size)):
        arena.place(st)
    return arena.sizes
