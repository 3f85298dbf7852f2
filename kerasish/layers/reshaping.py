"""UpSampling2D, ZeroPadding2D, Cropping2D, Permute, RepeatVector, Identity (Keras 3
arguments and configs; channels_last only)."""

import numpy as np

from kerasish.layers.core import _positive_int
from kerasish.layers.layer import Layer
from kernels_numba import ops


def _channels_last(layer, data_format):
    if data_format not in (None, "channels_last"):
        raise ValueError(f"{layer}: only data_format='channels_last' is supported; "
                         f"received data_format={data_format!r}")


def _rank4(layer, input_shape):
    if len(input_shape) != 4:
        raise ValueError(f"{layer}: expected input of rank 4 (batch, H, W, C); received "
                         f"shape {tuple(input_shape)}")


def _plus(size, extra):
    """size + extra along a spatial axis; None (known only from the data) stays None."""
    return None if size is None else size + extra


def _non_negative(v):
    return isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 0


def pairs_2d(layer, name, value):
    """Keras's int | (sym_h, sym_w) | ((top, bottom), (left, right)) -> the nested form."""
    if _non_negative(value):
        return ((int(value),) * 2,) * 2
    try:
        parts = tuple(value)
        if len(parts) == 2 and all(_non_negative(p) for p in parts):
            return ((int(parts[0]),) * 2, (int(parts[1]),) * 2)
        nested = tuple(tuple(int(v) for v in p) for p in parts)
        if len(nested) == 2 and all(len(p) == 2 for p in nested) and \
                all(_non_negative(v) for p in parts for v in p):
            return nested
    except (TypeError, ValueError):
        pass
    raise ValueError(f"{layer}: expected `{name}` to be a non-negative int, a tuple of 2 "
                     f"ints, or a tuple of 2 tuples of 2 ints; received {name}={value!r}")


class UpSampling2D(Layer):
    """Nearest-neighbour upsampling: (batch, H, W, C) -> (batch, H*size_h, W*size_w, C)."""

    def __init__(self, size=(2, 2), data_format=None, interpolation="nearest", **kwargs):
        super().__init__(**kwargs)
        _channels_last("UpSampling2D", data_format)
        if interpolation != "nearest":
            raise ValueError(f"UpSampling2D: only interpolation='nearest' is supported; "
                             f"received interpolation={interpolation!r}")
        from kerasish.layers.convolutional import normalize_tuple

        self.size = normalize_tuple(size, 2, "size", "UpSampling2D")

    def compute_output_shape(self, input_shape):
        _rank4(f"UpSampling2D {self.name}", input_shape)
        n, h, w, c = input_shape
        return (n, None if h is None else h * self.size[0],
                None if w is None else w * self.size[1], c)

    def forward(self, y, x, training):
        ops.upsampling2d_forward(y, x, size=self.size)

    def backward(self, dx, dy, x, y):
        if dx is not None:
            ops.upsampling2d_backward(dx, dy, size=self.size)

    def get_config(self):
        return {**super().get_config(), "size": tuple(self.size),
                "data_format": "channels_last", "interpolation": "nearest"}


class ZeroPadding2D(Layer):
    """Zero rows/columns around the image: padding int, (h, w) or ((t, b), (l, r))."""

    def __init__(self, padding=(1, 1), data_format=None, **kwargs):
        super().__init__(**kwargs)
        _channels_last("ZeroPadding2D", data_format)
        self.padding = pairs_2d("ZeroPadding2D", "padding", padding)

    def compute_output_shape(self, input_shape):
        _rank4(f"ZeroPadding2D {self.name}", input_shape)
        (top, bottom), (left, right) = self.padding
        n, h, w, c = input_shape
        return (n, _plus(h, top + bottom), _plus(w, left + right), c)

    def forward(self, y, x, training):
        ops.zero_padding2d_forward(y, x, padding=self.padding)

    def backward(self, dx, dy, x, y):
        if dx is not None:
            ops.zero_padding2d_backward(dx, dy, padding=self.padding)

    def get_config(self):
        return {**super().get_config(), "padding": tuple(tuple(p) for p in self.padding),
                "data_format": "channels_last"}


