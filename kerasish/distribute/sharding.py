"""Each rank's share of every global batch, cut from one epoch order shared by all ranks.

`fit(batch_size=B)` under a strategy of N ranks means the global batch B: rank r trains
on the contiguous slice `[r * B/N, (r + 1) * B/N)` of each global batch of the
single-process epoch order, so the union of the shards over the ranks is exactly the
epoch one process would see. Every rank draws the permutation from the same generator
state (rank 0's, broadcast at the start of fit), so nothing but indices is exchanged.

The last, partial global batch (n < B rows) is split as evenly as `np.array_split`
does (the first n % N ranks get one row more); the gradient all-reduce weights each
rank by its rows, so that step too equals the single-process step. A last batch with
fewer rows than ranks would leave a rank with nothing to run: it is dropped (every rank
drops it) with a warning.
"""

import warnings

import numpy as np

from kerasish.data.loader import DataLoader

__all__ = ["ShardedLoader", "shard_loader", "per_rank_batch_size"]


def per_rank_batch_size(global_batch, size, what="fit"):
    """B / N, or a ValueError naming both when N does not divide B."""
    if global_batch % size:
        raise ValueError(
            f"{what}: under MPIStrategy, batch_size is the global batch, split evenly over "
            f"the {size} ranks; {global_batch} is not a multiple of {size}. Use a "
            f"batch_size that {size} divides (e.g. {max(size, global_batch - global_batch % size)} "
            f"or {global_batch + size - global_batch % size})")
    return global_batch // size


def slice_bounds(n, rank, size):
    """[lo, hi) of rank's contiguous part of a batch of n rows (np.array_split sizes)."""
    q, rem = divmod(n, size)
    lo = rank * q + min(rank, rem)
    return lo, lo + q + (1 if rank < rem else 0)


class ShardedLoader(DataLoader):
    """A DataLoader that yields rank `rank`'s slice of each global batch of `loader`.

    It shares the global loader's data, transform, prefetch and shuffle generator (so
    `get_state`/`set_state`, and BackupAndRestore with them, keep the single-process
    format); `batch_size` is the per-rank batch, `global_batch_size` the global one and
    `len()` the number of global batches (steps per epoch, the same on every rank).
    """

    def __init__(self, loader, rank, size):
        if not isinstance(loader, DataLoader):
            raise TypeError(f"ShardedLoader: expected a kerasish DataLoader; received "
                            f"{type(loader).__name__}")
        self.__dict__.update(loader.__dict__)  # same arrays and the SAME generator object
        self.global_batch_size = loader.batch_size
        self.batch_size = per_rank_batch_size(loader.batch_size, size)
        self.rank, self.size = int(rank), int(size)
        self._warned = False

    def _global_batches(self):
        if self.drop_remainder:
            return self.num_samples // self.global_batch_size
        return -(-self.num_samples // self.global_batch_size)

    def _last_too_small(self):
        last = self.num_samples - (self._global_batches() - 1) * self.global_batch_size
        return last < self.size

    def __len__(self):
        return self._global_batches() - (1 if self._last_too_small() else 0)

    def __repr__(self):
        return (f"ShardedLoader(rank={self.rank}/{self.size}, num_samples={self.num_samples},"
                f" global_batch_size={self.global_batch_size}, batch_size={self.batch_size},"
                f" shuffle={self.shuffle})")

    def batch_indices(self):
        """This rank's index arrays for the next epoch (advances the shared generator
        exactly as the single-process loader does: one permutation per epoch)."""
        n, bs = self.num_samples, self.global_batch_size
        order = self._rng.permutation(n) if self.shuffle else np.arange(n)
        out = []
        for start in range(0, self._global_batches() * bs, bs):
            batch = order[start:start + bs]
            if len(batch) < self.size:
                if not self._warned and self.rank == 0:
                    warnings.warn(
                        f"MPIStrategy: the last batch of each epoch has {len(batch)} "
                        f"samples, fewer than the {self.size} ranks; it is skipped (the "
                        f"epoch trains on {n - len(batch)} of {n} samples)", RuntimeWarning,
                        stacklevel=2)
                self._warned = True
                continue
            lo, hi = slice_bounds(len(batch), self.rank, self.size)
            out.append(batch[lo:hi])
        return out


def shard_loader(loader, rank, size, what="fit"):
    """fit's loader for this rank: a ShardedLoader for a DataLoader (arrays become
    one), else a TypeError (a generator or Sequence cannot be cut consistently)."""
    if isinstance(loader, ShardedLoader):
        raise TypeError(f"{what}: this loader is already one rank's shard")
    if not isinstance(loader, DataLoader):
        raise TypeError(
            f"{what}: MPIStrategy shards NumPy arrays or a kerasish DataLoader over the "
            f"ranks; received {type(loader).__name__}. Pass arrays or a DataLoader (a "
            f"generator or Sequence cannot be split the same way on every rank)")
    return ShardedLoader(loader, rank, size)
