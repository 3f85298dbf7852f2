"""ReLU, LeakyReLU and Softmax: Keras's activation layers, as Activation with fixed kinds.

Their configs are Keras's (no `activation` key), so h5 files cross both ways.
"""

from kerasish.layers.channels_first import ChannelsAxis
from kerasish.layers.core import Activation, check_number
from kerasish.layers.layer import Layer


class ReLU(Activation):
    """max(x, 0); a leaky ReLU with `negative_slope`; ReLU6 (min(max(x, 0), 6), the
    "relu6" kernel) with max_value=6. Other max_values, max_value with a slope, and a
    non-zero threshold are refused by name (the kernels have no general clipped or
    shifted ReLU)."""

    def __init__(self, max_value=None, negative_slope=0.0, threshold=0.0, **kwargs):
        negative_slope = check_number("ReLU", "negative_slope", negative_slope, ">= 0",
                                      lambda v: v >= 0)
        threshold = check_number("ReLU", "threshold", threshold, ">= 0", lambda v: v >= 0)
        if max_value is not None:
            max_value = check_number("ReLU", "max_value", max_value, ">= 0",
                                     lambda v: v >= 0)
        if threshold != 0 or max_value not in (None, 6.0) or (max_value and negative_slope):
            raise ValueError(f"ReLU: max_value and threshold are not supported beyond "
                             f"max_value=None or 6.0 (ReLU6, without negative_slope) and "
                             f"threshold=0; received max_value={max_value!r}, "
                             f"negative_slope={negative_slope!r}, threshold={threshold!r}")
        kind = "relu6" if max_value == 6.0 else "leaky_relu" if negative_slope else "relu"
        super().__init__(kind, **kwargs)
        self.max_value = max_value
        self.negative_slope = negative_slope
        self.threshold = threshold
        if negative_slope:
            self.alpha = self.negative_slope

    def get_config(self):
        return {**Layer.get_config(self), "max_value": self.max_value,
                "negative_slope": self.negative_slope, "threshold": self.threshold}


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


class Softmax(ChannelsAxis, Activation):
    """Softmax over the last axis (the axis the kernels normalize over); axis=1 runs it
    between two permute launches (layers/channels_first.py), as BatchNormalization(axis=1).
    """

    propagates_mask = False  # Keras's Softmax reads a mask itself (not supported here)

    def __init__(self, axis=-1, **kwargs):
        if isinstance(axis, bool) or axis != -1:
            raise ValueError(f"Softmax: only axis=-1 or axis=1 is supported; received "
                             f"axis={axis!r}")
        super().__init__("softmax", **kwargs)
        self.axis = -1

    def get_config(self):
        return {**Layer.get_config(self), "axis": -1}
