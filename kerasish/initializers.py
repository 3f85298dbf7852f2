"""Weight initializers with Keras names and defaults (host RNG from kerasish.random)."""

import math

import numpy as np

from kerasish import random as kr


def _fans(shape):
    if len(shape) < 1:
        return 1, 1
    if len(shape) == 1:
        return shape[0], shape[0]
    receptive = int(np.prod(shape[:-2])) if len(shape) > 2 else 1
    return shape[-2] * receptive, shape[-1] * receptive


class Initializer:
    def __call__(self, shape):
        raise NotImplementedError

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        for key in ("input_axes", "output_axes"):  # Keras 3.15 keys, None by default
            if config.get(key, None) is None:
                config.pop(key, None)
        return cls(**config)


class Zeros(Initializer):
    def __call__(self, shape):
        return np.zeros(shape, np.float32)


class Ones(Initializer):
    def __call__(self, shape):
        return np.ones(shape, np.float32)


class Constant(Initializer):
    def __init__(self, value=0.0):
        self.value = float(value)

    def __call__(self, shape):
        return np.full(shape, self.value, np.float32)

    def get_config(self):
        return {"value": self.value}


class RandomNormal(Initializer):
    def __init__(self, mean=0.0, stddev=0.05, seed=None):
        self.mean, self.stddev, self.seed = mean, stddev, seed

    def __call__(self, shape):
        rng = np.random.default_rng(self.seed) if self.seed is not None else kr.generator()
        return rng.normal(self.mean, self.stddev, shape).astype(np.float32)

    def get_config(self):
        return {"mean": self.mean, "stddev": self.stddev, "seed": self.seed}


class RandomUniform(Initializer):
    def __init__(self, minval=-0.05, maxval=0.05, seed=None):
        self.minval, self.maxval, self.seed = minval, maxval, seed

    def __call__(self, shape):
        rng = np.random.default_rng(self.seed) if self.seed is not None else kr.generator()
        return rng.uniform(self.minval, self.maxval, shape).astype(np.float32)

    def get_config(self):
        return {"minval": self.minval, "maxval": self.maxval, "seed": self.seed}


# Keras 3.15's VarianceScaling family writes these (fans from chosen axes); kerasish
# supports only the default (None: fans from the shape), and from_config drops the Nones.
_NO_AXES = {"input_axes": None, "output_axes": None}


class VarianceScaling(Initializer):
    """Keras's VarianceScaling: scale / fan, truncated normal or uniform."""

    def __init__(self, scale=1.0, mode="fan_in", distribution="truncated_normal", seed=None):
        self.scale, self.mode, self.distribution, self.seed = scale, mode, distribution, seed

    def __call__(self, shape):
        fan_in, fan_out = _fans(tuple(shape))
        fan = {"fan_in": fan_in, "fan_out": fan_out, "fan_avg": (fan_in + fan_out) / 2}[self.mode]
        variance = self.scale / max(1.0, fan)
        rng = np.random.default_rng(self.seed) if self.seed is not None else kr.generator()
        if self.distribution == "uniform":
            limit = math.sqrt(3.0 * variance)
            return rng.uniform(-limit, limit, shape).astype(np.float32)
        if self.distribution == "untruncated_normal":
            return rng.normal(0.0, math.sqrt(variance), shape).astype(np.float32)
        # truncated normal at 2 stddev, corrected stddev (Keras constant .87962566103423978)
        std = math.sqrt(variance) / 0.87962566103423978
        out = rng.normal(0.0, std, shape)
        bad = np.abs(out) > 2 * std
        while bad.any():
            out[bad] = rng.normal(0.0, std, int(bad.sum()))
            bad = np.abs(out) > 2 * std
        return out.astype(np.float32)

    def get_config(self):
        return {"scale": self.scale, "mode": self.mode, "distribution": self.distribution,
                "seed": self.seed, **_NO_AXES}


class GlorotUniform(VarianceScaling):
    def __init__(self, seed=None):
        super().__init__(1.0, "fan_avg", "uniform", seed)

    def get_config(self):
        return {"seed": self.seed, **_NO_AXES}


class GlorotNormal(VarianceScaling):
    def __init__(self, seed=None):
        super().__init__(1.0, "fan_avg", "truncated_normal", seed)

    def get_config(self):
        return {"seed": self.seed, **_NO_AXES}


class HeNormal(VarianceScaling):
    def __init__(self, seed=None):
        super().__init__(2.0, "fan_in", "truncated_normal", seed)

    def get_config(self):
        return {"seed": self.seed, **_NO_AXES}


class HeUniform(VarianceScaling):
    def __init__(self, seed=None):
        super().__init__(2.0, "fan_in", "uniform", seed)

    def get_config(self):
        return {"seed": self.seed, **_NO_AXES}


ALL = {
    "zeros": Zeros, "ones": Ones, "constant": Constant, "random_normal": RandomNormal,
    "random_uniform": RandomUniform, "variance_scaling": VarianceScaling,
    "glorot_uniform": GlorotUniform, "glorot_normal": GlorotNormal,
    "he_normal": HeNormal, "he_uniform": HeUniform,
}
_BY_CLASS = {cls.__name__: cls for cls in ALL.values()}


def get(identifier):
    """An Initializer from a name, a Keras config dict, an instance or a callable."""
    if identifier is None:
        return None
    if isinstance(identifier, Initializer) or callable(identifier):
        return identifier
    if isinstance(identifier, dict):
        cls = _BY_CLASS.get(identifier.get("class_name"))
        if cls is None:
            raise ValueError(f"Unknown initializer class: {identifier.get('class_name')!r}. "
                             f"Valid: {sorted(_BY_CLASS)}")
        return cls.from_config(identifier.get("config", {}))
    if isinstance(identifier, str):
        key = identifier if identifier in ALL else _snake(identifier)
        if key in ALL:
            return ALL[key]()
    raise ValueError(f"Unknown initializer: {identifier!r}. Valid: {sorted(ALL)}")


def serialize(init):
    return {"module": "keras.initializers", "class_name": type(init).__name__,
            "config": init.get_config(), "registered_name": None}


def _snake(name):
    out = "".join("_" + c.lower() if c.isupper() else c for c in name).lstrip("_")
    return out
