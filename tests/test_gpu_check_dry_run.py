"""scripts/gpu_check.sh, the one prepared run for a lent GPU, tested before it meets one:
its dry run (GPU_CHECK_DRY=1: every step under the CUDA simulator at tiny sizes, the
deadline scaled down) writes one summary line per step in the issue's order, keeps the
global deadline, and leaves at most three files in $OUT (summary, logs, numbers).

The data is a tiny Fashion-MNIST written here (GPU_CHECK_DATA), so the `train` step runs
too. On a loaded machine a simulated step may hit its share of the deadline: TIMEOUT is
accepted there (the deadline machinery is what is tested), FAIL never is.
"""

import gzip
import json
import os
import shutil
import struct
import subprocess
import tarfile
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
STEPS = ["env", "doctor", "precompile", "replay", "graphs", "pytest", "train", "gemm",
         "determinism"]
DEADLINE = 240
GRACE = 10  # the script's timeout -k


def _write_idx(path, array):
    """A gzipped IDX file: magic (ubyte type 0x08, ndim), big-endian dims, the bytes."""
    header = struct.pack(">I", 0x0800 | array.ndim) + struct.pack(f">{array.ndim}I", *array.shape)
    with gzip.open(path, "wb") as f:
        f.write(header + array.astype(np.uint8).tobytes())


def tiny_fashion_mnist(root, n_train=256, n_test=64):
    folder = root / "fashion_mnist"
    folder.mkdir(parents=True)
    rng = np.random.default_rng(0)
    for stem, n in (("train", n_train), ("t10k", n_test)):
        _write_idx(folder / f"{stem}-images-idx3-ubyte.gz", rng.integers(0, 256, (n, 28, 28)))
        _write_idx(folder / f"{stem}-labels-idx1-ubyte.gz", rng.integers(0, 10, n))
    return root


# In the simulator stage (scripts/test.sh), where it overlaps the other worker's tests;
# on a GPU (the gpu_check pytest step itself) it is skipped: no script inside the script.
pytestmark = [
    pytest.mark.cudasim,
    pytest.mark.skipif(os.environ.get("NUMBA_ENABLE_CUDASIM") != "1",
                       reason="the dry run is the simulator stage's (NUMBA_ENABLE_CUDASIM=1)"),
]


@pytest.mark.skipif(shutil.which("timeout") is None, reason="needs coreutils timeout")
def test_dry_run_summarises_every_step_within_the_deadline(tmp_path):
    out = tmp_path / "out"
    env = {k: v for k, v in os.environ.items() if k not in (
        "NUMBA_ENABLE_CUDASIM", "KERASISH_DEVICE", "KERASISH_TEST_DEVICE", "OUT",
        "PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER")}
    env.update(GPU_CHECK_DRY="1", GPU_CHECK_DEADLINE=str(DEADLINE), OUT=str(out),
               GPU_CHECK_DATA=str(tiny_fashion_mnist(tmp_path / "data")),
               TMPDIR=str(tmp_path))
    t0 = time.monotonic()
    run = subprocess.run(["bash", str(ROOT / "scripts" / "gpu_check.sh")], cwd=ROOT, env=env,
                         capture_output=True, text=True, timeout=DEADLINE + 120)
    took = time.monotonic() - t0
    summary = (out / "summary.txt").read_text()
    lines = summary.splitlines()
    assert took <= DEADLINE + GRACE, f"{took:.0f} s past the {DEADLINE} s deadline:\n{summary}"
    assert lines[0].startswith("kerasish gpu_check ") and "DRY RUN" in lines[0], summary
    assert lines[-1].startswith("total "), summary
    steps = [line.split()[0] for line in lines[1:-1]]
    assert steps == STEPS, summary
    verdicts = {line.split()[0]: line.split()[1] for line in lines[1:-1]}
    assert verdicts["doctor"] == "PASS", summary  # it gates every later step
    assert "FAIL" not in verdicts.values(), summary
    for name, verdict in verdicts.items():
        assert verdict in ("PASS", "TIMEOUT") or (name == "graphs" and verdict == "SKIP" and
                                                  verdicts["replay"] == "TIMEOUT"), summary
    assert (run.returncode == 0) == all(v == "PASS" for v in verdicts.values()), run.stdout
    assert sorted(p.name for p in out.iterdir()) == ["logs.tgz", "results.json",
                                                      "summary.txt"]
    with tarfile.open(out / "logs.tgz") as tar:
        names = set(tar.getnames())
    assert {f"logs/{s}.log" for s in STEPS if verdicts[s] != "SKIP"} <= names, names
    numbers = json.loads((out / "results.json").read_text())
    passed = {name for name, verdict in verdicts.items() if verdict == "PASS"}
    assert passed & {"env", "precompile", "replay", "graphs", "determinism"} <= set(numbers), \
        (summary, numbers)
    if verdicts["replay"] == "PASS":
        assert numbers["replay"]["launches_per_step"] > 0
    if verdicts["graphs"] == "PASS":
        assert numbers["graphs"]["bit_equal"] is True
    assert not list(tmp_path.glob("gpu_check.*")), "the work folder was left behind"
