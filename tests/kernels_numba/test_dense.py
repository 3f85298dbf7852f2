import numpy as np
import pytest

from kernels_numba import cuda_available, ops
from kernels_numba.testing import assert_close, host, numeric_grad, on, randn

ACTS = {
    "linear": lambda z: z,
    "relu": lambda z: np.maximum(z, 0.0),
    "sigmoid": lambda z: 1.0 / (1.0 + np.exp(-z)),
    "tanh": np.tanh,
}


def _operands(m, n, k, trans_a, trans_b, seed=0):
    a = randn((k, m) if trans_a else (m, k), seed=seed)
    b = randn((n, k) if trans_b else (k, n), seed=seed + 1)
    return a, b


def _ref_product(a, b, trans_a, trans_b):
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    return (a64.T if trans_a else a64) @ (b64.T if trans_b else b64)


# matmul

@pytest.mark.parametrize("trans_b", [False, True], ids=["n", "t"])
@pytest.mark.parametrize("trans_a", [False, True], ids=["n", "t"])
@pytest.mark.parametrize("mnk", [(1, 1, 1), (5, 7, 3), (33, 17, 65)], ids=str)
def test_matmul_alpha_beta(device, mnk, trans_a, trans_b):
    m, n, k = mnk
    a, b = _operands(m, n, k, trans_a, trans_b)
    c0 = randn((m, n), seed=7)
    c = on(device, c0)
    ops.matmul(c, on(device, a), on(device, b), trans_a=trans_a, trans_b=trans_b,
               alpha=0.5, beta=-1.5)
    expected = 0.5 * _ref_product(a, b, trans_a, trans_b) - 1.5 * c0.astype(np.float64)
    assert_close(host(c), expected, rtol=1e-5, atol=1e-5, what=f"matmul {mnk} {trans_a} {trans_b}")


@pytest.mark.parametrize("mnk", [(65, 3, 2), (3, 66, 9)], ids=str)
def test_matmul_several_blocks(device, mnk):
    m, n, k = mnk
    a, b = _operands(m, n, k, False, True, seed=3)
    c = on(device, np.zeros((m, n), np.float32))
    ops.matmul(c, on(device, a), on(device, b), trans_b=True)
    assert_close(host(c), _ref_product(a, b, False, True), what=f"matmul {mnk}")


@pytest.mark.parametrize("alpha", [1.0, 2.0])
def test_matmul_beta_zero_ignores_old_c(device, alpha):
    a, b = _operands(4, 3, 5, False, False, seed=5)
    c = on(device, np.full((4, 3), np.nan, np.float32))
    ops.matmul(c, on(device, a), on(device, b), alpha=alpha)
    assert_close(host(c), alpha * _ref_product(a, b, False, False), what="beta=0")


def test_matmul_accumulates_with_beta_one(device):
    a, b = _operands(3, 5, 4, True, False, seed=9)
    c0 = randn((3, 5), seed=10)
    c = on(device, c0)
    for _ in range(2):
        ops.matmul(c, on(device, a), on(device, b), trans_a=True, beta=1.0)
    assert_close(host(c), c0 + 2 * _ref_product(a, b, True, False), what="c += a.T @ b twice")


@pytest.mark.cudasim
@pytest.mark.parametrize("trans_b", [False, True], ids=["n", "t"])
@pytest.mark.parametrize("trans_a", [False, True], ids=["n", "t"])
def test_gemm_large_tile_kernels(trans_a, trans_b):
    """The 128x128-tile kernels (picked for big products) on a small edge-only product."""
    if not cuda_available():
        pytest.skip("CUDA kernels cannot run here")
    from kernels_numba.gpu import dense as gpu_dense

    a, b = _operands(5, 7, 11, trans_a, trans_b, seed=11)
    c0 = randn((5, 7), seed=12)
    c = on("cuda", c0)
    gpu_dense.gemm(c, on("cuda", a), on("cuda", b), trans_a=trans_a, trans_b=trans_b,
                   alpha=2.0, beta=0.5, tile="t128")
    expected = 2.0 * _ref_product(a, b, trans_a, trans_b) + 0.5 * c0
    assert_close(host(c), expected, what="t128 tile")


