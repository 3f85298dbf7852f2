"""Colour image preprocessing layers on the device batch: RandomBrightness and
RandomContrast (Keras 3 arguments, factor semantics and configs). One factor per image,
drawn on the device (kernels_numba.ops.augment_color); outputs clipped to value_range;
the identity at inference."""

import numpy as np

from kerasish.layers.preprocessing.base import (RandomImageLayer, ac, check_data_format,
                                               factor_pair, is_number)


def _value_range(layer, value_range, sort):
    if not isinstance(value_range, (tuple, list)) or len(value_range) != 2 or \
            not all(is_number(v) for v in value_range):
        raise ValueError(f"{layer}: the `value_range` argument should be a list of two "
                         f"numbers. Received: value_range={value_range!r}")
    values = [float(v) for v in value_range]
    return sorted(values) if sort else values


class RandomBrightness(RandomImageLayer):
    """Adds U(factor) * (high - low) to every pixel of each image, clipped to
    value_range = (low, high). factor f means (-f, f); -1 gives black, 1 white."""

    def __init__(self, factor, value_range=(0, 255), seed=None, data_format=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        check_data_format("RandomBrightness", data_format)
        self.factor = factor_pair("RandomBrightness", "factor", factor, (-1, 1))
        self.value_range = _value_range("RandomBrightness", value_range, sort=True)

    def scratch_shapes(self, batch_size):
        return {"delta": ((batch_size,), np.float32)}

    def augment(self, y, x, seed, step):
        span = self.value_range[1] - self.value_range[0]
        delta = self.scratch_view("delta", x.shape[0])
        ac.random_uniform_params(delta, seed=seed, step=step, low=self.factor[0] * span,
                                 high=self.factor[1] * span)
        ac.brightness_forward(y, x, delta, value_range=self.value_range)

    def augment_backward(self, dx, dy, x):
        ac.brightness_backward(dx, dy, x, self.scratch_view("delta", dy.shape[0]),
                               value_range=self.value_range)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor,
                "value_range": list(self.value_range), "seed": self.seed,
                "data_format": "channels_last"}


class RandomContrast(RandomImageLayer):
    """(x - mean) * c + mean per image and channel, c ~ U(1 - lower, 1 + upper), clipped
    to value_range. As in Keras 3, a number f means (lower, upper) = (0, f): contrast only
    grows; a pair (lower, upper) in [0, 1] reaches both ways."""

    def __init__(self, factor, value_range=(0, 255), seed=None, data_format=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        check_data_format("RandomContrast", data_format)
        self.factor = factor_pair("RandomContrast", "factor", factor, (0, 1))
        self.value_range = _value_range("RandomContrast", value_range, sort=False)
        if self.value_range[0] > self.value_range[1]:
            raise ValueError(f"RandomContrast: expected value_range with low <= high; "
                             f"received value_range={value_range!r}")

    def scratch_shapes(self, batch_size):
        return {"factor": ((batch_size,), np.float32),
                "mean": ((batch_size, self.input_shape[3]), np.float32)}

    def augment(self, y, x, seed, step):
        n = x.shape[0]
        factor, mean = self.scratch_view("factor", n), self.scratch_view("mean", n)
        ac.random_uniform_params(factor, seed=seed, step=step, low=1.0 - self.factor[0],
                                 high=1.0 + self.factor[1])
        ac.contrast_forward(y, mean, x, factor, value_range=self.value_range)

    def augment_backward(self, dx, dy, x):
        n = dy.shape[0]
        ac.contrast_backward(dx, dy, x, self.scratch_view("mean", n),
                             self.scratch_view("factor", n), value_range=self.value_range)

    def get_config(self):
        return {**super().get_config(), "factor": self.factor,
                "value_range": tuple(self.value_range), "seed": self.seed,
                "data_format": "channels_last"}
