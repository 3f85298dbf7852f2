"""Nadam, Adamax, Adadelta, Lion and Ftrl updates (Keras 3 formulas, in the operation order
of its torch backend), one fused kernel per parameter tensor or block.

Same contract as kernels_numba.ops.optim (exported from there too): w, g and every
slot share one shape, float32, C-contiguous; `weight_decay` is Keras 3's decoupled
w -= w * weight_decay * lr before the update; `zero_grad=True` also sets g = 0;
`clipvalue` / `grad_scale` / `segments` clip the gradient inside the same kernel.
Each update is elementwise, so a zero gradient on zero slots and a zero weight
(the alignment gaps of a parameter block) leaves all of them zero.
"""

import numpy as np

from kernels_numba.dispatch import impl
from kernels_numba.ops.optim import (
    _beta,
    _buffers,
    _decay_of,
    _lr,
    _nonnegative,
    _number,
    _scalars,
    _step,
    _unit,
    grad_transform,
)

__all__ = ["nadam_update", "adamax_update", "adadelta_update", "lion_update", "ftrl_update",
           "nadam_scalars", "adamax_scalars", "adadelta_scalars", "lion_scalars",
           "ftrl_scalars"]
FAMILY = "optim_more"
_F = np.float32

# What each update reads from its `scalars` buffer, in order (see ops.optim).
LAYOUTS = {
    "nadam_update": ("lr", "u_next", "den_next", "one_minus_u", "den", "bias_2", "decay"),
    "adamax_update": ("lr", "bias_1", "decay"),
    "adadelta_update": ("lr", "decay"),
    "lion_update": ("lr", "decay"),
    "ftrl_update": ("lr", "two_l2", "decay"),
}


def nadam_scalars(out, *, lr, step, u_product, beta_1=0.9, beta_2=0.999, weight_decay=None):
    """Fill out[:7] with nadam_update's per-step values (LAYOUTS), in float32 as Keras."""
    op = "nadam_update"
    lr, step = _lr(op, lr), _step(op, step)
    beta_1, beta_2 = _F(_beta(op, "beta_1", beta_1)), _F(_beta(op, "beta_2", beta_2))
    product = _F(_number(op, "u_product", u_product, "to be finite", lambda x: True))
    u_t = beta_1 * (_F(1.0) - _F(0.5) * _F(0.96) ** _F(step))
    u_next = beta_1 * (_F(1.0) - _F(0.5) * _F(0.96) ** _F(step + 1))
    out[0], out[1], out[2] = lr, u_next, _F(1.0) - product * u_next
    out[3], out[4], out[5] = _F(1.0) - u_t, _F(1.0) - product, _F(1.0) - beta_2 ** _F(step)
    out[6] = _decay_of(op, weight_decay, lr)


def adamax_scalars(out, *, lr, step, beta_1=0.9, weight_decay=None):
    """Fill out[:3] with adamax_update's per-step values (lr, 1 - beta_1**step, decay)."""
    op = "adamax_update"
    lr, step = _lr(op, lr), _step(op, step)
    out[0] = lr
    out[1] = _F(1.0) - _F(_beta(op, "beta_1", beta_1)) ** _F(step)
    out[2] = _decay_of(op, weight_decay, lr)


def adadelta_scalars(out, *, lr, weight_decay=None):
    """Fill out[:2] with adadelta_update's per-step values (lr, weight_decay*lr)."""
    lr = _lr("adadelta_update", lr)
    out[0], out[1] = lr, _decay_of("adadelta_update", weight_decay, lr)


def lion_scalars(out, *, lr, weight_decay=None):
    """Fill out[:2] with lion_update's per-step values (lr, weight_decay*lr)."""
    lr = _lr("lion_update", lr)
    out[0], out[1] = lr, _decay_of("lion_update", weight_decay, lr)


def ftrl_scalars(out, *, lr, beta=0.0, l2_regularization_strength=0.0, weight_decay=None):
    """Fill out[:3] with ftrl_update's per-step values: lr, 2*(l2 + beta/(2*lr)) (float32,
    as Keras), weight_decay*lr."""
    op = "ftrl_update"
    lr = _lr(op, lr)
    if lr == 0.0:
        raise ValueError(f"{op}: expected lr > 0 (the update divides by it); received {lr}")
    l2 = _nonnegative(op, "l2_regularization_strength", l2_regularization_strength)
    beta = _nonnegative(op, "beta", beta)
    out[0] = lr
    out[1] = _F(2.0) * (_F(l2) + _F(beta) / (_F(2.0) * _F(lr)))
    out[2] = _decay_of(op, weight_decay, lr)


