"""The one module that imports numba.cuda (_kernel_cache.py, its disk-cache part, reaches
into numba-cuda's cache classes): a thin jit/launch facade.

Everything CUDA-specific the rest of the package needs goes through here, so a
move from numba-cuda (maintenance mode) to its successor touches this file only.

- `cuda` is the numba.cuda module, or None when numba-cuda is missing or broken
  (`IMPORT_ERROR` keeps why).
- `kernel(*signatures)` declares a @cuda.jit kernel and records it, with every
  signature it is launched with, in KERNELS; the PTX test compiles that list, so
  no kernel escapes the float64 scan. Kernels are cached on disk (_kernel_cache.py,
  numba-cuda's cache with a package-wide stamp).
- `device_function` declares a @cuda.jit(device=True) helper.
- `launch(k, grid, block, *args)` launches with a cached configuration;
  `record_launches()` lists every launch (tests, benchmarks).
- `probe()` compiles and launches one kernel, once per process, and says why CUDA
  is unusable when it is (`python -m kernels_numba.doctor` prints it).
- Device buffers, events and the copy stream: kernels_numba/_cuda_memory.py, through
  `_numba_cuda()` here.
- Kernels are compiled lazily: eager signatures would need a driver at import.
- numba.cuda itself is imported lazily, on first use (`_numba_cuda()`; `_cuda.cuda`,
  `IMPORT_ERROR` and `DISK_CACHE` as attributes import it too): it costs ~1.2 s, most of
  it ml_dtypes' native init, which a CPU-only run would pay in every cold start. With
  no driver library on the machine, the probe says "absent" without importing it.
"""

import contextlib
import ctypes
import importlib.util
import os
import sys
import threading

from kernels_numba._kernel_cache import enable_disk_cache, source_stamp  # noqa: F401

SIMULATOR = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"

# What numba.cuda's import gave, once tried (_numba_cuda): "cuda" (the module or None),
# "IMPORT_ERROR" (why None) and "DISK_CACHE". Read as attributes (`_cuda.cuda`, `from
# kernels_numba._cuda import cuda`), they import it first: the module __getattr__.
_lazy = {}
_import_lock = threading.Lock()


def _numba_cuda():
    """The numba.cuda module, imported once, or None when numba-cuda is missing or broken
    (_lazy["IMPORT_ERROR"] keeps why). Importing it needs no driver."""
    if not _lazy:
        with _import_lock:
            if not _lazy:
                module, error = None, ""
                try:
                    from numba import cuda as module
                except ImportError as exc:  # not installed: the CPU twins only
                    error = f"numba-cuda is not installed ({exc})"
                except Exception as exc:  # noqa: BLE001 - installed but broken: keep why
                    error = f"numba-cuda failed to import: {type(exc).__name__}: {exc}"
                # On-disk kernel cache (kernels_numba/_kernel_cache.py: why the stamp is
                # package-wide). Reading or writing it needs a real device; the
                # simulator has none. KERNELS_NUMBA_CUDA_CACHE=0 turns it off.
                disk_cache = module is not None and not SIMULATOR and \
                    os.environ.get("KERNELS_NUMBA_CUDA_CACHE", "1") != "0"
                globals()["cuda"] = module  # the global _probe_body's kernel reads
                _lazy.update(cuda=module, IMPORT_ERROR=error, DISK_CACHE=disk_cache)
    return _lazy["cuda"]


def imported_module():
    """numba.cuda if it has been imported (by _numba_cuda), else None: for calls that
    have nothing to do before it (no device array or kernel can exist without it)."""
    return _lazy.get("cuda")


