import numpy as np
import pytest

from kernels_numba import cuda_available, ops
from kernels_numba.testing import assert_close, host, on, randn


@pytest.mark.parametrize("shape", [(1, 1), (7, 3), (5, 37)])  # 37 columns: two column tiles
def test_batch_sum_accumulates(device, shape):
    x = randn(shape, seed=1)
    y0 = randn(shape[1], seed=2)
    y = on(device, y0)
    ops.batch_sum(y, on(device, x))
    assert_close(host(y), y0 + x.astype(np.float64).sum(axis=0), what="batch_sum")


@pytest.mark.parametrize("shape", [(1,), (7, 3), (2, 5, 3), (150,)])  # 150 > one block of threads
def test_sum_into_and_mean(device, shape):
    x = randn(shape, seed=3)
    acc = on(device, np.array([1.5], np.float32))
    ops.sum_into(acc, on(device, x))
    assert_close(host(acc), [1.5 + x.astype(np.float64).sum()], what="sum_into")
    y = on(device, np.array([99.0], np.float32))
    ops.mean(y, on(device, x))
    assert_close(host(y), [x.astype(np.float64).mean()], what="mean")


def test_count_argmax_matches(device):
    probs = np.array(
        [
            [0.1, 0.7, 0.2, 0.0],
            [0.5, 0.5, 0.0, 0.0],  # tie: first maximum (0) wins, like np.argmax
            [0.2, 0.2, 0.3, 0.3],  # tie: index 2
            [0.9, 0.0, 0.0, 0.1],
            [0.0, 0.0, 0.0, 1.0],
        ],
        np.float32,
    )
    labels = np.array([1, 0, 3, -1, 7], np.int32)  # out-of-range labels never match
    acc = on(device, np.array([2.0], np.float32))
    ops.count_argmax_matches(acc, on(device, probs), on(device, labels))
    assert host(acc)[0] == 2.0 + 2
    assert np.count_nonzero(probs.argmax(axis=1) == labels) == 2


def test_count_argmax_matches_onehot(device):
    probs = randn((6, 5), seed=4)
    targets = np.eye(5, dtype=np.float32)[[0, 1, 2, 3, 4, 0]]
    targets[0] = [0.1, 0.1, 0.6, 0.1, 0.1]  # soft targets: argmax compared too
    probs[5, 0] = probs[5].max() + 1.0  # guarantee at least one match
    want = np.count_nonzero(probs.argmax(axis=1) == targets.argmax(axis=1))
    acc = on(device, np.zeros(1, np.float32))
    ops.count_argmax_matches_onehot(acc, on(device, probs), on(device, targets))
    assert host(acc)[0] == want >= 1


@pytest.mark.parametrize("threshold", [0.5, 0.3])
def test_count_binary_matches(device, threshold):
    probs = np.array(
        [[0.9, 0.2, 0.5, 0.31], [0.6, 0.4, 0.1, 0.29], [0.5, 0.7, 0.8, 0.0]], np.float32
    )
    targets = np.array(
        [[1, 0, 0, 1], [1, 1, 0.5, 0], [0, 1, 1, 0]], np.float32
    )  # 0.5 never matches
    want = np.count_nonzero((probs > threshold).astype(np.float32) == targets)
    acc = on(device, np.array([1.0], np.float32))
    ops.count_binary_matches(acc, on(device, probs), on(device, targets), threshold=threshold)
    assert host(acc)[0] == 1.0 + want
    column = np.array([[0.7], [0.2], [0.6]], np.float32)  # Keras's (N, 1) sigmoid output
    acc = on(device, np.zeros(1, np.float32))
    ops.count_binary_matches(
        acc, on(device, column), on(device, np.array([[1], [1], [0]], np.float32))
    )
    assert host(acc)[0] == 1.0


