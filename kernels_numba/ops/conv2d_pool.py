"""The backward of a ReLU conv2d followed by a max-pool, in one op: Conv2D(activation="relu")
then MaxPooling2D, the pattern of most small image models.

    z = relu(conv2d(x, w) + b)      (conv2d_forward, activation "relu")
    p, argmax = maxpool(z)          (maxpool2d_forward)

Given dp, the gradient wrt the pooled output p, the separate backward ops scatter dp into
the (N, Ho, Wo, F) gradient of z (maxpool2d_backward), then mask it by relu'(z) once in
each of the conv's two backward ops. This op does it with one mask. Each pooled element
(n, o, f) puts g = dp * relu'(p) at its argmax (oh, ow); the ReLU mask uses the pooled
value p, which is z there. Then the conv's gradients of that masked dz:
    db[f]              += sum of g
    dw[i, j, :, f]     += g * x[n, oh*sh - pt + i*dh, ow*sw - pl + j*dw, :]
    dx[n, ih, iw, :]   += g * w[i, j, :, f]            (the same input cells)
- CPU: one pass writes the masked dz into the `dz` scratch and sums db, then the
  conv2d GEMMs run on it (the forward's columns reused from `workspace`).
- CUDA: gathers straight from the pooled elements; `dz` and `workspace` are untouched.

One difference from the separate ops: a conv output that no window selects gets no
gradient, even where it is NaN (Keras on its torch backend gives 0 there too). The separate
ops' mask turns a NaN z there into a NaN gradient. A NaN inside a window wins the max,
so it reaches dw, db and dx as before.

Shapes: x (N, H, W, C); w, dw (KH, KW, C, F); db (F,); dp, p, argmax (N, Hp, Wp, F), the
maxpool2d_forward outputs over z (N, Ho, Wo, F); argmax is that op's flat index
(oh*Wo + ow)*F + f into a sample's z. An entry that is not a cell of its own window
contributes nothing, as in maxpool2d_backward. workspace: conv2d_workspace_shape's; dz:
(N, Ho, Wo, F) scratch, its contents undefined after the call.
Conventions: outputs first; ops never allocate; dw/db accumulate (+=), dx overwrites (=).
Each output may be None: dx for a first layer, dw/db for a frozen conv or no bias.
"""

import numpy as np

from kernels_numba import _check
from kernels_numba.dispatch import impl
from kernels_numba.ops.conv2d import _check_workspace, conv2d_output_shape_for
from kernels_numba.ops.pool2d import _output_shape as pool_output_shape

__all__ = ["conv2d_relu_maxpool_backward"]
FAMILY = "conv2d_pool"


def conv2d_relu_maxpool_backward(dx, dw, db, dp, p, argmax, x, w, workspace, dz, *,
                                 strides=(1, 1), padding="valid", dilation_rate=(1, 1),
                                 pool_size=(2, 2), pool_strides=None, pool_padding="valid",
                                 columns_ready=False):
    """dx = d/dx, dw += d/dw, db += d/db of maxpool(relu(conv2d(x, w) + b)) applied to dp.

    Args:
        dx: (N, H, W, C) float32 or None, output (overwritten).
        dw: (KH, KW, C, F) float32 or None, accumulated.
        db: (F,) float32 or None, accumulated.
        dp: (N, Hp, Wp, F) float32, gradient wrt the pooled output.
        p: (N, Hp, Wp, F) float32, the pooled output (its sign is the ReLU mask).
        argmax: (N, Hp, Wp, F) int32, maxpool2d_forward's argmax over the conv output.
        x: (N, H, W, C) float32, the conv's input.
        w: (KH, KW, C, F) float32, the conv's kernel.
        workspace: (S,) float32 scratch, S from conv2d_workspace_shape; with
            columns_ready=True it holds the columns the conv's forward of this x left.
        dz: (N, Ho, Wo, F) float32 scratch (the CPU's masked conv gradient).
        strides, padding, dilation_rate: the conv's; pool_size, pool_strides (None:
            pool_size), pool_padding: the max-pool's.
    """
    op = "conv2d_relu_maxpool_backward"
    x_shape = _check.array(op, "x", x, ndim=4)
    w_shape = _check.array(op, "w", w, ndim=4)
    z_shape = conv2d_output_shape_for(op, x_shape, w_shape, strides, padding, dilation_rate)
    p_shape = pool_output_shape(op, z_shape, pool_size, pool_strides, pool_padding)
    _check.array(op, "dp", dp, shape=p_shape)
    _check.array(op, "p", p, shape=p_shape)
    _check.array(op, "argmax", argmax, shape=p_shape, dtype=np.int32)
    _check.array(op, "dz", dz, shape=z_shape)
    _check_workspace(op, workspace, x_shape, w_shape, strides, padding, dilation_rate)
    if not isinstance(columns_ready, bool):
        raise TypeError(f"{op}: expected columns_ready to be a bool; received "
                        f"{type(columns_ready).__name__}")
    if dx is not None:
        _check.array(op, "dx", dx, shape=x_shape)
    if dw is not None:
        _check.array(op, "dw", dw, shape=w_shape)
    if db is not None:
        _check.array(op, "db", db, shape=(w_shape[3],))
    fn = impl(op, FAMILY, dx=dx, dw=dw, db=db, dp=dp, p=p, argmax=argmax, x=x, w=w,
              workspace=workspace, dz=dz)
    fn(dx, dw, db, dp, p, argmax, x, w, workspace, dz, strides=strides, padding=padding,
       dilation_rate=dilation_rate, pool_size=pool_size, pool_strides=pool_strides,
       pool_padding=pool_padding, columns_ready=columns_ready)


def pooled_plan(x_shape, w_shape, strides, padding, dilation_rate, pool_size, pool_strides,
                pool_padding):
    """Validated geometry for the twins: the conv's (kh, kw, sh, sw, pt, pl, ho, wo, dh, dw)
    and the pool's (ph, pw, psh, psw, ppt, ppl)."""
    from kernels_numba.ops.conv2d import conv_plan
    from kernels_numba.ops.pool2d import pool_plan

    _, _, _, _, kh, kw, f, sh, sw, ho, wo, pt, pl, dh, dw = conv_plan(
        x_shape, w_shape, strides, padding, dilation_rate)
    ph, pw, psh, psw, _, _, ppt, ppl = pool_plan((x_shape[0], ho, wo, f), pool_size,
                                                 pool_strides, pool_padding)
    return (kh, kw, sh, sw, pt, pl, ho, wo, dh, dw), (ph, pw, psh, psw, ppt, ppl)