def __getattr__(name):
    if name in ("cuda", "IMPORT_ERROR", "DISK_CACHE"):
        _numba_cuda()
        return _lazy[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


# Keywords the simulator's jit rejects (numba-cuda-notes.md, fact 7).
_SIM_UNSUPPORTED = ("lineinfo", "launch_bounds", "max_registers", "forceinline", "lto")

# name -> KernelSpec; filled as the gpu/* modules are imported.
KERNELS = {}


class KernelSpec:
    """A registered kernel: the Python function, the signatures it is launched with and
    the dispatcher `kernel()` made (None for the probe, compiled only when it runs;
    benchmarks/gpu_check/precompile.py compiles each signature into the disk cache)."""

    def __init__(self, name, pyfunc, signatures):
        self.name = name
        self.pyfunc = pyfunc
        self.signatures = signatures
        self.dispatcher = None

    def __repr__(self):
        return f"KernelSpec({self.name}, {len(self.signatures)} signatures)"


class _Unavailable:
    """Stands in for a kernel when numba-cuda is not installed."""

    def __init__(self, name):
        self.name = name

    def __getitem__(self, config):
        raise RuntimeError(
            f"CUDA kernel {self.name} cannot run: {_lazy['IMPORT_ERROR']}. "
            "Install the `cuda` extra (pip install 'kerasish[cuda]') or set KERASISH_DEVICE=cpu."
        )


def _jit_options(options):
    if SIMULATOR:
        return {k: v for k, v in options.items() if k not in _SIM_UNSUPPORTED}
    return options


CACHE_ERROR = ""  # why the on-disk kernel cache failed, if it did


def cache_path(k):
    """Where kernel `k`'s disk cache lives (None: not cached)."""
    cache = getattr(k, "_cache", None)
    _numba_cuda()  # sets DISK_CACHE
    return getattr(cache, "cache_path", None) if _lazy["DISK_CACHE"] else None


def kernel(*signatures, **options):
    """Declare a CUDA kernel; `signatures` are numba signature strings used by the PTX check."""
    if not signatures:
        raise ValueError("kernel(): every kernel must declare at least one signature")

    def decorate(pyfunc):
        global CACHE_ERROR
        name = f"{pyfunc.__module__}.{pyfunc.__name__}"
        KERNELS[name] = KernelSpec(name, pyfunc, list(signatures))
        cuda = _numba_cuda()
        if cuda is None:
            return _Unavailable(name)
        k = cuda.jit(**_jit_options(options))(pyfunc)
        if _lazy["DISK_CACHE"]:
            CACHE_ERROR = enable_disk_cache(k) or CACHE_ERROR
        KERNELS[name].dispatcher = k
        return k

    return decorate


def device_function(pyfunc=None, **options):
    """Declare a @cuda.jit(device=True) helper (inlined into kernels)."""

    # inline="always": otherwise compile_ptx of a caller looks up the current device,
    # which fails on machines without a driver (the PTX check in CI).
    options.setdefault("inline", "always")

    def decorate(f):
        cuda = _numba_cuda()
        if cuda is None:
            return f
        return cuda.jit(device=True, **_jit_options(options))(f)

    return decorate(pyfunc) if pyfunc is not None else decorate


def ceil_div(a, b):
    return (a + b - 1) // b


def grid_1d(n, block=256):
    """(grid, block) covering n threads; never a zero-sized grid."""
    return max(1, ceil_div(n, block)), block


MAX_GRID_YZ = 65535  # CUDA's limit on gridDim.y and gridDim.z (x: 2**31 - 1)


def fold_yz(n):
    """(y, z) with y * z >= n and both <= MAX_GRID_YZ: n blocks over a grid's y and z
    (the kernel takes block y + z * gridDim.y and returns past n). A clear error past
    MAX_GRID_YZ**2 rather than a launch failure deep in the driver."""
    limit = MAX_GRID_YZ
    if n <= limit:
        return max(1, n), 1
    z = ceil_div(n, limit)
    if z > limit:
        raise ValueError(f"launch: expected at most {limit * limit} blocks over grid y*z; "
                         f"received {n}")
    return ceil_div(n, z), z


class LaunchRecord:
    """One `launch(...)`: the kernel's name, grid and block."""

    __slots__ = ("name", "grid", "block")

    def __init__(self, name, grid, block):
        self.name, self.grid, self.block = name, grid, block

    def __repr__(self):
        return f"LaunchRecord({self.name}, grid={self.grid}, block={self.block})"


_recorders = []  # active record_launches() lists, innermost last


def kernel_name(k):
    f = getattr(k, "py_func", None)
    return getattr(f, "__name__", None) or getattr(k, "name", None) or repr(k)


@contextlib.contextmanager
def record_launches(execute=True):
    """Record every launch() in the block: `with record_launches() as calls: ...`.

    `calls` is a list of LaunchRecord. execute=False skips the kernels themselves (a
    no-op launcher, for measuring the host work around them). Not thread-safe by
    design: recorders are process-wide, like the launches they count.
    """
    calls = []
    _recorders.append((calls, execute))
    try:
        yield calls
    finally:
        _recorders.remove((calls, execute))


def launch(k, grid, block, *args, shared_bytes=0):
    """Launch kernel `k` on the compute stream; `k[...]` is an lru-cached configuration
    in numba-cuda. Active `capture_launches()` lists keep the launch for replay."""
    if _captures:
        for captured in _captures:
            captured.add(k, grid, block, shared_bytes, args)
    if _recorders:
        record = LaunchRecord(kernel_name(k), grid, block)
        for calls, _ in _recorders:
            calls.append(record)
        if not _recorders[-1][1]:
            return
    k[grid, block, compute_stream(), shared_bytes](*args)


# -- compute stream --------------------------------------------------------------------
# Kernels run on one non-default stream: CUDA graphs cannot capture the legacy default
# stream. It is a blocking stream, so host<->device copies on the default stream stay
# ordered with the kernels exactly as before (the legacy stream waits for blocking ones).
_stream = []


def compute_stream():
    if not _stream:
        cuda = _numba_cuda()
        _stream.append(cuda.stream() if cuda is not None else 0)
    return _stream[0]


# -- capture and replay: a launch plan built once per step shape -----------------------
_captures = []  # active LaunchList captures (kernels_numba/launches.py), innermost last


# CUDA graphs (KERASISH_CUDA_GRAPHS=1, off by default): a replayed list is captured once
# into a cuda.core graph on the compute stream and then launched as one graph. It needs a
# GPU to build or test (the simulator has no graphs), so it has never run: any failure
# turns it off with one warning and the list replays launch by launch.
CUDA_GRAPHS = os.environ.get("KERASISH_CUDA_GRAPHS") == "1" and not SIMULATOR


def _replay_graph(launches):
    global CUDA_GRAPHS
    builder = None
    try:
        if launches.graph is None:
            from numba.cuda.cudadrv.driver import _to_core_stream  # numba-cuda >= 0.30

            core = _to_core_stream(compute_stream())
            builder = core.create_graph_builder().begin_building()
            for k, grid, block, shared_bytes, args in launches.items:
                k[grid, block, builder, shared_bytes](*args)  # recorded, not run
            builder.end_building()
            launches.graph = (builder.complete(), core)
        graph, core = launches.graph
        graph.launch(core)
        return True
    except Exception as exc:  # noqa: BLE001 - an optional path: say why, then go on
        import warnings

        if builder is not None and getattr(builder, "is_building", False):
            try:  # leave the compute stream out of capture mode
                builder.end_building()
            except Exception:  # noqa: BLE001
                pass
        CUDA_GRAPHS = False
        warnings.warn(f"kernels_numba: CUDA graph replay is off ({type(exc).__name__}: "
                      f"{exc}); replaying launch by launch", RuntimeWarning, stacklevel=3)
        return False


# The probe: can this process really run kernels? Cached once per process.
_probe_result = None
_probe_lock = threading.Lock()


def _probe_body(a):
    i = cuda.grid(1)  # noqa: F821 - a global _numba_cuda() binds before any compile
    if i < a.size:
        a[i] = a[i] * 2 + 1  # int32 data: no float constants to promote


# The probe kernel is compiled only when a probe runs; registered now for the PTX check.
KERNELS[f"{__name__}._probe_body"] = KernelSpec(f"{__name__}._probe_body", _probe_body,
                                                ["void(int32[::1])"])


def _no_driver_library():
    """True when no libcuda loads on this Linux machine: no GPU can be used, so the probe
    need not import numba.cuda. NUMBA_CUDA_DRIVER names a library by hand: then ask numba."""
    if not sys.platform.startswith("linux") or os.environ.get("NUMBA_CUDA_DRIVER"):
        return False
    for name in ("libcuda.so.1", "libcuda.so"):
        try:
            ctypes.CDLL(name)
            return False
        except OSError:
            pass
    return True


def _absent_reason():
    """Why no GPU is present at all (nothing broken), or "" when one may be."""
    if importlib.util.find_spec("numba_cuda") is not None and _no_driver_library():
        return "no CUDA driver library (libcuda.so) on this machine"
    cuda = _numba_cuda()
    if cuda is None:
        error = _lazy["IMPORT_ERROR"]
        return error if error.startswith("numba-cuda is not installed") else ""
    try:
        from numba.cuda.cudadrv import driver

        err = getattr(driver.driver, "initialization_error", None)
    except Exception:  # noqa: BLE001
        err = None
    if err and "cannot be found" in str(err):
        return "no CUDA driver library (libcuda.so) on this machine"
    return ""


def _run_probe():
    """(status, reason): status "ok", "absent" (no GPU here) or "broken"."""
    if SIMULATOR:
        return "ok", ""
    absent = _absent_reason()
    if absent:
        return "absent", absent
    cuda = _numba_cuda()
    if cuda is None:
        return "broken", _lazy["IMPORT_ERROR"]
    try:
        if not cuda.is_available():
            from numba.cuda.cudadrv import driver

            err = getattr(driver.driver, "initialization_error", None)
            if err:
                return "broken", f"the CUDA driver failed to initialise: {str(err).strip()}"
            return "absent", "the CUDA driver found no GPU"
    except Exception as exc:  # noqa: BLE001 - report, do not hide
        return "broken", f"cuda.is_available() raised {type(exc).__name__}: {exc}"
    import numpy as np

    host = np.arange(64, dtype=np.int32)
    try:
        dev = cuda.to_device(host)
        kernel("void(int32[::1])")(_probe_body)[1, 64](dev)
        got = dev.copy_to_host()
    except Exception as exc:  # noqa: BLE001 - the message is what the user needs
        return "broken", (f"compiling or launching a probe kernel failed: "
                          f"{type(exc).__name__}: {str(exc).strip()}")
    if not np.array_equal(got, host * 2 + 1):
        return "broken", "a probe kernel ran but returned wrong values"
    return "ok", ""


def probe():
    """(status, reason) for this process, computed once: see _run_probe."""
    global _probe_result
    with _probe_lock:
        if _probe_result is None:
            _probe_result = _run_probe()
    return _probe_result


def available():
    """True when a real GPU (or the simulator) can run kernels: the probe passed."""
    return probe()[0] == "ok"


def unavailable_reason():
    """Why available() is False, for error messages ("" when it is True)."""
    return probe()[1]
