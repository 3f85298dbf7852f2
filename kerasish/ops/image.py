"""keras.ops.image: resize and extract_patches (channels_last images), eager and traced.

- resize: Keras's torch backend (PyTorch's half-pixel resize; "nearest" is its
  nearest-exact), as the Resizing layer: kernels_numba's affine sampler with constant
  resize matrices (uploaded once per device and batch size), its backward the
  sampler's transpose.
- extract_patches: as Keras does it, a conv2d with an identity kernel of
  (size_h, size_w, C, size_h*size_w*C): each output pixel's channels are its patch in
  (row, column, channel) order; the backward is conv2d's backward-data.
A 3-D (height, width, channels) image is one image (eager only: traced tensors have a
batch axis). Other data formats and antialias / aspect-ratio options are refused by name.
"""

import numpy as np

import kernels_numba
from kernels_numba import ops as K
from kerasish.ops.dispatch import dims, run
from kerasish.ops.operation import Operation, is_symbolic

_INTERPOLATIONS = {"bilinear": "bilinear", "nearest": "nearest_exact"}


def _images_shape(name, shape):
    if len(shape) != 4 or any(s is None for s in shape[1:]):
        raise ValueError(f"ops.image.{name}: expected images of shape (batch, height, width, "
                         f"channels) with known height, width and channels; received shape "
                         f"{tuple(shape)}")
    return shape


def _pair(name, arg, value):
    v = (value, value) if isinstance(value, (int, np.integer)) else tuple(value)
    if len(v) != 2 or not all(isinstance(s, (int, np.integer)) and not isinstance(s, bool)
                              and s > 0 for s in v):
        raise ValueError(f"ops.image.{name}: expected {arg} as a positive int or a pair of "
                         f"positive ints; received {arg}={value!r}")
    return int(v[0]), int(v[1])


def _channels_last(name, data_format):
    if data_format not in (None, "channels_last"):
        raise ValueError(f"ops.image.{name}: only data_format='channels_last' is supported; "
                         f"received data_format={data_format!r}")


class ResizeOp(Operation):
    def __init__(self, size, interpolation):
        super().__init__()
        self.size, self.mode = size, _INTERPOLATIONS[interpolation]
        self._matrices = {}

    def compute_output_shape(self, input_shape):
        n, _, _, c = _images_shape("resize", input_shape)
        return (n, *self.size, c)

    def _m(self, x):
        key = (kernels_numba.device_of(x), x.shape[0], tuple(x.shape[1:3]))
        if key not in self._matrices:
            self._matrices[key] = kernels_numba.to_device(
                K.resize_matrices(x.shape[0], self.size, key[2]), key[0])
        return self._matrices[key]

    def forward(self, y, x, training):
        K.affine_transform_forward(y, x, self._m(x), interpolation=self.mode,
                                   fill_mode="nearest")

    def backward(self, dx, dy, x, y):
        if dx is not None:
            K.affine_transform_backward(dx, dy, self._m(x), interpolation=self.mode,
                                        fill_mode="nearest")


class ExtractPatchesOp(Operation):
    def __init__(self, size, strides, dilation_rate, padding):
        super().__init__()
        self.size, self.strides, self.dilation, self.padding = size, strides, dilation_rate, \
            padding
        self._kernels = {}

    def _w_shape(self, channels):
        ph, pw = self.size
        return (ph, pw, channels, ph * pw * channels)

    def _conv_args(self):
        return {"strides": self.strides, "padding": self.padding,
                "dilation_rate": self.dilation}

    def compute_output_shape(self, input_shape):
        n, h, w, c = _images_shape("extract_patches", input_shape)
        try:
            out = K.conv2d_output_shape((1, h, w, c), self._w_shape(c), **self._conv_args())
        except ValueError as e:
            raise ValueError(f"ops.image.extract_patches: patches of size {self.size} do not "
                             f"fit images of shape {tuple(input_shape)} ({e})") from None
        return (n, *out[1:])

    def scratch_shapes(self, batch_size):
        x = dims(self.input_shape, batch_size)
        return {"workspace": (K.conv2d_workspace_shape(x, self._w_shape(x[3]),
                                                       **self._conv_args()), np.float32)}

    def _w(self, like):
        device = kernels_numba.device_of(like)
        if device not in self._kernels:
            shape = self._w_shape(like.shape[3])
            eye = np.eye(shape[3], dtype=np.float32).reshape(shape)
            self._kernels[device] = kernels_numba.to_device(eye, device)
        return self._kernels[device]

    def forward(self, y, x, training):
        K.conv2d_forward(y, x, self._w(x), None, self.scratch["workspace"], **self._conv_args())

    def backward(self, dx, dy, x, y):
        if dx is not None:
            K.conv2d_backward_data(dx, dy, self._w(x), self.scratch["workspace"],
                                   **self._conv_args())


def _run_images(name, op, images):
    """Run `op` on a batch (traced or eager) or on one eager (H, W, C) image."""
    if not is_symbolic(images) and np.ndim(images) == 3:
        return run(op, [np.asarray(images, np.float32)[None]])[0]
    if not is_symbolic(images) and np.ndim(images) != 4:
        raise ValueError(f"ops.image.{name}: expected images of rank 3 (height, width, "
                         f"channels) or 4 (batch, height, width, channels); received shape "
                         f"{np.shape(images)}")
    return run(op, [images])


def resize(images, size, interpolation="bilinear", antialias=False,
           crop_to_aspect_ratio=False, pad_to_aspect_ratio=False, fill_mode="constant",
           fill_value=0.0, data_format=None):
    """Resize images to size (height, width)."""
    _channels_last("resize", data_format)
    size = _pair("resize", "size", size)
    if interpolation not in _INTERPOLATIONS:
        raise ValueError(f"ops.image.resize: expected interpolation in "
                         f"{sorted(_INTERPOLATIONS)}; received interpolation={interpolation!r}")
    for arg, value in (("antialias", antialias), ("crop_to_aspect_ratio", crop_to_aspect_ratio),
                       ("pad_to_aspect_ratio", pad_to_aspect_ratio)):
        if value:
            raise ValueError(f"ops.image.resize: {arg}=True is not supported in kerasish; "
                             f"received {arg}={value!r}")
    return _run_images("resize", ResizeOp(size, interpolation), images)


def extract_patches(images, size, strides=None, dilation_rate=1, padding="valid",
                    data_format=None):
    """Patches of size (height, width) as channels: (batch, rows, cols, ph * pw * C)."""
    _channels_last("extract_patches", data_format)
    size = _pair("extract_patches", "size", size)
    strides = size if not strides else _pair("extract_patches", "strides", strides)
    dilation = _pair("extract_patches", "dilation_rate", dilation_rate)
    if padding not in ("valid", "same"):
        raise ValueError(f"ops.image.extract_patches: expected padding 'valid' or 'same'; "
                         f"received padding={padding!r}")
    if dilation != (1, 1) and strides != (1, 1):
        raise ValueError(f"ops.image.extract_patches: dilation_rate > 1 is not supported with "
                         f"strides > 1 (as Keras); received strides={strides}, "
                         f"dilation_rate={dilation}")
    return _run_images("extract_patches", ExtractPatchesOp(size, strides, dilation, padding),
                       images)