@pytest.mark.cudasim
@pytest.mark.parametrize("beta", [0.0, 1.0, -2.0])
def test_gemm_split_k(beta):
    """Split-K (gridDim.z blocks store partials in a workspace, the last block of a
    tile adds them in split order: ONE launch), forced small; with a NaN-filled
    workspace (never read before written) and bit-identical on a repeat (no float
    atomics; the tile counters are back to 0 for the second run)."""
    if not cuda_available():
        pytest.skip("CUDA kernels cannot run here")
    from kernels_numba import record_launches
    from kernels_numba.gpu import dense as gpu_dense

    a, b = _operands(5, 7, 40, True, False, seed=13)
    c0 = randn((5, 7), seed=14)
    results = []
    for _ in range(2):
        c = on("cuda", np.full((5, 7), np.nan, np.float32) if beta == 0 else c0)
        ws = on("cuda", np.full(3 * 5 * 7, np.nan, np.float32))
        with record_launches() as calls:
            gpu_dense.gemm(c, on("cuda", a), on("cuda", b), trans_a=True, alpha=0.5,
                           beta=beta, splits=3, workspace=ws)
        assert [r.name for r in calls] == ["_gemm_tn_t64_kernel"]
        assert calls[0].grid[2] == 3
        results.append(host(c))
    expected = 0.5 * _ref_product(a, b, True, False) + (beta * c0 if beta else 0.0)
    assert_close(results[0], expected, what=f"split-K beta={beta}")
    np.testing.assert_array_equal(results[0], results[1])


@pytest.mark.cudasim
def test_gemm_split_k_small_workspace_splits_less():
    if not cuda_available():
        pytest.skip("CUDA kernels cannot run here")
    from kernels_numba import record_launches
    from kernels_numba.gpu import dense as gpu_dense

    a, b = _operands(3, 4, 30, True, False, seed=15)
    c = on("cuda", np.zeros((3, 4), np.float32))
    ws = on("cuda", np.zeros(2 * 3 * 4 + 5, np.float32))  # room for 2 of the 4 splits
    with record_launches() as calls:
        gpu_dense.gemm(c, on("cuda", a), on("cuda", b), trans_a=True, splits=4, workspace=ws)
    assert calls[0].grid[2] == 2
    assert_close(host(c), _ref_product(a, b, True, False), what="split-K, 2 splits")


def test_split_k_heuristic():
    from kernels_numba.ops.dense import MAX_SPLITS, pick_splits, split_k

    assert pick_splits(5, 86528) > 1  # conv weight gradient: 5 output tiles, long K
    assert pick_splits(5, 86528) <= MAX_SPLITS
    assert pick_splits(4, 64) == 1  # short K: not worth a second launch
    assert pick_splits(1024, 1 << 20) == 1  # the output tiles already fill the GPU
    assert split_k(288, 64, 7744) == 15  # the reference CNN's second conv weight gradient


def test_workspace_shapes():
    assert ops.matmul_workspace_shape(288, 64, 7744) == (15 * 288 * 64,)
    assert ops.matmul_workspace_shape(64, 10, 64) == (1,)  # no split: no partials
    # dense_backward: dw plus db's extra row; batch 64 does not split, long K does
    assert ops.dense_backward_workspace_shape((64, 1600), (1600, 64)) == (1,)
    from kernels_numba.ops.dense import split_k

    s = split_k(21, 10, 100000)
    assert s > 1 and ops.dense_backward_workspace_shape((100000, 20), (20, 10)) == (s * 21 * 10,)


# dense_forward / dense_backward

