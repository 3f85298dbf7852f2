"""CPU twin of kernels_numba.ops.conv2d_pool (validated arguments only): the backward of
relu(conv2d) then max-pool, from the pooled gradient.

maxpool2d_backward's pass, masked (kernels_numba.cpu.pool2d.masked_backward_calls),
writes the conv's output gradient dz = the pooled gradient times relu'(p) at each
argmax, zeros elsewhere, and sums it per channel for db. Then the conv2d launchers run
on dz as on a linear conv's gradient (kernels_numba/cpu/conv2d.py: backward-filter's
GEMM on the forward's columns, the grouped backward-data). This replaces the ReLU mask
that each of the conv's two backward ops applied on its own: for the reference CNN's
first conv each read dy and y (2 x 5.5 MB) and wrote 5.5 MB. The masked pool pass is the
max-pool's own part, so a model compiles nothing more for it.
"""

from kernels_numba.cpu import conv2d as _conv2d
from kernels_numba.cpu._parallel import bound_op, chain
from kernels_numba.cpu.pool2d import masked_backward_calls


@bound_op
def conv2d_relu_maxpool_backward(dx, dw, db, dp, p, argmax, x, w, workspace, dz, *,
                                 strides=(1, 1), padding="valid", dilation_rate=(1, 1),
                                 pool_size=(2, 2), pool_strides=None, pool_padding="valid",
                                 columns_ready=False):
    if dx is None and dw is None and db is None:
        return chain([])
    geometry = {"strides": strides, "padding": padding, "dilation_rate": dilation_rate}
    calls = masked_backward_calls(dz, dp, p, argmax, db, pool_size, pool_strides,
                                  pool_padding)
    if dw is not None:  # first: backward-data overwrites the forward's columns
        calls.append(_conv2d.conv2d_backward_filter.bind(
            dw, None, dz, x, workspace, columns_ready=columns_ready, **geometry))
    if dx is not None:
        calls.append(_conv2d.conv2d_backward_data.bind(dx, dz, w, workspace, **geometry))
    return chain(calls)
