"""A fresh machine's first fit: the reference CNN's first training step on an empty numba cache.

    python -m benchmarks.cold_start [--repeats 3] [--threads 2] [--model cnn|mlp]
        [--top 40] [--json FILE]

Each repeat runs two child processes on a new, empty NUMBA_CACHE_DIR: "cold" (nothing
cached: every kernel the step needs is compiled) then "warm" (the same directory: every
kernel loads from disk). A child times `import kerasish`, the model's construction and
compile(), and its first and second `train_on_batch` on fixed random data (batch 64).
The cold child also records numba's "numba:compile" events (one per real compile, a
cache hit fires none): per function and signature, the seconds from the start to the
end of its compile, inclusive of the jitted functions it calls that compile inside it
("incl"), and that time less its nested compiles ("self"), in CPU seconds of the
process (compiles are single-threaded; CPU seconds are far less affected than wall
time by other load on the machine). Medians over repeats; the breakdown is the first
repeat's. The load average is printed before and after. The cold child starts the
compile-ahead helper as a fresh machine does (kernels_numba/cpu/compile_ahead.py: a second
process compiling common parts into the same cache); the breakdown lists this process's
compiles, and each run line counts the parts the helper compiled.
KERNELS_NUMBA_COMPILE_AHEAD=0 in the environment measures one process alone.
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

BATCH = 64


def _parse(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--model", choices=("cnn", "mlp"), default="cnn")
    p.add_argument("--top", type=int, default=40, help="functions listed in the breakdown")
    p.add_argument("--json", default=None)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    return p.parse_args(argv)


class _CompileLog:
    """numba:compile events -> [(qualname, signature, inclusive s, self s, depth)], in
    process CPU seconds."""

    def __init__(self):
        from numba.core import event

        self.rows, self._stack = [], []
        outer = self

        class Listener(event.Listener):
            def on_start(self, ev):
                outer._stack.append((time.process_time(), [0.0]))

            def on_end(self, ev):
                t0, nested = outer._stack.pop()
                incl = time.process_time() - t0
                if outer._stack:
                    outer._stack[-1][1][0] += incl
                disp = ev.data["dispatcher"]
                name = f"{disp.py_func.__module__}.{disp.py_func.__qualname__}"
                sig = "(" + ", ".join(str(a) for a in ev.data["args"]) + ")"
                outer.rows.append((name, sig, incl, incl - nested[0], len(outer._stack)))

        self._listener = Listener()
        event.register("numba:compile", self._listener)


def child(args):
    t0 = time.perf_counter()
    log = _CompileLog()
    import numpy as np

    import kerasish  # noqa: F401
    from benchmarks.train import kerasish_model

    t_import = time.perf_counter() - t0
    t1 = time.perf_counter()
    model = kerasish_model(args.model, 0, "cpu")
    t_build = time.perf_counter() - t1
    rng = np.random.default_rng(0)
    shape = (BATCH, 784) if args.model == "mlp" else (BATCH, 28, 28, 1)
    x = rng.random(shape, dtype=np.float32)
    y = rng.integers(0, 10, BATCH)
    t2, c2 = time.perf_counter(), time.process_time()
    model.train_on_batch(x, y)
    t_step1, c_step1 = time.perf_counter() - t2, time.process_time() - c2
    t3 = time.perf_counter()
    model.train_on_batch(x, y)
    t_step2 = time.perf_counter() - t3
    from kernels_numba.cpu import compile_ahead

    print(json.dumps({"import_s": t_import, "build_s": t_build, "first_step_s": t_step1,
                      "first_step_cpu_s": c_step1,
                      "second_step_s": t_step2, "total_s": time.perf_counter() - t0,
                      "compiles": log.rows, "helper": compile_ahead.helper_compiled(),
                      "waited": compile_ahead.loaded_from_helper}))


def _run_child(args, cache):
    cmd = [sys.executable, "-m", "benchmarks.cold_start", "--child", "--model", args.model]
    env = {**os.environ, "NUMBA_CACHE_DIR": cache}
    for var in ("NUMBA_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[var] = str(args.threads)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    run = subprocess.run(cmd, capture_output=True, text=True, cwd=root, env=env, check=False)
    if run.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{run.stderr[-3000:]}")
    return json.loads(run.stdout.strip().splitlines()[-1]), run.stderr


def _median(values):
    values = sorted(values)
    n = len(values)
    return values[n // 2] if n % 2 else 0.5 * (values[n // 2 - 1] + values[n // 2])


def main(argv=None):
    args = _parse(argv)
    if args.child:
        return child(args)
    load0 = os.getloadavg()
    runs = {"cold": [], "warm": []}
    stderr = ""
    for r in range(args.repeats):
        with tempfile.TemporaryDirectory(prefix="kerasish-cold-") as cache:
            for kind in ("cold", "warm"):
                res, err = _run_child(args, cache)
                runs[kind].append(res)
                stderr = stderr or err
                print(f"  repeat {r} {kind}: first step {res['first_step_s']:.2f} s "
                      f"(CPU {res['first_step_cpu_s']:.2f} s), "
                      f"import {res['import_s']:.2f} s, {len(res['compiles'])} compiles here, "
                      f"{len(res['helper'])} by the compile-ahead helper "
                      f"({len(res['waited'])} waited for)",
                      flush=True)
    load1 = os.getloadavg()
    print(f"\n{args.model.upper()} first training step, batch {BATCH}, {args.threads} threads, "
          f"{args.repeats} repeats; load average {load0[0]:.2f} before, {load1[0]:.2f} after")
    summary = {}
    for kind in ("cold", "warm"):
        s = {k: _median([r[k] for r in runs[kind]]) for k in
             ("import_s", "build_s", "first_step_s", "first_step_cpu_s", "second_step_s",
              "total_s")}
        s["first_steps"] = [r["first_step_s"] for r in runs[kind]]
        summary[kind] = s
        print(f"  {kind:4s} cache: first step {s['first_step_s']:6.2f} s (runs: "
              + " ".join(f"{t:.2f}" for t in s["first_steps"])
              + f"; CPU {s['first_step_cpu_s']:.2f} s), import {s['import_s']:.2f} s, build+compile() {s['build_s']:.2f} s, "
              f"second step {1e3 * s['second_step_s']:.1f} ms")
    rows = runs["cold"][0]["compiles"]
    top = [r for r in rows if r[4] == 0]
    print(f"\ncompiles in the cold first step (repeat 0): {len(rows)} functions "
          f"({len(top)} called from Python), {sum(r[3] for r in rows):.2f} CPU s in numba")
    print(f"  {'incl s':>7s} {'self s':>7s}  function(signature), CPU seconds")
    for name, sig, incl, own, depth in sorted(rows, key=lambda r: -r[3])[:args.top]:
        indent = "  " * depth
        print(f"  {incl:7.2f} {own:7.2f}  {indent}{name.replace('kernels_numba.', '')}{sig}")
    by_module = {}
    for name, _, _, own, _ in rows:
        module = name.rsplit(".", 2)[0] if ".<locals>" in name else name.rsplit(".", 1)[0]
        module = module.split(".<locals>")[0].rsplit(".", 1)[0] if "<locals>" in name else module
        by_module[module] = by_module.get(module, 0.0) + own
    print("  by module (self CPU s): " + ", ".join(
        f"{m.replace('kernels_numba.', '')} {t:.2f}"
        for m, t in sorted(by_module.items(), key=lambda kv: -kv[1])))
    if stderr.strip():
        print("\nchild stderr (first cold run):\n" + stderr.strip()[-1500:])
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"summary": summary, "runs": runs, "load": [load0, load1]}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
