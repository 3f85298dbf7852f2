"""Op name -> implementation on the buffers' device: kernels_numba.cpu.* or kernels_numba.gpu.*.

While a `capture_launches()` is active (kernels_numba/launches.py), a CPU op's
implementation is returned wrapped so that its call is kept for replay: on the CPU the
op's implementation (the CPU twin, after the op's validation) is the unit of a launch
plan, as a kernel launch is on CUDA.

(The CUDA package is named `gpu`, not `cuda`: numba-cuda's import redirector
hijacks any module name containing "numba.cuda", which "kernels_numba.cuda" does.)
"""

import importlib

from kernels_numba import _check, first_use

_cache = {}


def impl(op, family, **arrays):
    """The `op` function of `family` for the common device of `arrays`.

    Mixing devices is an error (ValueError naming the op and each buffer's device)."""
    device = _check.same_device(op, **arrays)
    key = (device, family, op)
    fn = _cache.get(key)
    if fn is None:
        if device == "cuda":
            from kernels_numba.device import check_cuda_available

            check_cuda_available()
        else:
            first_use.prepare()  # numba's threads, once (nothing at import)
        package = "gpu" if device == "cuda" else "cpu"
        module = importlib.import_module(f"kernels_numba.{package}.{family}")
        fn = _cache[key] = getattr(module, op)
    if cpu_captures and device == "cpu":
        return _Recorded(fn)
    return fn


cpu_captures = []  # active LaunchList captures (kernels_numba/launches.py), innermost last


class _Recorded:
    """A CPU implementation whose calls go into every active capture, then run."""

    __slots__ = ("fn",)

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, *args, **kwargs):
        for captured in cpu_captures:
            captured.add_call(self.fn, args, kwargs)
        return self.fn(*args, **kwargs)