@pytest.mark.parametrize("activation", list(ACTS))
@pytest.mark.parametrize("shape", [(1, 3, 5), (4, 7, 3)], ids=str)
def test_dense_forward(device, shape, activation):
    n, f_in, f_out = shape
    x, w, b = randn((n, f_in), seed=1), randn((f_in, f_out), seed=2), randn((f_out,), seed=3)
    y = on(device, np.zeros((n, f_out), np.float32))
    ops.dense_forward(y, on(device, x), on(device, w), on(device, b), activation=activation)
    z = x.astype(np.float64) @ w + b
    assert_close(host(y), ACTS[activation](z), what=f"dense_forward {activation}")


def test_dense_forward_without_bias(device):
    x, w = randn((2, 5), seed=4), randn((5, 3), seed=5)
    y = on(device, np.full((2, 3), np.nan, np.float32))
    ops.dense_forward(y, on(device, x), on(device, w), None, activation="tanh")
    assert_close(host(y), np.tanh(x.astype(np.float64) @ w), what="dense_forward no bias")


@pytest.mark.parametrize("shape", [(1, 3, 2), (5, 4, 3)], ids=str)
def test_dense_backward_matches_numeric_grad_and_accumulates(device, shape):
    n, f_in, f_out = shape
    x, w, b = randn((n, f_in), seed=1), randn((f_in, f_out), seed=2), randn((f_out,), seed=3)
    dy = randn((n, f_out), seed=4)
    dw0, db0 = randn((f_in, f_out), seed=5), randn((f_out,), seed=6)

    def loss(x_, w_, b_):
        return np.sum((x_ @ w_ + b_) * dy)

    x64, w64, b64 = (v.astype(np.float64) for v in (x, w, b))
    gx = numeric_grad(lambda v: loss(v, w64, b64), x64)
    gw = numeric_grad(lambda v: loss(x64, v, b64), w64)
    gb = numeric_grad(lambda v: loss(x64, w64, v), b64)

    dx = on(device, np.full((n, f_in), np.nan, np.float32))  # overwritten
    dw, db = on(device, dw0), on(device, db0)  # accumulated
    ops.dense_backward(dx, dw, db, on(device, dy), on(device, x), on(device, w))
    assert_close(host(dx), gx, rtol=1e-4, atol=1e-5, what="dx")
    assert_close(host(dw), dw0 + gw, rtol=1e-4, atol=1e-5, what="dw")
    assert_close(host(db), db0 + gb, rtol=1e-4, atol=1e-5, what="db")


def test_dense_backward_skips_dx_and_db(device):
    x, w, dy = randn((3, 4), seed=1), randn((4, 2), seed=2), randn((3, 2), seed=3)
    dw = on(device, np.zeros((4, 2), np.float32))
    ops.dense_backward(None, dw, None, on(device, dy), on(device, x), on(device, w))
    ops.dense_backward(None, dw, None, on(device, dy), on(device, x), on(device, w))
    assert_close(host(dw), 2 * x.astype(np.float64).T @ dy, what="dw accumulated twice")


def test_dense_backward_bias_grad_many_rows(device):
    # Enough rows for several row chunks in the CUDA column-sum kernel's grid.
    dy = randn((300, 3), seed=8)
    x, w = randn((300, 1), seed=9), randn((1, 3), seed=10)
    dw, db = on(device, np.zeros((1, 3), np.float32)), on(device, np.ones(3, np.float32))
    ops.dense_backward(None, dw, db, on(device, dy), on(device, x), on(device, w))
    assert_close(host(db), 1.0 + dy.astype(np.float64).sum(axis=0), rtol=1e-5, atol=1e-4, what="db")


