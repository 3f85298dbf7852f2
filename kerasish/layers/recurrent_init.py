"""The recurrent layers' initializers: Keras's Orthogonal (the default recurrent
initializer) and the LSTM bias with unit_forget_bias. Split from recurrent.py (file size);
recurrent.py re-exports Orthogonal."""

import numpy as np

from kerasish import random as kr
from kerasish.initializers import Initializer
from kerasish.initializers import get as get_initializer


class Orthogonal(Initializer):
    """Keras's Orthogonal initializer (QR of a normal matrix, sign-corrected)."""

    def __init__(self, gain=1.0, seed=None):
        self.gain, self.seed = float(gain), seed

    def __call__(self, shape):
        rows, cols = int(np.prod(shape[:-1])), int(shape[-1])
        rng = np.random.default_rng(self.seed) if self.seed is not None else kr.generator()
        a = rng.standard_normal((max(rows, cols), min(rows, cols)))
        q, r = np.linalg.qr(a)
        q *= np.sign(np.diag(r))
        if rows < cols:
            q = q.T
        return (self.gain * q[:rows, :cols]).reshape(shape).astype(np.float32)

    def get_config(self):
        return {"seed": self.seed, "gain": self.gain}


def _initializer(identifier):
    if identifier == "orthogonal" or (isinstance(identifier, dict)
                                      and identifier.get("class_name") == "Orthogonal"):
        config = identifier.get("config", {}) if isinstance(identifier, dict) else {}
        return Orthogonal(**config)
    return get_initializer(identifier)


class _UnitForgetBias(Initializer):
    """The bias initializer with ones in the forget-gate quarter (unit_forget_bias)."""

    def __init__(self, base, units):
        self.base, self.units = base, units

    def __call__(self, shape):
        b = np.asarray(self.base(shape), np.float32).copy()
        b[self.units: 2 * self.units] = 1.0
        return b
