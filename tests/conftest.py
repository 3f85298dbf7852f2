"""Shared fixtures. `device` runs a test on the CPU twin and, where CUDA kernels can
run (a GPU, or NUMBA_ENABLE_CUDASIM=1), on the CUDA kernels; the cuda case carries
the `cudasim` marker, so the CPU run deselects it and the simulator run selects it.

The default device (what `auto` and models built without set_device get) is pinned
to the CPU unless the run selects the `cudasim` or `gpu` marker, so on a GPU machine
the "CPU suite" really runs the CPU twins; a run with `-m cudasim` / `-m "cudasim or
gpu"` leaves KERASISH_DEVICE alone (default auto: the simulator or the GPU). Set
KERASISH_TEST_DEVICE=auto|cpu|cuda to force one.
"""

import os

import numpy as np
import pytest

os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")
os.environ.setdefault("NUMBA_CUDA_WARN_ON_IMPLICIT_COPY", "0")
# The auto-tuner (kernels_numba/autotune.py) off: the suite checks the fixed choices, the
# same whatever this machine's load (tests/kernels_numba/test_autotune.py turns it on, and
# checks every candidate it may choose); KERASISH_AUTOTUNE=1 runs the suite tuned. Its
# cache in a folder of this run's own: a run neither reads nor writes ~/.cache/kerasish.
os.environ.setdefault("KERASISH_AUTOTUNE", "0")
if "KERASISH_AUTOTUNE_DIR" not in os.environ:
    import tempfile

    os.environ["KERASISH_AUTOTUNE_DIR"] = tempfile.mkdtemp(prefix="kerasish-autotune-")

from kernels_numba import cuda_available  # noqa: E402


def default_test_device(markexpr, forced=None):
    """The KERASISH_DEVICE a pytest run gets: 'cpu' for the CPU suite, else 'auto'."""
    if forced:
        return forced
    expr = markexpr or ""
    selects_cuda = any(word in expr.replace("not cudasim", "").replace("not gpu", "")
                       for word in ("cudasim", "gpu"))
    return "auto" if selects_cuda else "cpu"


def pytest_configure(config):
    os.environ["KERASISH_DEVICE"] = default_test_device(
        config.getoption("markexpr", ""), os.environ.get("KERASISH_TEST_DEVICE"))


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.cudasim)])
def device(request):
    if request.param == "cuda" and not cuda_available():
        pytest.skip("CUDA kernels cannot run here: no GPU and NUMBA_ENABLE_CUDASIM is not 1")
    return request.param


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
