"""Run NumPy's OpenBLAS single-threaded: the CPU twins split GEMMs across threads themselves.

OpenBLAS's own threading synchronises its workers inside every call by spinning and
yielding, and keeps them spinning ~0.1 s after it; numba's parallel loops between two
GEMMs then wait for a core, and on a 2-core machine with one other busy process a
CNN training step ran 7-20x slower (kernels_numba/cpu/gemm.py has the numbers).
So the loaded OpenBLAS is set to one thread through its exported C function, and
kernels_numba.cpu.gemm runs one BLAS call per output block on its own threads.

This changes NumPy's BLAS for the whole process (a matmul in user code runs on one
core too). KERNELS_NUMBA_BLAS=native keeps BLAS's own threading (then every GEMM is
one np.matmul call). A BLAS that is not OpenBLAS (MKL, Accelerate) is left alone.
"""

import ctypes
import os
import re

MODE_VAR = "KERNELS_NUMBA_BLAS"
_SET_THREADS = ("openblas_set_num_threads", "scipy_openblas_set_num_threads64_",
                "openblas_set_num_threads64_", "scipy_openblas_set_num_threads")
_state = {"single": False, "report": "not configured"}


def _loaded_openblas():
    """Paths of the OpenBLAS shared libraries mapped into this process (Linux)."""
    try:
        with open("/proc/self/maps") as maps:
            text = maps.read()
    except OSError:
        return []
    return sorted(set(re.findall(r"(/\S*openblas\S*\.so\S*)", text)))


def configure():
    """Set OpenBLAS to one thread unless told not to; returns what was done."""
    import numpy  # noqa: F401  (loads the BLAS whose threads we set)

    mode = os.environ.get(MODE_VAR, "split")
    if mode not in ("split", "native"):
        raise ValueError(f"{MODE_VAR}: expected 'split' or 'native'; received {mode!r}")
    if mode == "native":
        _state.update(single=False, report="native: BLAS threads itself")
        return _state["report"]
    for path in _loaded_openblas():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        for name in _SET_THREADS:
            setter = getattr(lib, name, None)
            if setter is not None:
                setter(1)
                _state.update(single=True, report=f"split: {os.path.basename(path)} at 1 thread")
                return _state["report"]
    _state.update(single=False, report="native: no OpenBLAS thread control found")
    return _state["report"]


def single_threaded():
    """True when BLAS runs one thread per call and GEMMs are split by kernels_numba."""
    return _state["single"]
