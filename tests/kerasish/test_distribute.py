"""kerasish.distribute: sharding (in process) and MPIStrategy under `mpirun -n 2`.

The mpirun tests start tests/kerasish/mpi_scripts/train_small_cnn.py (a tiny CNN, 51
samples, global batch 8: six full batches and a partial one of 3 rows split 2/1) with
one numba thread per rank, and compare with the same script in one process. They skip
with the reason when mpirun or mpi4py is missing (scripts/test.sh installs both).
"""

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import time

import numpy as np
import pytest

from kerasish.data import DataLoader
from kerasish.distribute import sharding

SCRIPT = os.path.join(os.path.dirname(__file__), "mpi_scripts", "train_small_cnn.py")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# -- sharding, in process ------------------------------------------------------------------


@pytest.mark.parametrize("n, batch, size", [(51, 8, 2), (52, 12, 3), (16, 8, 4), (11, 4, 2)])
def test_shards_cover_the_single_process_epoch(n, batch, size):
    x = np.arange(n, dtype=np.float32)[:, None]
    single = DataLoader(x, batch_size=batch, shuffle=True, seed=5, prefetch=0)
    shards = [sharding.ShardedLoader(DataLoader(x, batch_size=batch, shuffle=True, seed=5,
                                                prefetch=0), r, size) for r in range(size)]
    for _ in range(2):  # two epochs: the shared generator advances like the single one
        want = single.batch_indices()
        got = [s.batch_indices() for s in shards]
        assert all(len(g) == len(want) for g in got)  # same number of steps on every rank
        for k, batch_idx in enumerate(want):
            joined = np.concatenate([g[k] for g in got])  # rank r's slice, then r + 1's
            np.testing.assert_array_equal(joined, batch_idx)
            if len(batch_idx) == batch:
                assert {len(g[k]) for g in got} == {batch // size}
    assert shards[0].batch_size == batch // size and len(shards[0]) == len(single)


def test_shard_state_is_the_single_process_format():
    x = np.zeros((20, 1), np.float32)
    a = DataLoader(x, batch_size=4, seed=1, prefetch=0)
    shard = sharding.ShardedLoader(DataLoader(x, batch_size=4, seed=1, prefetch=0), 1, 2)
    list(a), list(shard)
    assert a.get_state() == shard.get_state()
    shard.set_state(DataLoader(x, batch_size=4, seed=9, prefetch=0).get_state())
    b = DataLoader(x, batch_size=4, seed=9, prefetch=0)
    np.testing.assert_array_equal(np.concatenate(b.batch_indices())[2:4],
                                  shard.batch_indices()[0])


def test_global_batch_must_split_evenly():
    with pytest.raises(ValueError, match=r"batch_size is the global batch.*10 is not a "
                                         r"multiple of 4.*\(e\.g\. 8 or 12\)"):
        sharding.ShardedLoader(DataLoader(np.zeros((40, 1), np.float32), batch_size=10), 0, 4)


def test_last_batch_smaller_than_the_ranks_is_dropped_on_every_rank():
    x = np.zeros((17, 1), np.float32)  # 4 global batches of 4, then 1 row for 2 ranks
    shards = [sharding.ShardedLoader(DataLoader(x, batch_size=4, prefetch=0, seed=0), r, 2)
              for r in range(2)]
    with pytest.warns(RuntimeWarning, match="1 samples, fewer than the 2 ranks"):
        got = shards[0].batch_indices()
    assert len(got) == len(shards[1].batch_indices()) == len(shards[0]) == 4


def test_generators_are_refused_by_name():
    with pytest.raises(TypeError, match="MPIStrategy shards NumPy arrays or a kerasish "
                                        "DataLoader.*received generator"):
        sharding.shard_loader((b for b in []), 0, 2)


# -- under mpirun -----------------------------------------------------------------------------


def _mpi_command(n):
    exe = shutil.which("mpirun") or shutil.which("mpiexec")
    if exe is None:
        pytest.skip("mpirun not found: scripts/test.sh installs openmpi-bin (apt-get)")
    if importlib.util.find_spec("mpi4py") is None:
        pytest.skip("mpi4py not installed: pip install 'kerasish[mpi]'")
    version = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    extra = ["--oversubscribe"] if "Open MPI" in version or "OpenRTE" in version else []
    return [exe, *extra, "-n", str(n)]


def _env(**extra):
    env = dict(os.environ, NUMBA_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1",
               OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", OMPI_MCA_rmaps_base_oversubscribe="1",
               PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env["KERASISH_DEVICE"] = "cpu"  # the pytest run may have set auto
    env.update(extra)
    return env


def _run(out, *args, ranks=None, env=None, timeout=300):
    os.makedirs(out, exist_ok=True)
    cmd = [sys.executable, SCRIPT, "--out", str(out), *args]
    if ranks is not None:
        cmd = _mpi_command(ranks) + cmd + ["--mpi"]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env or _env(),
                          timeout=timeout, cwd=ROOT)
    return proc, time.time()


def _result(out, rank=0):
    arrays = np.load(os.path.join(out, f"result_rank{rank}.npz"))
    with open(os.path.join(out, f"result_rank{rank}.json")) as f:
        return {k: arrays[k] for k in arrays.files}, json.load(f)


def _ok(proc):
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]


