"""The launch plan: a step's layer launches captured once and replayed.

The layers' Python (argument validation, views, launch configuration) runs for the
first two steps of a shape. When both launched the same kernels with the same
arguments (arrays by memory, shape and strides; scalars by value), later steps replay
that list (kernels_numba.LaunchList): the forward, the fused loss, the backward and the
optimizer update are each one loop over bound launches (the fused loss's row counts and
the optimizer's host half, `advance_step`, still run). A layer whose arguments change
per step (a by-value random key) never becomes replayable, so its step keeps running
live. Unfused losses and metrics always run live: they keep host-side counts. The plan's buffers never move,
and a repack of the parameters (engine/parameters.py) is caught by its token.
KERASISH_REPLAY=0 turns replay off.

On the CPU a launch is an op's implementation call (kernels_numba.dispatch): replay
skips the layers' and ops' Python (the reference MLP's step 0.86 -> 0.78 ms; 0.61 with
the bound dense and optimizer ops, kernels_numba.cpu._parallel.bound_op). A plan
replays on the CPU only when all its steps' work is op calls (`launches_only`): a user
layer's own forward/backward (NumPy on the host arrays, as docs/custom_layers.md
allows) or a user optimizer class would be skipped by a replay.
"""

import os

import kernels_numba

REPLAY = os.environ.get("KERASISH_REPLAY", "1") != "0"


def _ours(method):
    return method is None or getattr(method, "__module__", "").startswith("kerasish.")


def _layers(layers, seen=None):
    """The layers and every layer they hold (nested models, wrapped layers, sublayers)."""
    from kerasish.layers.layer import Layer

    seen = set() if seen is None else seen
    for layer in layers:
        if id(layer) in seen:
            continue
        seen.add(id(layer))
        yield layer
        held = []
        for value in vars(layer).values():
            items = value if isinstance(value, (list, tuple)) else (value,)
            held += [item for item in items if isinstance(item, Layer)]
        yield from _layers(held, seen)


def launches_only(ex):
    """Whether a replay of ex's captures re-issues all of its steps' work: always on
    CUDA (host arrays are not device buffers); on the CPU when every layer's forward,
    backward and compute_mask and the optimizer's class are kerasish's own (a call()
    layer runs kerasish's traced forward: its ops are captured)."""
    if ex.device != "cpu":
        return True
    for layer in _layers(call.layer for call in ex.plan.graph.calls):
        if not all(_ours(getattr(type(layer), name, None))
                   for name in ("forward", "backward", "compute_mask", "write_mask")):
            return False
    optimizer = getattr(ex.model, "optimizer", None)
    return optimizer is None or type(optimizer).__module__.startswith("kerasish.")


def captured(ex, body):
    """Run body(); on a replaying executor, return the LaunchList it issued."""
    if not ex._replay:
        body()
        return None
    with kernels_numba.capture_launches() as launches:
        body()
    return launches


def _token(ex):
    """What a captured plan depends on beyond its arguments: the parameter block (a repack
    moves every weight) and the layers' trainable flags (a frozen layer launches less)."""
    from kerasish.layers.layer import Layer

    return id(getattr(ex.model, "_parameter_block", None)), Layer.trainable_changes


def remember(ex, s, mode, *lists):
    """Keep this step's captures; two equal ones in a row make the step replayable."""
    if not ex._replay or any(x is None for x in lists):
        return
    token, previous = _token(ex), s.captures.get(mode)
    s.captures[mode] = (token, lists)
    if previous is not None and previous[0] == token and len(previous[1]) == len(lists) and \
            sum(map(len, lists)) and \
            all(a.same_as(b) for a, b in zip(lists, previous[1])):
        s.ready[mode] = (token, lists)


def replayable(ex, s, mode):
    """The step's captured launch lists when they can be replayed, else None."""
    found = s.ready.get(mode) if ex._replay else None
    if found is None:
        return None
    if found[0] != _token(ex):  # the parameters moved: capture again
        del s.ready[mode]
        return None
    return found[1]


def random_layers(ex):
    """The training plan's counter-based random layers (a layer shared by several calls
    turns replay off: its draws would share one step buffer); on a replaying executor they read their step from a device
    buffer, so their draw launches repeat and `advance_random` moves the step on."""
    from kerasish.layers.step_buffer import StepCounter

    if not ex._replay or ex.mode != "train":
        return []
    found = [call.layer for call in ex.plan.graph.calls  # attention with dropout=0 draws nothing
             if isinstance(call.layer, StepCounter) and getattr(call.layer, "dropout", 1) != 0]
    if len({id(layer) for layer in found}) < len(found):
        ex._replay = False  # a shared random layer: its calls' draws share one step buffer
        return []
    for layer in found:
        layer.step_buffer = True
    return found


def advance_random(ex):
    """Before a replayed training forward: each random layer's next step to the device."""
    for layer in ex._random_layers:
        if layer._steps is not None:  # it drew in the captured forward
            layer.advance_step()
