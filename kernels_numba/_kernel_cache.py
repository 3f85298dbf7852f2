"""The on-disk kernel cache behind kernels_numba._cuda.kernel (split from _cuda.py, file size).

numba-cuda keys an entry by signature, CUDA runtime version, device cc, numba-cuda
version and the kernel's bytecode, and drops a file's entries when that file's
mtime/size change - but not when a device function or constant in ANOTHER file
changes (numba#8888). So every kernel's stamp is a hash of the whole package source:
any edit recompiles everything once. _cuda decides whether the cache is on
(DISK_CACHE) and keeps the reason it failed (CACHE_ERROR); _cuda re-exports source_stamp.
"""

import hashlib
from pathlib import Path

_source_stamp = None


def source_stamp():
    """sha256 of every .py file of kernels_numba (names and contents), computed once."""
    global _source_stamp
    if _source_stamp is None:
        root = Path(__file__).resolve().parent
        h = hashlib.sha256()
        for path in sorted(root.rglob("*.py")):
            h.update(str(path.relative_to(root)).encode())
            h.update(path.read_bytes())
        _source_stamp = h.hexdigest()
    return _source_stamp


class _StampedLocator:
    """numba's cache locator with the package stamp instead of one file's mtime/size."""

    def __init__(self, inner):
        self._inner = inner

    def get_source_stamp(self):
        return ("kernels_numba", source_stamp())

    def __getattr__(self, name):
        return getattr(self._inner, name)


def enable_disk_cache(dispatcher):
    """Give `dispatcher` numba-cuda's CUDACache with the package-wide stamp; "" or why not.

    Uses numba-cuda internals (dispatcher.CUDACache, CUDACacheImpl, 0.30.x); if they
    move, the kernel still works, uncached, and the returned reason says why.
    """
    try:
        from numba.cuda.dispatcher import CUDACache, CUDACacheImpl

        class _Impl(CUDACacheImpl):
            def __init__(self, py_func):
                super().__init__(py_func)
                self._locator = _StampedLocator(self._locator)

        class _Cache(CUDACache):
            _impl_class = _Impl

        dispatcher._cache = _Cache(dispatcher.py_func)
    except Exception as exc:  # noqa: BLE001 - caching is an optimization; keep why
        return f"{type(exc).__name__}: {exc}"
    return ""
