"""kernels_numba.cpu.gemm: the CPU twins' GEMM that splits the output into blocks run
in parallel on single-threaded BLAS; checked against float64 products."""

import threading

import numpy as np
import pytest

import kernels_numba
from kernels_numba import _blas
from kernels_numba.cpu import gemm as gemm_module
from kernels_numba.cpu.gemm import gemm
from kernels_numba.testing import assert_close, randn

# (m, k, n): tall, wide, batch 1, odd sizes; big enough to be split into blocks.
SHAPES = [(301, 97, 65), (33, 131, 517), (1, 1031, 1027), (7744, 288, 64),
          (9, 43265, 32), (289, 7745, 63)]  # the last two split K (weight gradients)


@pytest.mark.parametrize("m,k,n", SHAPES, ids=[f"{m}x{k}x{n}" for m, k, n in SHAPES])
@pytest.mark.parametrize("layout", ["nn", "tn", "nt"])
def test_gemm_matches_float64(m, k, n, layout):
    a = randn((k, m) if layout[0] == "t" else (m, k), seed=1)
    b = randn((n, k) if layout[1] == "t" else (k, n), seed=2)
    op_a = a.T if layout[0] == "t" else a
    op_b = b.T if layout[1] == "t" else b
    expected = op_a.astype(np.float64) @ op_b.astype(np.float64)
    c = np.full((m, n), np.nan, np.float32)  # beta = 0: old contents never read
    gemm(c, op_a, op_b)
    assert_close(c, expected, rtol=1e-4, atol=1e-3, what="gemm")
    c0 = randn((m, n), seed=3)
    acc = c0.copy()
    gemm(acc, op_a, op_b, accumulate=True)
    assert_close(acc, c0 + expected, rtol=1e-4, atol=1e-3, what="gemm accumulate")


def test_gemm_is_deterministic():
    a, b = randn((7744, 288), seed=4), randn((288, 64), seed=5)
    first, second = np.empty((7744, 64), np.float32), np.empty((7744, 64), np.float32)
    gemm(first, a, b)
    gemm(second, a, b)
    np.testing.assert_array_equal(first, second)


def test_blocks_cover_output_exactly_once():
    c = np.zeros((10, 3), np.float32)
    for parts in (2, 3, 4):
        for blk_c, _, _ in gemm_module._blocks(c, c, c.T, parts):
            blk_c += 1
    np.testing.assert_array_equal(c, 3.0)
    wide = np.zeros((3, 10), np.float32)
    for blk_c, _, _ in gemm_module._blocks(wide, wide, wide.T @ wide, 3):
        blk_c += 1
    np.testing.assert_array_equal(wide, 1.0)


def test_worker_error_surfaces(monkeypatch):
    # A block that fails on a pool thread re-raises in the caller, after every block ended.
    monkeypatch.setattr(gemm_module, "SPLIT_MIN_MACS", 0)
    monkeypatch.setattr(_blas, "single_threaded", lambda: True)
    monkeypatch.setattr(gemm_module.numba, "get_num_threads", lambda: 3)
    real_block, caller = gemm_module._block, threading.get_ident()

    def failing_off_caller(c, a, b, accumulate):
        if threading.get_ident() != caller:
            raise RuntimeError("worker failed")
        real_block(c, a, b, accumulate)

    monkeypatch.setattr(gemm_module, "_block", failing_off_caller)
    with pytest.raises(RuntimeError, match="worker failed"):
        gemm(np.zeros((6, 4), np.float32), np.ones((6, 3), np.float32), np.ones((3, 4), np.float32))


def test_blas_configuration_reported():
    assert kernels_numba.BLAS_THREADS.startswith(("split:", "native:"))


def test_blas_mode_variable_is_checked(monkeypatch):
    monkeypatch.setenv(_blas.MODE_VAR, "fast")
    with pytest.raises(ValueError, match="KERNELS_NUMBA_BLAS: expected 'split' or 'native'"):
        _blas.configure()
