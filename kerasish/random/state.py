"""The global seed behind everything random: initializers, shuffling, dropout masks."""

import random as _pyrandom

import numpy as np

_generator = np.random.default_rng()


def set_seed(seed):
    """Seed Python's `random`, NumPy's global RNG and kerasish's generator."""
    global _generator
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)):
        raise TypeError(f"set_random_seed: expected an int seed; received {seed!r}")
    _pyrandom.seed(int(seed))
    np.random.seed(int(seed) % 2**32)
    _generator = np.random.default_rng(int(seed))


def generator():
    """The shared NumPy Generator (re-created by set_seed)."""
    return _generator


def new_seed():
    """A fresh 31-bit seed drawn from the shared generator (dropout, loaders)."""
    return int(_generator.integers(0, 2**31 - 1))