def test_bad_arguments_name_the_op():
    f32 = np.zeros
    with pytest.raises(ValueError, match=r"batch_sum: expected y.shape == \(3,\); received \(4,\)"):
        ops.batch_sum(f32(4, np.float32), f32((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"sum_into: expected acc.shape == \(1,\)"):
        ops.sum_into(f32(2, np.float32), f32(3, np.float32))
    with pytest.raises(ValueError, match="mean: expected x with at least one element"):
        ops.mean(f32(1, np.float32), f32((0, 3), np.float32))
    with pytest.raises(
        TypeError, match="count_argmax_matches: expected labels.dtype == int32; received int64"
    ):
        ops.count_argmax_matches(f32(1, np.float32), f32((2, 3), np.float32), f32(2, np.int64))
    with pytest.raises(
        ValueError, match=r"count_argmax_matches_onehot: expected targets.shape == \(2, 3\)"
    ):
        ops.count_argmax_matches_onehot(
            f32(1, np.float32), f32((2, 3), np.float32), f32((2, 4), np.float32)
        )
    with pytest.raises(ValueError, match="count_binary_matches: expected threshold"):
        ops.count_binary_matches(
            f32(1, np.float32), f32(3, np.float32), f32(3, np.float32), threshold=np.nan
        )


@pytest.mark.cudasim
def test_kernels_are_correct_for_any_launch_configuration():
    if not cuda_available():
        pytest.skip("CUDA kernels cannot run here: no GPU and NUMBA_ENABLE_CUDASIM is not 1")
    from kernels_numba._cuda import launch
    from kernels_numba.gpu import reduction as gpu

    x = randn((9, 37), seed=7)
    for grid, block in [(1, 1), (2, 5), (3, 7)]:  # odd block sizes exercise the tree's odd folds
        acc = on("cuda", np.zeros(1, np.float32))
        part = on("cuda", np.full(grid, np.nan, np.float32))
        launch(gpu._sum_partials_kernel, grid, block, acc, part, on("cuda", x.reshape(-1)))
        if grid > 1:
            launch(gpu._add_partials_kernel, 1, block, acc, part, grid)
        assert_close(
            host(acc),
            [x.astype(np.float64).sum()],
            rtol=1e-5,
            atol=1e-4,
            what=f"sum_into {grid}x{block}",
        )
    for grid, block in [((1, 1), (32, 1)), ((2, 3), (7, 2))]:
        y = on("cuda", np.zeros(37, np.float32))
        part = on("cuda", np.full((grid[1], 37), np.nan, np.float32))
        launch(gpu._column_partials_kernel, grid, block, y, part, on("cuda", x))
        if grid[1] > 1:
            launch(gpu._add_column_partials_kernel, 2, 5, y, part)
        assert_close(host(y), x.astype(np.float64).sum(axis=0), what=f"batch_sum {grid}x{block}")


# Deterministic multi-block sums: per-block partials in a workspace, a fixed-order finish.

def test_workspace_shapes():
    assert ops.batch_sum_workspace_shape((64, 10)) == (10,)  # one row block: no partials
    assert ops.batch_sum_workspace_shape((300, 3)) == (3 * 3,)  # ceil(300 / 128) row blocks
    assert ops.batch_sum_workspace_shape((10**6, 2)) == (256 * 2,)  # capped
    assert ops.sum_workspace_shape(64) == (1,)
    assert ops.sum_workspace_shape(1000) == (4,)
    assert ops.sum_workspace_shape(10**9) == (1024,)


@pytest.mark.parametrize("explicit", [True, False], ids=["workspace", "cached"])
def test_multi_block_sums_are_exact_and_repeatable(device, explicit):
    """Several blocks (300 rows > one row block; 700 items > one block of threads):
    the same bits on a repeat, with a NaN-filled workspace (written before read)."""
    x2 = randn((300, 3), seed=21)
    x1 = randn((700,), seed=22)
    results = []
    for _ in range(2):
        y, acc = on(device, np.zeros(3, np.float32)), on(device, np.zeros(1, np.float32))
        ws2 = on(device, np.full(ops.batch_sum_workspace_shape(x2.shape), np.nan, np.float32))
        ws1 = on(device, np.full((16,), np.nan, np.float32))  # more slots than needed
        ops.batch_sum(y, on(device, x2), workspace=ws2 if explicit else None)
        ops.sum_into(acc, on(device, x1), workspace=ws1 if explicit else None)
        results.append((host(y), host(acc)))
    assert_close(results[0][0], x2.astype(np.float64).sum(axis=0), what="batch_sum, 3 blocks")
    assert_close(results[0][1], [x1.astype(np.float64).sum()], what="sum_into, many blocks")
    for a, b in zip(results[0], results[1]):
        np.testing.assert_array_equal(a, b)


def test_small_workspace_uses_fewer_blocks(device):
    x = randn((500,), seed=23)
    acc = on(device, np.zeros(1, np.float32))
    ops.sum_into(acc, on(device, x), workspace=on(device, np.zeros(2, np.float32)))
    assert_close(host(acc), [x.astype(np.float64).sum()], what="sum_into, 2 slots")
    labels = np.arange(200, dtype=np.int32) % 3
    probs = np.eye(3, dtype=np.float32)[labels]
    count = on(device, np.zeros(1, np.float32))
    ops.count_argmax_matches(count, on(device, probs), on(device, labels),
                             workspace=on(device, np.zeros(3, np.float32)))
    assert host(count)[0] == 200


@pytest.mark.cudasim
def test_cuda_launches_two_stages_only_for_many_blocks():
    if not cuda_available():
        pytest.skip("CUDA kernels cannot run here")
    from kernels_numba import record_launches

    with record_launches() as calls:
        ops.sum_into(on("cuda", np.zeros(1, np.float32)), on("cuda", randn((20,), seed=1)))
        ops.batch_sum(on("cuda", np.zeros(2, np.float32)), on("cuda", randn((7, 2), seed=2)))
    assert [c.name for c in calls] == ["_sum_partials_kernel", "_column_partials_kernel"]
    with record_launches() as calls:
        ops.sum_into(on("cuda", np.zeros(1, np.float32)), on("cuda", randn((300,), seed=3)))
    assert [c.name for c in calls] == ["_sum_partials_kernel", "_add_partials_kernel"]
