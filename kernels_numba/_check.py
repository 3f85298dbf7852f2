"""Argument validation shared by kernels_numba.ops: errors name the op, the argument,
what was expected and what was received, before any kernel could write out of bounds."""

import numpy as np

from kernels_numba.device import CPU, device_of


def array(op, name, a, shape=None, dtype=np.float32, ndim=None):
    """Check one buffer: a C-contiguous array of `dtype` with `shape` (None entries = any)."""
    # Fast path for a valid NumPy buffer (every op call checks several: keep it cheap).
    if type(a) is np.ndarray and a.flags.c_contiguous and (dtype is None or a.dtype == dtype):
        got = a.shape
        if (ndim is None or len(got) == ndim) and (shape is None or _matches(shape, got)):
            return got
    try:
        device_of(a)
    except TypeError as exc:
        raise TypeError(f"{op}: argument {name}: {exc}") from None
    if dtype is not None and np.dtype(a.dtype) != np.dtype(dtype):
        raise TypeError(f"{op}: expected {name}.dtype == {np.dtype(dtype)}; received {a.dtype}")
    got = tuple(a.shape)
    if ndim is not None and len(got) != ndim:
        raise ValueError(f"{op}: expected {name} with {ndim} dimensions; received shape {got}")
    if shape is not None:
        if not _matches(shape, got):
            want = "(" + ", ".join("?" if e is None else str(e) for e in shape) + \
                ("," if len(shape) == 1 else "") + ")"
            raise ValueError(f"{op}: expected {name}.shape == {want}; received {got}")
    if not _c_contiguous(a):
        raise ValueError(f"{op}: expected {name} to be C-contiguous; received strides {a.strides}")
    return got


def _matches(shape, got):
    if shape == got:
        return True
    if len(shape) != len(got):
        return False
    for e, g in zip(shape, got):
        if e is not None and e != g:
            return False
    return True


def _c_contiguous(a):
    flags = getattr(a, "flags", None)
    if flags is not None:
        return bool(flags["C_CONTIGUOUS"])
    return a.is_c_contiguous()


def same_device(op, **arrays):
    """The common device of all arrays; ValueError naming them when they differ."""
    if all(a is None or type(a) is np.ndarray for a in arrays.values()):
        return CPU  # fast path: the CPU twins' usual case
    devices = {name: device_of(a) for name, a in arrays.items() if a is not None}
    if len(set(devices.values())) > 1:
        listed = ", ".join(f"{n}={d}" for n, d in devices.items())
        raise ValueError(f"{op}: all buffers must be on one device; received {listed}")
    return next(iter(devices.values()))


def positive_int(op, name, value):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value <= 0:
        raise ValueError(f"{op}: expected {name} to be a positive integer; received {value!r}")
    return int(value)


def choice(op, name, value, allowed):
    if value not in allowed:
        raise ValueError(f"{op}: expected {name} in {sorted(allowed)}; received {value!r}")
    return value
