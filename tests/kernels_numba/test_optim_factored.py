"""adafactor_update against a float64 NumPy transcription of Keras 3's Adafactor
update_step (several steps, factored ranks 2 and 3, unfactored rank 1, weight
decay, zero_grad), both devices; errors name the op."""

import numpy as np
import pytest

from kernels_numba import ops
from kernels_numba.testing import assert_close, host, on


def _reference(w, g, state, t, lr, decay_rate=-0.8, eps1=1e-30, eps2=1e-3, clip=1.0, wd=0.0):
    """Keras 3's Adafactor.update_step in float64 (after its decoupled weight decay)."""
    w = w - w * wd * lr
    rho = min(lr, 1 / np.sqrt(t))
    alpha = max(eps2, np.sqrt(np.mean(w * w))) * rho
    g2 = g * g + eps1
    beta = 1 - t ** decay_rate
    if w.ndim >= 2:
        state["r"] = beta * state["r"] + (1 - beta) * g2.mean(axis=-1)
        state["c"] = beta * state["c"] + (1 - beta) * g2.mean(axis=-2)
        state["v"] = (state["r"] / state["r"].mean(axis=-1, keepdims=True))[..., None] * \
            state["c"][..., None, :]
    else:
        state["v"] = beta * state["v"] + (1 - beta) * g2
    u = g / np.sqrt(state["v"])
    u_hat = u / max(1.0, np.sqrt(np.mean(u * u)) / clip)
    return w - alpha * u_hat


@pytest.mark.parametrize("shape", [(5, 3), (2, 4, 3), (7,), (1,)])
def test_adafactor_matches_keras_formula(device, shape):
    rng = np.random.default_rng(len(shape))
    w64 = rng.standard_normal(shape)
    factored = len(shape) >= 2
    state = {"v": np.zeros(shape)}
    if factored:
        state["r"], state["c"] = np.zeros(shape[:-1]), np.zeros((*shape[:-2], shape[-1]))
    w = on(device, w64.astype(np.float32))
    v = on(device, np.zeros(shape, np.float32))
    r = on(device, np.zeros(shape[:-1], np.float32)) if factored else None
    c = on(device, np.zeros((*shape[:-2], shape[-1]), np.float32)) if factored else None
    ws = on(device, np.zeros(ops.adafactor_workspace_shape(shape), np.float32))
    for t in range(1, 5):
        g64 = rng.standard_normal(shape) * (0.1 if t % 2 else 3.0)
        g = on(device, g64.astype(np.float32))
        w64 = _reference(w64, g64, state, t, lr=0.05, wd=0.01)
        ops.adafactor_update(w, g, r, c, v, ws, lr=0.05, step=t, weight_decay=0.01,
                             zero_grad=True)
        assert_close(host(w), w64, rtol=2e-5, atol=2e-6, what=f"w after step {t}")
        assert_close(host(v), state["v"], rtol=2e-5, atol=1e-9, what=f"v after step {t}")
        assert not host(g).any()
    if factored:
        assert_close(host(r), state["r"], rtol=2e-5, atol=1e-9, what="r")


def test_adafactor_scalars_buffer_gives_the_by_value_step():
    rng = np.random.default_rng(3)
    w0 = rng.standard_normal((4, 3)).astype(np.float32)
    g0 = rng.standard_normal((4, 3)).astype(np.float32)
    outs = []
    for by_buffer in (False, True):
        w, g = w0.copy(), g0.copy()
        r, c, v = np.zeros(4, np.float32), np.zeros(3, np.float32), np.zeros((4, 3), np.float32)
        ws = np.zeros(ops.adafactor_workspace_shape((4, 3)), np.float32)
        if by_buffer:
            s = np.zeros(3, np.float32)
            ops.adafactor_scalars(s, lr=0.5, step=2)
            ops.adafactor_update(w, g, r, c, v, ws, scalars=s)
        else:
            ops.adafactor_update(w, g, r, c, v, ws, lr=0.5, step=2)
        outs.append(w)
    np.testing.assert_array_equal(outs[0], outs[1])


def test_errors_name_the_op():
    w = np.zeros((4, 3), np.float32)
    ws = np.zeros(3, np.float32)
    with pytest.raises(ValueError, match=r"adafactor_update: expected r of shape \(4,\)"):
        ops.adafactor_update(w, w.copy(), None, np.zeros(3, np.float32), w.copy(), ws, lr=0.1,
                             step=1)
    with pytest.raises(ValueError, match=r"adafactor_update: expected r=None for w of rank 1"):
        ops.adafactor_update(np.zeros(3, np.float32), np.zeros(3, np.float32),
                             np.zeros(3, np.float32), None, np.zeros(3, np.float32), ws,
                             lr=0.1, step=1)
    with pytest.raises(ValueError, match="adafactor_update: expected clip_threshold > 0"):
        ops.adafactor_update(w, w.copy(), np.zeros(4, np.float32), np.zeros(3, np.float32),
                             w.copy(), ws, lr=0.1, step=1, clip_threshold=0.0)
    with pytest.raises(ValueError, match=r"adafactor_update: expected workspace.shape"):
        ops.adafactor_update(w, w.copy(), np.zeros(4, np.float32), np.zeros(3, np.float32),
                             w.copy(), np.zeros(5, np.float32), lr=0.1, step=1)
