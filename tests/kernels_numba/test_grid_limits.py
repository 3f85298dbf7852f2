"""CUDA's 65,535 limit on gridDim.y and gridDim.z: attention folds B*H over y and z
(_cuda.fold_yz), the other launches with an unbounded y (matmul column tiles, the RNN
GEMM's row tiles, sum_squares' segments) refuse with an error naming the op. The fold
runs under the simulator with the limit patched down to 3, against float64 NumPy and
finite differences (tests/kernels_numba/test_attention.py's references)."""

import numpy as np
import pytest

from kernels_numba import _cuda, cuda_available, record_launches
from kernels_numba.ops import norms as norm_ops
from kernels_numba.testing import assert_close, host, numeric_grad, on, randn
from tests.kernels_numba.test_attention import _grads, _ref, _run


@pytest.mark.parametrize("n,want", [(1, (1, 1)), (65535, (65535, 1)), (65536, (32768, 2)),
                                    (3 * 65535 + 1, (49152, 4))])
def test_fold_yz_covers_n_within_the_limit(n, want):
    y, z = _cuda.fold_yz(n)
    assert (y, z) == want and y * z >= n and y <= 65535 and z <= 65535


def test_fold_yz_refuses_past_the_limit_squared():
    with pytest.raises(ValueError, match=r"launch: expected at most 4294836225 blocks"):
        _cuda.fold_yz(65535 * 65535 + 1)


@pytest.fixture
def cuda_sim():
    if not cuda_available():
        pytest.skip("CUDA kernels cannot run here: no GPU and NUMBA_ENABLE_CUDASIM is not 1")


@pytest.mark.cudasim
def test_attention_folds_batch_times_heads_over_y_and_z(cuda_sim, monkeypatch):
    monkeypatch.setattr(_cuda, "MAX_GRID_YZ", 3)  # B*H = 5 -> y 3, z 2 (one block idle)
    b, tq, tk, h, d = 5, 3, 4, 1, 2
    q, k = randn((b, tq, h, d), seed=1), randn((b, tk, h, d), seed=2)
    v, g = randn((b, tk, h, d), seed=3), randn((b, tq, h, d), seed=4)
    mask = (np.random.default_rng(5).random((b, tq, tk)) > 0.3).astype(np.float32)
    mask[:, :, 0] = 1.0
    with record_launches() as calls:
        bufs = _run("cuda", q, k, v, mask, causal=True)
        dq, dk, dv = _grads("cuda", bufs, g, causal=True)
    grids = {c.name: c.grid for c in calls}
    assert grids["_forward_kernel"][1:] == (3, 2), grids
    assert grids["_dq_kernel"][1:] == grids["_dkdv_kernel"][1:] == (3, 2), grids
    assert_close(host(bufs[4]), _ref(q, k, v, mask, True), rtol=1e-4, atol=1e-5, what="out")
    loss = lambda qq, kk, vv: np.sum(_ref(qq, kk, vv, mask, True) * g)  # noqa: E731
    assert_close(dq, numeric_grad(lambda t: loss(t, k, v), q), rtol=2e-3, atol=2e-4, what="dq")
    assert_close(dk, numeric_grad(lambda t: loss(q, t, v), k), rtol=2e-3, atol=2e-4, what="dk")
    assert_close(dv, numeric_grad(lambda t: loss(q, k, t), v), rtol=2e-3, atol=2e-4, what="dv")


@pytest.mark.cudasim
def test_sum_squares_refuses_more_segments_than_grid_rows(cuda_sim, monkeypatch):
    from kernels_numba.gpu import norms

    monkeypatch.setattr(norms, "MAX_GRID_YZ", 2)
    segments = on("cuda", np.array([[0, 1], [1, 2], [2, 3]], np.int64))
    with pytest.raises(ValueError, match=r"sum_squares: expected at most 2 segments .*; "
                                         r"received 3"):
        norm_ops.sum_squares(on("cuda", np.zeros(3, np.float32)),
                             on("cuda", np.ones(3, np.float32)), segments)


@pytest.mark.cudasim
def test_rnn_gemm_and_matmul_refuse_past_the_grid_rows(cuda_sim, monkeypatch):
    from kernels_numba.gpu import dense, rnn_sequence

    monkeypatch.setattr(rnn_sequence, "MAX_GRID_YZ", 1)
    c = on("cuda", np.zeros((rnn_sequence.TILE + 1, 2), np.float32))  # two row tiles
    with pytest.raises(ValueError, match=r"rnn gemm: expected at most 16 rows .*; received 17"):
        rnn_sequence._sgemm(c, on("cuda", np.ones((17, 3), np.float32)),
                            on("cuda", np.ones((3, 2), np.float32)))
    monkeypatch.setattr(dense, "MAX_GRID_YZ", 1)
    from kernels_numba import ops

    n = 1000  # more than one column tile of any GEMM tile shape
    with pytest.raises(ValueError, match=r"matmul: expected at most \d+ columns in c; "
                                         r"received 1000"):
        ops.matmul(on("cuda", np.zeros((2, n), np.float32)),
                   on("cuda", np.ones((2, 3), np.float32)), on("cuda", np.ones((3, n), np.float32)))
