"""Conv2D(groups=g): a grouped convolution on conv2d's kernels, one group at a time.

Keras's layout: kernel (KH, KW, C / g, filters); group k reads input channels
[k C/g, (k + 1) C/g) and writes filters [k F/g, (k + 1) F/g) through kernel[..., k F/g:
(k + 1) F/g]. Per group the layer's scratch holds the group's contiguous input channels,
kernel columns, output and gradients (merge's take_columns / copy_columns move the
blocks), and the group runs conv2d_forward / backward_filter / backward_data; the bias
slice is contiguous and used in place. Conv2D's fused conv + pool path skips these
layers (engine/conv_pool.py takes only groups=1 Conv2D calls).
"""

import numpy as np

from kerasish import activations
from kernels_numba import ops


def _rows(a):
    last = a.shape[a.ndim - 1]  # (the simulator's device arrays take no shape[-1])
    return a.reshape((a.size // last, last))


def _sizes(layer):
    c = layer.input_shape[-1]
    return c // layer.groups, layer.filters // layer.groups


def group_w_shape(layer, input_shape):
    return (*layer.kernel_size, input_shape[-1] // layer.groups, layer.filters // layer.groups)


def check_groups(layer, input_shape):
    c = input_shape[-1]
    if c % layer.groups:
        raise ValueError(f"Conv2D {layer.name}: the number of input channels must be "
                         f"divisible by groups; received input channels {c}, "
                         f"groups={layer.groups}")


def scratch_shapes(layer, batch_size):
    cg, fg = _sizes(layer)
    n, (h, w), (ho, wo) = batch_size, layer.input_shape[1:3], layer.output_shape[1:3]
    x_g, y_g = (n, h, w, cg), (n, ho, wo, fg)
    w_g = group_w_shape(layer, layer.input_shape)
    ws = ops.conv2d_workspace_shape(x_g, w_g, **layer._geometry())
    shapes = {"workspace": (ws, np.float32), "group_x": (x_g, np.float32),
              "group_dx": (x_g, np.float32), "group_y": (y_g, np.float32),
              "group_w": (w_g, np.float32), "group_dw": (w_g, np.float32)}
    if layer.activation not in activations.FUSABLE:
        shapes["z"] = ((batch_size, *layer.output_shape[1:]), np.float32)
    return shapes


def _group(layer, name, n):
    buf = layer.scratch[name]
    return buf if name.endswith("w") or buf.shape[0] == n else buf[:n]


def _workspace(layer, n):
    cg, fg = _sizes(layer)
    shape = ops.conv2d_workspace_shape((n, *layer.input_shape[1:3], cg),
                                       group_w_shape(layer, layer.input_shape),
                                       **layer._geometry())
    buf = layer.scratch["workspace"]
    flat = buf.reshape((buf.size,))
    return flat[: int(np.prod(shape, dtype=np.int64))].reshape(shape)


def forward(layer, y, x, training):
    n = x.shape[0]
    cg, fg = _sizes(layer)
    fused = layer.activation in activations.FUSABLE
    z = y if fused else layer.scratch_view("z", n)
    xg, yg = _group(layer, "group_x", n), _group(layer, "group_y", n)
    wg = layer.scratch["group_w"]
    ws = _workspace(layer, n)
    kernel = _rows(layer.kernel.value)
    for k in range(layer.groups):
        ops.take_columns(_rows(xg), _rows(x), k * cg)
        ops.take_columns(_rows(wg), kernel, k * fg)
        b = layer.bias.value[k * fg:(k + 1) * fg] if layer.use_bias else None
        ops.conv2d_forward(yg, xg, wg, b, ws, activation=layer.activation if fused else "linear",
                           **layer._geometry())
        ops.copy_columns(_rows(z), _rows(yg), k * fg)
    if not fused:
        ops.activation_forward(y, z, kind=layer.activation,
                               alpha=activations.alpha(layer.activation))


def backward(layer, dx, dy, x, y):
    n = x.shape[0]
    cg, fg = _sizes(layer)
    act = layer.activation
    if act not in activations.FUSABLE:
        ops.activation_backward(dy, dy, layer.scratch_view("z", n), y, kind=act,
                                alpha=activations.alpha(act))
    elif act != "linear":
        ops.activation_backward(dy, dy, None, y, kind=act, alpha=activations.alpha(act))
    xg, dxg, dyg = (_group(layer, k, n) for k in ("group_x", "group_dx", "group_y"))
    wg, dwg = layer.scratch["group_w"], layer.scratch["group_dw"]
    ws = _workspace(layer, n)
    kernel = _rows(layer.kernel.value)
    for k in range(layer.groups):
        ops.take_columns(_rows(dyg), _rows(dy), k * fg)
        if layer.trainable:
            grad = _rows(layer.kernel.grad)
            ops.take_columns(_rows(dwg), grad, k * fg)  # accumulates onto the current grad
            ops.take_columns(_rows(xg), _rows(x), k * cg)
            db = layer.bias.grad[k * fg:(k + 1) * fg] if layer.use_bias else None
            ops.conv2d_backward_filter(dwg, db, dyg, xg, ws, **layer._geometry())
            ops.copy_columns(grad, _rows(dwg), k * fg)
        if dx is not None:
            ops.take_columns(_rows(wg), kernel, k * fg)
            ops.conv2d_backward_data(dxg, dyg, wg, ws, **layer._geometry())
            ops.copy_columns(_rows(dx), _rows(dxg), k * cg)
