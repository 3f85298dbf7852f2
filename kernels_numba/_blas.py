"""NumPy's OpenBLAS at one thread per call during CPU work, and its cblas_sgemm for
kernels_numba.cpu.gemm.

OpenBLAS's own threading synchronises its workers inside every call by spinning and
yielding, and keeps them spinning ~0.1 s after it; numba's parallel loops between two
GEMMs then wait for a core, and on a 2-core machine with one other busy process a
CNN training step ran 7-20x slower. So while kernels_numba works (first_use.cpu_work():
kerasish's fit, evaluate, predict and the *_on_batch calls) the loaded OpenBLAS runs at
one thread, set through its exported C function, and kernels_numba.cpu.gemm runs one
cblas_sgemm per block of the product on numba's threads (one pool for all CPU work,
nothing spins).

`configure()`, at import, only finds and binds the functions: it changes nothing (an
OpenBLAS set to one thread at import made a NumPy 2048^2 matmul in user code 1.96x
slower). `limit_threads()` / `restore_threads()` set and put back the count.
KERNELS_NUMBA_BLAS=native keeps BLAS's own threading (then every GEMM is one np.matmul
call). A BLAS other than OpenBLAS (MKL, Accelerate), or an OpenBLAS without these
exports, is left alone.
"""

import ctypes
import os
import re

MODE_VAR = "KERNELS_NUMBA_BLAS"
_SET_THREADS = ("openblas_set_num_threads", "scipy_openblas_set_num_threads64_",
                "openblas_set_num_threads64_", "scipy_openblas_set_num_threads")
_GET_THREADS = ("openblas_get_num_threads", "scipy_openblas_get_num_threads64_",
                "openblas_get_num_threads64_", "scipy_openblas_get_num_threads")
# cblas_sgemm under the names NumPy's OpenBLAS builds export; "64_" ones take int64 sizes.
_SGEMM = ("cblas_sgemm", "scipy_cblas_sgemm64_", "cblas_sgemm64_", "scipy_cblas_sgemm")
ROW_MAJOR, NO_TRANS, TRANS = 101, 111, 112
_state = {"sgemm": None, "int_bits": 32, "report": "not configured", "core": None,
          "set_threads": None, "get_threads": None}
# OpenBLAS's AVX2 kernel sets, and what its AVX-512 one (SkylakeX) needs of the CPU.
_AVX2_SETS = ("Haswell", "Zen")
_AVX512_FLAGS = ("avx512f", "avx512bw", "avx512dq", "avx512vl")


def _loaded_openblas():
    """Paths of the OpenBLAS shared libraries mapped into this process (Linux)."""
    try:
        with open("/proc/self/maps") as maps:
            text = maps.read()
    except OSError:
        return []
    return sorted(set(re.findall(r"(/\S*openblas\S*\.so\S*)", text)))


def _find(lib, names):
    for name in names:
        fn = getattr(lib, name, None)
        if fn is not None:
            return name, fn
    return None, None


def _bind_sgemm(name, fn):
    _state["int_bits"] = 64 if "64" in name else 32
    # Pointers are declared as size_t: numba passes addresses as integers, and both
    # travel in the same 64-bit registers.
    size = ctypes.c_int64 if "64" in name else ctypes.c_int
    ptr = ctypes.c_size_t
    fn.restype = None
    fn.argtypes = [ctypes.c_int, ctypes.c_int, ctypes.c_int, size, size, size,
                   ctypes.c_float, ptr, size, ptr, size, ctypes.c_float, ptr, size]
    return fn


