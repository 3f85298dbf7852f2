"""`optimizer.apply(grads, variables)` / `apply_gradients(pairs)` outside fit (Keras 3).

Each gradient is written into its variable's gradient buffer (`.grad`, the one fit's
backward accumulates into), then the optimizer's own in-place update runs: the same
fused kernels_numba update op per variable, or one launch over the parameter block when
the variables are exactly a packed model's trainable set, on the variables' device.
"""

import warnings

import numpy as np

import kernels_numba
from kernels_numba import ops


def apply_gradient_values(opt, grads, variables):
    name = type(opt).__name__
    if not grads:
        return  # Keras 3: an empty list is a no-op
    if variables is None:
        if not opt.built:
            raise ValueError("When passing `grads` without `variables`, the optimizer must "
                             "already be built on a list of variables. Call "
                             "`optimizer.build(trainable_variables)` first.")
        if len(grads) != len(opt._trainable_variables):
            raise ValueError(f"{name}.apply: expected one gradient per variable the "
                             f"optimizer was built with ({len(opt._trainable_variables)}); "
                             f"received {len(grads)} gradients")
        variables = list(opt._trainable_variables)
    else:
        variables = list(variables)
        if len(grads) != len(variables):
            raise ValueError(f"{name}.apply: expected as many gradients as variables; "
                             f"received {len(grads)} gradients and {len(variables)} "
                             f"variables")
        for v in variables:
            if not hasattr(v, "ensure_grad"):
                raise TypeError(f"{name}.apply: expected kerasish Variables (a model's "
                                f"`trainable_weights`); received {type(v).__name__}")
        if not opt.built:
            opt.build(variables)
        for v in variables:
            if id(v) not in opt._known:
                raise ValueError(f"Unknown variable: {v}. This optimizer can only be called "
                                 f"for the variables it was originally built with. When "
                                 f"working with a new set of variables, you should recreate "
                                 f"a new optimizer instance.")
    pairs = [(g, v) for g, v in zip(grads, variables) if g is not None]
    missing = [v.path for g, v in zip(grads, variables) if g is None]
    if not pairs:
        raise ValueError("No gradients provided for any variable.")
    if missing:
        warnings.warn(f"Gradients do not exist for variables {missing} when minimizing the "
                      f"loss. If using `model.compile()`, did you forget to provide a "
                      f"`loss` argument?", stacklevel=3)
    for g, v in pairs:
        if not v.trainable:
            raise ValueError(f"{name}.apply: variable {v.path} is not trainable; expected "
                             f"trainable variables")
        write_gradient(name, v, g)
    opt.apply_in_place([v for _, v in pairs])
    for _, v in pairs:
        constraint = getattr(v, "constraint", None)
        if constraint is not None:
            constraint.apply(v.value)


def write_gradient(name, var, g):
    """Overwrite var.grad with g (host array, tape gradient or a buffer on var's device)."""
    buf = var.ensure_grad()
    shape = tuple(var.shape)
    device_buf = getattr(g, "_device_value", None)  # a tape gradient kept on the device
    if device_buf is not None:
        g = device_buf
    if not isinstance(g, np.ndarray) and _is_buffer(g):
        if tuple(g.shape) != shape and int(np.prod(g.shape)) != int(np.prod(shape or (1,))):
            raise ValueError(f"{name}.apply: expected a gradient of shape {shape} for "
                             f"variable {var.path}; received shape {tuple(g.shape)}")
        ops.copy(buf, g.reshape(buf.shape))
        return
    host = np.asarray(g, dtype=np.float32)
    if host.shape != shape:
        raise ValueError(f"{name}.apply: expected a gradient of shape {shape} for variable "
                         f"{var.path}; received shape {host.shape}")
    kernels_numba.copy_from_host(buf, host.reshape(buf.shape))


def _is_buffer(g):
    try:
        kernels_numba.device_of(g)
        return True
    except TypeError:
        return False
