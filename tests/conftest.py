"""Shared fixtures. `device` runs a test on the CPU twin and, where CUDA kernels can
run (a GPU, or NUMBA_ENABLE_CUDASIM=1), on the CUDA kernels; the cuda case carries
the `cudasim` marker, so the CPU run deselects it and the simulator run selects it."""

import os

import numpy as np
import pytest

os.environ.setdefault("NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS", "0")
os.environ.setdefault("NUMBA_CUDA_WARN_ON_IMPLICIT_COPY", "0")

from kernels_numba import cuda_available  # noqa: E402


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.cudasim)])
def device(request):
    if request.param == "cuda" and not cuda_available():
        pytest.skip("CUDA kernels cannot run here: no GPU and NUMBA_ENABLE_CUDASIM is not 1")
    return request.param


@pytest.fixture
def rng():
    return np.random.default_rng(1234)
