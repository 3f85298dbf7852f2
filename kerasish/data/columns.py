"""Columns: several arrays with one sample axis, batched together (multi-input models).

A DataLoader over Columns yields a list of arrays per batch, one per column, gathered
with the same indices: `fit(x=[x1, x2], y=[y1, y2])` shuffles all of them alike.
"""

import numpy as np


class Columns:
    def __init__(self, arrays):
        self.arrays = [np.asarray(a) for a in arrays]
        lengths = {len(a) for a in self.arrays}
        if len(lengths) != 1:
            raise ValueError(f"Columns: every array needs the same number of samples; "
                             f"received {[len(a) for a in self.arrays]}")

    def __len__(self):
        return len(self.arrays[0])

    def __getitem__(self, index):
        return [a[index] for a in self.arrays]

    def take_rows(self, idx, out=None):
        """The rows `idx` of every column (what the DataLoader's worker gathers), into
        `out` (one array per column, of its dtype and shape) when given."""
        if out is None:
            return [np.take(a, idx, axis=0) for a in self.arrays]
        for a, o in zip(self.arrays, out):  # "clip": "raise" would gather to a copy first
            np.take(a, idx, axis=0, out=o, mode="clip")
        return out
