"""The isolated benchmark harness: every timed epoch in a fresh process, the peer untouched.

A comparison against PyTorch measures PyTorch as its users run it, or it measures
nothing: a PyTorch worker that imported kerasish for its data, with
`KERNELS_NUMBA_BLAS=native` in its environment, ran a GRU epoch in 2.9-3.0 s against
1.3-1.7 s alone (issue 35). So here:

- The data (and any initial weights) is written beforehand as .npy files (`write_arrays`);
  the peer reads them with NumPy.
- The peer is `benchmarks/peer_torch.py`, a file that imports only NumPy and torch, run
  as `python -I` (no PYTHONPATH, no user site, not even its own folder on sys.path) in a
  cleaned environment (`peer_env`: none of KERNELS_NUMBA_*, KERASISH_*, NUMBA_*, nor the
  thread variables our benchmarks set). It reports its top-level modules and the names
  in its environment, and `run` refuses a result whose process held any of ours.
- Each run is one fresh process that trains `epochs` epochs (default 2) and reports the
  timed one (the second: the first compiles and warms up). `alternate` runs the
  frameworks in turn, kerasish / peer, then peer / kerasish, ..., for >= 3 pairs, and
  gives the medians, their ratio and the median of the per-pair ratios.
- Every result line names the CPU model and its vector ISA from /proc/cpuinfo
  (`machine()`), since the ratios differ between machine kinds.
"""

import json
import os
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PEER = os.path.join(ROOT, "benchmarks", "peer_torch.py")
RESULT = "@@result "  # a worker's result line: this prefix, then JSON
OUR_PREFIXES = ("KERNELS_NUMBA_", "KERASISH_", "NUMBA_")
OUR_MODULES = ("kerasish", "kernels_numba", "benchmarks", "numba", "llvmlite")
# Thread settings our benchmarks put in the environment for kerasish (benchmarks/train.py
# sets OPENBLAS_NUM_THREADS and MKL_NUM_THREADS from --threads; kernels_numba once set
# OMP_WAIT_POLICY): the peer sets its threads itself (torch.set_num_threads).
OUR_THREAD_VARS = ("OMP_WAIT_POLICY", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
MIN_PAIRS = 3
_ISA = (("AVX2", ("avx2",)), ("AVX-512", ("avx512f",)), ("VNNI", ("avx512_vnni", "avx_vnni")),
        ("AMX", ("amx_tile",)))


def _cpuinfo(path="/proc/cpuinfo"):
    model, flags = None, set()
    try:
        with open(path) as info:
            for line in info:
                key, _, value = line.partition(":")
                key = key.strip()
                if key == "model name" and model is None:
                    model = value.strip()
                elif key == "flags" and not flags:
                    flags = set(value.split())
    except OSError:
        pass
    return model or "unknown CPU", flags


def isa(flags):
    """The vector ISA words of a CPU's /proc/cpuinfo flags: AVX2, AVX-512, VNNI, AMX."""
    return [name for name, any_of in _ISA if any(f in flags for f in any_of)] or ["no AVX2"]


def machine(path="/proc/cpuinfo"):
    """'AMD EPYC, 2 cores, AVX2 + AVX-512 + VNNI': what every result line names."""
    model, flags = _cpuinfo(path)
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count()
    return f"{model}, {cores} cores, {' + '.join(isa(flags))}"


def ours(name):
    return name.startswith(OUR_PREFIXES) or name in OUR_THREAD_VARS


def peer_env(extra=None):
    """The environment the peer runs in: ours, less every variable of ours and PYTHON*."""
    env = {k: v for k, v in os.environ.items() if not ours(k) and not k.startswith("PYTHON")}
    env.update(extra or {})
    return env


def our_env(extra=None):
    """kerasish's workers: the caller's environment, this checkout on PYTHONPATH."""
    path = os.pathsep.join(p for p in (ROOT, os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, **(extra or {})}


def peer_command(recipe, data_dir, **options):
    """`python -I benchmarks/peer_torch.py RECIPE --data DIR --option value ...`."""
    cmd = [sys.executable, "-I", PEER, recipe, "--data", str(data_dir)]
    for key, value in options.items():
        if value is not None:
            cmd += [f"--{key.replace('_', '-')}", str(value)]
    return cmd


def write_arrays(directory, **arrays):
    """Each array to DIR/NAME.npy (the peer loads them with np.load, no pickles)."""
    import numpy as np

    os.makedirs(directory, exist_ok=True)
    for name, array in arrays.items():
        np.save(os.path.join(directory, f"{name}.npy"), np.ascontiguousarray(array),
                allow_pickle=False)


def reply(**result):
    """A worker's result line (the peer prints the same format itself)."""
    sys.stdout.write(RESULT + json.dumps(result) + "\n")
    sys.stdout.flush()


def run(cmd, env, timeout=3600, peer=False):
    """One fresh worker process; its result dict. A peer result that shows any module or
    environment variable of ours is an error (the comparison would be void)."""
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=ROOT,
                          timeout=timeout, stdin=subprocess.DEVNULL)
    lines = [line for line in proc.stdout.splitlines() if line.startswith(RESULT)]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"benchmark worker {' '.join(cmd)} exited with {proc.returncode}:"
                           f"\n{proc.stderr[-3000:]}")
    result = json.loads(lines[-1][len(RESULT):])
    if peer:
        leaked = [m for m in result.get("modules", []) if m in OUR_MODULES]
        leaked += [k for k in result.get("env", []) if ours(k)]
        if leaked:
            raise RuntimeError(f"the peer worker held our modules or variables: {leaked}")
    return result


