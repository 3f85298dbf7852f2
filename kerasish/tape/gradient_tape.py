"""`kerasish.GradientTape`: TensorFlow's tape API over kerasish's own reverse mode.

    with keras.GradientTape() as tape:
        logits = model(x, training=True)
        loss = loss_fn(y, logits)
    grads = tape.gradient(loss, model.trainable_weights)
    optimizer.apply_gradients(zip(grads, model.trainable_weights))

Recording is kerasish/tape/recording.py, the run kerasish/tape/tape_run.py. Gradients
come back as NumPy arrays (kerasish's eager values), None for a source the target does
not reach (or zeros with unconnected_gradients="zero"), in the sources' structure.
"""

import contextlib

import numpy as np

import kernels_numba
from kerasish.tape import recording, tape_run
from kerasish.variables import Variable


class UnconnectedGradients:
    NONE = "none"
    ZERO = "zero"


class GradientTape:
    def __init__(self, persistent=False, watch_accessed_variables=True):
        self.persistent = bool(persistent)
        self.watch_accessed_variables = bool(watch_accessed_variables)
        self._rec = None
        self._recording = False
        self._used = False
        self._watched_vars = {}
        self._outer = None

    def __enter__(self):
        if self._recording:
            raise ValueError("GradientTape: this tape is already recording")
        rec = recording.active()
        if rec is None:
            rec = recording.Recording()
        self._outer = recording.active()
        self._rec = rec
        rec.open_tapes.append(self)
        rec.persistent = rec.persistent or self.persistent
        recording.set_active(rec)
        self._recording = True
        return self

    def __exit__(self, *exc):
        rec = self._rec
        self._recording = False
        if self in rec.open_tapes:
            rec.open_tapes.remove(self)
        if not rec.open_tapes:
            recording.set_active(self._outer if self._outer is not rec else None)
            tape_run.trim(rec)  # a gradient taken inside the block
        return False

    @contextlib.contextmanager
    def stop_recording(self):
        """Ops inside run eagerly and are not recorded (TensorFlow's stop_recording)."""
        if not self._recording:
            raise RuntimeError("GradientTape.stop_recording: the tape is not recording")
        saved = recording.active()
        recording.set_active(None)
        try:
            yield
        finally:
            recording.set_active(saved)

    def reset(self):
        """Forget what was recorded (TensorFlow's reset)."""
        rec = recording.Recording()
        if self._recording:
            old = self._rec
            old.open_tapes.remove(self)
            rec.open_tapes.append(self)
            recording.set_active(rec)
        self._rec, self._used = rec, False

    def watch(self, tensor):
        """Record gradients for a tensor or an array (or a structure of them) too; a
        Variable is watched as well (needed with watch_accessed_variables=False)."""
        if self._rec is None:
            raise RuntimeError("GradientTape.watch: expected to be called inside the "
                               "`with GradientTape() as tape:` block")
        for t in _leaves(tensor):
            if isinstance(t, Variable):
                self._watched_vars[id(t)] = t
            elif recording.recorded(t) is self._rec:
                self._rec.watched.add(id(t))
            elif isinstance(t, np.ndarray):
                self._rec.watched.add(id(t))
                if id(t) in self._rec.by_id:
                    self._rec.watched.add(id(self._rec.by_id[id(t)]))
            else:
                raise TypeError(f"GradientTape.watch: expected a Variable, an array or a "
                                f"recorded tensor; received {type(t).__name__} (a Python "
                                f"number has no gradient: use a NumPy array)")

    def watched_variables(self):
        return list(self._watched_vars.values())

    def gradient(self, target, sources, output_gradients=None,
                 unconnected_gradients=UnconnectedGradients.NONE):
        """d(sum of targets)/d(source) for each source, in the sources' structure."""
        rec = self._rec
        if rec is None:
            raise RuntimeError("GradientTape.gradient: the tape has recorded nothing; use "
                               "`with GradientTape() as tape:` first")
        if self._used and not self.persistent:
            raise RuntimeError("A non-persistent GradientTape can only be used to compute "
                               "one set of gradients (or jacobians)")
        if unconnected_gradients not in ("none", "zero"):
            raise ValueError(f"GradientTape.gradient: expected unconnected_gradients "
                             f"'none' or 'zero'; received {unconnected_gradients!r}")
        if any(t is not self for t in rec.open_tapes):
            raise NotImplementedError(
                "GradientTape.gradient: a gradient computed while another GradientTape "
                "records it (a gradient of a gradient, as WGAN-GP's gradient penalty) is not "
                "supported by kerasish; compute the penalty outside the outer tape or "
                "use a penalty without second derivatives")
        self._used = True
        targets = [t for t in _leaves(target) if recording.recorded(t) is rec]
        seeds = _seeds(target, output_gradients)
        leaves, rebuild = _flatten_sources(sources)
        zero = unconnected_gradients == "zero"
        if not targets:
            return rebuild([_unconnected(s, zero) for s in leaves])
        saved = recording.active()
        recording.set_active(None)  # the run records nothing
        try:
            for s in leaves:  # a watched array used as a source wants its input gradient
                if isinstance(s, np.ndarray) and id(s) in rec.by_id:
                    rec.watched.add(id(rec.by_id[id(s)]))
            run = tape_run.run_for(rec, targets)
            run.forward(rec)
            reach, weights = run.backward(rec, targets, [seeds.get(id(t)) for t in targets])
            out = [self._one(run, rec, s, reach, weights, zero) for s in leaves]
            for v in run.variables:
                kernels_numba.ops.fill(v.grad, 0.0)
        finally:
            recording.set_active(saved)
        rec.differentiated = True
        tape_run.trim(rec)
        return rebuild(out)

    def _one(self, run, rec, s, reach, weights, zero):
        from kerasish.ops.operation import eager

        step = run.step
        if isinstance(s, Variable):
            ok = id(s) in weights and s.grad is not None and (
                self.watch_accessed_variables or id(s) in self._watched_vars)
            if not ok:
                return _unconnected(s, zero)
            return eager(kernels_numba.to_host(s.grad).reshape(s.shape))
        t = rec.by_id.get(id(s)) if isinstance(s, np.ndarray) else s
        if recording.recorded(t) is not rec:
            return _unconnected(s, zero)
        tid = run.output_id(rec, t)
        if tid is None:
            return _unconnected(s, zero)
        buf = step.grads.get(tid)
        if tid not in reach or buf is None:
            return _unconnected(s, zero)
        return eager(kernels_numba.to_host(buf).reshape(tape_run._shape(t, rec.batch)))


