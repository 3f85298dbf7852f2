"""kerasish.random: Keras 3's `keras.random` (normal, uniform, truncated_normal, dropout,
categorical, randint, shuffle, SeedGenerator) and the one seed behind everything random.

The seed contract is Keras's: an int `seed` gives the same draw at every call (eager
or, inside a traced `call()`, at every step); a `SeedGenerator` gives a new draw at
every call or step, reproducibly from its seed; `seed=None` draws from the global
generator (`keras.utils.set_random_seed`). Draws are kernels_numba's counter-based
noise (the hash of Dropout's masks), so they never match Keras's bit for bit. The
draw functions live in draws.py (imported on first use: layers import this package
for `new_seed` before kerasish.ops exists); state.py holds the global generator.
"""

from kerasish.random.seed_generator import SeedGenerator  # noqa: F401
from kerasish.random.state import generator, new_seed, set_seed  # noqa: F401

_DRAWS = ("normal", "uniform", "truncated_normal", "dropout", "categorical", "randint",
          "shuffle")

__all__ = [*_DRAWS, "SeedGenerator"]


def __getattr__(name):
    if name in _DRAWS:
        from kerasish.random import draws

        return getattr(draws, name)
    raise AttributeError(f"module 'kerasish.random' has no attribute {name!r}")
