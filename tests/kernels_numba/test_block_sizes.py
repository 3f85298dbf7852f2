"""The reduction, loss and metric kernels at BOTH block configurations: the simulator's
small blocks and the hardware's (kernels_numba/gpu/_blocks.py; `testing.block_sizes`
rebinds them under the simulator), each against float64 NumPy. Sizes are just past
the hardware blocks (256-thread reductions, 128-row loss/metric blocks, 8 batch_sum
row lanes), so every case runs several blocks and grid-strides at both sizes.
"""

import numpy as np
import pytest

from kernels_numba import cuda_available, ops
from kernels_numba.gpu import _blocks
from kernels_numba.ops import metric as metric_ops
from kernels_numba.testing import assert_close, block_sizes, host, on, randn, rng

pytestmark = pytest.mark.cudasim

HW = {name: hw for name, (_, hw) in _blocks.SIZES.items()}


@pytest.fixture(params=_blocks.KINDS)
def kind(request):
    if not cuda_available():
        pytest.skip("CUDA kernels cannot run here: no GPU and NUMBA_ENABLE_CUDASIM is not 1")
    from kernels_numba._cuda import SIMULATOR

    if not SIMULATOR and request.param == "simulator":
        pytest.skip("hardware kernels compile the hardware sizes only")
    with block_sizes(request.param):
        yield request.param


def test_block_sizes_rebinds_every_module(kind):
    from kernels_numba.gpu import loss, metric, normalization, pointwise_loss, reduction

    want = {n: _blocks.size(n, kind) for n in _blocks.SIZES}
    assert reduction.BLOCK == loss.BLOCK == metric.BLOCK == normalization.BLOCK == \
        pointwise_loss.BLOCK == want["BLOCK"]
    assert reduction.TILE_ROWS == want["TILE_ROWS"]
    assert loss.ROW_BLOCK == metric.ROW_BLOCK == pointwise_loss.ROW_BLOCK == want["ROW_BLOCK"]


def test_block_sizes_restores_and_refuses_unknown_kinds():
    from kernels_numba.gpu import reduction

    before = reduction.BLOCK
    with pytest.raises(ValueError, match="expected one of"):
        with block_sizes("huge"):
            pass
    assert reduction.BLOCK == before


def test_reductions(kind):
    n = 2 * HW["BLOCK"] + 37  # several 256-thread blocks: two stages at both sizes
    x1 = randn((n,), seed=1)
    acc = on("cuda", np.array([0.5], np.float32))
    ops.sum_into(acc, on("cuda", x1))
    assert_close(host(acc), [0.5 + x1.astype(np.float64).sum()], what=f"sum_into {kind}")
    y = on("cuda", np.array([9.0], np.float32))
    ops.mean(y, on("cuda", x1))
    assert_close(host(y), [x1.astype(np.float64).mean()], what=f"mean {kind}")
    x2 = randn((4 * HW["TILE_ROWS"] + 3, 37), seed=2)  # 37 columns: two column tiles
    col = on("cuda", np.ones(37, np.float32))
    ops.batch_sum(col, on("cuda", x2))
    assert_close(host(col), 1 + x2.astype(np.float64).sum(0), what=f"batch_sum {kind}")
    labels = rng(3).integers(0, 4, n).astype(np.int32)
    probs = randn((n, 4), seed=4)
    count = on("cuda", np.zeros(1, np.float32))
    ops.count_argmax_matches(count, on("cuda", probs), on("cuda", labels))
    assert host(count)[0] == np.sum(np.argmax(probs, 1) == labels)


def test_fused_softmax_sparse_ce(kind):
    n, k = HW["BLOCK"] + 45, 3
    z = randn((n, k), seed=5) * np.float32(3.0)
    labels = rng(6).integers(0, k, n).astype(np.int32)
    probs, dz = (on("cuda", np.full((n, k), np.nan, np.float32)) for _ in range(2))
    loss_acc, match_acc = on("cuda", np.zeros(1, np.float32)), on("cuda", np.zeros(1, np.float32))
    ops.softmax_sparse_ce_train(probs, dz, loss_acc, match_acc, on("cuda", z),
                                on("cuda", labels), scale=0.25)
    z64 = z.astype(np.float64)
    p64 = np.exp(z64 - z64.max(1, keepdims=True))
    p64 /= p64.sum(1, keepdims=True)
    q = np.clip(p64[np.arange(n), labels], float(np.float32(1e-7)), float(np.float32(1 - 1e-7)))
    assert_close(host(probs), p64, rtol=1e-5, atol=1e-6, what=f"probs {kind}")
    assert_close(host(loss_acc), [-np.log(q).sum()], rtol=1e-5, atol=1e-4, what=f"loss {kind}")
    assert host(match_acc)[0] == np.sum(np.argmax(host(probs), 1) == labels)
    assert_close(host(dz), 0.25 * (p64 - np.eye(k)[labels]), rtol=1e-5, atol=1e-6,
                 what=f"dlogits {kind}")


def test_row_loss_and_pointwise_loss(kind):
    n, k = 2 * HW["ROW_BLOCK"] + 5, 3  # three 128-row blocks
    p = rng(7).uniform(0.05, 1.0, (n, k)).astype(np.float32)
    labels = rng(8).integers(0, k, n).astype(np.int32)
    loss = on("cuda", np.full(n, 7.0, np.float32))
    ops.sparse_categorical_crossentropy_forward(loss, on("cuda", p), on("cuda", labels))
    p64 = p.astype(np.float64) / p.sum(1, keepdims=True)
    ref = -np.log(np.clip(p64[np.arange(n), labels], 1e-7, 1 - 1e-7))
    assert_close(host(loss), ref, rtol=1e-5, atol=1e-6, what=f"sparse CE {kind}")
    t = randn((n, k), seed=9)
    out = on("cuda", np.full(n, 7.0, np.float32))
    ops.pointwise_loss_forward(out, on("cuda", p), on("cuda", t), kind="mae")
    want = np.abs(p.astype(np.float64) - t).mean(1)
    assert_close(host(out), want, rtol=1e-5, atol=1e-6, what=f"MAE {kind}")


def test_metrics(kind):
    n = 2 * HW["ROW_BLOCK"] + 9
    p = rng(10).uniform(0, 1, (n, 5)).astype(np.float32)
    labels = rng(11).integers(0, 5, n).astype(np.int32)
    out = on("cuda", np.full(n, 3.0, np.float32))
    metric_ops.top_k_matches(out, on("cuda", p), on("cuda", labels), k=2)
    v = p[np.arange(n), labels]
    assert_close(host(out), ((p > v[:, None]).sum(1) < 2).astype(np.float32), rtol=0, atol=0,
                 what=f"top-k {kind}")
    flat = p.reshape(-1)[: HW["BLOCK"] + 21]  # more elements than a block has threads
    t = (rng(12).uniform(0, 1, flat.size) > 0.5).astype(np.float32)
    thr = np.array([0.25, 0.5, 0.75], np.float32)
    accs = [on("cuda", np.zeros(3, np.float32)) for _ in range(4)]
    metric_ops.confusion_update(*accs, on("cuda", flat), on("cuda", t), on("cuda", thr),
                                on("cuda", np.zeros(0, np.float32)))
    above, pos = flat[None, :] > thr[:, None], t != 0
    for name, got, want in zip(("tp", "fp", "tn", "fn"), accs,
                               [(above & pos).sum(1), (above & ~pos).sum(1),
                                (~above & ~pos).sum(1), (~above & pos).sum(1)]):
        assert_close(host(got), want, rtol=0, atol=0, what=f"{name} {kind}")
