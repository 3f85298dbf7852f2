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

from kernels_numba import _check
from kernels_numba.dispatch import impl
from kernels_numba.ops.optim import _beta, _buffers, _nonnegative, _number, _unit, grad_transform

__all__ = ["nadam_update", "adamax_update", "adadelta_update", "lion_update", "ftrl_update"]
FAMILY = "optim_more"
_F = np.float32


def _common(op, w, lr, weight_decay, clip):
    """(lr, decay, grad transform) checked."""
    lr = _nonnegative(op, "lr", lr)
    decay = _nonnegative(op, "weight_decay", weight_decay) * lr
    return lr, decay, grad_transform(op, w, *clip)


def nadam_update(w, g, m, v, *, lr, step, u_product, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 weight_decay=0.0, zero_grad=False, clipvalue=None, grad_scale=None,
                 segments=None):
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
        beta_1, beta_2: in [0, 1). epsilon: >= 0. weight_decay: >= 0.
        zero_grad: also zero g. clipvalue, grad_scale, segments: clipping (ops.optim).
    """
    op = "nadam_update"
    _buffers(op, w, g=g, m=m, v=v)
    lr, decay, grad = _common(op, w, lr, weight_decay, (clipvalue, grad_scale, segments))
    step = _check.positive_int(op, "step", step)
    beta_1, beta_2 = _beta(op, "beta_1", beta_1), _beta(op, "beta_2", beta_2)
    epsilon = _nonnegative(op, "epsilon", epsilon)
    product = _number(op, "u_product", u_product, "to be finite", lambda x: True)
    u_t = _F(beta_1) * (_F(1.0) - _F(0.5) * _F(0.96) ** _F(step))  # float32, as Keras
    u_next = _F(beta_1) * (_F(1.0) - _F(0.5) * _F(0.96) ** _F(step + 1))
    fn = impl(op, FAMILY, w=w, g=g, m=m, v=v)
    fn(w, g, m, v, lr=_F(lr), beta_1=_F(beta_1), beta_2=_F(beta_2), u_next=u_next,
       den_next=_F(1.0) - _F(product) * u_next, one_minus_u=_F(1.0) - u_t,
       den=_F(1.0) - _F(product), bias_2=_F(1.0) - _F(beta_2) ** _F(step), epsilon=_F(epsilon),
       decay=_F(decay), zero_grad=bool(zero_grad), grad=grad)


def adamax_update(w, g, m, u, *, lr, step, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                  weight_decay=0.0, zero_grad=False, clipvalue=None, grad_scale=None,
                  segments=None):
    """Adamax (Keras): m = beta_1*m + (1-beta_1)*g; u = max(beta_2*u, |g|);
    w -= lr*m/((u + epsilon)*(1 - beta_1**t)).

    Args:
        w, g, m, u: parameter (updated in place), gradient, momentum and norm slots.
        lr: >= 0. step: t = iterations + 1. beta_1, beta_2: in [0, 1). epsilon: >= 0.
        weight_decay: >= 0. zero_grad: also zero g. clipvalue, grad_scale, segments: clipping.
    """
    op = "adamax_update"
    _buffers(op, w, g=g, m=m, u=u)
    lr, decay, grad = _common(op, w, lr, weight_decay, (clipvalue, grad_scale, segments))
    step = _check.positive_int(op, "step", step)
    beta_1, beta_2 = _beta(op, "beta_1", beta_1), _beta(op, "beta_2", beta_2)
    epsilon = _nonnegative(op, "epsilon", epsilon)
    fn = impl(op, FAMILY, w=w, g=g, m=m, u=u)
    fn(w, g, m, u, lr=_F(lr), beta_1=_F(beta_1), beta_2=_F(beta_2),
       bias_1=_F(1.0) - _F(beta_1) ** _F(step), epsilon=_F(epsilon), decay=_F(decay),
       zero_grad=bool(zero_grad), grad=grad)


def adadelta_update(w, g, accumulated_grad, accumulated_delta, *, lr, rho=0.95, epsilon=1e-7,
                    weight_decay=0.0, zero_grad=False, clipvalue=None, grad_scale=None,
                    segments=None):
    """Adadelta (Keras): a = rho*a + (1-rho)*g*g; d = -sqrt(D + eps)*g/sqrt(a + eps);
    D = rho*D + (1-rho)*d*d; w += lr*d.

    Args:
        w, g: parameter (updated in place), gradient.
        accumulated_grad, accumulated_delta: the slots a and D.
        lr: >= 0. rho: in [0, 1]. epsilon: >= 0. weight_decay: >= 0.
        zero_grad: also zero g. clipvalue, grad_scale, segments: clipping.
    """
    op = "adadelta_update"
    _buffers(op, w, g=g, accumulated_grad=accumulated_grad, accumulated_delta=accumulated_delta)
    lr, decay, grad = _common(op, w, lr, weight_decay, (clipvalue, grad_scale, segments))
    rho = _unit(op, "rho", rho)
    epsilon = _nonnegative(op, "epsilon", epsilon)
    fn = impl(op, FAMILY, w=w, g=g, accumulated_grad=accumulated_grad,
              accumulated_delta=accumulated_delta)
    fn(w, g, accumulated_grad, accumulated_delta, lr=_F(lr), rho=_F(rho), epsilon=_F(epsilon),
       decay=_F(decay), zero_grad=bool(zero_grad), grad=grad)


def lion_update(w, g, m, *, lr, beta_1=0.9, beta_2=0.99, weight_decay=0.0, zero_grad=False,
                clipvalue=None, grad_scale=None, segments=None):
    """Lion (Keras): w -= lr*sign(beta_1*m + (1-beta_1)*g); m = beta_2*m + (1-beta_2)*g.
    sign(NaN) is NaN (IEEE; torch's sign would give 0 and hide it).

    Args:
        w, g, m: parameter (updated in place), gradient, momentum slot.
        lr: >= 0. beta_1: in (0, 1]. beta_2: in [0, 1]. weight_decay: >= 0.
        zero_grad: also zero g. clipvalue, grad_scale, segments: clipping.
    """
    op = "lion_update"
    _buffers(op, w, g=g, m=m)
    lr, decay, grad = _common(op, w, lr, weight_decay, (clipvalue, grad_scale, segments))
    beta_1 = _number(op, "beta_1", beta_1, "in (0, 1]", lambda x: 0.0 < x <= 1.0)
    beta_2 = _unit(op, "beta_2", beta_2)
    fn = impl(op, FAMILY, w=w, g=g, m=m)
    fn(w, g, m, lr=_F(lr), beta_1=_F(beta_1), beta_2=_F(beta_2), decay=_F(decay),
       zero_grad=bool(zero_grad), grad=grad)


def ftrl_update(w, g, accumulator, linear, *, lr, learning_rate_power=-0.5,
                l1_regularization_strength=0.0, l2_regularization_strength=0.0,
                l2_shrinkage_regularization_strength=0.0, beta=0.0, weight_decay=0.0,
                zero_grad=False, clipvalue=None, grad_scale=None, segments=None):
    """FTRL-proximal (Keras): with p = -learning_rate_power, l2 = l2_strength + beta/(2*lr):
    n' = n + g*g; z += g + 2*l2_shrinkage*w - (n'**p - n**p)/lr*w;
    w = (clip(z, -l1, l1) - z)/(n'**p/lr + 2*l2); n = n'.

    Args:
        w, g: parameter (updated in place), gradient.
        accumulator, linear: the slots n (Keras starts it at 0.1) and z.
        lr: > 0 (Ftrl divides by it). learning_rate_power: <= 0.
        l1/l2/l2_shrinkage_regularization_strength, beta: >= 0.
        weight_decay: >= 0. zero_grad: also zero g. clipvalue, grad_scale, segments: clipping.
    """
    op = "ftrl_update"
    _buffers(op, w, g=g, accumulator=accumulator, linear=linear)
    lr, decay, grad = _common(op, w, lr, weight_decay, (clipvalue, grad_scale, segments))
    if lr == 0.0:
        raise ValueError(f"{op}: expected lr > 0 (the update divides by it); received {lr}")
    power = _number(op, "learning_rate_power", learning_rate_power, "<= 0", lambda x: x <= 0.0)
    l1 = _nonnegative(op, "l1_regularization_strength", l1_regularization_strength)
    l2 = _nonnegative(op, "l2_regularization_strength", l2_regularization_strength)
    shrink = _nonnegative(op, "l2_shrinkage_regularization_strength",
                          l2_shrinkage_regularization_strength)
    beta = _nonnegative(op, "beta", beta)
    l2_total = _F(l2) + _F(beta) / (_F(2.0) * _F(lr))  # float32, as Keras
    fn = impl(op, FAMILY, w=w, g=g, accumulator=accumulator, linear=linear)
    fn(w, g, accumulator, linear, lr=_F(lr), power=_F(-power), l1=_F(l1),
       two_l2=_F(2.0) * l2_total, two_shrink=_F(2.0 * shrink), decay=_F(decay),
       zero_grad=bool(zero_grad), grad=grad)

