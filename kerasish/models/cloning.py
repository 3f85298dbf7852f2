"""`keras.models.clone_model`: the same architecture with new layers (freshly
initialised weights), for Sequential and Functional models, as Keras 3 does it."""

from kerasish.graph.nodes import KerasTensor, flatten


def _default_clone(layer):
    return type(layer).from_config(layer.get_config())


def _check_fn(name, fn):
    if fn is not None and not callable(fn):
        raise TypeError(f"clone_model: expected `{name}` to be a callable; received "
                        f"{type(fn).__name__}")


def clone_model(model, input_tensors=None, clone_function=None, call_function=None,
                recursive=False, **kwargs):
    """A new model with the architecture of `model` and new weights.

    Args:
        model: a Sequential or Functional model.
        input_tensors: optional `keras.Input` tensors (one, a list or a dict as the
            model takes them) to build the clone on; a Sequential then becomes a
            Functional model, as in Keras.
        clone_function: `layer -> new layer`; defaults to
            `layer.__class__.from_config(layer.get_config())`. Returning the layer
            itself shares it (and its weights) with the original.
        call_function: `(layer, inputs) -> outputs`, how each cloned layer is called
            (default `layer(inputs)`).
        recursive: clone nested models layer by layer with the same functions
            (otherwise `clone_function` receives the nested model).
    """
    from kerasish.models.model import Model
    from kerasish.models.sequential import Sequential

    if kwargs:
        raise TypeError(f"clone_model: unexpected arguments {sorted(kwargs)}")
    if not isinstance(model, Model):
        raise TypeError(f"clone_model: expected a Sequential or Functional model; received "
                        f"{type(model).__name__}")
    _check_fn("clone_function", clone_function)
    _check_fn("call_function", call_function)
    clone_function = clone_function or _default_clone

    def clone_layer(layer):
        if recursive and getattr(layer, "_is_graph_model", False):
            return clone_model(layer, clone_function=clone_function,
                               call_function=call_function, recursive=True)
        new = clone_function(layer)
        from kerasish.layers.layer import Layer

        if not isinstance(new, Layer):
            raise TypeError(f"clone_model: clone_function must return a Layer; for layer "
                            f"'{layer.name}' it returned {type(new).__name__}")
        return new

    if isinstance(model, Sequential):
        return _clone_sequential(model, input_tensors, clone_layer, call_function)
    return _clone_functional(model, input_tensors, clone_layer, call_function)


def _call(layer, inputs, call_function):
    return call_function(layer, inputs) if call_function is not None else layer(inputs)


def _check_inputs(model, input_tensors):
    given = flatten(input_tensors)
    if not all(isinstance(t, KerasTensor) for t in given):
        raise ValueError(f"clone_model: input_tensors must be keras.Input tensors; "
                         f"received {[type(t).__name__ for t in given]}")
    if len(given) != len(model.inputs):
        raise ValueError(f"clone_model: model '{model.name}' has {len(model.inputs)} "
                         f"input(s); received {len(given)} input tensor(s)")
    for old, new in zip(model.inputs, given):
        if tuple(old.shape[1:]) != tuple(new.shape[1:]) and len(old.shape) == len(new.shape):
            raise ValueError(f"clone_model: input '{old.name}' of model '{model.name}' has "
                             f"shape {old.shape}; received an input tensor of shape "
                             f"{new.shape}")
    return given


def _clone_sequential(model, input_tensors, clone_layer, call_function):
    from kerasish.layers import Input
    from kerasish.models.functional import Functional
    from kerasish.models.sequential import Sequential

    layers = [clone_layer(layer) for layer in model.layers]
    source_input = getattr(model, "_input_layer", None)
    if input_tensors is not None:
        given = flatten(input_tensors)
        if len(given) != 1 or not isinstance(given[0], KerasTensor):
            raise ValueError(f"clone_model: a Sequential model takes one input tensor; "
                             f"received {input_tensors!r:.100}")
        x = given[0]
        for layer in layers:
            x = _call(layer, x, call_function)
        return Functional(given[0], x, name=model.name)
    if call_function is not None and source_input is not None:
        x = inputs = Input(shape=tuple(source_input.shape), name=source_input.name)
        for layer in layers:
            x = _call(layer, x, call_function)
        return Functional(inputs, x, name=model.name)
    if source_input is not None:
        layers = [Input(shape=tuple(source_input.shape), name=source_input.name)] + layers
    clone = Sequential(layers, name=model.name)
    if not model.trainable:
        clone.trainable = False
    return clone


def _map(structure, tensors):
    if isinstance(structure, dict):
        return {k: _map(v, tensors) for k, v in structure.items()}
    if isinstance(structure, (list, tuple)):
        return [_map(v, tensors) for v in structure]
    return tensors[id(structure)]


def _clone_functional(model, input_tensors, clone_layer, call_function):
    from kerasish.layers import Input
    from kerasish.models.functional import Functional

    tensors = {}
    if input_tensors is None:
        new_inputs = [Input(shape=tuple(t.shape[1:]), name=t.node.layer.name)
                      for t in model.inputs]
        inputs = _map(model._inputs_struct, dict(zip(map(id, model.inputs), new_inputs)))
    else:
        new_inputs, inputs = _check_inputs(model, input_tensors), input_tensors
    tensors.update(zip(map(id, model.inputs), new_inputs))
    clones = {}
    for node in model._nodes:  # in execution order; input nodes excluded
        layer = node.layer
        if id(layer) not in clones:
            clones[id(layer)] = clone_layer(layer)
        outputs = _call(clones[id(layer)], _map(node.input_structure, tensors), call_function)
        produced = flatten(outputs)
        if len(produced) != len(node.output_tensors):
            raise ValueError(f"clone_model: the clone of layer '{layer.name}' returned "
                             f"{len(produced)} output(s); the original returns "
                             f"{len(node.output_tensors)}")
        tensors.update(zip(map(id, node.output_tensors), produced))
    return Functional(inputs, _map(model._outputs_struct, tensors), name=model.name,
                      trainable=model.trainable)
