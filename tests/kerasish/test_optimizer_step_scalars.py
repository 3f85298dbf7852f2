"""Every optimizer's update launches take the same arguments on every step (issue 17: a
recorded step, or a CUDA graph of it, replays with no change to its launches): the
per-step values travel in the one StepScalars buffer, written by one copy per step.

Each case runs two steps with a learning-rate schedule (so lr, Adam's alpha and the
decay really change) and compares the launches of step 1 and step 2: kernel, grid,
block and every argument (an array by its memory, shape, strides and dtype; a scalar by
its value). On CUDA (the simulator here) these are the kernel launches; on the CPU the
packed argument vector of each compiled update part (addresses and constants).
"""

import numpy as np
import pytest

import kernels_numba
from kerasish import optimizers
from kerasish.optimizers import schedules
from kerasish.variables import Variable
from kernels_numba._cuda import kernel_name
from kernels_numba.cpu import optim as cpu_optim
from kernels_numba.cpu import optim_more as cpu_optim_more
from kernels_numba.cpu._parallel import pack

SHAPES = [(5, 3), (7,)]
CASES = {
    "sgd": ("SGD", {}),
    "sgd_nesterov": ("SGD", {"momentum": 0.9, "nesterov": True, "weight_decay": 0.01}),
    "adam": ("Adam", {}),
    "adamw_clipnorm": ("AdamW", {"clipnorm": 0.5}),
    "adam_global_clipnorm": ("Adam", {"global_clipnorm": 0.5}),
    "rmsprop": ("RMSprop", {"momentum": 0.5, "centered": True, "clipvalue": 0.3}),
    "adagrad": ("Adagrad", {}),
    "nadam": ("Nadam", {}),
    "adamax": ("Adamax", {"weight_decay": 0.01}),
    "adadelta": ("Adadelta", {}),
    "lion": ("Lion", {}),
    "ftrl": ("Ftrl", {"beta": 0.3, "l2_regularization_strength": 0.1}),
}


def _key(a):
    """What makes an argument the same next time (a new view of the same memory is)."""
    ary = a if isinstance(a, np.ndarray) else getattr(a, "_ary", None)  # simulator array
    if ary is not None:
        return ("array", ary.__array_interface__["data"][0], ary.shape, ary.strides,
                ary.dtype.str)
    cai = getattr(a, "__cuda_array_interface__", None)
    if cai is not None:
        return ("array", cai["data"][0], tuple(cai["shape"]), cai.get("strides"),
                cai["typestr"])
    return (type(a).__name__, a)


def _record(monkeypatch, device, calls):
    if device == "cuda":
        from kernels_numba.gpu import norms as gpu_norms
        from kernels_numba.gpu import optim as gpu_optim

        for module in (gpu_optim, gpu_norms):
            def launch(k, grid, block, *args, _launch=module.launch, **kw):
                calls.append((kernel_name(k), grid, block, tuple(_key(a) for a in args)))
                _launch(k, grid, block, *args, **kw)

            monkeypatch.setattr(module, "launch", launch)
        return

    def update_call(part, head, slots, constants, _call=cpu_optim.update_call):
        arrays, entries = head[0] + tuple(slots), head[1] + tuple(constants)
        packed = pack(*[a.reshape(a.size) for a in arrays], *entries)
        named = part[0] if isinstance(part, tuple) else part  # (plain, segmented) parts
        calls.append((named.py_func.__name__, tuple(packed.tolist())))
        return _call(part, head, slots, constants)

    for module in (cpu_optim, cpu_optim_more):
        monkeypatch.setattr(module, "update_call", update_call)