def _max_diff(a, b):
    return max(float(np.max(np.abs(a[k] - b[k]))) for k in a)


def test_two_ranks_train_like_one_process(tmp_path):
    """Same global batch and seed: the 2-rank weights equal the 1-process ones to
    float32 round-off (measured 1.5e-8 here after 14 Adam steps), bit-identical on
    both ranks; rank 0's logs equal the single-process logs."""
    proc, _ = _run(tmp_path / "one")
    _ok(proc)
    proc, _ = _run(tmp_path / "two", ranks=2)
    _ok(proc)
    ref, ref_meta = _result(tmp_path / "one")
    (w0, meta0), (w1, meta1) = _result(tmp_path / "two", 0), _result(tmp_path / "two", 1)
    diff = _max_diff(ref, w0)
    print(f"max |w(2 ranks) - w(1 process)| = {diff:.3g}")
    assert diff < 1e-6
    assert all(np.array_equal(w0[k], w1[k]) for k in w0)
    assert int(w0["iterations"]) == int(ref["iterations"]) == 14
    for key, values in ref_meta["history"].items():
        np.testing.assert_allclose(meta0["history"][key], values, rtol=1e-6)
    assert meta0["history"] == meta1["history"]
    # conv 27 + 3, dense 36 + 3 weights, each padded to 16 floats (32+16+48+16), + 1 weight
    assert meta0["stats"]["bytes_per_step"] == 4 * (112 + 1)
    assert "through host memory" in proc.stdout


def test_batchnorm_moving_statistics_are_the_global_batch_ones(tmp_path):
    """One step (the forward runs on identical weights): moving mean and variance equal
    the single-process ones although each rank normalized with its own batch."""
    proc, _ = _run(tmp_path / "one", "--bn", "--epochs", "1", "--steps", "1")
    _ok(proc)
    proc, _ = _run(tmp_path / "two", "--bn", "--epochs", "1", "--steps", "1", ranks=2)
    _ok(proc)
    ref, _ = _result(tmp_path / "one")
    w0, _ = _result(tmp_path / "two", 0)
    w1, _ = _result(tmp_path / "two", 1)
    # weights: conv kernel, conv bias, gamma, beta, moving_mean, moving_variance, ...
    for k in ("w4", "w5"):
        np.testing.assert_allclose(w0[k], ref[k], rtol=1e-6, atol=1e-7)
        np.testing.assert_array_equal(w0[k], w1[k])
    assert np.max(np.abs(ref["w4"])) > 1e-3  # the step did move the statistics


def test_stop_training_on_one_rank_stops_both(tmp_path):
    proc, _ = _run(tmp_path, "--mode", "stop", ranks=2)
    _ok(proc)
    for rank in (0, 1):
        weights, meta = _result(tmp_path, rank)
        assert int(weights["iterations"]) == 3 and meta["epochs_seen"] == 1