def nadam_update(w, g, m, v, *, lr=None, step=None, u_product=None, beta_1=0.9, beta_2=0.999,
                 epsilon=1e-7, weight_decay=None, zero_grad=False, clipvalue=None,
                 grad_scale=None, segments=None, scalars=None):
    """Nadam (Keras): with u_t = beta_1*(1 - 0.5*0.96**t) and the running product
    P_t = u_1*...*u_t (kept by the caller, `u_product`, this step's factor included):
    m = beta_1*m + (1-beta_1)*g; v = beta_2*v + (1-beta_2)*g*g;
    m_hat = u_{t+1}*m/(1 - P_t*u_{t+1}) + (1-u_t)*g/(1 - P_t); v_hat = v/(1 - beta_2**t);
    w -= lr*m_hat/(sqrt(v_hat) + epsilon).

    Args:
        w, g, m, v: parameter (updated in place), gradient, momentum and velocity slots.
        lr: learning rate >= 0. step: t = iterations + 1 (positive int).
        u_product: P_t, a finite number (Keras's float32 `u_product` variable after
            this step's update).
        beta_1, beta_2: in [0, 1). epsilon: >= 0. weight_decay: >= 0 (None = 0).
        zero_grad: also zero g. clipvalue, grad_scale, segments: clipping (ops.optim).
        scalars: float32 (7,) on w's device from nadam_scalars (same betas), instead of
            lr, step, u_product and weight_decay.
    """
    op = "nadam_update"
    _buffers(op, w, g=g, m=m, v=v)
    beta_1, beta_2 = _beta(op, "beta_1", beta_1), _beta(op, "beta_2", beta_2)
    epsilon = _nonnegative(op, "epsilon", epsilon)
    scalars = _scalars(op, w, scalars, lambda out, **k: nadam_scalars(
        out, beta_1=beta_1, beta_2=beta_2, **k), lr=lr, step=step, u_product=u_product,
        weight_decay=weight_decay)
    fn = impl(op, FAMILY, w=w, g=g, m=m, v=v)
    fn(w, g, m, v, scalars=scalars, beta_1=_F(beta_1), beta_2=_F(beta_2), epsilon=_F(epsilon),
       zero_grad=bool(zero_grad), grad=grad_transform(op, w, clipvalue, grad_scale, segments))


def adamax_update(w, g, m, u, *, lr=None, step=None, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                  weight_decay=None, zero_grad=False, clipvalue=None, grad_scale=None,
                  segments=None, scalars=None):
    """Adamax (Keras): m = beta_1*m + (1-beta_1)*g; u = max(beta_2*u, |g|);
    w -= lr*m/((u + epsilon)*(1 - beta_1**t)).

    Args:
        w, g, m, u: parameter (updated in place), gradient, momentum and norm slots.
        lr: >= 0. step: t = iterations + 1. beta_1, beta_2: in [0, 1). epsilon: >= 0.
        weight_decay: >= 0 (None = 0). zero_grad: also zero g.
        clipvalue, grad_scale, segments: clipping.
        scalars: float32 (3,) on w's device from adamax_scalars, instead of lr, step and
            weight_decay.
    """
    op = "adamax_update"
    _buffers(op, w, g=g, m=m, u=u)
    beta_1, beta_2 = _beta(op, "beta_1", beta_1), _beta(op, "beta_2", beta_2)
    epsilon = _nonnegative(op, "epsilon", epsilon)
    scalars = _scalars(op, w, scalars, lambda out, **k: adamax_scalars(out, beta_1=beta_1, **k),
                       lr=lr, step=step, weight_decay=weight_decay)
    fn = impl(op, FAMILY, w=w, g=g, m=m, u=u)
    fn(w, g, m, u, scalars=scalars, beta_1=_F(beta_1), beta_2=_F(beta_2), epsilon=_F(epsilon),
       zero_grad=bool(zero_grad), grad=grad_transform(op, w, clipvalue, grad_scale, segments))


def adadelta_update(w, g, accumulated_grad, accumulated_delta, *, lr=None, rho=0.95,
                    epsilon=1e-7, weight_decay=None, zero_grad=False, clipvalue=None,
                    grad_scale=None, segments=None, scalars=None):
    """Adadelta (Keras): a = rho*a + (1-rho)*g*g; d = -sqrt(D + eps)*g/sqrt(a + eps);
    D = rho*D + (1-rho)*d*d; w += lr*d.

    Args:
        w, g: parameter (updated in place), gradient.
        accumulated_grad, accumulated_delta: the slots a and D.
        lr: >= 0. rho: in [0, 1]. epsilon: >= 0. weight_decay: >= 0 (None = 0).
        zero_grad: also zero g. clipvalue, grad_scale, segments: clipping.
        scalars: float32 (2,) on w's device from adadelta_scalars, instead of lr and
            weight_decay.
    """
    op = "adadelta_update"
    _buffers(op, w, g=g, accumulated_grad=accumulated_grad, accumulated_delta=accumulated_delta)
    rho = _unit(op, "rho", rho)
    epsilon = _nonnegative(op, "epsilon", epsilon)
    scalars = _scalars(op, w, scalars, adadelta_scalars, lr=lr, weight_decay=weight_decay)
    fn = impl(op, FAMILY, w=w, g=g, accumulated_grad=accumulated_grad,
              accumulated_delta=accumulated_delta)
    fn(w, g, accumulated_grad, accumulated_delta, scalars=scalars, rho=_F(rho),
       epsilon=_F(epsilon), zero_grad=bool(zero_grad),
       grad=grad_transform(op, w, clipvalue, grad_scale, segments))


