"""Launches of the reference CNN's training step, and Dense's deferred softmax.

The step's pieces are driven through the layer methods in the order the engine runs
them (forward, the fused softmax + sparse CE loss op, backward in reverse) with the
output Dense's softmax deferred to the loss op. Target (issue 17): at most 20 launches
per step, Adam's one included, so these pieces must take at most 19.
"""

import collections

import numpy as np
import pytest

import kernels_numba as kn
import kerasish as keras
from kerasish import config, layers
from kernels_numba import cuda_available, ops
from kernels_numba.testing import assert_close, host, on, randn, rng


@pytest.fixture
def on_device(request):
    """Builds the models' weights on `device` (restores the default afterwards)."""
    before = config.get_device()

    def use(device):
        config.set_device(device)

    yield use
    config.set_device(before)


def _reference_cnn():
    return keras.Sequential([
        keras.Input((28, 28, 1)), layers.Conv2D(32, 3, activation="relu"), layers.MaxPooling2D(2),
        layers.Conv2D(64, 3, activation="relu"), layers.MaxPooling2D(2), layers.Flatten(),
        layers.Dense(64, activation="relu"), layers.Dense(10, activation="softmax")])


def _prepare(model, n, device):
    """Scratch, gradient and activation buffers as the engine's plan would make them."""
    acts = [kn.zeros((n, *model.layers[0].input_shape[1:]), device=device)]
    grads = [None]
    for layer in model.layers:
        layer.scratch = {name: kn.zeros(shape, dtype, device=device)
                         for name, (shape, dtype) in layer.scratch_shapes(n).items()}
        for v in layer.weights:
            v.ensure_grad()
        shape = (n, *layer.output_shape[1:])
        if getattr(layer, "aliases_input", False):
            acts.append(acts[-1].reshape(shape))
            grads.append(None if grads[-1] is None else grads[-1].reshape(shape))
        else:
            acts.append(kn.zeros(shape, device=device))
            grads.append(kn.zeros(shape, device=device))
    return acts, grads


def _step(model, acts, grads, labels, *, fused, loss_acc, match_acc):
    """One training step's forward, loss and backward through the layer methods."""
    n = acts[0].shape[0]
    out = model.layers[-1]
    out.defer_softmax(fused)
    for i, layer in enumerate(model.layers):
        if not getattr(layer, "aliases_input", False):
            layer.forward(acts[i + 1], acts[i], True)
    dy = grads[-1]
    if fused:
        ops.softmax_sparse_ce_train(acts[-1], dy, loss_acc, match_acc, out.logits_view(n),
                                    labels, scale=1.0 / n)
    else:
        losses = kn.zeros((n,), device=kn.device_of(dy))
        ops.sparse_categorical_crossentropy_forward(losses, acts[-1], labels)
        ops.sum_into(loss_acc, losses)
        ops.count_argmax_matches(match_acc, acts[-1], labels)
        ops.sparse_categorical_crossentropy_backward(dy, acts[-1], labels, scale=1.0 / n)
    for i in range(len(model.layers) - 1, -1, -1):
        layer = model.layers[i]
        if not getattr(layer, "aliases_input", False):
            layer.backward(grads[i], grads[i + 1], acts[i], acts[i + 1])


@pytest.mark.cudasim
def test_reference_cnn_step_takes_at_most_19_launches_before_adam(on_device):
    if not cuda_available():
        pytest.skip("CUDA kernels cannot run here: no GPU and NUMBA_ENABLE_CUDASIM is not 1")
    on_device("cuda")
    model, n = _reference_cnn(), 64
    acts, grads = _prepare(model, n, "cuda")
    labels = kn.to_device(np.zeros(n, np.int32), "cuda")
    acc = kn.zeros((1,), device="cuda"), kn.zeros((1,), device="cuda")
    with kn.record_launches(execute=False) as calls:
        _step(model, acts, grads, labels, fused=True, loss_acc=acc[0], match_acc=acc[1])
    names = collections.Counter(c.name for c in calls)
    # forward 8 (2 im2col + 2 conv GEMMs, 2 pools, 2 dense GEMMs), the loss 1, backward 10
    assert len(calls) <= 19, names
    assert names["_softmax_sparse_ce_train_kernel"] == 1
    for fused_away in ("_activation_backward_kernel", "_column_partials_kernel",
                       "_add_column_partials_kernel", "_split_k_reduce_kernel",
                       "_softmax_forward_kernel", "_softmax_backward_kernel"):
        assert fused_away not in names, names


def test_deferred_softmax_step_equals_the_unfused_path(device, on_device):
    """forward with the softmax deferred -> softmax_sparse_ce_train -> backward gives the
    gradients, loss and accuracy of the unfused chain to 1e-6."""
    on_device(device)
    model = keras.Sequential([keras.Input((5,)), layers.Dense(7, activation="relu"),
                              layers.Dense(4, activation="softmax")])
    n = 6
    x = randn((n, 5), seed=1) * np.float32(2.0)
    labels = on(device, rng(2).integers(0, 4, n).astype(np.int32))
    results = {}
    for fused in (False, True):
        acts, grads = _prepare(model, n, device)
        ops.copy(acts[0], on(device, x))
        for v in model.weights:
            ops.fill(v.grad, 0.0)
        acc = on(device, np.zeros(1, np.float32)), on(device, np.zeros(1, np.float32))
        _step(model, acts, grads, labels, fused=fused, loss_acc=acc[0], match_acc=acc[1])
        results[fused] = ([host(v.grad).copy() for v in model.weights], host(acts[-1]),
                          host(acc[0])[0], host(acc[1])[0])
    (g0, p0, l0, m0), (g1, p1, l1, m1) = results[False], results[True]
    for a, b in zip(g0, g1):
        assert_close(b, a, rtol=0, atol=1e-6, what="gradient, fused vs unfused")
    assert_close(p1, p0, rtol=0, atol=1e-6, what="probs")
    assert_close(l1, l0, rtol=1e-6, atol=1e-6, what="loss sum")
    assert m1 == m0


def test_defer_softmax_only_in_training_and_only_for_softmax(device, on_device):
    on_device(device)
    model = keras.Sequential([keras.Input((3,)), layers.Dense(4, activation="softmax")])
    out = model.layers[-1]
    acts, _ = _prepare(model, 2, device)
    ops.copy(acts[0], on(device, randn((2, 3), seed=3)))
    out.defer_softmax(True)
    out.forward(acts[1], acts[0], False)  # inference: the softmax still runs
    p = host(acts[1])
    assert_close(p.sum(axis=1), np.ones(2), atol=1e-6, what="inference probs")
    ops.fill(acts[1], -1.0)
    out.forward(acts[1], acts[0], True)  # training: logits only, y left to the loss op
    assert (host(acts[1]) == -1.0).all()
    assert_close(host(out.logits_view(2)), np.log(p) - np.log(p)[:, :1] +
                 host(out.logits_view(2))[:, :1], atol=1e-5, what="logits")
    relu = layers.Dense(2, activation="relu")
    with pytest.raises(ValueError, match="defer_softmax needs activation='softmax'; "
                                         "received activation='relu'"):
        relu.defer_softmax(True)
