"""Conv2D(activation="relu") then MaxPooling2D: the pair's forward and backward each fused,
in CPU plans.

When a Conv2D call's ReLU output goes only to a MaxPooling2D call:
- Forward (`find_forward`, every mode): the conv writes its linear output without bias
  (`Conv2D.forward_linear`), and the pool adds bias + ReLU as it reads each cell
  (ops.maxpool2d_forward's relu_bias). The conv's epilogue pass over its output (5.5 MB
  for the reference CNN's first conv) is gone; the pooled values and argmax are the same
  bits. The conv's output storage then holds the linear values, which nothing else reads.
- Backward (`find`, training): the pool's backward (the pooled gradient scattered into
  the conv's output gradient) and the conv's backward (that gradient masked by relu', in
  each of its two GEMM ops) become one launch, ops.conv2d_relu_maxpool_backward. The
  pool's backward entry is dropped and the conv's entry passes the pool's gradient,
  output and argmax. The storage the plan gives the conv's output gradient is the op's
  dz scratch. On the CPU one pass then writes the masked gradient, and the conv's GEMMs
  read it. The gradients are the separate ops' except where a conv output that no window
  selects is NaN (kernels_numba/ops/conv2d_pool.py).
A training plan fuses the forward only where it fuses the backward (or runs neither
backward): the separate conv backward's ReLU mask reads the conv's output.
KERASISH_FUSE_CONV_POOL=0 keeps the separate ops.

CPU plans only, for now: the ops' CUDA kernels are tested under the simulator, but no GPU
has timed the backward's gathers against the separate ops' GEMMs (a first conv's dw
kernel has KH*KW*C*F threads, each looping over every pooled element), so a CUDA plan
keeps the separate ops until one does.
"""

import os

ENABLED = os.environ.get("KERASISH_FUSE_CONV_POOL", "1") != "0"


def _pairs(ex):
    """(conv call, pool call) for each Conv2D(relu) call read by one MaxPooling2D call
    only, neither masked nor activity-regularized, in a static CPU plan."""
    from kerasish.layers.convolutional import Conv2D
    from kerasish.layers.pooling import MaxPooling2D

    g = ex.plan.graph
    if not ENABLED or g.dynamic or ex.device != "cpu":
        return []
    readers = {}
    for call in g.calls:
        for t in call.inputs:
            readers.setdefault(t, []).append(call)
    outputs = set(g.output_ids) | set(g.added_ids)
    found = []
    for conv in g.calls:
        if type(conv.layer) is not Conv2D or conv.layer.activation != "relu" or \
                conv.layer.groups != 1 or \
                len(conv.outputs) != 1 or conv.outputs[0] in outputs:
            continue
        pools = readers.get(conv.outputs[0], [])
        if len(pools) != 1 or type(pools[0].layer) is not MaxPooling2D:
            continue
        if any(c.mask_in is not None or c.mask_out is not None or
               c.layer.activity_regularizer is not None for c in (conv, pools[0])):
            continue
        found.append((conv, pools[0]))
    return found


def find(ex):
    """{conv call index: pool call index} whose backward is fused (a training plan)."""
    plan, found = ex.plan, {}
    for conv, pool in _pairs(ex):
        t = conv.outputs[0]
        if plan.runs[conv.index] and plan.runs[pool.index] and \
                plan.writers[t] == [("call", pool.index, 0)] and t in plan.grad and \
                t not in plan.zero and (pool.index, 0) not in plan.temps and \
                (conv.index, 0) not in plan.temps:
            found[conv.index] = pool.index
    return found


def find_forward(ex, backward):
    """{conv call index: pool call index} whose forward is fused; `backward`: find()'s
    pairs (a training plan: only those, or pairs that run no backward)."""
    from kerasish.engine.plan import TRAIN

    plan, found = ex.plan, {}
    for conv, pool in _pairs(ex):
        if not conv.layer.use_bias:  # (its epilogue is the ReLU alone: kept)
            continue
        if ex.mode == TRAIN and conv.index not in backward and \
                (plan.runs[conv.index] or plan.runs[pool.index]):
            continue
        found[conv.index] = pool.index
    return found


class ConvLinear:
    """A fused pair's conv in a forward list: its linear output, no bias."""

    __slots__ = ("layer",)

    def __init__(self, layer):
        self.layer = layer

    @property
    def scratch(self):
        return self.layer.scratch

    @scratch.setter
    def scratch(self, value):  # the executor sets each call's scratch before it runs
        self.layer.scratch = value

    def forward(self, y, x, training):
        self.layer.forward_linear(y, x, training)


class PoolReluBias(ConvLinear):
    """A fused pair's max-pool in a forward list: the pool of relu(conv output + bias)."""

    __slots__ = ("conv",)

    def __init__(self, layer, conv):
        super().__init__(layer)
        self.conv = conv

    def forward(self, y, x, training):
        self.layer.forward_relu_bias(y, x, self.conv.bias.value)