def _unconnected(source, zero):
    if not zero:
        return None
    from kerasish.tape.recording import value_of, recorded

    if isinstance(source, Variable):
        return np.zeros(source.shape, np.float32)
    if recorded(source) is not None:
        return np.zeros_like(value_of(source))
    return np.zeros(np.shape(source), np.float32)


def _leaves(structure):
    if isinstance(structure, dict):
        return [x for k in structure for x in _leaves(structure[k])]
    if isinstance(structure, (list, tuple)):
        return [x for item in structure for x in _leaves(item)]
    return [structure]


def _flatten_sources(sources):
    """The sources' leaves and a function putting results back in their structure."""
    leaves = _leaves(sources)

    def rebuild(values):
        it = iter(values)

        def build(s):
            if isinstance(s, dict):
                return {k: build(s[k]) for k in s}
            if isinstance(s, (list, tuple)):
                return type(s)(build(x) for x in s) if not hasattr(s, "_fields") else \
                    type(s)(*[build(x) for x in s])
            return next(it)
        return build(sources)
    return leaves, rebuild


def _seeds(target, output_gradients):
    if output_gradients is None:
        return {}
    targets = _leaves(target)
    grads = _leaves(output_gradients) if isinstance(target, (list, tuple, dict)) else \
        [output_gradients]
    if len(grads) != len(targets):
        raise ValueError(f"GradientTape.gradient: expected one output gradient per target "
                         f"({len(targets)}); received {len(grads)}")
    return {id(t): g for t, g in zip(targets, grads) if g is not None}