def configure():
    """Find the loaded OpenBLAS's thread setter and bind its cblas_sgemm, unless told not
    to; sets nothing (limit_threads does, during CPU work)."""
    import numpy  # noqa: F401  (loads the BLAS whose threads we set)

    mode = os.environ.get(MODE_VAR, "split")
    if mode not in ("split", "native"):
        raise ValueError(f"{MODE_VAR}: expected 'split' or 'native'; received {mode!r}")
    _state.update(set_threads=None, get_threads=None)
    if mode == "native":
        _state.update(sgemm=None, report="native: BLAS threads itself")
        return _state["report"]
    for path in _loaded_openblas():
        try:
            lib = ctypes.CDLL(path)
        except OSError:
            continue
        _, set_threads = _find(lib, _SET_THREADS)
        _, get_threads = _find(lib, _GET_THREADS)
        sgemm_name, sgemm = _find(lib, _SGEMM)
        if set_threads is not None and get_threads is not None and sgemm is not None:
            set_threads.argtypes, get_threads.restype = [ctypes.c_int], ctypes.c_int
            _state.update(sgemm=_bind_sgemm(sgemm_name, sgemm), core=kernel_set(lib),
                          set_threads=set_threads, get_threads=get_threads,
                          report=f"split: {os.path.basename(path)} at 1 thread during CPU "
                                 f"work, {sgemm_name}")
            return _state["report"]
    _state.update(sgemm=None, report="native: no OpenBLAS thread control found")
    return _state["report"]


def limit_threads():
    """OpenBLAS to one thread (split mode); returns the count it had, or None when there
    is nothing to set (native mode, another BLAS)."""
    get, set_ = _state["get_threads"], _state["set_threads"]
    if get is None:
        return None
    before = int(get())
    if before != 1:
        set_(1)
    return before


def restore_threads(before):
    """Put back the count limit_threads returned, unless the user has set one since."""
    get, set_ = _state["get_threads"], _state["set_threads"]
    if get is not None and before is not None and before != 1 and int(get()) == 1:
        set_(before)


def report():
    """What configure found, in words."""
    return _state["report"]


def kernel_set(lib):
    """What the benchmarks print of the OpenBLAS `lib`'s kernels, or None if it won't say:
    e.g. "Haswell (OPENBLAS_CORETYPE=Haswell; the CPU has AVX-512: OpenBLAS's SkylakeX
    kernels run sgemm ~2x faster)". An AVX2 set pinned by the variable on an AVX-512 CPU
    caps every GEMM near half the FMA peak (seen here, AMD Zen 5: 100-105 against 190-199
    GFLOP/s per core, 1024^3 sgemm); the variable is the user's to set, so it is named."""
    corename = getattr(lib, "gotoblas_corename", None)
    if corename is None:
        return None
    corename.restype = ctypes.c_char_p
    name = (corename() or b"?").decode()
    notes = []
    forced = os.environ.get("OPENBLAS_CORETYPE")
    if forced is not None:
        notes.append(f"OPENBLAS_CORETYPE={forced}")
    if name in _AVX2_SETS and all(f in _cpu_flags() for f in _AVX512_FLAGS):
        notes.append("the CPU has AVX-512: OpenBLAS's SkylakeX kernels run sgemm ~2x faster")
    return name + (f" ({'; '.join(notes)})" if notes else "")


def _cpu_flags(path="/proc/cpuinfo"):
    try:
        with open(path) as info:
            for line in info:
                if line.startswith("flags"):
                    return set(line.split(":", 1)[1].split())
    except OSError:
        pass
    return set()


def blas_kernels():
    """The bound OpenBLAS's kernel set as kernel_set words it, or None."""
    return _state["core"]


def sgemm_function():
    """The bound cblas_sgemm (ctypes), or None when GEMMs are left to np.matmul."""
    return _state["sgemm"]


def sgemm_int_bits():
    """Width of the bound cblas_sgemm's integer arguments (64 for ILP64 builds)."""
    return _state["int_bits"]


def operand(a):
    """(transpose flag, leading dimension) of a 2-D float32 view BLAS reads in place, or None."""
    s0, s1 = a.strides
    if s1 == 4 and s0 >= 4 * max(a.shape[1], 1):
        return NO_TRANS, s0 // 4
    if s0 == 4 and s1 >= 4 * max(a.shape[0], 1):
        return TRANS, s1 // 4
    return None
