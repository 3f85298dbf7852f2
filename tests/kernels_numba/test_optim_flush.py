"""Optimizer slots flush values below float32's smallest normal to zero (kernels_numba.cpu
.optim's _TINY), on both devices: a decaying slot never holds a denormal (x86 arithmetic
on them takes microcode assists), while normal values, NaN and Inf are kept."""

import numpy as np
import pytest

from kernels_numba import ops
from kernels_numba.testing import host, on

TINY = np.finfo(np.float32).tiny
EDGE = np.float32(1.1756e-38)  # just above TINY: any decay takes it below
# slot element 0: decays to a denormal; 1: stays normal; 2: NaN; 3: -EDGE (signed slots);
# 4: 0; 5: Inf
SLOT = np.array([EDGE, 1e-30, np.nan, -EDGE, 0.0, np.inf], np.float32)
NONNEGATIVE = np.array([EDGE, 1e-30, np.nan, EDGE, 0.0, np.inf], np.float32)  # slots kept >= 0

# op -> (per slot argument: may it go negative?, keyword arguments)
CASES = {
    "sgd_update": ([True], dict(lr=0.1, momentum=0.9)),
    "adam_update": ([True, False], dict(lr=0.01, step=3)),
    "rmsprop_update": ([False, True, True], dict(lr=0.01, momentum=0.9, centered=True)),
    "nadam_update": ([True, False], dict(lr=0.01, step=2, u_product=0.7)),
    "adamax_update": ([True, False], dict(lr=0.01, step=2)),
    "adadelta_update": ([False, False], dict(lr=1.0)),
    "lion_update": ([True], dict(lr=0.01)),
}


@pytest.mark.parametrize("op", sorted(CASES))
def test_decaying_slots_flush_denormals_to_zero(device, op):
    signs, kwargs = CASES[op]
    assert EDGE >= TINY
    slots0 = [SLOT if signed else NONNEGATIVE for signed in signs]
    w, g, *slots = on(device, np.ones(6, np.float32), np.zeros(6, np.float32), *slots0)
    getattr(ops, op)(w, g, *slots, **kwargs)
    for k, slot in enumerate(slots):
        got = host(slot)
        finite = np.isfinite(got)
        assert not ((np.abs(got[finite]) < TINY) & (got[finite] != 0)).any(), (op, k, got)
        assert got[0] == 0 and got[4] == 0, (op, k, got)  # decayed below TINY: stored as 0
        assert 0 < abs(got[1]) <= 1e-30, (op, k, got)  # a small normal value decays as ever
        assert np.isnan(got[2]), (op, k, got)
        assert got[3] == 0, (op, k, got)
        assert np.isinf(got[5]) or np.isnan(got[5]), (op, k, got)  # Inf is never flushed