@pytest.mark.cudasim
@pytest.mark.parametrize("splits", [1, 3])
def test_gemm_bias_row_and_split_k_one_launch(splits):
    """db as the weight-gradient GEMM's extra row, split or not: one launch, bit-identical
    on a repeat, c and db accumulated with beta; M a multiple of the tile (the db row
    opens a new row block)."""
    if not cuda_available():
        pytest.skip("CUDA kernels cannot run here")
    from kernels_numba import record_launches
    from kernels_numba.gpu import dense as gpu_dense

    for m in (5, 64):
        a, b = _operands(m, 7, 45, True, False, seed=21)
        c0, db0 = randn((m, 7), seed=22), randn((7,), seed=23)
        results = []
        for _ in range(2):
            c, db = on("cuda", c0), on("cuda", db0)
            ws = on("cuda", np.full(3 * (m + 1) * 7, np.nan, np.float32))
            with record_launches() as calls:
                gpu_dense.gemm(c, on("cuda", a), on("cuda", b), trans_a=True, beta=1.0,
                               splits=splits, workspace=ws, db=db)
            assert len(calls) == 1 and calls[0].grid[2] == splits
            results.append((host(c), host(db)))
        assert_close(results[0][0], c0 + _ref_product(a, b, True, False), what=f"dw m={m}")
        assert_close(results[0][1], db0 + b.astype(np.float64).sum(axis=0), what=f"db m={m}")
        for got, again in zip(*results):
            np.testing.assert_array_equal(got, again)
    assert int(host(gpu_dense._tile_counters(1)).max()) == 0  # counters left at 0


def _act_grad(activation, z):
    y = ACTS[activation](z)
    return {"linear": np.ones_like(z), "relu": (z > 0).astype(np.float64),
            "sigmoid": y * (1 - y), "tanh": 1 - y * y}[activation]


# The larger shape (several tiles of both outputs, the db row in its own edge tile) once:
# the simulator is slow, and the tile edges do not depend on the activation.
FUSED_CASES = [(s, a) for s in [(1, 3, 2), (5, 4, 3)] for a in ACTS] + [((3, 66, 70), "relu")]


@pytest.mark.parametrize("shape,activation", FUSED_CASES, ids=[f"{s}-{a}" for s, a in FUSED_CASES])
def test_dense_backward_fused_activation(device, shape, activation):
    """dy wrt the OUTPUT y: f'(y) applied inside the GEMMs; finite differences of
    sum(activation(x @ w + b) * dy); dy left unchanged."""
    n, f_in, f_out = shape
    x, w, b = randn((n, f_in), seed=1), randn((f_in, f_out), seed=2), randn((f_out,), seed=3)
    dy = randn((n, f_out), seed=4)
    dw0, db0 = randn((f_in, f_out), seed=5), randn((f_out,), seed=6)
    x64, w64, b64 = (v.astype(np.float64) for v in (x, w, b))

    def loss(x_, w_, b_):
        return np.sum(ACTS[activation](x_ @ w_ + b_) * dy)

    y = on(device, np.zeros((n, f_out), np.float32))
    ops.dense_forward(y, on(device, x), on(device, w), on(device, b), activation=activation)
    dx = on(device, np.full((n, f_in), np.nan, np.float32))
    dw, db, dy_d = on(device, dw0), on(device, db0), on(device, dy)
    ops.dense_backward(dx, dw, db, dy_d, on(device, x), on(device, w), activation=activation,
                       y=y)
    np.testing.assert_array_equal(host(dy_d), dy)
    if max(shape) < 10:
        gx = numeric_grad(lambda v: loss(v, w64, b64), x64)
        gw = numeric_grad(lambda v: loss(x64, v, b64), w64)
        gb = numeric_grad(lambda v: loss(x64, w64, v), b64)
    else:  # analytic float64 reference for the larger shape
        dz = dy * _act_grad(activation, x64 @ w64 + b64)
        gx, gw, gb = dz @ w64.T, x64.T @ dz, dz.sum(axis=0)
    assert_close(host(dx), gx, rtol=1e-4, atol=1e-4, what=f"dx {activation}")
    assert_close(host(dw), dw0 + gw, rtol=1e-4, atol=1e-4, what=f"dw {activation}")
    assert_close(host(db), db0 + gb, rtol=1e-4, atol=1e-4, what=f"db {activation}")


