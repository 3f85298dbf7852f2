"""Ready per-batch transforms for DataLoader(transform=...).

Every transform is a callable `f(x_batch, y_batch) -> (x_batch, y_batch)` (y_batch may
be None) that returns new arrays and never modifies its inputs; chain them with
`compose`. They run in the loader's worker thread, one batch at a time.

    loader = DataLoader(x, y, transform=compose(normalize(), reshape((28, 28, 1)),
                                                random_shift(2, seed=0), one_hot(10)))
"""

import numpy as np

__all__ = ["compose", "normalize", "one_hot", "random_shift", "reshape"]


def normalize(mean=None, std=None, scale=1.0 / 255.0):
    """x -> (x * scale - mean) / std as float32 (y unchanged).

    Args:
        mean: None, a scalar, or per-channel values (broadcast over the last axis), in
            scaled units (e.g. MNIST's 0.1307 after scaling by 1/255).
        std: None, a scalar or per-channel values (> 0), in scaled units.
        scale: multiplier applied first; 1/255 maps uint8 pixels to [0, 1].
    """
    scale = np.float32(scale)
    shift = None if mean is None else np.asarray(mean, dtype=np.float32)
    inv_std = None
    if std is not None:
        std = np.asarray(std, dtype=np.float32)
        if np.any(std <= 0):
            raise ValueError(f"normalize: expected std > 0; received {std.tolist()}")
        inv_std = (np.float32(1.0) / std).astype(np.float32)

    def _normalize(x, y):
        out = np.multiply(x, scale, dtype=np.float32)  # one pass: cast and scale
        if shift is not None:
            out -= shift
        if inv_std is not None:
            out *= inv_std
        return out, y

    return _normalize


def one_hot(num_classes, dtype=np.float32):
    """y (integer labels, shape (B,) or (B, 1)) -> (B, num_classes) one-hot (x unchanged).

    Raises (when called):
        ValueError: a label outside [0, num_classes) or not an integer.
    """
    if isinstance(num_classes, bool) or not isinstance(num_classes, (int, np.integer)) \
            or num_classes < 1:
        raise ValueError(f"one_hot: expected num_classes an int >= 1; received {num_classes!r}")
    num_classes = int(num_classes)

    def _one_hot(x, y):
        if y is None:
            return x, y
        labels = np.asarray(y)
        if labels.ndim == 2 and labels.shape[1] == 1:
            labels = labels[:, 0]
        if labels.ndim != 1 or not np.issubdtype(labels.dtype, np.integer):
            raise ValueError(f"one_hot: expected integer labels of shape (B,) or (B, 1); "
                             f"received {labels.dtype} {np.asarray(y).shape}")
        if len(labels) and (labels.min() < 0 or labels.max() >= num_classes):
            raise ValueError(f"one_hot: labels must lie in [0, {num_classes}); received "
                             f"values in [{labels.min()}, {labels.max()}]")
        out = np.zeros((len(labels), num_classes), dtype=dtype)
        out[np.arange(len(labels)), labels] = 1
        return x, out

    return _one_hot


def reshape(shape):
    """x (B, ...) -> (B, *shape) (y unchanged); `shape` may hold one -1."""
    shape = (shape,) if isinstance(shape, (int, np.integer)) else tuple(int(d) for d in shape)

    def _reshape(x, y):
        try:
            return np.reshape(x, (len(x),) + shape), y
        except ValueError:
            raise ValueError(f"reshape: cannot reshape a batch of shape {x.shape} to "
                             f"(batch,) + {shape}") from None

    return _reshape


def random_shift(max_pixels, seed=None, fill=0):
    """Shift each image by a random whole number of pixels in [-max_pixels, max_pixels]
    along height and width, filling the uncovered border with `fill` (augmentation).

    x is (B, H, W) or (B, H, W, C); y unchanged. The shifts come from a generator seeded
    once with `seed`, so a seeded loader reproduces its augmented epochs.
    """
    if isinstance(max_pixels, bool) or not isinstance(max_pixels, (int, np.integer)) \
            or max_pixels < 0:
        raise ValueError(f"random_shift: expected max_pixels an int >= 0; "
                         f"received {max_pixels!r}")
    m = int(max_pixels)
    rng = np.random.default_rng(seed)

    def _random_shift(x, y):
        if x.ndim not in (3, 4):
            raise ValueError(f"random_shift: expected x of shape (B, H, W) or (B, H, W, C); "
                             f"received {x.shape}")
        h, w = x.shape[1], x.shape[2]
        shifts = rng.integers(-m, m + 1, size=(len(x), 2))
        out = np.full_like(x, fill)
        for b, (dy, dx) in enumerate(shifts):
            if abs(dy) >= h or abs(dx) >= w:
                continue  # shifted out entirely: all fill
            out[b, max(dy, 0):h + min(dy, 0), max(dx, 0):w + min(dx, 0)] = \
                x[b, max(-dy, 0):h - max(dy, 0), max(-dx, 0):w - max(dx, 0)]
        return out, y

    return _random_shift


def compose(*fns):
    """Chain transforms left to right: compose(f, g)(x, y) == g(*f(x, y))."""
    for f in fns:
        if not callable(f):
            raise TypeError(f"compose: expected callables; received {type(f).__name__}")

    def _composed(x, y):
        for f in fns:
            x, y = f(x, y)
        return x, y

    return _composed