def alternate(runs, pairs=MIN_PAIRS, key="epoch_s", on_result=None):
    """runs: {name: (cmd, env, is_peer)} or {name: f(pair) -> (cmd, env, is_peer)}, two of
    them. Runs them in turn, one fresh process
    each, the order flipping every pair; returns {"names", "times": {name: [...]},
    "results": {name: [...]}, "median": {name: s}, "ratio", "pair_ratios", "pair_ratio"}
    with ratios first name / second."""
    if pairs < MIN_PAIRS:
        raise ValueError(f"alternate: expected at least {MIN_PAIRS} pairs; received {pairs}")
    names = list(runs)
    if len(names) != 2:
        raise ValueError(f"alternate: expected two runs; received {names}")
    results = {name: [] for name in names}
    for i in range(pairs):
        for name in (names if i % 2 == 0 else names[::-1]):
            spec = runs[name]
            cmd, env, peer = spec(i) if callable(spec) else spec
            results[name].append(run(cmd, env, peer=peer))
            if on_result is not None:
                on_result(i, name, results[name][-1])
    times = {name: [r[key] for r in results[name]] for name in names}
    med = {name: statistics.median(v) for name, v in times.items()}
    ratios = [a / b for a, b in zip(times[names[0]], times[names[1]])]
    return {"names": names, "times": times, "results": results, "median": med,
            "ratio": med[names[0]] / med[names[1]], "pair_ratios": ratios,
            "pair_ratio": statistics.median(ratios), "machine": machine(),
            "load_average": os.getloadavg()}


def result_line(label, res, unit="s", scale=1.0, timed="2nd epoch timed"):
    """One line: both medians, the ratio, the pairs, and the machine."""
    a, b = res["names"]
    m = res["median"]
    fmt = (lambda v: f"{v * scale:.0f} ms") if unit == "ms" else (lambda v: f"{v:.3f} s")
    load = res["load_average"]
    return (f"{label}: {a} {fmt(m[a])}, {b} {fmt(m[b])} (medians of {len(res['times'][a])} "
            f"fresh-process pairs, {timed}), ratio {res['ratio']:.2f} (median "
            f"per-pair {res['pair_ratio']:.2f}); CPU {res['machine']}; load "
            f"{load[0]:.1f} at the end")


def times_line(res, unit="s", scale=1.0):
    a, b = res["names"]
    fmt = (lambda v: f"{v * scale:.0f}") if unit == "ms" else (lambda v: f"{v:.2f}")
    return (f"  runs ({unit}): {a} " + " ".join(fmt(v) for v in res["times"][a]) +
            f" | {b} " + " ".join(fmt(v) for v in res["times"][b]))