def test_dense_backward_fused_relu_propagates_nan(device):
    # A NaN output (from a NaN input) gives NaN gradients, as ops.activation_backward.
    x, w = randn((2, 3), seed=1), randn((3, 2), seed=2)
    y = np.maximum(x @ w, 0).astype(np.float32)
    y[1, 0] = np.nan
    dw, db = on(device, np.zeros((3, 2), np.float32)), on(device, np.zeros(2, np.float32))
    dx = on(device, np.zeros((2, 3), np.float32))
    ops.dense_backward(dx, dw, db, on(device, np.ones((2, 2), np.float32)), on(device, x),
                       on(device, w), activation="relu", y=on(device, y))
    assert np.isnan(host(db)[0]) and np.isfinite(host(db)[1])
    assert np.isnan(host(dx)[1]).all() and np.isfinite(host(dx)[0]).all()
    assert np.isnan(host(dw)[:, 0]).all()


# errors
# (The quotes around "?" are optional: _check renders unknown dims as '?' today.)

F32 = np.float32
Z = np.zeros
X, Y, W = Z((4, 784), F32), Z((4, 10), F32), Z((784, 10), F32)
BAD_CALLS = [
    (ValueError, r"matmul: expected b.shape == \(3, '?\?'?\); received \(4, 2\)",
     lambda: ops.matmul(Z((2, 2), F32), Z((2, 3), F32), Z((4, 2), F32))),
    (ValueError, r"matmul: expected b.shape == \('?\?'?, 2\); received \(4, 3\)",
     lambda: ops.matmul(Z((3, 4), F32), Z((2, 3), F32), Z((4, 3), F32), trans_a=True,
                        trans_b=True)),
    (ValueError, r"matmul: expected c.shape == \(2, 5\); received \(5, 2\)",
     lambda: ops.matmul(Z((5, 2), F32), Z((2, 3), F32), Z((3, 5), F32))),
    (TypeError, r"matmul: expected a.dtype == float32; received float64",
     lambda: ops.matmul(Z((2, 2), F32), Z((2, 3)), Z((3, 2), F32))),
    (ValueError, r"matmul: expected a with 2 dimensions",
     lambda: ops.matmul(Z((2, 2), F32), Z(3, F32), Z((3, 2), F32))),
    (ValueError, r"matmul: expected a to be C-contiguous",
     lambda: ops.matmul(Z((2, 2), F32), Z((3, 2), F32).T, Z((3, 2), F32))),
    (ValueError, r"dense_forward: expected w.shape == \(784, '?\?'?\); received \(128, 10\)",
     lambda: ops.dense_forward(Y, X, Z((128, 10), F32))),
    (ValueError, r"dense_forward: expected b.shape == \(10,\); received \(11,\)",
     lambda: ops.dense_forward(Y, X, W, Z(11, F32))),
    (ValueError, r"dense_forward: expected activation in \['linear', 'relu', .*received 'gelu'",
     lambda: ops.dense_forward(Y, X, W, activation="gelu")),
    (ValueError, r"dense_backward: expected dw.shape == \(784, 10\)",
     lambda: ops.dense_backward(None, Z((10, 784), F32), None, Y, X, W)),
    (ValueError, r"dense_backward: expected dx.shape == \(4, 784\)",
     lambda: ops.dense_backward(Z((4, 10), F32), W.copy(), None, Y, X, W)),
    (ValueError, r"dense_backward: expected db.shape == \(10,\)",
     lambda: ops.dense_backward(None, W.copy(), Z(4, F32), Y, X, W)),
    (ValueError, r"dense_backward: expected y \(the forward output, shape \(4, 10\)\)",
     lambda: ops.dense_backward(None, W.copy(), None, Y, X, W, activation="relu")),
    (ValueError, r"dense_backward: expected y.shape == \(4, 10\); received \(4, 9\)",
     lambda: ops.dense_backward(None, W.copy(), None, Y, X, W, activation="relu",
                                y=Z((4, 9), F32))),
    (ValueError, r"dense_backward: expected activation in \['linear', .*received 'elu'",
     lambda: ops.dense_backward(None, W.copy(), None, Y, X, W, activation="elu", y=Y)),
]


