"""ops.softmax_sparse_ce_train: softmax + sparse CE + loss sum + accuracy count + the
logits gradient in one op, against float64 references, finite differences and the
unfused chain of ops it replaces."""

import numpy as np
import pytest

from kernels_numba import cuda_available, ops
from kernels_numba.testing import assert_close, host, numeric_grad, on, randn, rng

CLIP_LO, CLIP_HI = float(np.float32(1e-7)), float(np.float32(1 - 1e-7))
SCALE = 0.25


def _softmax(z):
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def _ref_losses(z, labels):
    p = _softmax(z.astype(np.float64))
    q = np.clip(p[np.arange(len(z)), labels], CLIP_LO, CLIP_HI)
    return -np.log(q)


def _run(device, z, labels, *, loss0=1.5, match0=2.0, with_match=True, workspace=None,
         from_logits=False):
    n, k = z.shape
    probs = on(device, np.full((n, k), np.nan, np.float32))
    dz = on(device, np.full((n, k), np.nan, np.float32))
    loss_acc = on(device, np.array([loss0], np.float32))
    match_acc = on(device, np.array([match0], np.float32)) if with_match else None
    ops.softmax_sparse_ce_train(probs, dz, loss_acc, match_acc, on(device, z),
                                on(device, labels), scale=SCALE, workspace=workspace,
                                from_logits=from_logits)
    return host(probs), host(dz), host(loss_acc)[0], \
        (host(match_acc)[0] if with_match else None)


def _case(n, k, seed):
    z = randn((n, k), seed=seed) * np.float32(3.0)
    labels = rng(seed + 1).integers(0, k, n).astype(np.int32)
    return z, labels


# n=150 runs several blocks on CUDA (64-thread blocks under the simulator)
@pytest.mark.parametrize("nk", [(1, 1), (1, 3), (7, 5), (150, 3)], ids=str)
def test_values_against_float64(device, nk):
    n, k = nk
    z, labels = _case(n, k, seed=n + k)
    probs, dz, loss, match = _run(device, z, labels)
    p64 = _softmax(z.astype(np.float64))
    assert_close(probs, p64, rtol=1e-5, atol=1e-6, what="probs")
    assert_close(loss, 1.5 + _ref_losses(z, labels).sum(), rtol=1e-5, atol=1e-5, what="loss sum")
    assert match == 2.0 + np.sum(np.argmax(probs, axis=1) == labels)
    onehot = np.eye(k)[labels]
    assert_close(dz, SCALE * (p64 - onehot), rtol=1e-5, atol=1e-6, what="dlogits")


@pytest.mark.parametrize("n", [1, 4])
def test_gradient_matches_finite_differences(device, n):
    z, labels = _case(n, 4, seed=11)

    def total(v):
        return SCALE * _ref_losses(v, labels).sum()

    g = numeric_grad(total, z.astype(np.float64))
    _, dz, _, _ = _run(device, z, labels)
    assert_close(dz, g, rtol=1e-4, atol=1e-5, what="dlogits vs finite differences")


def test_clip_active_gives_zero_gradient_and_clipped_loss(device):
    z = np.array([[40.0, 0.0, 0.0], [0.0, 0.0, -40.0], [0.5, 0.1, 0.2]], np.float32)
    labels = np.array([0, 2, 1], np.int32)  # p ~ 1 (above 1 - eps), p ~ 0 (below eps), inside
    _, dz, loss, _ = _run(device, z, labels, loss0=0.0)
    np.testing.assert_array_equal(dz[:2], 0.0)
    assert np.all(dz[2] != 0.0)
    assert_close(loss, -np.log(CLIP_HI) - np.log(CLIP_LO) + _ref_losses(z[2:], labels[2:])[0],
                 rtol=1e-5, what="clipped losses")


def test_out_of_range_labels_nan_loss_zero_gradient_no_match(device):
    z, _ = _case(3, 4, seed=5)
    labels = np.array([-1, 2, 4], np.int32)
    probs, dz, loss, match = _run(device, z, labels, match0=0.0)
    assert np.isnan(loss)
    np.testing.assert_array_equal(dz[[0, 2]], 0.0)
    assert_close(dz[1], SCALE * (_softmax(z.astype(np.float64))[1] - np.eye(4)[2]), atol=1e-6,
                 what="the valid row")
    assert match == float(np.argmax(probs[1]) == 2)


