"""kernels_numba.cpu.sgemm_tiles: our cblas_sgemm-shaped register-tile GEMM, called
directly (every layout, partial tiles and panels, K blocks, alpha/beta, leading
dimensions, IEEE specials) against float64 products; and gemm's choice between it and
OpenBLAS (KERNELS_NUMBA_GEMM)."""

import os
import subprocess
import sys

import numba
import numpy as np
import pytest

from kernels_numba._blas import NO_TRANS, ROW_MAJOR, TRANS
from kernels_numba.cpu import gemm as gemm_module
from kernels_numba.cpu import sgemm_tiles
from kernels_numba.testing import randn

pytestmark = pytest.mark.filterwarnings("ignore::numba.NumbaPerformanceWarning")


def _call(c, a, b, alpha=1.0, beta=0.0):
    """c = alpha a @ b + beta c through the tiles; a, b may be transposed views."""
    ta, lda = (NO_TRANS, a.strides[0] // 4) if a.strides[1] == 4 else (TRANS, a.strides[1] // 4)
    tb, ldb = (NO_TRANS, b.strides[0] // 4) if b.strides[1] == 4 else (TRANS, b.strides[1] // 4)
    m, n = c.shape
    sgemm_tiles.sgemm.function(ROW_MAJOR, ta, tb, m, n, a.shape[1], alpha, a.ctypes.data, lda,
                               b.ctypes.data, ldb, beta, c.ctypes.data, c.strides[0] // 4)


def _operands(m, k, n, layout, seed=0):
    a = randn((k, m) if layout[0] == "t" else (m, k), seed=seed)
    b = randn((n, k) if layout[1] == "t" else (k, n), seed=seed + 1)
    return (a.T if layout[0] == "t" else a), (b.T if layout[1] == "t" else b)


def _check(got, want, k, what):
    # float32 sums of k products: error grows like sqrt(k) ulps of the terms
    tol = 2e-6 * (1 + np.sqrt(k)) * max(1.0, float(np.abs(want).max(initial=0)))
    err = np.abs(got.astype(np.float64) - want).max(initial=0)
    assert err <= tol, f"{what}: max error {err:.3g} > {tol:.3g}"


# rows around the 6-row tile, columns around the 16-float vector and 64-column panel,
# K around the 384 block (and 0: C = beta C)
SHAPES = [(1, 1, 1), (5, 7, 15), (6, 9, 16), (7, 385, 17), (13, 1, 63), (12, 384, 64),
          (19, 769, 65), (25, 33, 130), (3, 0, 20)]


@pytest.mark.parametrize("m,k,n", SHAPES, ids=[f"{m}x{k}x{n}" for m, k, n in SHAPES])
@pytest.mark.parametrize("layout", ["nn", "tn", "nt", "tt"])
def test_tiles_match_float64(m, k, n, layout):
    a, b = _operands(m, k, n, layout)
    want = a.astype(np.float64) @ b.astype(np.float64)
    c = np.full((m, n), np.nan, np.float32)  # beta = 0: C is never read
    _call(c, a, b)
    _check(c, want, k, f"{layout} {m}x{k}x{n}")
    c0 = randn((m, n), seed=9)
    c = c0.copy()
    _call(c, a, b, alpha=-1.5, beta=0.25)
    _check(c, 0.25 * c0.astype(np.float64) - 1.5 * want, k, f"{layout} alpha/beta")


def test_leading_dimensions_larger_than_the_rows():
    big_a, big_b, big_c = randn((40, 500), seed=3), randn((300, 90), seed=4), randn((50, 80), seed=5)
    a, b, c = big_a[3:16, 5:198], big_b[7:200, 2:69], big_c[4:17, 1:68]  # 13x193 @ 193x67
    before = big_c.copy()
    want = a.astype(np.float64) @ b.astype(np.float64)
    _call(c, a, b)
    _check(c, want, 193, "strided views")
    outside = np.ones(big_c.shape, bool)
    outside[4:17, 1:68] = False
    np.testing.assert_array_equal(big_c[outside], before[outside])  # nothing else written


def test_ieee_specials_propagate_and_beta_zero_ignores_c():
    a, b = randn((7, 20), seed=6), randn((20, 70), seed=7)
    a[2, 3], a[5, 0], b[4, 66] = np.nan, np.inf, -np.inf
    with np.errstate(invalid="ignore", over="ignore"):
        want = a.astype(np.float64) @ b.astype(np.float64)
    c = np.full((7, 70), np.nan, np.float32)
    _call(c, a, b)
    np.testing.assert_array_equal(np.isnan(c), np.isnan(want))
    np.testing.assert_array_equal(np.isinf(c), np.isinf(want))
    finite = np.isfinite(want)
    _check(np.where(finite, c, 0), np.where(finite, want, 0), 20, "finite part")


def test_results_do_not_depend_on_the_thread_split(monkeypatch):
    if not gemm_module.TILES:
        pytest.skip("gemm runs OpenBLAS here (no AVX-512 or KERNELS_NUMBA_GEMM=openblas)")
    a, b = _operands(301, 97, 130, "nt")
    out = []
    for threads in (1, 2, 3):
        monkeypatch.setattr(gemm_module.numba, "get_num_threads", lambda t=threads: t)
        c = np.empty((301, 130), np.float32)
        gemm_module.gemm(c, a, b)
        out.append(c)
    np.testing.assert_array_equal(out[0], out[1])
    np.testing.assert_array_equal(out[0], out[2])


def test_mode_variable_is_checked(monkeypatch):
    monkeypatch.setenv(sgemm_tiles.MODE_VAR, "fast")
    with pytest.raises(ValueError, match="KERNELS_NUMBA_GEMM: expected 'tiles' or 'openblas'"):
        sgemm_tiles.enabled()
    monkeypatch.setenv(sgemm_tiles.MODE_VAR, "openblas")
    assert not sgemm_tiles.enabled()
    monkeypatch.setenv(sgemm_tiles.MODE_VAR, "tiles")
    assert sgemm_tiles.enabled()


def test_default_follows_the_compile_target(monkeypatch):
    monkeypatch.delenv(sgemm_tiles.MODE_VAR, raising=False)
    monkeypatch.setattr(numba.config, "CPU_FEATURES", "+avx2,+fma,-avx512f")
    assert not sgemm_tiles.has_avx512() and not sgemm_tiles.enabled()
    monkeypatch.setattr(numba.config, "CPU_FEATURES", "+avx2,+avx512f,+avx512bw")
    assert sgemm_tiles.has_avx512() and sgemm_tiles.enabled()


def test_backend_is_named():
    words = gemm_module.backend()
    assert words.startswith(("kernels_numba's AVX-512", "OpenBLAS sgemm", "np.matmul"))
    assert ("AVX-512 register tiles" in words) == gemm_module.TILES


def test_the_openblas_path_still_works_when_chosen():
    # The other backend in a fresh process (the choice is made at import).
    code = ("import numpy as np; from kernels_numba.cpu import gemm as g\n"
            "assert not g.TILES and g.backend().startswith(('OpenBLAS', 'np.matmul')), g.backend()\n"
            "r = np.random.default_rng(0)\n"
            "for m, k, n in [(301, 97, 65), (9, 4000, 32), (7744, 288, 64)]:\n"
            "    a = r.random((m, k), dtype=np.float32); b = r.random((k, n), dtype=np.float32)\n"
            "    c = np.empty((m, n), np.float32); g.gemm(c, a, b)\n"
            "    w = a.astype(np.float64) @ b\n"
            "    assert abs(c - w).max() <= 1e-5 * abs(w).max(), (m, k, n)\n"
            "print('ok')\n")
    env = dict(os.environ, **{sgemm_tiles.MODE_VAR: "openblas"})
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-2000:]
