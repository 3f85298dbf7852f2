"""Capture and replay: a launch plan built once per step shape (engine/launch_plan.py).

`capture_launches()` keeps every `_cuda.launch` of a block as a LaunchList; `replay()`
re-issues the bound launches (no validation, no new views), or, with
KERASISH_CUDA_GRAPHS=1, one CUDA graph of them (`_cuda._replay_graph`). On the CPU the
unit is an op's implementation call (kernels_numba.dispatch): replay calls the CPU twins
with the captured arguments, skipping the callers' Python and the ops' validation.
"""

import contextlib

import numpy as np

from kernels_numba import _cuda, dispatch


def _arg_key(a):
    """What makes a launch argument the same next time: an array's memory, shape,
    strides and dtype (a new view of the same buffer is the same), a scalar's value."""
    ary = a if isinstance(a, np.ndarray) else getattr(a, "_ary", None) if _cuda.SIMULATOR \
        else None
    if ary is not None:  # a host array, or the simulator's FakeCUDAArray
        return ("a", ary.__array_interface__["data"][0], ary.shape, ary.strides, ary.dtype.str)
    cai = getattr(a, "__cuda_array_interface__", None)
    if cai is not None:
        return ("a", cai["data"][0], tuple(cai["shape"]), cai.get("strides"), cai["typestr"])
    return (type(a).__name__, a)


def _call_key(a):
    """_arg_key for a CPU implementation's argument: tuples and lists by their items,
    None/bool/int/float/str by value, any other object by identity (a LaunchList keeps
    its arguments alive, so two live captures never share an id by reuse)."""
    if isinstance(a, (tuple, list)):
        return (type(a).__name__, tuple(_call_key(v) for v in a))
    if isinstance(a, np.ndarray) or a is None or isinstance(a, (bool, int, float, str,
                                                                np.generic)):
        return _arg_key(a)
    return ("object", type(a).__name__, id(a))


class LaunchList:
    """The launches of one run of a block of work, each bound once (kernel, configuration
    and argument objects) so `replay()` re-issues them with no validation and no new
    views. `keys` compare two runs: equal keys mean the block launches
    the same kernels on the same memory with the same scalars."""

    __slots__ = ("items", "calls", "keys", "graph")

    def __init__(self):
        self.items, self.calls, self.keys, self.graph = [], [], [], None

    def add(self, k, grid, block, shared_bytes, args):
        self.keys.append((id(k), grid, block, shared_bytes, tuple(_arg_key(a) for a in args)))
        self.items.append((k, grid, block, shared_bytes, args))

    def add_call(self, fn, args, kwargs):
        """A CPU implementation's call (see kernels_numba.dispatch); one with a bound
        form (`fn.bind(*args, **kwargs)`: its work decided now, cpu._parallel.bound_op)
        is replayed as that."""
        self.keys.append((id(fn), _call_key(args), _call_key(sorted(kwargs.items()))))
        bind = getattr(fn, "bind", None)
        self.calls.append((bind(*args, **kwargs), (), {}) if bind else (fn, args, kwargs))

    def __len__(self):
        return len(self.items) + len(self.calls)

    def same_as(self, other):
        return other is not None and self.keys == other.keys

    def replay(self):
        for fn, args, kwargs in self.calls:  # a CPU plan (one device per executor)
            fn(*args, **kwargs)
        if not self.items:
            return
        if _cuda._recorders:  # count (or only count) the replayed launches like live ones
            for k, grid, block, _, _ in self.items:
                record = _cuda.LaunchRecord(_cuda.kernel_name(k), grid, block)
                for calls, _ in _cuda._recorders:
                    calls.append(record)
            if not _cuda._recorders[-1][1]:
                return
        if _cuda.CUDA_GRAPHS and _cuda._replay_graph(self):
            return
        stream = _cuda.compute_stream()
        # k[...] each time: numba-cuda caches the configuration object (lru), while the
        # simulator's k[...] reconfigures the kernel itself, so a kept one goes stale.
        for k, grid, block, shared_bytes, args in self.items:
            k[grid, block, stream, shared_bytes](*args)


@contextlib.contextmanager
def capture_launches():
    """`with capture_launches() as launches:` runs the block normally and keeps every
    launch in `launches` (a LaunchList) for `launches.replay()`."""
    captured = LaunchList()
    _cuda._captures.append(captured)
    dispatch.cpu_captures.append(captured)
    try:
        yield captured
    finally:
        _cuda._captures.remove(captured)
        dispatch.cpu_captures.remove(captured)