def test_a_rank_that_raises_ends_the_job_within_seconds(tmp_path):
    proc, end = _run(tmp_path, "--mode", "raise", ranks=2, timeout=120)
    assert proc.returncode != 0
    text = proc.stdout + proc.stderr
    assert "RuntimeError: boom on rank 1" in text
    assert "rank 1 of 2: an exception on this rank" in text
    with open(tmp_path / "raised_at") as f:
        assert end - float(f.read()) < 5.0


def test_a_hanging_rank_times_out_with_a_clear_message(tmp_path):
    proc, end = _run(tmp_path, "--mode", "hang", ranks=2, timeout=120)
    assert proc.returncode != 0
    assert "rank 0 of 2: timed out after 2 s in the gradient all-reduce" in proc.stderr
    with open(tmp_path / "hung_at") as f:
        assert end - float(f.read()) < 8.0  # the 2 s limit, then the abort


def test_checkpoint_and_resume_under_mpirun(tmp_path):
    """Interrupted at epoch 2 (of 3) and restarted: rank 0 reads the backup and every
    rank resumes at epoch 3 with rank 0's weights and shuffle state, ending where the
    same interrupted-and-resumed run in one process ends. Only rank 0 prints and writes."""
    one, two = tmp_path / "one", tmp_path / "two"
    for args, ranks in ((("--interrupt-epoch", "2"), None), ((), None),
                        (("--interrupt-epoch", "2", "--verbose", "2"), 2),
                        (("--verbose", "2"), 2)):
        proc, _ = _run(one if ranks is None else two, "--mode", "backup", "--epochs", "3",
                       *args, ranks=ranks)
        _ok(proc)
        if ranks and "--interrupt-epoch" in args:
            assert proc.stdout.count("Epoch 1/3") == 1 and "Epoch 3/3" not in proc.stdout
            assert sorted(os.listdir(two / "backup")) == ["latest.weights.h5",
                                                          "training_metadata.json"]
    assert proc.stdout.count("Epoch 3/3") == 1 and "Epoch 2/3" not in proc.stdout
    ref, _ = _result(one)
    (w0, meta0), (w1, meta1) = _result(two, 0), _result(two, 1)
    assert _max_diff(ref, w0) < 1e-6
    assert all(np.array_equal(w0[k], w1[k]) for k in w0)
    assert meta0["epochs_seen"] == meta1["epochs_seen"] == 1  # only epoch 3 ran
    assert meta0["ckpt_epoch"] == 2 and meta1["ckpt_epoch"] == 0  # rank 1: never called
    assert sorted(f for f in os.listdir(two) if f.startswith("ckpt")) == \
        ["ckpt-1.weights.h5", "ckpt-2.weights.h5", "ckpt-3.weights.h5"]
    assert not os.path.exists(two / "backup")  # the finished fit removed it


@pytest.mark.cudasim
@pytest.mark.parametrize("aware", ["0", "1"])
def test_cuda_staging_under_the_simulator(tmp_path, aware):
    """CUDA buffers: staged through pinned host memory (aware=0) or handed to MPI as
    device arrays (aware=1; the simulator's device memory is host memory). Three steps
    match the CPU single-process run."""
    proc, _ = _run(tmp_path / "cpu", "--epochs", "1", "--steps", "3")
    _ok(proc)
    env = _env(NUMBA_ENABLE_CUDASIM="1", KERASISH_DEVICE="cuda",
               KERASISH_MPI_CUDA_AWARE=aware)
    proc, _ = _run(tmp_path / "sim", "--epochs", "1", "--steps", "3", ranks=2, env=env,
                   timeout=600)
    _ok(proc)
    want = "CUDA-aware MPI on device buffers" if aware == "1" else "pinned host staging"
    assert want in proc.stdout
    ref, _ = _result(tmp_path / "cpu")
    w0, _ = _result(tmp_path / "sim", 0)
    w1, _ = _result(tmp_path / "sim", 1)
    assert _max_diff(ref, w0) < 1e-5
    assert all(np.array_equal(w0[k], w1[k]) for k in w0)
