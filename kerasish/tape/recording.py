"""What a GradientTape records: eager calls turned into one symbolic graph.

While a tape records (`active()` is a Recording, per thread), a layer or model called
on arrays, and a kerasish.ops function given a recorded tensor, a trainable Variable or
a watched array, records a graph node instead of computing at once (the graph machinery
of a traced `call()`): arrays given to a layer or model become graph inputs
(keras.Input placeholders of their per-sample shape, one batch size per recording),
arrays given to an op become inputs when their first axis is that batch size (before
any is known: an array of two or more axes sets it) and constants otherwise, Variables
are read in place (`ReadVariable`). Every tensor a recorded call returns is
marked with its recording; its value is computed when first read (`numpy()`,
`float()`, NumPy), or by the tape's run (kerasish/tape/tape_run.py), which computes
every marked tensor at once. Outside its recording a marked tensor acts as its array.

Nested or simultaneous tapes share the one Recording that is open.
"""

import threading

import numpy as np

from kerasish.graph.nodes import KerasTensor, flatten

_local = threading.local()  # .rec: the Recording this thread writes
ANY = 0  # threads writing a recording now (a cheap test before active())


def active():
    """The Recording being written by this thread, or None (a tape records its own
    thread only: another thread's model calls stay eager)."""
    return getattr(_local, "rec", None) if ANY else None


def set_active(rec):
    global ANY
    before = getattr(_local, "rec", None)
    _local.rec = rec
    ANY += (rec is not None) - (before is not None)


class Recording:
    def __init__(self):
        self.inputs = []  # placeholder KerasTensors, in creation order
        self.arrays = []  # their host arrays
        self.by_id = {}  # id(array) -> placeholder (the same array is one input)
        self._keep = []  # the arrays above, alive while their ids are keys
        self.marked = []  # every tensor a recorded call returned, in order
        self.nodes = []  # Node objects made while recording (trimmed when done)
        self.watched = set()  # ids of watched arrays and placeholders
        self.batch = None
        self.training = False  # some recorded call passed training=True
        self.version = 0  # bumped by each recorded call: runs are cached per version
        self.open_tapes = []
        self.run = None  # the TapeRun of the last run (tape_run.py)
        self.trimmed = False
        self.persistent = False  # a persistent tape records into it: never trimmed
        self.differentiated = False  # a gradient was taken
        self.key = []  # what was recorded, by structure: equal keys replay one plan
        self._position = {}  # id(marked tensor) -> its index in `marked`

    # -- inputs ---------------------------------------------------------------------
    def placeholder(self, array, what):
        """The graph input for a host array (made once per array object)."""
        key = id(array)
        t = self.by_id.get(key)
        if t is not None:
            return t
        from kerasish.layers.input_layer import Input

        host = np.ascontiguousarray(array, dtype=np.float32)
        if host.ndim == 0:
            raise ValueError(f"GradientTape: {what} expected an array with a batch axis; "
                             f"received a scalar")
        if self.batch is None:
            self.batch = host.shape[0]
        elif host.shape[0] != self.batch:
            raise ValueError(f"GradientTape: {what}: every array a tape records as an input "
                             f"must have the same batch size; expected {self.batch} rows; "
                             f"received shape {host.shape}")
        t = Input(shape=host.shape[1:], name=f"tape_input_{len(self.inputs)}")
        t._tape_rec, t._tape_value = self, host
        self.inputs.append(t)
        self.arrays.append(host)
        self.by_id[key] = t
        self._keep.append(array)
        if key in self.watched:
            self.watched.add(id(t))
        return t

    def mark(self, out, layer=None, inputs=()):
        """Tag what a recorded call returned, and add the call to the structural key."""
        self.key.append((_layer_key(layer), tuple(self._ref(t) for t in flatten(inputs)),
                         self.training))
        for t in flatten(out):
            if isinstance(t, KerasTensor):
                t._tape_rec = self
                self._position[id(t)] = len(self.marked)
                self.marked.append(t)
                self.key.append(("out", t.shape))
        self.version += 1
        return out

    def _ref(self, t):
        """How a call's input is named in the key: an earlier result, a graph input,
        a constant (by value) or a variable (by identity)."""
        if id(t) in self._position:
            return ("t", self._position[id(t)])
        for k, p in enumerate(self.inputs):
            if p is t:
                return ("in", k, p.shape)
        history = getattr(t, "_keras_history", None)
        if history is not None:
            op = history[0]
            host = getattr(op, "host", None)
            if host is not None:  # a Constant
                return ("c", host.shape, host.tobytes())
            var = getattr(op, "variable", None)
            if var is not None:  # a ReadVariable
                return ("v", id(var))
        return ("?", id(t))


_SKIP = {"name", "built", "scratch", "input_shape", "output_shape", "host", "_values"}