def _variables(device, block):
    r = np.random.default_rng(5)
    w0 = [r.standard_normal(s).astype(np.float32) for s in SHAPES]
    variables = [Variable(w, f"w{k}", device=device, path=f"w{k}") for k, w in enumerate(w0)]
    if not block:
        return variables, None
    sizes = [-(-w.size // 16) * 16 for w in w0]
    params = kernels_numba.zeros((sum(sizes),), np.float32, device)
    grads = kernels_numba.zeros((sum(sizes),), np.float32, device)
    offsets, start = {}, 0
    for var, w, size in zip(variables, w0, sizes):
        offsets[id(var)] = start
        var.value = params[start:start + w.size].reshape(w.shape)
        kernels_numba.copy_from_host(var.value, w)
        var.grad = grads[start:start + w.size].reshape(w.shape)
        start += size
    return variables, (params, grads, offsets)


@pytest.mark.parametrize("block", [False, True], ids=["per_variable", "block"])
@pytest.mark.parametrize("case", list(CASES))
def test_launch_arguments_are_the_same_every_step(device, case, block, monkeypatch):
    cls, kwargs = CASES[case]
    rate = schedules.ExponentialDecay(0.05, decay_steps=1, decay_rate=0.5)
    opt = getattr(optimizers, cls)(learning_rate=rate, **kwargs)
    variables, blocks = _variables(device, block)
    opt.build(variables)
    if blocks is not None:
        opt.use_blocks(variables, *blocks)
    r = np.random.default_rng(6)
    steps, values = [], []
    for _ in range(2):
        for var in variables:
            kernels_numba.copy_from_host(var.grad, r.standard_normal(var.shape).astype(np.float32))
        calls = []
        with monkeypatch.context() as patch:
            _record(patch, device, calls)
            opt.apply(variables)
        steps.append(calls)
        values.append(kernels_numba.to_host(opt._step_scalars.buffer).copy())
    assert len(steps[0]) >= (1 if block else len(variables)), "no update was recorded"
    assert steps[0] == steps[1], f"{case}: a launch argument changed between steps"
    assert not np.array_equal(values[0], values[1]), "the per-step values did not change"
    assert opt.iterations == 2


def _capture(monkeypatch, device, replays):
    """Like _record, keeping each launch (or CPU part call) itself, to re-issue later."""
    if device == "cuda":
        from kernels_numba.gpu import norms as gpu_norms
        from kernels_numba.gpu import optim as gpu_optim

        for module in (gpu_optim, gpu_norms):
            def launch(k, grid, block, *args, _launch=module.launch, **kw):
                replays.append(lambda: _launch(k, grid, block, *args, **kw))
                _launch(k, grid, block, *args, **kw)

            monkeypatch.setattr(module, "launch", launch)
        return

    def update_call(part, head, slots, constants, _call=cpu_optim.update_call):
        replays.append(lambda: _call(part, head, slots, constants)())
        return _call(part, head, slots, constants)

    for module in (cpu_optim, cpu_optim_more):
        monkeypatch.setattr(module, "update_call", update_call)


@pytest.mark.parametrize("case", ["sgd_nesterov", "adamw_clipnorm", "nadam", "ftrl"])
def test_advance_step_then_replayed_launches_equal_apply(device, case, monkeypatch):
    # A launch plan's step 2: the host half (advance_step: schedule, Nadam's product, one
    # copy of the values) then step 1's launches re-issued as they were = apply().
    if device == "cpu" and "clipnorm" in case:
        pytest.skip("the CPU twins of the norm ops are plain calls, not recordable launches")
    cls, kwargs = CASES[case]
    results = []
    for replay in (False, True):
        rate = schedules.ExponentialDecay(0.05, decay_steps=1, decay_rate=0.5)
        opt = getattr(optimizers, cls)(learning_rate=rate, **kwargs)
        variables, blocks = _variables(device, True)
        opt.build(variables)
        opt.use_blocks(variables, *blocks)
        r = np.random.default_rng(7)
        replays = []
        for step in range(3):
            for var in variables:
                kernels_numba.copy_from_host(var.grad,
                                             r.standard_normal(var.shape).astype(np.float32))
            if replay and step > 0:
                opt.advance_step()
                for launch in replays:
                    launch()
            elif replay:
                with monkeypatch.context() as patch:
                    _capture(patch, device, replays)
                    opt.apply(variables)
            else:
                opt.apply(variables)
        assert opt.iterations == 3
        results.append([var.numpy() for var in variables] +
                       [kernels_numba.to_host(v.value) for v in opt.variables[2:]])
    for got, want in zip(results[1], results[0]):
        np.testing.assert_array_equal(got, want)


def test_advance_step_needs_a_first_apply():
    with pytest.raises(RuntimeError, match=r"Adam.advance_step\(\): apply\(\) has not run"):
        optimizers.Adam().advance_step()