def test_nan_logit_gives_nan_loss_and_gradient_row(device):
    z, labels = _case(3, 4, seed=6)
    z[1, 2] = np.nan
    probs, dz, loss, _ = _run(device, z, labels)
    assert np.isnan(loss) and np.isnan(probs[1]).all() and np.isnan(dz[1]).all()
    assert np.isfinite(dz[[0, 2]]).all()


def test_without_match_counter_and_in_place_logits(device):
    z, labels = _case(5, 3, seed=8)
    _, dz_ref, loss_ref, _ = _run(device, z, labels)
    zd = on(device, z)  # probs written over the logits, as the op allows
    dz, loss_acc = on(device, np.zeros((5, 3), np.float32)), on(device, np.array([1.5], np.float32))
    ops.softmax_sparse_ce_train(zd, dz, loss_acc, None, zd, on(device, labels), scale=SCALE)
    np.testing.assert_array_equal(host(dz), dz_ref)
    assert host(loss_acc)[0] == loss_ref


def test_equals_the_unfused_chain(device):
    """activation_forward(softmax) -> sparse CE forward -> sum_into / count_argmax_matches
    -> sparse CE backward -> softmax backward: the same values to 1e-6."""
    n, k = 9, 6
    z, labels = _case(n, k, seed=12)
    zd, ld = on(device, z), on(device, labels)
    probs = on(device, np.zeros((n, k), np.float32))
    ops.activation_forward(probs, zd, kind="softmax")
    losses = on(device, np.zeros(n, np.float32))
    ops.sparse_categorical_crossentropy_forward(losses, probs, ld)
    loss_acc, match_acc = on(device, np.zeros(1, np.float32)), on(device, np.zeros(1, np.float32))
    ops.sum_into(loss_acc, losses)
    ops.count_argmax_matches(match_acc, probs, ld)
    dprobs = on(device, np.zeros((n, k), np.float32))
    ops.sparse_categorical_crossentropy_backward(dprobs, probs, ld, scale=SCALE)
    dz = on(device, np.zeros((n, k), np.float32))
    ops.activation_backward(dz, dprobs, zd, probs, kind="softmax")

    f_probs, f_dz, f_loss, f_match = _run(device, z, labels, loss0=0.0, match0=0.0)
    assert_close(f_probs, host(probs), rtol=0, atol=1e-6, what="probs")
    assert_close(f_loss, host(loss_acc)[0], rtol=1e-6, atol=1e-6, what="loss")
    assert f_match == host(match_acc)[0]
    assert_close(f_dz, host(dz), rtol=0, atol=1e-6, what="dlogits")


def _ref_logit_losses(z, labels):
    z = z.astype(np.float64)
    m = z.max(axis=1)
    return np.log(np.exp(z - m[:, None]).sum(axis=1)) + m - z[np.arange(len(z)), labels]


@pytest.mark.parametrize("nk", [(1, 2), (7, 5), (150, 3)], ids=str)
def test_from_logits_values_against_float64(device, nk):
    # Keras's from-logits loss: logsumexp - z[label], no clip, so a confident row keeps
    # its gradient and a hopeless one a large finite loss (the probability path clips)
    n, k = nk
    z, labels = _case(n, k, seed=n + 2 * k)
    z[0] = 0.0
    z[0, labels[0]] = 60.0 if n > 1 else -60.0
    probs, dz, loss, match = _run(device, z, labels, from_logits=True)
    p64 = _softmax(z.astype(np.float64))
    assert_close(probs, p64, rtol=1e-5, atol=1e-6, what="probs")
    assert np.isfinite(loss)
    assert_close(loss, 1.5 + _ref_logit_losses(z, labels).sum(), rtol=1e-5, atol=1e-5,
                 what="loss sum")
    assert match == 2.0 + np.sum(np.argmax(probs, axis=1) == labels)
    assert_close(dz, SCALE * (p64 - np.eye(k)[labels]), rtol=1e-5, atol=1e-6, what="dlogits")


def test_from_logits_gradient_matches_finite_differences(device):
    z, labels = _case(4, 5, seed=21)

    def total(v):
        return SCALE * _ref_logit_losses(v, labels).sum()

    _, dz, _, _ = _run(device, z, labels, from_logits=True)
    assert_close(dz, numeric_grad(total, z.astype(np.float64)), rtol=1e-4, atol=1e-5,
                 what="dlogits vs finite differences")