def _layer_key(layer):
    """A persistent layer by identity; an op node (made per call) by its class and its
    attributes (numbers and strings by value, anything else by identity)."""
    if layer is None:
        return None
    if not getattr(layer, "is_operation", False):
        return ("layer", id(layer))
    attrs = []
    for k, v in sorted(vars(layer).items()):
        if k in _SKIP or k.startswith("_"):
            continue
        if isinstance(v, (int, float, str, bool, type(None))) or (
                isinstance(v, tuple) and all(isinstance(i, (int, float, str, bool, type(None)))
                                             for i in v)):
            attrs.append((k, v))
        elif isinstance(v, np.ndarray):
            attrs.append((k, v.shape, v.tobytes()))
        else:
            attrs.append((k, "id", id(v)))
    return ("op", type(layer).__name__, tuple(attrs))


def recorded(t):
    """The Recording a tensor belongs to (None for a plain symbolic tensor)."""
    return t.__dict__.get("_tape_rec") if isinstance(t, KerasTensor) else None


def is_plain_symbolic(t):
    return isinstance(t, KerasTensor) and t.__dict__.get("_tape_rec") is None


def value_of(t):
    """The host value of a recorded tensor (computing its recording once if needed)."""
    v = t.__dict__.get("_tape_value")
    if v is None:
        from kerasish.tape import tape_run

        tape_run.materialize(t._tape_rec)
        v = t.__dict__.get("_tape_value")
        if v is None:
            raise RuntimeError(f"GradientTape: no value was computed for {t!r}")
    return v


def as_value(v):
    """A recorded tensor of a recording not being written is its array; else v."""
    rec = recorded(v)
    if rec is not None and rec is not active():
        return value_of(v)
    return v


def _arrays_in(structure):
    """Recorded tensors of other recordings replaced by their values, in a structure."""
    if isinstance(structure, dict):
        return {k: _arrays_in(v) for k, v in structure.items()}
    if isinstance(structure, (list, tuple)):
        return type(structure)(_arrays_in(v) for v in structure)
    return as_value(structure)


def _layer_inputs(rec, structure, what):
    if isinstance(structure, dict):
        return {k: _layer_inputs(rec, v, what) for k, v in structure.items()}
    if isinstance(structure, (list, tuple)) and not _numbers(structure):
        return type(structure)(_layer_inputs(rec, v, what) for v in structure)
    v = as_value(structure)
    if recorded(v) is rec:
        return v
    return rec.placeholder(v if isinstance(v, np.ndarray) else np.asarray(v, np.float32),
                           what)


def _numbers(x):
    return all(not hasattr(i, "shape") and not isinstance(i, (list, tuple)) for i in x)


def before_layer_call(layer, inputs, args, training):
    """(inputs, args, recording or None) for `layer(inputs, *args)`: while recording, a
    call on arrays or recorded tensors is recorded (arrays become graph inputs); a call
    on plain symbolic tensors (building a model, tracing a call()) is left alone.
    Outside a recording, recorded tensors are their values."""
    rec = active()
    leaves = flatten([inputs, list(args)])
    if rec is None or getattr(layer, "is_operation", False) or \
            any(is_plain_symbolic(t) for t in leaves):  # (ops are recorded by dispatch)
        if any(recorded(t) is not None for t in leaves):
            return _arrays_in(inputs), _arrays_in(args), None
        return inputs, args, None
    what = f"Layer '{layer.name}'"
    if training:
        rec.training = True
    return _layer_inputs(rec, inputs, what), \
        tuple(_layer_inputs(rec, a, what) for a in args), rec


def records_op(inputs):
    """True when an op on these arguments is recorded by the current recording."""
    rec = active()
    if rec is None:
        return False
    leaves = flatten(list(inputs))
    if any(is_plain_symbolic(t) for t in leaves):
        return False  # inside a traced call() or a model being built
    from kerasish.variables import Variable

    for t in leaves:
        if recorded(t) is rec or (isinstance(t, Variable) and t.trainable) or \
                (isinstance(t, np.ndarray) and id(t) in rec.watched):
            return True
    return False


def align(*args):
    """Op arguments as a recorded op will see them (arrays of the batch's size as graph
    inputs), for ops that compare shapes before recording; unchanged otherwise."""
    if active() is None or not records_op(args):
        return args
    return tuple(op_argument(a) for a in args)


def op_argument(v):
    """An op argument while recording: a tensor of this recording, a placeholder for a
    watched array or one of the batch's size, a Variable (read in place) or a value."""
    rec = active()
    v = as_value(v)
    if recorded(v) is rec:
        return v
    # before any batch is known, a matrix (or more) sets it: ops.matmul(x, kernel)
    if isinstance(v, np.ndarray) and v.ndim >= 1 and (
            id(v) in rec.watched or (rec.batch is None and v.ndim >= 2) or
            (rec.batch is not None and v.shape[0] == rec.batch)):
        return rec.placeholder(v, "an op argument")
    return v


def note_node(node):
    """Called by every Node: the ones made while recording are removed from their
    layers once the recording is done and run (bounded memory across steps)."""
    rec = active()
    if rec is not None and any(isinstance(t, KerasTensor) and t.__dict__.get("_tape_rec") is rec
                               for t in node.input_tensors):
        rec.nodes.append(node)  # (not the nodes of a model built or traced meanwhile)
