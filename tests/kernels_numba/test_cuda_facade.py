"""kernels_numba._cuda: the probe behind device selection, the doctor, the launch
recorder and the on-disk kernel cache."""

import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

import kernels_numba as kn
from kernels_numba import _cuda, device, ops
from tests.conftest import default_test_device


@pytest.fixture
def fake_probe(monkeypatch):
    """Set the cached probe result; device selection reads nothing else."""

    def set_result(status, reason):
        monkeypatch.setattr(_cuda, "_probe_result", (status, reason))
        monkeypatch.setattr(device, "_warned", False)

    return set_result


def test_broken_stack_falls_back_to_cpu_with_one_warning(fake_probe):
    fake_probe("broken", "compiling or launching a probe kernel failed: CUDA_ERROR_X")
    with pytest.warns(RuntimeWarning, match="unusable, training on the CPU: compiling or "
                                            "launching a probe kernel failed: CUDA_ERROR_X"):
        assert kn.resolve_device("auto") == "cpu"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a second resolve stays quiet
        assert kn.resolve_device("auto") == "cpu"
    assert not kn.cuda_available()


def test_cuda_on_a_broken_stack_raises_the_reason(fake_probe):
    fake_probe("broken", "the CUDA driver failed to initialise: CUDA_ERROR_NO_DEVICE")
    with pytest.raises(RuntimeError, match="CUDA not available: the CUDA driver failed to "
                                           "initialise: CUDA_ERROR_NO_DEVICE"):
        kn.resolve_device("cuda")


def test_no_gpu_at_all_is_silent(fake_probe):
    fake_probe("absent", "no CUDA driver library (libcuda.so) on this machine")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert kn.resolve_device("auto") == "cpu"


def test_working_stack_picks_cuda(fake_probe):
    fake_probe("ok", "")
    assert kn.resolve_device("auto") == "cuda"
    assert kn.resolve_device("cpu") == "cpu"


def test_probe_is_cached_and_says_why():
    first = _cuda.probe()
    assert _cuda.probe() is first
    status, reason = first
    assert status in ("ok", "absent", "broken")
    assert (status == "ok") == (reason == "")
    if _cuda.SIMULATOR:
        assert status == "ok"


def test_doctor_prints_versions_and_a_verdict():
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    run = subprocess.run([sys.executable, "-m", "kernels_numba.doctor"], capture_output=True,
                         text=True, timeout=300, env=env)
    lines = run.stdout.strip().splitlines()
    assert lines[-1].startswith("CUDA: "), run.stdout + run.stderr
    assert run.returncode == (0 if lines[-1].startswith("CUDA: usable") else 1)
    if _cuda.cuda is not None:
        for what in ("nvidia-nvvm", "driver CUDA version", "NVRTC version", "nvJitLink version",
                     "NVVM emits PTX ISA"):
            assert what in run.stdout, run.stdout


def test_driver_ptx_table():
    from kernels_numba.doctor import max_ptx_for_driver, ptx_version

    assert max_ptx_for_driver((13, 0)) == (9, 0)
    assert max_ptx_for_driver((12, 4)) == (8, 4)
    assert max_ptx_for_driver((12, 7)) == (8, 5)  # between table rows: the older one
    assert ptx_version("//\n.version 9.0\n.target sm_90\n") == (9, 0)


@pytest.mark.parametrize("markexpr,forced,want", [
    ("not cudasim and not ptx and not gpu", None, "cpu"), ("", None, "cpu"),
    ("ptx", None, "cpu"), ("cudasim", None, "auto"), ("cudasim or gpu", None, "auto"),
    ("gpu", None, "auto"), ("not cudasim", "cuda", "cuda")])
def test_conftest_pins_the_cpu_for_the_cpu_suite(markexpr, forced, want):
    assert default_test_device(markexpr, forced) == want


def test_disk_cache_stamp_covers_the_whole_package():
    stamp = _cuda.source_stamp()
    assert len(stamp) == 64 and _cuda.source_stamp() is stamp
    if not _cuda.DISK_CACHE:
        pytest.skip("disk cache off here (simulator, no numba-cuda, or KERNELS_NUMBA_CUDA_CACHE=0)")
    from kernels_numba.gpu import dense  # noqa: F401 - registers and decorates the kernels

    k = dense._GEMM_KERNELS[(False, False, "t64")]
    assert _cuda.CACHE_ERROR == ""
    assert k._cache._impl.locator.get_source_stamp() == ("kernels_numba", stamp)
    assert _cuda.cache_path(k)


@pytest.mark.cudasim
def test_record_launches_lists_kernels_and_can_skip_them():
    if not kn.cuda_available():
        pytest.skip("CUDA kernels cannot run here: no GPU and NUMBA_ENABLE_CUDASIM is not 1")
    x = kn.to_device(np.arange(6, dtype=np.float32).reshape(2, 3), "cuda")
    y = kn.to_device(np.zeros((2, 3), np.float32), "cuda")
    with kn.record_launches() as outer:
        with kn.record_launches(execute=False) as inner:
            ops.scale(y, x, 2.0)
        assert kn.to_host(y).sum() == 0  # not executed
        ops.scale(y, x, 2.0)
    np.testing.assert_array_equal(kn.to_host(y), 2 * kn.to_host(x))
    assert len(inner) == 1 and len(outer) == 2
    assert outer[0].name == outer[1].name == inner[0].name
    assert isinstance(outer[0].grid, (int, tuple)) and outer[0].block


def test_record_launches_outside_cuda_records_nothing():
    a = np.zeros(4, np.float32)
    with kn.record_launches() as calls:
        ops.scale(a, a, 2.0)  # CPU twin: no launches
    assert calls == []


def test_a_cpu_fit_never_imports_numba_cuda():
    # numba.cuda's import costs ~1.2 s (ml_dtypes' native init): a CPU-only cold start
    # must not pay it. Device selection ("auto") on a machine without libcuda says
    # "absent" without importing it; with a driver library it must import it to probe.
    code = ("import sys, numpy as np, kerasish as keras\n"
            "m = keras.Sequential([keras.layers.Dense(3, input_shape=(4,))])\n"
            "m.compile('adam', 'mse')\n"
            "m.fit(np.ones((8, 4), 'f'), np.ones((8, 3), 'f'), verbose=0)\n"
            "from kernels_numba import _cuda\n"
            "print('numba.cuda' in sys.modules, _cuda._no_driver_library(), "
            "keras.config.get_device())\n")
    env = {k: v for k, v in os.environ.items()
           if k not in ("NUMBA_ENABLE_CUDASIM", "KERASISH_DEVICE")}
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=300, env=env)
    assert run.returncode == 0, run.stderr
    imported, no_driver, chosen = run.stdout.split()
    if no_driver == "True":
        assert (imported, chosen) == ("False", "cpu")
    assert _cuda.cuda is None or _cuda.cuda.__name__ == "numba.cuda"  # attribute loads it