class Cropping2D(Layer):
    """Crops rows/columns: cropping int, (h, w) or ((top, bottom), (left, right))."""

    def __init__(self, cropping=((0, 0), (0, 0)), data_format=None, **kwargs):
        super().__init__(**kwargs)
        _channels_last("Cropping2D", data_format)
        self.cropping = pairs_2d("Cropping2D", "cropping", cropping)

    def compute_output_shape(self, input_shape):
        _rank4(f"Cropping2D {self.name}", input_shape)
        (top, bottom), (left, right) = self.cropping
        n, h, w, c = input_shape
        out_h, out_w = _plus(h, -top - bottom), _plus(w, -left - right)
        if (out_h is not None and out_h <= 0) or (out_w is not None and out_w <= 0):
            raise ValueError(f"Cropping2D {self.name}: cropping={self.cropping} leaves nothing "
                             f"of an input of shape {tuple(input_shape)}")
        return (n, out_h, out_w, c)

    def forward(self, y, x, training):
        ops.cropping2d_forward(y, x, cropping=self.cropping)

    def backward(self, dx, dy, x, y):
        if dx is not None:
            ops.cropping2d_backward(dx, dy, cropping=self.cropping)

    def get_config(self):
        return {**super().get_config(), "cropping": tuple(tuple(p) for p in self.cropping),
                "data_format": "channels_last"}


class Permute(Layer):
    """Permutes the non-batch axes: dims is 1-based, Permute((2, 1)) swaps the two axes."""

    def __init__(self, dims, **kwargs):
        super().__init__(**kwargs)
        try:
            d = tuple(dims)
        except TypeError:
            d = None
        if d is None or not all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
                                for v in d) or sorted(d) != list(range(1, len(d) + 1)):
            raise ValueError(f"Permute: expected `dims` to be a permutation of 1..n; "
                             f"received dims={dims!r}")
        self.dims = tuple(int(v) for v in d)

    def compute_output_shape(self, input_shape):
        if len(input_shape) != len(self.dims) + 1:
            raise ValueError(f"Permute {self.name}: dims={self.dims} needs an input of rank "
                             f"{len(self.dims) + 1}; received shape {tuple(input_shape)}")
        return (input_shape[0], *(input_shape[d] for d in self.dims))

    def _perm(self):
        return tuple(d - 1 for d in self.dims)

    def forward(self, y, x, training):
        ops.permute_axes(y, x, perm=self._perm())

    def backward(self, dx, dy, x, y):
        if dx is not None:
            ops.permute_axes_backward(dx, dy, perm=self._perm())

    def get_config(self):
        return {**super().get_config(), "dims": tuple(self.dims)}


class RepeatVector(Layer):
    """(batch, F) -> (batch, n, F): ops.upsampling1d on the (batch, 1, F) view."""

    def __init__(self, n, **kwargs):
        super().__init__(**kwargs)
        self.n = _positive_int("RepeatVector", "n", n)

    def compute_output_shape(self, input_shape):
        if len(input_shape) != 2:
            raise ValueError(f"RepeatVector {self.name}: expected input of rank 2 (batch, "
                             f"features); received shape {tuple(input_shape)}")
        return (input_shape[0], self.n, input_shape[1])

    def forward(self, y, x, training):
        ops.upsampling1d_forward(y, x.reshape((x.shape[0], 1, x.shape[1])), size=self.n)

    def backward(self, dx, dy, x, y):
        if dx is not None:
            ops.upsampling1d_backward(dx.reshape((dx.shape[0], 1, dx.shape[1])), dy,
                                      size=self.n)

    def get_config(self):
        return {**super().get_config(), "n": self.n}


class Identity(Layer):
    """Returns its input. Zero-copy: the output aliases the input buffer (as Flatten)."""

    propagates_mask = True  # Keras's supports_masking: the mask passes on

    aliases_input = True
