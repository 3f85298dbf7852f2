"""All of a model's weights in one contiguous block, their gradients in another.

Each Variable's `.value` (and `.grad`) becomes a view into its block: trainable
weights first, in `model.weights` order, so the trainable prefix of the parameter
block and the whole gradient block are one flat buffer each (one optimizer launch
or one all-reduce can cover them). Packing copies each value into its view once,
when a training plan or the training state is built and the set of variables or
their trainable flags changed.
"""

import numpy as np

import kernels_numba

ALIGN = 16  # elements (64 bytes) between views


def _aligned(n):
    return -(-n // ALIGN) * ALIGN


def layout(model):
    """(trainable variables, the others), each in the model's weight order."""
    trainable = list(model.trainable_weights)
    ids = {id(v) for v in trainable}
    return trainable, [v for v in model.weights if id(v) not in ids]


def pack(model):
    """Give the model's variables views into one parameter and one gradient block."""
    trainable, frozen = layout(model)
    device = model.device
    signature = (device, tuple(id(v) for v in trainable), tuple(id(v) for v in frozen))
    if getattr(model, "_packed", None) == signature or not (trainable or frozen):
        return
    sizes = [_aligned(int(np.prod(v.shape, dtype=np.int64))) for v in trainable + frozen]
    n_train = sum(sizes[:len(trainable)])
    block = kernels_numba.zeros((max(sum(sizes), 1),), np.float32, device)
    grads = kernels_numba.zeros((max(n_train, 1),), np.float32, device)
    offset, offsets = 0, {}
    for k, (var, size) in enumerate(zip(trainable + frozen, sizes)):
        offsets[id(var)] = offset
        count = int(np.prod(var.shape, dtype=np.int64))
        shape = tuple(var.value.shape)  # a scalar's buffer is (1,)
        view = block[offset:offset + count].reshape(shape)
        kernels_numba.copy_buffer(view, var.value)
        var.value = view
        var.grad = grads[offset:offset + count].reshape(shape) if k < len(trainable) \
            else None
        offset += size
    model._parameter_block, model._gradient_block = block, grads
    model._trainable_size = n_train
    model._parameter_offsets = offsets
    model._packed = signature
    model._executors.clear()  # plans hold views of the old buffers (traced weight reads)


def attach_optimizer(model):
    """Build the optimizer's slots and lay them out like the gradient block: one
    update launch per step for every trainable variable."""
    trainable = model._trainable_variables
    model.optimizer.build(trainable)
    if trainable and getattr(model, "_packed", None):
        model.optimizer.use_blocks(trainable, model._parameter_block[:model._trainable_size],
                                   model._gradient_block, model._parameter_offsets)
