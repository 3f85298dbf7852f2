"""check_gradients: compare a layer's backward with central finite differences."""

import numpy as np

import kernels_numba
from kerasish import config as kconfig


def check_gradients(layer, input_shape, seed=0, eps=1e-3, rtol=2e-2, atol=2e-3,
                    training=True):
    """Check `layer.backward` against finite differences of `layer.forward`.

    Builds the layer for `input_shape` (batch included), draws a random input and a
    random upstream gradient g, and compares dx and every trainable weight gradient
    with central differences of sum(forward(x) * g). Raises AssertionError naming the
    first mismatch; returns the max relative error per checked tensor.
    """
    rng = np.random.default_rng(seed)
    device = kconfig.get_device()
    input_shape = tuple(int(s) for s in input_shape)
    layer._build_once((None, *input_shape[1:]))
    n = input_shape[0]
    layer.scratch = {k: kernels_numba.empty(s, d, device)
                     for k, (s, d) in layer.scratch_shapes(n).items()}
    out_shape = (n, *layer.output_shape[1:])
    x = rng.standard_normal(input_shape).astype(np.float32)
    g = rng.standard_normal(out_shape).astype(np.float32)

    def run_forward(x_host):
        xb = kernels_numba.to_device(x_host.astype(np.float32), device)
        yb = kernels_numba.empty(out_shape, np.float32, device)
        if getattr(layer, "aliases_input", False):
            return kernels_numba.to_host(xb).reshape(out_shape), xb, xb.reshape(out_shape)
        layer.forward(yb, xb, training)
        return kernels_numba.to_host(yb), xb, yb

    def objective():
        return float(np.sum(run_forward(x)[0].astype(np.float64) * g))

    seed_state = getattr(layer, "_step", None)
    _, xb, yb = run_forward(x)
    for w in layer.trainable_weights:
        w.ensure_grad()
        kernels_numba.ops.fill(w.grad, 0.0)
    dxb = kernels_numba.empty(input_shape, np.float32, device)
    dyb = kernels_numba.to_device(g, device)
    if getattr(layer, "aliases_input", False):
        analytic_dx = g.reshape(input_shape)
    else:
        layer.backward(dxb, dyb, xb, yb)
        analytic_dx = kernels_numba.to_host(dxb)
    checks = [("input", x, analytic_dx)]
    checks += [(w.name, None, w.numpy() if w.grad is None else kernels_numba.to_host(w.grad))
               for w in layer.trainable_weights]
    errors = {}
    for name, _, analytic in checks:
        target = x if name == "input" else None
        var = None if name == "input" else next(w for w in layer.trainable_weights
                                               if w.name == name)
        base = x.copy() if var is None else var.numpy()
        numeric = np.zeros(base.shape, np.float64)
        flat = base.reshape(-1)
        for i in range(flat.size):
            for sign in (1, -1):
                probe = flat.copy()
                probe[i] += sign * eps
                probe = probe.reshape(base.shape)
                if seed_state is not None:
                    layer._step = seed_state  # same dropout mask for every probe
                if var is None:
                    value = float(np.sum(run_forward(probe)[0].astype(np.float64) * g))
                else:
                    var.assign(probe)
                    value = objective()
                numeric.reshape(-1)[i] += sign * value / (2 * eps)
        if var is not None:
            var.assign(base)
        del target
        err = np.abs(analytic - numeric) / (atol + rtol * np.abs(numeric))
        errors[name] = float(err.max()) if err.size else 0.0
        if errors[name] > 1:
            i = np.unravel_index(int(np.argmax(err)), err.shape)
            raise AssertionError(
                f"{type(layer).__name__} '{layer.name}': gradient of {name} at {i} is "
                f"{analytic[i]:.6g}, finite differences give {numeric[i]:.6g}")
    return errors
