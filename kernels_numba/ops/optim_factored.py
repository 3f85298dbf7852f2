"""Adafactor's update (Keras 3's formula, one launch per variable): factored second
moments for a variable of rank >= 2, a full one below.

For w of shape (..., R, C), viewed as (B, R, C): with g2 = g**2 + epsilon_1,
    r = beta_2 r + (1 - beta_2) mean_C(g2)             (B, R)
    c = beta_2 c + (1 - beta_2) mean_R(g2)             (B, C)
    v = (r / mean_R(r))[..., None] * c[..., None, :]   (B, R, C)
(rank < 2: v = beta_2 v + (1 - beta_2) g2, r and c unused), then
    u = g / sqrt(v);  w -= alpha u / max(1, rms(u) / clip_threshold),
alpha = max(epsilon_2, rms(w)) rho, after Keras's decoupled w -= w weight_decay lr.
Per-step values (LAYOUTS) come in a `scalars` buffer, filled by adafactor_scalars:
rho = min(lr, 1/sqrt(t)) and beta_2 = 1 - t**beta_2_decay (Keras applies the min
whatever relative_step says). The rms sums are float32 in a fixed order (CUDA: one
block's tree), so the update is deterministic; `workspace` holds mean_R(r) per b.
"""

import numpy as np

from kernels_numba import _check
from kernels_numba.dispatch import impl
from kernels_numba.ops.optim import _decay_of, _lr, _number, _scalars, _step

__all__ = ["adafactor_update", "adafactor_scalars", "adafactor_workspace_shape"]
FAMILY = "optim_factored"
LAYOUTS = {"adafactor_update": ("rho", "beta_2", "decay")}
_F = np.float32


def adafactor_scalars(out, *, lr, step, beta_2_decay=-0.8, weight_decay=None):
    """Fill out[:3] with adafactor_update's per-step values (rho, beta_2, decay)."""
    op = "adafactor_update"
    lr, step = _lr(op, lr), _step(op, step)
    decay_rate = _number(op, "beta_2_decay", beta_2_decay, "to be finite", lambda x: True)
    t = _F(step)
    out[0] = min(_F(lr), _F(1.0) / np.sqrt(t))
    out[1] = _F(1.0) - t ** _F(decay_rate)
    out[2] = _decay_of(op, weight_decay, lr)


def adafactor_workspace_shape(shape):
    """(B + 2,): the scratch adafactor_update needs for a variable of `shape`."""
    shape = tuple(int(s) for s in shape)
    b = int(np.prod(shape[:-2], dtype=np.int64)) if len(shape) >= 2 else 1
    return (b + 2,)


def _factored_shapes(shape):
    if len(shape) < 2:
        return None, None
    return shape[:-1], (*shape[:-2], shape[-1])


def adafactor_update(w, g, r, c, v, workspace, *, epsilon_1=1e-30, epsilon_2=1e-3,
                     clip_threshold=1.0, scalars=None, lr=None, step=None, beta_2_decay=-0.8,
                     weight_decay=None, zero_grad=False):
    """One Adafactor step of w in place (r, c, v updated; g zeroed when zero_grad).

    Args:
        w, g, v: same shape, float32.
        r: w.shape[:-1], c: w.shape[:-2] + (w.shape[-1],), float32 (rank >= 2); None below.
        workspace: adafactor_workspace_shape(w.shape) float32.
        epsilon_1, epsilon_2: finite >= 0. clip_threshold: finite > 0.
        scalars: the (3,) buffer of adafactor_scalars, or lr/step/beta_2_decay/weight_decay.
    """
    op = "adafactor_update"
    shape = _check.array(op, "w", w)
    _check.array(op, "g", g, shape=shape)
    _check.array(op, "v", v, shape=shape)
    r_shape, c_shape = _factored_shapes(shape)
    for name, buf, want in (("r", r, r_shape), ("c", c, c_shape)):
        if want is None:
            if buf is not None:
                raise ValueError(f"{op}: expected {name}=None for w of rank {len(shape)} "
                                 f"(unfactored); received shape {getattr(buf, 'shape', buf)}")
        else:
            if buf is None:
                raise ValueError(f"{op}: expected {name} of shape {want} for w of shape "
                                 f"{shape}; received None")
            _check.array(op, name, buf, shape=want)
    _check.array(op, "workspace", workspace, shape=adafactor_workspace_shape(shape))
    eps1 = _number(op, "epsilon_1", epsilon_1, ">= 0", lambda x: x >= 0)
    eps2 = _number(op, "epsilon_2", epsilon_2, ">= 0", lambda x: x >= 0)
    clip = _number(op, "clip_threshold", clip_threshold, "> 0", lambda x: x > 0)
    s = _scalars(op, w, scalars, lambda out, **k: adafactor_scalars(
        out, beta_2_decay=beta_2_decay, **k), lr=lr, step=step, weight_decay=weight_decay)
    impl(op, FAMILY, w=w, g=g, v=v, workspace=workspace)(
        w, g, r, c, v, workspace, s, _F(eps1), _F(eps2), _F(clip), bool(zero_grad))
