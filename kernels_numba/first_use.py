"""What kernels_numba changes for the whole process, and when: nothing at import.

Importing kernels_numba (or kerasish) leaves NumPy's BLAS threads, os.environ, the
OpenMP runtimes, the thread affinity and every other library's threads as they were:
a user importing kerasish beside PyTorch, NumPy or scikit-learn keeps their speed (a
NumPy 2048^2 matmul took 1.96x as long after `import kerasish` when the BLAS was set
to one thread at import; a PyTorch GRU epoch 2x when `OMP_WAIT_POLICY=PASSIVE` was left
in os.environ for torch's libgomp).

`prepare()`, at kerasish's `Model.compile()` on the CPU or the first CPU op
(kernels_numba/dispatch.py), whichever comes first: once per process, starts numba's thread pool (in native BLAS mode with
`OMP_WAIT_POLICY=PASSIVE` in the environment only while its OpenMP runtime loads, then
the variable is put back) and puts back the OpenMP thread count and nesting levels that
numba's start sets on a libgomp already loaded (torch's: `torch.get_num_threads()` went
1 -> 2 when numba started after it); on a fresh machine it also starts the compile-ahead
helper (cpu/compile_ahead.py).

`cpu_work()`, a context: while inside it (kerasish's fit / evaluate / predict and the
*_on_batch calls enter it), NumPy's OpenBLAS runs at one thread per call (split mode,
kernels_numba/_blas.py: its spinning workers and numba's loops fought for the cores);
leaving the outermost one puts back the thread count it found. Outside one, a direct op
call leaves the BLAS threads as they are.
"""

import contextlib
import ctypes
import os
import re
import threading

from kernels_numba import _blas

_lock = threading.RLock()
_state = {"prepared": False, "depth": 0, "blas_before": None, "restored_omp": []}


def _loaded_libgomps():
    try:
        with open("/proc/self/maps") as maps:
            text = maps.read()
    except OSError:
        return []
    return sorted(set(re.findall(r"(/\S*libgomp\S*\.so\S*)", text)))


def _omp_settings():
    """{path: (library, max threads, max active levels)} of every libgomp mapped now."""
    out = {}
    for path in _loaded_libgomps():
        try:
            lib = ctypes.CDLL(path)
            out[path] = (lib, lib.omp_get_max_threads(), lib.omp_get_max_active_levels())
        except (OSError, AttributeError):
            continue
    return out


def _start_numba_threads():
    """numba's pool, started now; what its start changes in other runtimes is put back."""
    import numba
    from numba.np.ufunc import parallel

    if getattr(parallel, "_is_initialized", False):
        return  # started by someone else: nothing of ours to set or put back
    before = _omp_settings()
    passive = _blas.sgemm_function() is None and "OMP_WAIT_POLICY" not in os.environ
    if passive:
        # BLAS keeps its own threads: numba's OpenMP threads must then sleep right after
        # each loop, or they hold the cores the next BLAS call needs (conv fwd+bwd 2x
        # slower on 2 cores). libgomp reads the variable once, when it loads.
        os.environ["OMP_WAIT_POLICY"] = "PASSIVE"
    try:
        numba.get_num_threads()  # loads the threading layer and launches its threads
    finally:
        if passive:
            del os.environ["OMP_WAIT_POLICY"]
    # numba's omp layer calls omp_set_num_threads / omp_set_nested on whichever libgomp
    # its symbols bind to: torch's, when torch loaded first with global symbols. numba's
    # own loops pass their thread count explicitly, so the old values can go back.
    for path, (lib, threads, levels) in before.items():
        if (lib.omp_get_max_threads(), lib.omp_get_max_active_levels()) != (threads, levels):
            lib.omp_set_num_threads(threads)
            lib.omp_set_max_active_levels(levels)
            _state["restored_omp"].append(os.path.basename(path))


def prepare():
    """The one-time setup of the first CPU use (see the module docstring). Cheap after."""
    if _state["prepared"]:
        return
    with _lock:
        if _state["prepared"]:
            return
        _start_numba_threads()
        from kernels_numba.cpu import _parallel, compile_ahead

        compile_ahead.start_if_cold(_parallel._drive)  # a fresh machine: compile on 2 cores
        _state["prepared"] = True


@contextlib.contextmanager
def cpu_work():
    """Run kernels_numba CPU work inside: prepare(), and NumPy's OpenBLAS at one thread
    until the outermost cpu_work() exits (then its earlier count is put back)."""
    prepare()
    with _lock:
        if _state["depth"] == 0:
            _state["blas_before"] = _blas.limit_threads()
        _state["depth"] += 1
    try:
        yield
    finally:
        with _lock:
            _state["depth"] -= 1
            if _state["depth"] == 0:
                _blas.restore_threads(_state["blas_before"])
                _state["blas_before"] = None


def report():
    """What has been changed so far, in words (the benchmarks print it)."""
    parts = [f"BLAS: {_blas.report()}"]
    parts.append("numba threads started" if _state["prepared"] else "nothing started yet")
    if _state["depth"]:
        parts.append("inside cpu_work(): OpenBLAS at 1 thread")
    if _state["restored_omp"]:
        parts.append("OpenMP threads put back on " + ", ".join(_state["restored_omp"]))
    return "; ".join(parts)