def lion_update(w, g, m, *, lr=None, beta_1=0.9, beta_2=0.99, weight_decay=None,
                zero_grad=False, clipvalue=None, grad_scale=None, segments=None, scalars=None):
    """Lion (Keras): w -= lr*sign(beta_1*m + (1-beta_1)*g); m = beta_2*m + (1-beta_2)*g.
    sign(NaN) is NaN (IEEE; torch's sign would give 0 and hide it).

    Args:
        w, g, m: parameter (updated in place), gradient, momentum slot.
        lr: >= 0. beta_1: in (0, 1]. beta_2: in [0, 1]. weight_decay: >= 0 (None = 0).
        zero_grad: also zero g. clipvalue, grad_scale, segments: clipping.
        scalars: float32 (2,) on w's device from lion_scalars, instead of lr and
            weight_decay.
    """
    op = "lion_update"
    _buffers(op, w, g=g, m=m)
    beta_1 = _number(op, "beta_1", beta_1, "in (0, 1]", lambda x: 0.0 < x <= 1.0)
    beta_2 = _unit(op, "beta_2", beta_2)
    scalars = _scalars(op, w, scalars, lion_scalars, lr=lr, weight_decay=weight_decay)
    fn = impl(op, FAMILY, w=w, g=g, m=m)
    fn(w, g, m, scalars=scalars, beta_1=_F(beta_1), beta_2=_F(beta_2),
       zero_grad=bool(zero_grad), grad=grad_transform(op, w, clipvalue, grad_scale, segments))


def ftrl_update(w, g, accumulator, linear, *, lr=None, learning_rate_power=-0.5,
                l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                l2_shrinkage_regularization_strength=0.0, beta=0.0, weight_decay=None,
                zero_grad=False, clipvalue=None, grad_scale=None, segments=None,
                scalars=None):
    """FTRL-proximal (Keras): with p = -learning_rate_power, l2 = l2_strength + beta/(2*lr):
    n' = n + g*g; z += g + 2*l2_shrinkage*w - (n'**p - n**p)/lr*w;
    w = (clip(z, -l1, l1) - z)/(n'**p/lr + 2*l2); n = n'.

    Args:
        w, g: parameter (updated in place), gradient.
        accumulator, linear: the slots n (Keras starts it at 0.1) and z.
        lr: > 0 (Ftrl divides by it). learning_rate_power: <= 0.
        l1/l2/l2_shrinkage_regularization_strength, beta: >= 0.
        weight_decay: >= 0 (None = 0). zero_grad: also zero g.
        clipvalue, grad_scale, segments: clipping.
        scalars: float32 (3,) on w's device from ftrl_scalars (same beta and l2), instead
            of lr and weight_decay.
    """
    op = "ftrl_update"
    _buffers(op, w, g=g, accumulator=accumulator, linear=linear)
    power = _number(op, "learning_rate_power", learning_rate_power, "<= 0", lambda x: x <= 0.0)
    l1 = _nonnegative(op, "l1_regularization_strength", l1_regularization_strength)
    l2 = _nonnegative(op, "l2_regularization_strength", l2_regularization_strength)
    shrink = _nonnegative(op, "l2_shrinkage_regularization_strength",
                          l2_shrinkage_regularization_strength)
    beta = _nonnegative(op, "beta", beta)
    scalars = _scalars(op, w, scalars, lambda out, **k: ftrl_scalars(
        out, beta=beta, l2_regularization_strength=l2, **k), lr=lr, weight_decay=weight_decay)
    fn = impl(op, FAMILY, w=w, g=g, accumulator=accumulator, linear=linear)
    fn(w, g, accumulator, linear, scalars=scalars, power=_F(-power), l1=_F(l1),
       two_shrink=_F(2.0 * shrink), zero_grad=bool(zero_grad),
       grad=grad_transform(op, w, clipvalue, grad_scale, segments))
