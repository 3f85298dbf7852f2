"""`keras.utils.plot_model` and `model_to_dot`, as Keras's: the model as a Graphviz graph
drawn by pydot (optional packages).

Without pydot or Graphviz, plot_model raises Keras's ImportError (in a notebook it prints
the message and returns, as Keras does). With them, the graph is one box per layer
(name, class, shapes when asked) and an edge per layer call, read from the model's
Keras 3 config (Sequential: the chain), written in the format of `to_file`'s extension.
"""

import os
import sys

_NO_PYDOT = "You must install pydot (`pip install pydot`) for `plot_model` to work."
_NO_GRAPHVIZ = ("You must install graphviz (see instructions at "
                "https://graphviz.gitlab.io/download/) for `plot_model` to work.")


def _pydot():
    try:
        import pydot
    except ImportError:
        return None
    return pydot


def _graphviz_works(pydot):
    try:
        pydot.Dot.create(pydot.Dot())
        return True
    except (OSError, getattr(pydot, "PydotException", OSError)):
        return False


def _histories(value):
    """Every keras_history [layer, node, tensor] inside an inbound node's args."""
    if isinstance(value, dict):
        if value.get("class_name") == "__keras_tensor__":
            return [value["config"]["keras_history"]]
        return [h for v in value.values() for h in _histories(v)]
    if isinstance(value, (list, tuple)):
        return [h for v in value for h in _histories(v)]
    return []


def _shape_text(layer, attr):
    try:
        value = getattr(layer, attr)
    except (AttributeError, ValueError):
        return "?"
    shapes = [getattr(t, "shape", t) for t in (value if isinstance(value, list) else [value])]
    return ", ".join(str(tuple(s)) for s in shapes)


def model_to_dot_source(model, show_shapes=False, show_layer_names=True, rankdir="TB",
                        show_trainable=False, dpi=200):
    """The model's graph as DOT text (what plot_model hands to pydot)."""
    layers = list(model.layers)
    edges = []
    config = model.get_config()
    if isinstance(config, dict) and isinstance(config.get("layers"), list) and \
            any("inbound_nodes" in c for c in config["layers"]):
        for entry in config["layers"]:
            name = entry.get("name") or entry.get("config", {}).get("name")
            for node in entry.get("inbound_nodes", []):
                edges += [(h[0], name) for h in _histories(node)]
    else:  # Sequential: each layer feeds the next
        edges = [(a.name, b.name) for a, b in zip(layers, layers[1:])]
    lines = [f'digraph "{model.name}" {{', f'graph [rankdir={rankdir}, dpi={int(dpi)}];',
             "node [shape=record];"]
    for layer in layers:
        label = f"{layer.name} ({type(layer).__name__})" if show_layer_names else \
            type(layer).__name__
        if show_shapes:
            label += f"|{{input:|output:}}|{{{_shape_text(layer, 'input_shape')}|" \
                     f"{_shape_text(layer, 'output_shape')}}}"
        if show_trainable:
            label += f"|Trainable: {'Y' if layer.trainable else 'N'}"
        label = label.replace('"', "'").replace("[", "(").replace("]", ")")
        lines.append(f'"{layer.name}" [label="{label}"];')
    lines += [f'"{a}" -> "{b}";' for a, b in dict.fromkeys(edges)]
    lines.append("}")
    return "\n".join(lines)


def model_to_dot(model, show_shapes=False, show_dtype=False, show_layer_names=True,
                 rankdir="TB", expand_nested=False, dpi=200, subgraph=False,
                 show_layer_activations=False, show_trainable=False, **kwargs):
    """A pydot.Dot of the model (pydot is required)."""
    pydot = _pydot()
    if pydot is None:
        raise ImportError(_NO_PYDOT)
    source = model_to_dot_source(model, show_shapes, show_layer_names, rankdir,
                                 show_trainable, dpi)
    return pydot.graph_from_dot_data(source)[0]


def plot_model(model, to_file="model.png", show_shapes=False, show_dtype=False,
               show_layer_names=False, rankdir="TB", expand_nested=False, dpi=200,
               show_layer_activations=False, show_trainable=False, splines="ortho",
               **kwargs):
    """Draw the model to `to_file` (Keras's arguments; pydot and Graphviz required)."""
    if not getattr(model, "built", True):
        raise ValueError("This model has not yet been built. Build the model first by "
                         "calling `build()` or by calling the model on a batch of data.")
    pydot = _pydot()
    for missing, message in ((pydot is None, _NO_PYDOT),
                             (pydot is not None and not _graphviz_works(pydot), _NO_GRAPHVIZ)):
        if missing:
            if "IPython.core.magics.namespace" in sys.modules:
                print(message)
                return None
            raise ImportError(message)
    if kwargs.pop("layer_range", None) is not None:
        raise ValueError("Argument `layer_range` is no longer supported.")
    if kwargs:
        raise ValueError(f"Unrecognized keyword arguments: {kwargs}")
    dot = model_to_dot(model, show_shapes=show_shapes, show_layer_names=show_layer_names,
                       rankdir=rankdir, dpi=dpi, show_trainable=show_trainable)
    extension = os.path.splitext(os.fspath(to_file))[1][1:] or "png"
    dot.write(os.fspath(to_file), format=extension)
    return None
