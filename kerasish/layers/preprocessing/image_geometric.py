"""Geometric image preprocessing layers on the device batch: RandomFlip, RandomRotation,
RandomZoom, RandomTranslation, RandomCrop, Resizing and CenterCrop (Keras 3 arguments,
defaults and configs; channels_last only).

Random layers draw each sample's parameters on the device (kernels_numba.ops.
augment_geometric) and are the identity at inference; Resizing and CenterCrop always
apply. Rotation, zoom, translation and resizing are one inverse-affine sampler with
Keras's fill modes and interpolations. Every layer has a backward (dx), so a model may
train layers before them. The transforms' distribution is Keras's; the random stream
is kerasish's own (a counter-based hash), so the draws differ from Keras's.
"""

import math

import numpy as np

from kerasish.layers.preprocessing.base import (
    FILL_MODES,
    INTERPOLATIONS,
    ImageLayer,
    RandomImageLayer,
    ag,
    aspect_box,
    check_data_format,
    choice,
    factor_pair,
    number,
    positive_int,
    zoom_pair,
)
from kernels_numba import ops

_FLIP_MODES = ("horizontal", "vertical", "horizontal_and_vertical")


class RandomFlip(RandomImageLayer):
    """Flips each image left-right and/or top-bottom with probability 1/2 in training
    (in "horizontal_and_vertical" one draw flips both axes, as in Keras)."""

    def __init__(self, mode="horizontal_and_vertical", seed=None, data_format=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        self.mode = choice("RandomFlip", "mode", mode, _FLIP_MODES)
        self.data_format = check_data_format("RandomFlip", data_format)

    def scratch_shapes(self, batch_size):
        return {"flips": ((batch_size,), np.float32)}

    def _flip(self, y, x, flips):
        ag.flip_images(y, x, flips, horizontal=self.mode != "vertical",
                       vertical=self.mode != "horizontal")

    def augment(self, y, x, seed, step):
        flips = self.scratch_view("flips", x.shape[0])
        ag.random_flip_params(flips, seed=seed, step=step)
        self._flip(y, x, flips)

    def augment_backward(self, dx, dy, x):
        self._flip(dx, dy, self.scratch_view("flips", dy.shape[0]))

    def get_config(self):
        return {**super().get_config(), "seed": self.seed, "mode": self.mode,
                "data_format": self.data_format}


class _AffineLayer(RandomImageLayer):
    """Per-sample inverse-affine resampling; subclasses give the parameter ranges."""

    def __init__(self, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, data_format=None, **kwargs):
        super().__init__(seed=seed, **kwargs)
        layer = type(self).__name__
        self.fill_mode = choice(layer, "fill_mode", fill_mode, FILL_MODES)
        self.interpolation = choice(layer, "interpolation", interpolation, INTERPOLATIONS)
        self.fill_value = number(layer, "fill_value", fill_value)
        self.data_format = check_data_format(layer, data_format)

    def scratch_shapes(self, batch_size):
        return {"m": ((batch_size, 6), np.float32)}

    def _sampler(self):
        return dict(interpolation=self.interpolation, fill_mode=self.fill_mode,
                    fill_value=self.fill_value)

    def augment(self, y, x, seed, step):
        m = self.scratch_view("m", x.shape[0])
        ag.random_affine_params(m, seed=seed, step=step, height=x.shape[1], width=x.shape[2],
                                **self._ranges())
        ag.affine_transform_forward(y, x, m, **self._sampler())

    def augment_backward(self, dx, dy, x):
        ag.affine_transform_backward(dx, dy, self.scratch_view("m", dy.shape[0]),
                                     **self._sampler())

    def get_config(self):
        return {**super().get_config(), "data_format": self.data_format,
                "fill_mode": self.fill_mode, "fill_value": self.fill_value,
                "interpolation": self.interpolation, "seed": self.seed}


class RandomRotation(_AffineLayer):
    """Rotates each image by U(factor) * 2*pi radians about its centre (positive:
    counter-clockwise), filling by fill_mode."""

    def __init__(self, factor, fill_mode="reflect", interpolation="bilinear", seed=None,
                 fill_value=0.0, data_format=None, **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.factor = factor_pair("RandomRotation", "factor", factor, (-1, 1))

    def _ranges(self):
        return {"rotation": (self.factor[0] * 2 * math.pi, self.factor[1] * 2 * math.pi)}

    def get_config(self):
        return {**super().get_config(), "factor": self.factor}


class RandomZoom(_AffineLayer):
    """Zooms each image by 1 + U(height_factor) vertically and 1 + U(width_factor)
    horizontally (width_factor None: the same draw; positive values zoom out)."""

    def __init__(self, height_factor, width_factor=None, fill_mode="reflect",
                 interpolation="bilinear", seed=None, fill_value=0.0, data_format=None,
                 **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self._h = zoom_pair("RandomZoom", "height_factor", height_factor, open_low=True)
        self._w = None if width_factor is None else \
            zoom_pair("RandomZoom", "width_factor", width_factor, open_low=True)

    def _ranges(self):
        return {"zoom_height": self._h, "zoom_width": self._w}

    def get_config(self):
        return {**super().get_config(), "height_factor": self.height_factor,
                "width_factor": self.width_factor}


class RandomTranslation(_AffineLayer):
    """Shifts each image by U(height_factor) * height rows and U(width_factor) * width
    columns."""

    def __init__(self, height_factor, width_factor, fill_mode="reflect",
                 interpolation="bilinear", seed=None, fill_value=0.0, data_format=None,
                 **kwargs):
        super().__init__(fill_mode, interpolation, seed, fill_value, data_format, **kwargs)
        self.height_factor, self.width_factor = height_factor, width_factor
        self._h = zoom_pair("RandomTranslation", "height_factor", height_factor, False)
        self._w = zoom_pair("RandomTranslation", "width_factor", width_factor, False)

    def _ranges(self):
        return {"translate_height": self._h, "translate_width": self._w}

    def get_config(self):
        return {**super().get_config(), "height_factor": self.height_factor,
                "width_factor": self.width_factor}


class RandomCrop(RandomImageLayer):
    """Crops each image to (height, width) at a random offset in training when the input
    is larger on both axes; otherwise (and at inference) the central box of the target's
    aspect ratio, resized to (height, width). Keras 3 draws one offset per batch and
    returns inference inputs uncropped (a shape its compute_output_shape contradicts);
    kerasish draws one offset per image and keeps the output shape fixed."""

    def __init__(self, height, width, seed=None, data_format=None, name=None, **kwargs):
        super().__init__(seed=seed, name=name, **kwargs)
        self.height = positive_int("RandomCrop", "height", height)
        self.width = positive_int("RandomCrop", "width", width)
        self.data_format = check_data_format("RandomCrop", data_format)

    def compute_output_shape(self, input_shape):
        self._image_shape(input_shape)
        return (input_shape[0], self.height, self.width, input_shape[3])

    def _fallback_box(self):
        h, w, _ = self._image_shape(self.input_shape)
        return aspect_box(h, w, self.height, self.width)

    def scratch_shapes(self, batch_size):
        return {"offsets": ((batch_size, 2), np.int32),
                **self._box_scratch(batch_size, self._fallback_box())}

    def forward(self, y, x, training):
        h, w = x.shape[1], x.shape[2]
        self._random = bool(training) and h > self.height and w > self.width
        if self._random:
            offsets = self.scratch_view("offsets", x.shape[0])
            ag.random_crop_params(offsets, seed=self._seed, step=self._next_step(), height=h,
                                  width=w, crop_height=self.height, crop_width=self.width)
            ag.crop_images_forward(y, x, offsets)
        else:
            self._m = self._resize(y, x, (self.height, self.width), self._fallback_box(),
                                   "bilinear")

    def backward(self, dx, dy, x, y):
        if dx is None:
            return
        if self._random:
            ag.crop_images_backward(dx, dy, self.scratch_view("offsets", dy.shape[0]))
        else:
            self._resize_backward(dx, dy, *self._m)

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width,
                "seed": self.seed, "data_format": self.data_format}


class Resizing(ImageLayer):
    """Resizes images to (height, width): bilinear (half-pixel centres, no antialiasing)
    or nearest (PyTorch's nearest-exact, as Keras's torch backend); crop_to_aspect_ratio
    resizes the central box of the target's aspect ratio."""

    def __init__(self, height, width, interpolation="bilinear", crop_to_aspect_ratio=False,
                 pad_to_aspect_ratio=False, fill_mode="constant", fill_value=0.0,
                 antialias=False, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.height = positive_int("Resizing", "height", height)
        self.width = positive_int("Resizing", "width", width)
        self.interpolation = choice("Resizing", "interpolation", interpolation,
                                    INTERPOLATIONS)
        for arg, value in (("pad_to_aspect_ratio", pad_to_aspect_ratio),
                           ("antialias", antialias)):
            if value:
                raise ValueError(f"Resizing: {arg}=True is not supported; "
                                 f"received {arg}={value!r}")
        self.crop_to_aspect_ratio = bool(crop_to_aspect_ratio)
        self.fill_mode = fill_mode
        self.fill_value = number("Resizing", "fill_value", fill_value)
        self.data_format = check_data_format("Resizing", data_format)

    def compute_output_shape(self, input_shape):
        self._image_shape(input_shape)
        return (input_shape[0], self.height, self.width, input_shape[3])

    def _box(self):
        h, w, _ = self._image_shape(self.input_shape)
        return aspect_box(h, w, self.height, self.width) if self.crop_to_aspect_ratio else None

    def scratch_shapes(self, batch_size):
        return self._box_scratch(batch_size, self._box())

    def forward(self, y, x, training):
        self._m = self._resize(y, x, (self.height, self.width), self._box(), self.interpolation)

    def backward(self, dx, dy, x, y):
        if dx is not None:
            self._resize_backward(dx, dy, *self._m)

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width,
                "interpolation": self.interpolation, "data_format": self.data_format,
                "crop_to_aspect_ratio": self.crop_to_aspect_ratio,
                "pad_to_aspect_ratio": False, "fill_mode": self.fill_mode,
                "fill_value": self.fill_value, "antialias": False}


class CenterCrop(ImageLayer):
    """Crops the central (height, width) box; an input smaller on either axis is
    resized instead, after cropping to the target's aspect ratio (Keras's smart_resize)."""

    def __init__(self, height, width, data_format=None, **kwargs):
        super().__init__(**kwargs)
        self.height = positive_int("CenterCrop", "height", height)
        self.width = positive_int("CenterCrop", "width", width)
        self.data_format = check_data_format("CenterCrop", data_format)

    def compute_output_shape(self, input_shape):
        self._image_shape(input_shape)
        return (input_shape[0], self.height, self.width, input_shape[3])

    def scratch_shapes(self, batch_size):
        h, w, _ = self._image_shape(self.input_shape)
        if h >= self.height and w >= self.width:
            return {}
        return self._box_scratch(batch_size, aspect_box(h, w, self.height, self.width))

    def _crops(self, h, w):
        top, left = (h - self.height) // 2, (w - self.width) // 2
        return ((top, h - self.height - top), (left, w - self.width - left))

    def forward(self, y, x, training):
        h, w = x.shape[1], x.shape[2]
        if h >= self.height and w >= self.width:
            self._m = None
            ops.cropping2d_forward(y, x, cropping=self._crops(h, w))
        else:
            box = aspect_box(h, w, self.height, self.width)
            self._m = self._resize(y, x, (self.height, self.width), box, "bilinear")

    def backward(self, dx, dy, x, y):
        if dx is None:
            return
        if self._m is None:
            ops.cropping2d_backward(dx, dy, cropping=self._crops(dx.shape[1], dx.shape[2]))
        else:
            self._resize_backward(dx, dy, *self._m)

    def get_config(self):
        return {**super().get_config(), "height": self.height, "width": self.width,
                "data_format": self.data_format}
