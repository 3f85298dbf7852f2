"""gpu_check step `precompile`: compile every registered CUDA kernel (kernels_numba._cuda
.KERNELS, every signature) for this GPU into numba-cuda's disk cache, in parallel worker
processes, so the steps after it load kernels instead of compiling ~170 of them lazily
in one process. Prints the count, the seconds and every failure.

    python -m benchmarks.gpu_check.precompile [--workers N] [--ptx] [--limit N] [--json F]

A kernel's signatures all go to one worker: numba-cuda keeps one cache index file per
kernel, which two processes must not write at once. `--ptx` compiles to sm_90 PTX
instead (compile_ptx: no GPU, no cache; the simulator dry run's stand-in, which must run
without NUMBA_ENABLE_CUDASIM). Workers are spawned, never forked: a forked CUDA context
is unusable.
"""

import argparse
import importlib
import multiprocessing
import os
import pkgutil
import sys
import time
from concurrent.futures import ProcessPoolExecutor, as_completed

from benchmarks.gpu_check._common import result


def registry():
    """{kernel name: KernelSpec} after importing every kernels_numba.gpu module."""
    import kernels_numba.gpu as gpu_pkg
    from kernels_numba import _cuda

    for mod in pkgutil.iter_modules(gpu_pkg.__path__):
        importlib.import_module(f"kernels_numba.gpu.{mod.name}")
    return _cuda.KERNELS


def compile_share(names, ptx):
    """In a worker: compile each named kernel's signatures; (name, sigs, s, error) each."""
    from kernels_numba import _cuda

    kernels, out = registry(), []
    for name in names:
        spec, t0, error = kernels[name], time.perf_counter(), ""
        try:
            for sig in spec.signatures:
                if ptx:
                    _cuda.cuda.compile_ptx(spec.pyfunc, sig, cc=(9, 0))
                else:
                    spec.dispatcher.compile(sig)  # saves into the disk cache
        except Exception as exc:  # noqa: BLE001 - every failure is reported, none stops
            error = f"{type(exc).__name__}: {str(exc).strip().splitlines()[0][:200]}"
        out.append((name, len(spec.signatures), time.perf_counter() - t0, error))
    return out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workers", type=int, default=min(12, os.cpu_count() or 1))
    p.add_argument("--ptx", action="store_true", help="compile_ptx for sm_90 (no GPU)")
    p.add_argument("--limit", type=int, default=0, help="only the first N kernels (dry run)")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    t0 = time.perf_counter()
    from kernels_numba import _cuda

    if _cuda.SIMULATOR:
        raise SystemExit("precompile: expected a run without NUMBA_ENABLE_CUDASIM=1 (the "
                         "simulator compiles nothing); received NUMBA_ENABLE_CUDASIM=1")
    if not args.ptx and not _cuda.DISK_CACHE:
        print(f"note: the disk cache is off ({_cuda.CACHE_ERROR or 'KERNELS_NUMBA_CUDA_CACHE=0'}"
              "): the workers' compiles are not kept")
    names = sorted(n for n, s in registry().items() if s.dispatcher is not None)
    if args.limit:
        names = names[:args.limit]
    workers = max(1, min(args.workers, len(names)))
    shares = [names[i::workers] for i in range(workers)]
    done, failures, sigs = [], [], 0
    ctx = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        futures = [pool.submit(compile_share, share, args.ptx) for share in shares]
        for fut in as_completed(futures):
            for name, n_sigs, seconds, error in fut.result():
                done.append((seconds, name))
                sigs += n_sigs
                if error:
                    failures.append(f"{name}: {error}")
                    print(f"FAILED {name}: {error}", flush=True)
    wall = time.perf_counter() - t0
    for seconds, name in sorted(done, reverse=True)[:10]:
        print(f"  {seconds:6.2f} s  {name}")
    what = "sm_90 PTX" if args.ptx else "the disk cache"
    result(f"{len(done)} kernels ({sigs} signatures) into {what} in {wall:.1f} s on "
           f"{workers} workers; {len(failures)} failed"
           + (f" (first: {failures[0][:120]})" if failures else ""),
           args.json, "precompile", {"kernels": len(done), "signatures": sigs,
                                     "seconds": wall, "workers": workers,
                                     "failures": failures})
    return 1 if failures or not done else 0


if __name__ == "__main__":
    sys.exit(main())
