"""Op name -> implementation on the buffers' device: kernels_numba.cpu.* or kernels_numba.gpu.*.

(The CUDA package is named `gpu`, not `cuda`: numba-cuda's import redirector
hijacks any module name containing "numba.cuda", which "kernels_numba.cuda" does.)
"""

import importlib

from kernels_numba import _check

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
        package = "gpu" if device == "cuda" else "cpu"
        module = importlib.import_module(f"kernels_numba.{package}.{family}")
        fn = _cache[key] = getattr(module, op)
    return fn