def test_from_logits_equals_the_unfused_chain(device):
    """softmax_cross_entropy_forward -> sum_into / count_argmax_matches ->
    softmax_cross_entropy_backward (SparseCategoricalCrossentropy(from_logits=True))."""
    n, k = 9, 6
    z, labels = _case(n, k, seed=13)
    labels[3] = k  # out of range: NaN loss, zero gradient, no match, in both
    zd, ld = on(device, z), on(device, labels)
    probs, losses = on(device, np.zeros((n, k), np.float32)), on(device, np.zeros(n, np.float32))
    ops.softmax_cross_entropy_forward(losses, probs, zd, ld)
    loss_acc, match_acc = on(device, np.zeros(1, np.float32)), on(device, np.zeros(1, np.float32))
    ops.sum_into(loss_acc, losses)
    ops.count_argmax_matches(match_acc, zd, ld)
    dz = on(device, np.zeros((n, k), np.float32))
    ops.softmax_cross_entropy_backward(dz, probs, ld, scale=SCALE)
    f_probs, f_dz, f_loss, f_match = _run(device, z, labels, loss0=0.0, match0=0.0,
                                          from_logits=True)
    assert np.isnan(f_loss) and np.isnan(host(loss_acc)[0])
    assert_close(f_probs, host(probs), rtol=0, atol=1e-6, what="probs")
    assert f_match == host(match_acc)[0]
    np.testing.assert_array_equal(f_dz, host(dz))  # the same formula, bit for bit
    ok = np.arange(n) != 3
    _, _, f_loss_ok, _ = _run(device, z[ok], labels[ok], loss0=0.0, from_logits=True)
    assert_close(f_loss_ok, host(losses)[ok].sum(), rtol=1e-6, atol=1e-6, what="loss")


@pytest.mark.cudasim
def test_cuda_one_launch_deterministic_over_blocks():
    if not cuda_available():
        pytest.skip("CUDA kernels cannot run here")
    from kernels_numba import record_launches
    from kernels_numba.gpu import dense as gpu_dense

    z, labels = _case(150, 3, seed=3)
    ws = on("cuda", np.full(ops.softmax_sparse_ce_train_workspace_shape(150), np.nan, np.float32))
    with record_launches() as calls:
        first = _run("cuda", z, labels, workspace=ws)
    assert [c.name for c in calls] == ["_softmax_sparse_ce_train_kernel"]
    grid = calls[0].grid
    assert (grid if isinstance(grid, int) else grid[0]) > 1  # several blocks: the last one adds the partials
    again = _run("cuda", z, labels)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert int(host(gpu_dense._tile_counters(1))[0]) == 0
    cpu = _run("cpu", z, labels)
    assert_close(first[2], cpu[2], rtol=1e-5, what="loss sum, cuda vs cpu")


F32 = np.float32
Z = np.zeros
BAD = [
    (r"softmax_sparse_ce_train: expected probs.shape == \(3, 4\); received \(3, 5\)",
     lambda: ops.softmax_sparse_ce_train(Z((3, 5), F32), Z((3, 4), F32), Z(1, F32), None,
                                         Z((3, 4), F32), Z(3, np.int32), scale=1.0)),
    (r"softmax_sparse_ce_train: expected loss_acc.shape == \(1,\); received \(3,\)",
     lambda: ops.softmax_sparse_ce_train(Z((3, 4), F32), Z((3, 4), F32), Z(3, F32), None,
                                         Z((3, 4), F32), Z(3, np.int32), scale=1.0)),
    (r"softmax_sparse_ce_train: expected labels.dtype == int32; received int64",
     lambda: ops.softmax_sparse_ce_train(Z((3, 4), F32), Z((3, 4), F32), Z(1, F32), Z(1, F32),
                                         Z((3, 4), F32), Z(3, np.int64), scale=1.0)),
    (r"softmax_sparse_ce_train: expected dlogits to be a different buffer from probs",
     lambda: (lambda p: ops.softmax_sparse_ce_train(p, p, Z(1, F32), None, Z((3, 4), F32),
                                                    Z(3, np.int32), scale=1.0))(Z((3, 4), F32))),
    (r"softmax_sparse_ce_train: expected scale to be finite",
     lambda: ops.softmax_sparse_ce_train(Z((3, 4), F32), Z((3, 4), F32), Z(1, F32), None,
                                         Z((3, 4), F32), Z(3, np.int32), scale=np.inf)),
]


@pytest.mark.parametrize("pattern,call", BAD, ids=[p[25:60] for p, _ in BAD])
def test_bad_arguments_name_the_op(pattern, call):
    with pytest.raises((ValueError, TypeError), match=pattern):
        call()
