"""Per-step scalars read by the update kernels from a device buffer (ops.StepScalars,
ops.SCALARS): the same update as the by-value call, bit for bit, on both devices; the
host arrays alternate behind one fixed buffer; bad buffers are errors naming the op."""

import numpy as np
import pytest

import kernels_numba
from kernels_numba import ops
from kernels_numba.testing import host, on, randn

_BY_VALUE = {  # op -> (call with by-value per-step values, fill of its scalars, slots)
    "sgd_update": (dict(lr=0.05, weight_decay=0.1, momentum=0.9),
                   lambda o: ops.sgd_scalars(o, lr=0.05, weight_decay=0.1), 1),
    "adam_update": (dict(lr=0.01, step=3, weight_decay=0.1, beta_1=0.8),
                    lambda o: ops.adam_scalars(o, lr=0.01, step=3, weight_decay=0.1,
                                               beta_1=0.8), 2),
    "rmsprop_update": (dict(lr=0.01, weight_decay=0.1),
                       lambda o: ops.rmsprop_scalars(o, lr=0.01, weight_decay=0.1), 1),
    "adagrad_update": (dict(lr=0.01, weight_decay=0.1),
                       lambda o: ops.adagrad_scalars(o, lr=0.01, weight_decay=0.1), 1),
    "nadam_update": (dict(lr=0.01, step=2, u_product=0.7, weight_decay=0.1),
                     lambda o: ops.nadam_scalars(o, lr=0.01, step=2, u_product=0.7,
                                                 weight_decay=0.1), 2),
    "adamax_update": (dict(lr=0.01, step=2, weight_decay=0.1),
                      lambda o: ops.adamax_scalars(o, lr=0.01, step=2, weight_decay=0.1), 2),
    "adadelta_update": (dict(lr=1.0, weight_decay=0.1),
                        lambda o: ops.adadelta_scalars(o, lr=1.0, weight_decay=0.1), 2),
    "lion_update": (dict(lr=0.01, weight_decay=0.1),
                    lambda o: ops.lion_scalars(o, lr=0.01, weight_decay=0.1), 1),
    "ftrl_update": (dict(lr=0.1, beta=0.3, l2_regularization_strength=0.1),
                    lambda o: ops.ftrl_scalars(o, lr=0.1, beta=0.3,
                                               l2_regularization_strength=0.1), 2),
}


@pytest.mark.parametrize("op", sorted(_BY_VALUE))
def test_scalars_buffer_matches_by_value(device, op):
    kwargs, fill, n_slots = _BY_VALUE[op]
    w0, g0 = randn((11,), seed=90), randn((11,), seed=91)
    slots0 = [np.full(11, 0.1, np.float32) for _ in range(n_slots)]
    results = []
    for by_value in (True, False):
        w, g, *slots = on(device, w0, g0, *slots0)
        if by_value:
            getattr(ops, op)(w, g, *slots, zero_grad=True, **kwargs)
        else:
            buf = ops.StepScalars(len(ops.SCALARS[op]), kernels_numba.device_of(w))
            fill(buf.host())
            buf.upload()
            const = {k: v for k, v in kwargs.items()
                     if k not in ("lr", "step", "u_product", "weight_decay")}
            getattr(ops, op)(w, g, *slots, zero_grad=True, scalars=buf.buffer, **const)
        results.append([host(a) for a in (w, g, *slots)])
    for got, want in zip(*results):
        np.testing.assert_array_equal(got, want, err_msg=op)


def test_step_scalars_upload_in_turn(device):
    buf = ops.StepScalars(3, device)
    for step in range(1, 4):  # the host arrays alternate; the buffer stays the same object
        before = buf.buffer
        buf.host()[:] = [step, 2 * step, 3 * step]
        buf.upload()
        assert buf.buffer is before
        np.testing.assert_array_equal(host(buf.buffer), [step, 2 * step, 3 * step])


def test_scalars_buffer_is_checked():
    z = np.zeros(3, np.float32)
    with pytest.raises(ValueError, match=r"adam_update: expected per-step values either in "
                                         r"the scalars buffer or as arguments, not both; "
                                         r"received scalars and \['lr'\]"):
        ops.adam_update(z, z.copy(), z.copy(), z.copy(), lr=0.1, scalars=np.zeros(2, np.float32))
    with pytest.raises(ValueError, match=r"nadam_update: expected scalars.shape == \(7,\); "
                                         r"received \(2,\)"):
        ops.nadam_update(z, z.copy(), z.copy(), z.copy(), scalars=np.zeros(2, np.float32))
    with pytest.raises(TypeError, match="sgd_update: expected lr \\(or a scalars buffer\\); "
                                        "received neither"):
        ops.sgd_update(z, z.copy())
    with pytest.raises(TypeError, match="adam_update: expected step"):
        ops.adam_update(z, z.copy(), z.copy(), z.copy(), lr=0.1)