@pytest.mark.parametrize("exc,pattern,call", BAD_CALLS, ids=[p[:40] for _, p, _ in BAD_CALLS])
def test_bad_arguments_name_the_op(exc, pattern, call):
    with pytest.raises(exc, match=pattern):
        call()


@pytest.mark.cudasim
def test_mixed_devices_rejected():
    if not cuda_available():
        pytest.skip("CUDA kernels cannot run here")
    a = np.zeros((2, 2), np.float32)
    with pytest.raises(ValueError, match="matmul: all buffers must be on one device"):
        ops.matmul(on("cuda", a), a, a)


def test_relu_bias_gradient_in_the_mask_pass_over_threads():
    """CPU: dy * relu'(y) and its column sums (db) come from one pass, split over the
    threads for a dy of 300 x 130 floats; dw and db against float64 (a NaN output makes
    its column NaN in both), and the same bits run to run."""
    x, w, dy = randn((300, 17), seed=71), randn((17, 130), seed=72), randn((300, 130), seed=73)
    y = np.maximum(x @ w, 0).astype(np.float32)
    y[5, 7] = np.nan
    results = []
    for _ in range(2):
        dx, dw, db = np.zeros((300, 17), np.float32), np.zeros_like(w), np.ones(130, np.float32)
        ops.dense_backward(dx, dw, db, dy, x, w, activation="relu", y=y)
        results.append((dx, dw, db))
    g = np.where(y > 0, dy, 0).astype(np.float64)
    g[5, 7] = np.nan
    for got, exp, what in ((results[0][2], 1 + g.sum(axis=0), "db"),
                           (results[0][1], x.astype(np.float64).T @ g, "dw")):
        np.testing.assert_array_equal(np.isnan(got), np.isnan(exp))  # column 7 only
        assert_close(np.nan_to_num(got), np.nan_to_num(exp), what=what)
    for a, b in zip(*results):
        np.testing.assert_array_equal(a, b)


def test_cpu_relu_mask_and_bias_sums_split_over_threads():
    """The CPU relu backward's one pass (dy * relu'(y) and db's column sums), on enough
    rows to split over threads (517 x 67 > PARALLEL_MIN_SIZE), odd sizes: each part's
    sums start from zero and the parts add in order; NaN in dy reaches dx, dw and db."""
    import numba

    from kernels_numba.cpu._parallel import run_all
    from kernels_numba.cpu.dense import PARALLEL_MIN_SIZE, relu_mask_and_sums_calls

    n, f = 517, 67
    assert n * f >= PARALLEL_MIN_SIZE
    dy, y = randn((n, f), seed=31), randn((n, f), seed=32)
    y[y < 0] = 0.0
    dy[5, 3] = np.nan  # a live unit (y > 0 there) so the NaN passes the mask
    y[5, 3] = 1.0
    db0 = randn((f,), seed=33)
    for threads in sorted({1, numba.get_num_threads()}):
        saved = numba.get_num_threads()
        numba.set_num_threads(threads)
        try:
            db = db0.copy()
            out, calls = relu_mask_and_sums_calls(dy, y, db)
            run_all(calls)
        finally:
            numba.set_num_threads(saved)
        want = np.where(y > 0, dy.astype(np.float64), 0.0)
        np.testing.assert_array_equal(out, want.astype(np.float32))
        assert np.isnan(db[3]) and np.isnan(out[5, 3])
        keep = np.arange(f) != 3
        assert_close(db[keep], db0[keep] + want.sum(axis=0)[keep], rtol=1e-5, atol=1e-4,
                     what=f"db, {threads} threads")
