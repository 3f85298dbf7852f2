"""Conv2D(activation="relu") then MaxPooling2D: one backward op for the pair, in a training
plan.

When a Conv2D call's ReLU output goes only to a MaxPooling2D call, the pool's backward
(the pooled gradient scattered into the conv's output gradient) and the conv's backward
(that gradient masked by relu', in each of its two GEMM ops) become one launch,
ops.conv2d_relu_maxpool_backward. The pool's backward entry is dropped and the conv's
entry passes the pool's gradient, output and argmax. The storage the plan gives the conv's
output gradient is the op's dz scratch. On the CPU one pass then writes the masked
gradient, and the conv's GEMMs read it (the reference CNN's step: see
kernels_numba/cpu/conv2d_pool.py). The gradients are the separate ops' except where a
conv output that no window selects is NaN (kernels_numba/ops/conv2d_pool.py).
KERASISH_FUSE_CONV_POOL=0 keeps the separate backward ops.

CPU plans only, for now: the op's CUDA kernels are gathers tested under the simulator,
but no GPU has timed them against the separate ops' GEMMs (a first conv's dw kernel has
KH*KW*C*F threads, each looping over every pooled element), so a CUDA plan keeps the
separate ops until one does.
"""

import os

ENABLED = os.environ.get("KERASISH_FUSE_CONV_POOL", "1") != "0"


def find(ex):
    """{conv call index: pool call index} for the executor's training plan."""
    from kerasish.layers.convolutional import Conv2D
    from kerasish.layers.pooling import MaxPooling2D

    plan, g = ex.plan, ex.plan.graph
    if not ENABLED or g.dynamic or ex.device != "cpu":
        return {}
    readers = {}
    for call in g.calls:
        for t in call.inputs:
            readers.setdefault(t, []).append(call)
    outputs = set(g.output_ids) | set(g.added_ids)
    found = {}
    for conv in g.calls:
        if type(conv.layer) is not Conv2D or conv.layer.activation != "relu" or \
                not plan.runs[conv.index] or len(conv.outputs) != 1:
            continue
        t = conv.outputs[0]
        pools = readers.get(t, [])
        if len(pools) != 1 or t in outputs:
            continue
        pool = pools[0]
        if type(pool.layer) is not MaxPooling2D or not plan.runs[pool.index] or \
                plan.writers[t] != [("call", pool.index, 0)] or t not in plan.grad or \
                t in plan.zero or (pool.index, 0) in plan.temps or (conv.index, 0) in plan.temps:
            continue
        if any(c.mask_in is not None or c.mask_out is not None or
               c.layer.activity_regularizer is not None for c in (conv, pool)):
            continue
        found[conv.index] = pool.index
    return found
