"""SeedGenerator: Keras 3's stateful seed (`keras.random.SeedGenerator(seed)`).

Each eager draw with a generator takes its next step: (seed, step) keys the
counter-based hash, so the same generator seed gives the same sequence of draws.
A random op traced inside `call()` takes a sub-seed of its own (`fork()`), then
advances its own step each time the plan runs it, so two ops fed by one generator
never repeat each other.
"""

import numpy as np

from kerasish.random import state


class SeedGenerator:
    def __init__(self, seed=None, name=None, **kwargs):
        if kwargs:
            raise TypeError(f"SeedGenerator: unexpected keyword arguments {sorted(kwargs)}")
        if seed is not None and (isinstance(seed, bool) or
                                 not isinstance(seed, (int, np.integer))):
            raise ValueError(f"SeedGenerator: expected an integer seed or None; received "
                             f"seed={seed!r}")
        self._initial_seed = None if seed is None else int(seed)
        self.name = name or "seed_generator"
        self._seed = state.new_seed() if seed is None else int(seed) & 0xFFFFFFFF
        self._step = 0
        self._forks = 0

    @property
    def state(self):
        """(seed, steps taken), as Keras's uint32 state variable holds them."""
        return np.array([self._seed, self._step], np.uint32)

    def next(self, ordered=True):
        """(seed, step) of the next eager draw; the step advances."""
        self._step += 1
        return self._seed, self._step - 1

    def fork(self):
        """A sub-seed for one traced random op (its steps are its own)."""
        self._forks += 1
        return (self._seed * 1000003 + self._forks * 7919) & 0x7FFFFFFF

    def get_config(self):
        return {"seed": self._initial_seed, "name": self.name}

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def __repr__(self):
        return f"<SeedGenerator name={self.name!r} seed={self._initial_seed!r}>"
