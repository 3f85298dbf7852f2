"""Importing kerasish leaves the rest of the process alone (kernels_numba/first_use.py):
every BLAS/OpenMP pool threadpoolctl sees, os.environ, the thread affinity, torch's
thread count, the signal handlers and the child processes are the same after `import
kerasish` as before it, in split and in native BLAS mode. During fit NumPy's OpenBLAS
runs at one thread (split mode); after fit it is back at its count, torch's too."""

import json
import os
import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("threadpoolctl")
pytest.importorskip("torch")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

_CHILD = textwrap.dedent("""
    import json, os, signal, sys
    import numpy as np
    import threadpoolctl
    import torch

    torch.set_num_threads(1)  # a user's own setting, on torch's libgomp

    def pools():
        return sorted((p["internal_api"], p["filepath"], p["num_threads"])
                      for p in threadpoolctl.threadpool_info())

    def snap():
        handlers = {}
        for s in signal.valid_signals():
            try:
                handlers[int(s)] = repr(signal.getsignal(s))
            except (OSError, ValueError):
                pass
        with open(f"/proc/self/task/{os.getpid()}/children") as f:
            children = f.read().split()
        return {"pools": pools(), "env": dict(os.environ),
                "affinity": sorted(os.sched_getaffinity(0)),
                "torch_threads": torch.get_num_threads(), "signals": handlers,
                "children": children, "tasks": len(os.listdir("/proc/self/task"))}

    before = snap()
    import kerasish
    after_import = snap()

    inside = []
    numpy_blas = [p[1] for p in before["pools"] if p[0] == "openblas"]  # NumPy's, loaded
    cb = kerasish.callbacks.LambdaCallback(on_train_batch_begin=lambda batch, logs: inside.append(
        [p[2] for p in pools() if p[1] in numpy_blas]))
    model = kerasish.Sequential([kerasish.layers.Input((8,)),
                                 kerasish.layers.Dense(4, activation="relu"),
                                 kerasish.layers.Dense(3)])
    model.compile("adam", kerasish.losses.SparseCategoricalCrossentropy(from_logits=True))
    rng = np.random.default_rng(0)
    model.fit(rng.random((64, 8), dtype=np.float32), rng.integers(0, 3, 64), batch_size=16,
              epochs=1, verbose=0, callbacks=[cb])
    after_fit = snap()
    print("@@" + json.dumps({"before": before, "after_import": after_import,
                              "after_fit": after_fit, "inside": inside}))
""")


def _run(mode):
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_WAIT_POLICY", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    env.update(KERNELS_NUMBA_BLAS=mode, PYTHONPATH=ROOT, KERNELS_NUMBA_COMPILE_AHEAD="0")
    run = subprocess.run([sys.executable, "-c", _CHILD], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    line = [x for x in run.stdout.splitlines() if x.startswith("@@")][-1]
    return json.loads(line[2:])


@pytest.fixture(scope="module", params=["split", "native"])
def child(request):
    return request.param, _run(request.param)


def test_import_changes_nothing(child):
    _, out = child
    before, after = out["before"], out["after_import"]
    for key in before:
        assert after[key] == before[key], (key, before[key], after[key])


def test_fit_sets_blas_to_one_thread_inside_and_puts_everything_back(child):
    mode, out = child
    before, after = out["before"], out["after_fit"]
    blas = [p for p in before["pools"] if p[0] == "openblas"]
    if not blas:
        pytest.skip("NumPy's BLAS here is not OpenBLAS")
    assert out["inside"], "the callback never ran"
    if mode == "split":  # numba's threads do the parallel work; OpenBLAS's stay idle
        assert all(t == [1] * len(blas) for t in out["inside"]), out["inside"]
    else:  # native: BLAS threads itself
        assert all(t == [p[2] for p in blas] for t in out["inside"]), out["inside"]
    # pools that existed before are as they were (numba's start may add its own OpenMP
    # runtime's pool: that is new, not changed)
    assert [p for p in after["pools"] if p in before["pools"]] == before["pools"], \
        (before["pools"], after["pools"])
    for key in ("env", "affinity", "torch_threads", "signals"):
        assert after[key] == before[key], (key, before[key], after[key])
    assert "OMP_WAIT_POLICY" not in after["env"]
