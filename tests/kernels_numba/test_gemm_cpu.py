"""kernels_numba.cpu.gemm: the CPU twins' GEMM, split into blocks (rows, columns or K)
run in parallel on single-threaded cblas_sgemm calls; checked against float64 products."""

import os

import numpy as np
import pytest

import kernels_numba
from kernels_numba import _blas
from kernels_numba.cpu import gemm as gemm_module
from kernels_numba.cpu.gemm import gemm
from kernels_numba.testing import assert_close, randn

# (m, k, n): tall (row blocks), wide (column blocks), batch 1, odd sizes, and two weight
# gradient shapes (small C, long K: K blocks with partial sums).
SHAPES = [(301, 97, 65), (33, 131, 517), (1, 1031, 1027), (7744, 288, 64),
          (9, 43265, 32), (289, 7745, 63)]


def _operands(m, k, n, layout):
    a = randn((k, m) if layout[0] == "t" else (m, k), seed=1)
    b = randn((n, k) if layout[1] == "t" else (k, n), seed=2)
    return (a.T if layout[0] == "t" else a), (b.T if layout[1] == "t" else b)


@pytest.mark.parametrize("threads", [None, 3])  # None: numba's default; 3 blocks on 2 cores
@pytest.mark.parametrize("m,k,n", SHAPES, ids=[f"{m}x{k}x{n}" for m, k, n in SHAPES])
@pytest.mark.parametrize("layout", ["nn", "tn", "nt", "tt"])
def test_gemm_matches_float64(monkeypatch, m, k, n, layout, threads):
    if threads:
        monkeypatch.setattr(gemm_module.numba, "get_num_threads", lambda: threads)
    op_a, op_b = _operands(m, k, n, layout)
    expected = op_a.astype(np.float64) @ op_b.astype(np.float64)
    c = np.full((m, n), np.nan, np.float32)  # beta = 0: old contents never read
    gemm(c, op_a, op_b)
    assert_close(c, expected, rtol=1e-4, atol=1e-3, what="gemm")
    c0 = randn((m, n), seed=3)
    acc = c0.copy()
    gemm(acc, op_a, op_b, accumulate=True)
    assert_close(acc, c0 + expected, rtol=1e-4, atol=1e-3, what="gemm accumulate")


def test_output_view_with_row_gaps():
    # C may be a block of a larger matrix (ldc > n): only that block is written.
    big = np.zeros((300, 100), np.float32)
    a, b = randn((300, 77), seed=4), randn((77, 60), seed=5)
    gemm(big[:, 20:80], a, b)
    assert_close(big[:, 20:80], a.astype(np.float64) @ b, rtol=1e-4, atol=1e-3, what="block")
    assert not big[:, :20].any() and not big[:, 80:].any()


def test_gemm_is_deterministic():
    for m, k, n in [(7744, 288, 64), (288, 7744, 64)]:
        a, b = randn((m, k), seed=4), randn((k, n), seed=5)
        first, second = np.empty((m, n), np.float32), np.empty((m, n), np.float32)
        gemm(first, a, b)
        gemm(second, a, b)
        np.testing.assert_array_equal(first, second)


def test_views_blas_cannot_read_in_place_fall_back():
    a, b = randn((40, 60), seed=6), randn((30, 20), seed=7)
    op_a, op_b = a[::2, ::3], b[::1, ::2][:20]  # (20, 20) and (20, 10) with gaps
    c = np.full((20, 10), np.nan, np.float32)
    gemm(c, op_a, op_b)
    assert_close(c, op_a.astype(np.float64) @ op_b.astype(np.float64), rtol=1e-4, atol=1e-4,
                 what="gemm on strided views")


def test_empty_inner_dimension():
    c = np.full((3, 4), 5.0, np.float32)
    gemm(c, np.zeros((3, 0), np.float32), np.zeros((0, 4), np.float32), accumulate=True)
    np.testing.assert_array_equal(c, 5.0)
    gemm(c, np.zeros((3, 0), np.float32), np.zeros((0, 4), np.float32))
    np.testing.assert_array_equal(c, 0.0)


def test_blas_configuration_reported():
    assert kernels_numba.BLAS_THREADS.startswith(("split:", "native:"))


def test_blas_mode_variable_is_checked(monkeypatch):
    monkeypatch.setenv(_blas.MODE_VAR, "fast")
    with pytest.raises(ValueError, match="KERNELS_NUMBA_BLAS: expected 'split' or 'native'"):
        _blas.configure()


class _FakeOpenBLAS:
    """Stands in for a loaded OpenBLAS: only its gotoblas_corename export."""

    def __init__(self, name):
        self.gotoblas_corename = lambda: name


@pytest.mark.parametrize("core,forced,flags,expected", [
    (b"SkylakeX", None, {"avx512f", "avx512bw", "avx512dq", "avx512vl"}, "SkylakeX"),
    (b"Haswell", None, {"avx2"}, "Haswell"),
    (b"Haswell", "Haswell", {"avx512f", "avx512bw", "avx512dq", "avx512vl"},
     "Haswell (OPENBLAS_CORETYPE=Haswell; the CPU has AVX-512: OpenBLAS's SkylakeX kernels "
     "run sgemm ~2x faster)"),
    (b"Zen", None, {"avx512f", "avx512bw", "avx512dq", "avx512vl"},
     "Zen (the CPU has AVX-512: OpenBLAS's SkylakeX kernels run sgemm ~2x faster)"),
    (b"Haswell", "Haswell", {"avx512f", "avx2"}, "Haswell (OPENBLAS_CORETYPE=Haswell)"),
])
def test_blas_kernel_set_names_a_pinned_avx2_set_on_an_avx512_cpu(monkeypatch, core, forced,
                                                                  flags, expected):
    # An AVX2 kernel set on an AVX-512 CPU halves every GEMM: the benchmarks print why.
    if forced is None:
        monkeypatch.delenv("OPENBLAS_CORETYPE", raising=False)
    else:
        monkeypatch.setenv("OPENBLAS_CORETYPE", forced)
    monkeypatch.setattr(_blas, "_cpu_flags", lambda: flags)
    assert _blas.kernel_set(_FakeOpenBLAS(core)) == expected
    assert _blas.kernel_set(object()) is None  # a BLAS that does not say


def test_blas_kernels_of_the_bound_openblas():
    if _blas.sgemm_function() is None:
        pytest.skip("no OpenBLAS bound (KERNELS_NUMBA_BLAS=native or another BLAS)")
    kernels = _blas.blas_kernels()
    if kernels is None:
        pytest.skip("this OpenBLAS does not export gotoblas_corename")
    assert kernels.split(" ")[0].isalnum()
    pinned = os.environ.get("OPENBLAS_CORETYPE")
    assert (f"OPENBLAS_CORETYPE={pinned}" in kernels) == (pinned is not None)
