"""`layer(x)`: on symbolic tensors it records a Node; on arrays it runs the layer.

A symbolic call builds the layer from the input shape(s) on its first call, checks
later calls bring the same per-sample shape, and returns new KerasTensors. A call on
NumPy arrays runs a one-layer model (inference mode) built once per input shape and
returns arrays, so `layer3(layer2(layer1(np.ones((3, 3)))))` works as in Keras.
"""

from collections import OrderedDict

import numpy as np

from kerasish.graph.nodes import Node, flatten, is_symbolic

_EAGER_MODELS_PER_LAYER = 4  # input shapes a layer keeps a ready model for


def call_layer(layer, inputs, args, training, mask, kwargs):
    from kerasish.tape import recording

    inputs, args, rec = recording.before_layer_call(layer, inputs, args, training)
    out = _call_layer(layer, inputs, args, training, mask, kwargs)
    return out if rec is None else rec.mark(out, layer, [inputs, list(args)])


def _call_layer(layer, inputs, args, training, mask, kwargs):
    if args and not kwargs and _positional_tensors(layer, inputs, args):
        # call(self, targets, logits, ...): several tensors, one node on their list
        layer._positional_call = True
        inputs = [inputs, *args]
        args = ()
    if args or kwargs:
        raise TypeError(f"Layer '{layer.name}' was called with extra arguments "
                        f"{list(args) + sorted(kwargs)}; kerasish layers take one input "
                        f"(a tensor or a list of tensors) and `training`")
    if mask is not None:
        raise ValueError(f"Layer '{layer.name}': explicit masks are not supported; "
                         f"received mask={mask!r}")
    if is_symbolic(inputs):
        return call_symbolic(layer, inputs)
    return call_eager(layer, inputs, training)


def _positional_tensors(layer, inputs, args):
    """Keras's endpoint-layer call `layer(targets, logits)`: a call() layer given several
    positional tensors (symbolic, or arrays), each one tensor."""
    from kerasish.graph import tracing
    from kerasish.graph.nodes import KerasTensor

    if not tracing.is_traced(layer):
        return False
    items = [inputs, *args]
    if all(isinstance(t, KerasTensor) for t in items):
        return True
    return all(hasattr(t, "shape") and not isinstance(t, KerasTensor) for t in items)


def call_symbolic(layer, inputs):
    if isinstance(inputs, dict) and not getattr(layer, "_is_graph_model", False):
        raise TypeError(f"Layer '{layer.name}' was called on a dict of tensors; expected "
                        f"a tensor or a list of tensors")
    if isinstance(inputs, dict):
        inputs = layer._inputs_from_dict(inputs)
    tensors = flatten(inputs)
    shapes = [t.shape for t in tensors]
    as_list = isinstance(inputs, (list, tuple))
    try:
        out = layer._build_once(shapes if as_list else shapes[0])
    except ValueError as exc:
        if layer.name in str(exc) or getattr(layer, "is_operation", False):
            raise  # ops name themselves
        raise ValueError(f"Layer '{layer.name}' ({type(layer).__name__}) cannot take "
                         f"input of shape {shapes if as_list else shapes[0]}: {exc}") from None
    multi = isinstance(out, list)
    found = layer.__dict__.pop("_pending_trace", None)  # set by a traced call()'s build
    node = Node(layer, list(inputs) if as_list else inputs, out if multi else [out], multi)
    node.trace = found
    return node.outputs


def call_eager(layer, inputs, training):
    if training:
        raise ValueError(f"Layer '{layer.name}': calling a layer on arrays with "
                         f"training=True is not supported; expected training=False or None "
                         f"(training runs in fit/train_on_batch)")
    from kerasish.layers.input_layer import Input
    from kerasish.models.functional import Functional

    as_list = isinstance(inputs, (list, tuple)) and not _is_number_list(inputs)
    arrays = [np.asarray(a, dtype=np.float32) for a in (inputs if as_list else [inputs])]
    for a in arrays:
        if a.ndim == 0:
            raise ValueError(f"Layer '{layer.name}': expected input with a batch axis; "
                             f"received a scalar")
    key = (as_list, tuple(a.shape[1:] for a in arrays))
    cache = layer.__dict__.setdefault("_eager_models", OrderedDict())
    model = cache.pop(key, None)
    if model is None:
        ins = [Input(shape=a.shape[1:], name=f"{layer.name}_eager_input_{k}")
               for k, a in enumerate(arrays)]
        outs = layer(*ins) if as_list and layer.__dict__.get("_positional_call") else \
            layer(ins if as_list else ins[0])
        model = Functional(ins if as_list else ins[0], outs, name=f"{layer.name}_eager")
    cache[key] = model
    while len(cache) > _EAGER_MODELS_PER_LAYER:
        cache.pop(next(iter(cache)))
    from kerasish.ops.operation import eager

    out = eager(model.predict_on_batch(arrays if as_list else arrays[0]))
    if getattr(layer, "produces_mask", False) and isinstance(out, np.ndarray):
        out._keras_mask = layer.compute_mask(inputs)  # Keras attaches it to the output
    return out


def _is_number_list(x):
    """[[1, 2], [3, 4]] is one array, not a list of inputs."""
    return all(not hasattr(item, "shape") and not isinstance(item, (list, tuple))
               for item in x) or all(isinstance(item, (list, tuple)) for item in x)
