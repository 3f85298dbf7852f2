"""ReLU, LeakyReLU and Softmax: Keras's activation layers, as Activation with fixed kinds.

Their configs are Keras's (no `activation` key), so h5 files cross both ways.
"""

from kerasish.layers.core import Activation, check_number
from kerasish.layers.layer import Layer


class ReLU(Activation):
    """max(x, 0), or a leaky ReLU with `negative_slope`; max_value and threshold must keep
    their defaults (the kernels have no clipped or shifted ReLU)."""

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, **kwargs):
        if max_value is not None or isinstance(threshold, bool) or threshold != 0:
            raise ValueError(f"ReLU: max_value and threshold are not supported; expected "
                             f"max_value=None, threshold=0; received max_value={max_value!r}, "
                             f"threshold={threshold!r}")
        negative_slope = check_number("ReLU", "negative_slope", negative_slope, ">= 0",
                                      lambda v: v >= 0)
        super().__init__("leaky_relu" if negative_slope else "relu", **kwargs)
        self.negative_slope = float(negative_slope)
        if negative_slope:
            self.alpha = self.negative_slope

    def get_config(self):
        return {**Layer.get_config(self), "max_value": None,
                "negative_slope": self.negative_slope, "threshold": 0.0}


class LeakyReLU(Activation):
    """x if x > 0 else negative_slope * x (Keras 3 default 0.3; tf.keras's `alpha` too)."""

    def __init__(self, negative_slope=0.3, **kwargs):
        if "alpha" in kwargs:
            negative_slope = kwargs.pop("alpha")
        negative_slope = check_number("LeakyReLU", "negative_slope", negative_slope,
                                      ">= 0", lambda v: v >= 0)
        super().__init__("leaky_relu", **kwargs)
        self.negative_slope = self.alpha = float(negative_slope)

    def get_config(self):
        return {**Layer.get_config(self), "negative_slope": self.negative_slope}


class Softmax(Activation):
    """Softmax over the last axis (the only axis the kernels normalize over)."""

    def __init__(self, axis=-1, **kwargs):
        if isinstance(axis, bool) or axis != -1:
            raise ValueError(f"Softmax: only axis=-1 is supported; received axis={axis!r}")
        super().__init__("softmax", **kwargs)
        self.axis = -1

    def get_config(self):
        return {**Layer.get_config(self), "axis": -1}
