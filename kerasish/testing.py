"""check_gradients: compare a layer's backward with central finite differences."""

import numpy as np

import kernels_numba
from kerasish import config as kconfig


def check_gradients(layer, input_shape, seed=0, eps=1e-3, rtol=2e-2, atol=2e-3, training=True):
    """Check `layer.backward` against finite differences of `layer.forward`.

    Builds the layer for `input_shape` (batch included), draws a random input x and a
    random upstream gradient g, and compares dL/dx and every trainable weight's gradient
    with central differences of L = sum(forward(x) * g) on the current device.

    Returns:
        {tensor name: max error in units of the tolerance}, "input" for dL/dx.
    Raises:
        AssertionError naming the layer, the tensor and the worst element.
    """
    rng = np.random.default_rng(seed)
    device = kconfig.get_device()
    input_shape = tuple(int(s) for s in input_shape)
    n = input_shape[0]
    layer._build_once((None, *input_shape[1:]))
    layer.scratch = {k: kernels_numba.empty(s, d, device)
                     for k, (s, d) in layer.scratch_shapes(n).items()}
    out_shape = (n, *layer.output_shape[1:])
    x = rng.standard_normal(input_shape).astype(np.float32)
    g = rng.standard_normal(out_shape).astype(np.float64)
    aliases = getattr(layer, "aliases_input", False)
    step = getattr(layer, "_step", None)  # dropout: the same mask for every probe

    def forward(x_host):
        if step is not None:
            layer._step = step
        xb = kernels_numba.to_device(x_host, device)
        if aliases:
            return xb, xb.reshape(out_shape)
        yb = kernels_numba.empty(out_shape, np.float32, device)
        layer.forward(yb, xb, training)
        return xb, yb

    def objective(x_host):
        return float(np.sum(kernels_numba.to_host(forward(x_host)[1]) * g))

    xb, yb = forward(x)
    for w in layer.trainable_weights:
        kernels_numba.ops.fill(w.ensure_grad(), 0.0)
    if aliases:
        analytic = {"input": g.reshape(input_shape)}
    else:
        dxb = kernels_numba.empty(input_shape, np.float32, device)
        layer.backward(dxb, kernels_numba.to_device(g.astype(np.float32), device), xb, yb)
        analytic = {"input": kernels_numba.to_host(dxb)}
    for w in layer.trainable_weights:
        analytic[w.name] = kernels_numba.to_host(w.grad)

    errors = {}
    for name, grad in analytic.items():
        var = None if name == "input" else next(w for w in layer.trainable_weights
                                               if w.name == name)
        base = x if var is None else var.numpy()
        numeric = np.zeros(base.shape, np.float64)
        for i in np.ndindex(base.shape):
            values = []
            for delta in (eps, -eps):
                probe = base.copy()
                probe[i] += delta
                if var is None:
                    values.append(objective(probe))
                else:
                    var.assign(probe)
                    values.append(objective(x))
            numeric[i] = (values[0] - values[1]) / (2 * eps)
        if var is not None:
            var.assign(base)
        err = np.abs(grad - numeric) / (atol + rtol * np.abs(numeric))
        errors[name] = float(err.max()) if err.size else 0.0
        if errors[name] > 1:
            worst = tuple(int(i) for i in np.unravel_index(int(np.argmax(err)), err.shape))
            raise AssertionError(
                f"{type(layer).__name__} '{layer.name}': gradient of {name} at {worst} is "
                f"{grad[worst]:.6g}, finite differences give {numeric[worst]:.6g}")
    return errors
