"""A Functional model's config, as Keras 3 writes it (and tf.keras 2's form, read).

    {"name", "trainable",
     "layers": [{"class_name", "config", "name", "inbound_nodes": [node, ...]}, ...],
     "input_layers": [name, node_index, tensor_index] (or a list / dict of them),
     "output_layers": likewise}

A node is Keras 3's {"args": [tensor or [tensors]], "kwargs": {}} (attention layers,
through their `node_arguments`: {"args": [query, value], "kwargs": {"attention_mask":
tensor, "use_causal_mask": true}}, as Keras writes them) with tensors as
{"class_name": "__keras_tensor__", "config": {"shape", "dtype", "keras_history":
[layer, node_index, tensor_index]}}, or tf.keras 2's [[layer, node, tensor, kwargs], ...].
Node indices count only the nodes inside this model, from 0 (a nested Functional's
node 0 is its own construction, so its calls count from 1).
"""

import collections

from kerasish.graph import tracing
from kerasish.graph.nodes import KerasTensor


class _NotReady(Exception):
    """A node's input does not exist yet (a layer shared at different depths, or a
    config listing layers out of order); args[0] names the layer it waits for."""


def _node_indices(model, io=False):
    """node -> its index in the config (the model's nodes only, per layer). Keras 3.15
    counts a nested Functional's calls from 0 in inbound nodes but from 1 in
    input_layers/output_layers (its get_config keeps a slot for the built-in node
    older Keras 3 made; its loader subtracts it again): `io` gives the latter."""
    members = set(model._nodes) | {t.node for t in model.inputs}
    index = {}
    for layer in model.layers:
        offset = 1 if io and _is_functional(layer) else 0
        kept = [n for n in layer._inbound_nodes if n in members]
        for k, node in enumerate(kept):
            index[node] = k + offset
    return index


def _is_functional(layer):
    return getattr(layer, "_is_graph_model", False) and type(layer).__name__ == "Functional"


def _history(t, index):
    layer, _, tensor_index = t._keras_history
    return [layer.name, index[t.node], tensor_index]


def _tensor(t, index):
    return {"class_name": "__keras_tensor__",
            "config": {"shape": list(t.shape), "dtype": "float32",
                       "keras_history": _history(t, index)}}


def _struct(value, fn):
    if isinstance(value, dict):
        return {k: _struct(v, fn) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_struct(v, fn) for v in value]
    return fn(value)


def _node_config(layer, node, index):
    """Keras 3's {"args", "kwargs"} of one call: `layer(inputs)`, or for a layer with
    `node_arguments` (attention: masks and flags are call arguments) its own split."""
    as_tensor = lambda t: _tensor(t, index)  # noqa: E731
    if callable(getattr(layer, "node_arguments", None)):
        args, kwargs = layer.node_arguments(list(node.input_structure))
        as_tensor = lambda t: _tensor(t, index) if isinstance(t, KerasTensor) else t  # noqa
        return {"args": _struct(args, as_tensor), "kwargs": _struct(kwargs, as_tensor)}
    if layer.__dict__.get("_positional_call"):  # call(self, targets, logits): one arg each
        return {"args": [_struct(t, as_tensor) for t in node.input_structure], "kwargs": {}}
    return {"args": [_struct(node.input_structure, as_tensor)], "kwargs": {}}


def get_config(model):
    from kerasish import layers as klayers
    from kerasish.saving import serialization

    index, io = _node_indices(model), _node_indices(model, io=True)
    by_layer = {}
    for node in model._nodes:
        by_layer.setdefault(node.layer, []).append(node)
    entries = []
    for layer in model.layers:
        nodes = sorted(by_layer.get(layer, []), key=lambda n: index[n])
        entry = klayers.serialize(layer)
        entry["class_name"] = serialization.get_registered_name(layer)
        entry["name"] = layer.name
        entry["inbound_nodes"] = [_node_config(layer, n, index) for n in nodes]
        build = _own_build_config(layer)
        if build is not None:  # from_config gives it to the layer's build_from_config
            entry["build_config"] = build
        entries.append(entry)
    return {"name": model.name, "trainable": model.trainable, "layers": entries,
            "input_layers": _struct(model._inputs_struct, lambda t: _history(t, io)),
            "output_layers": _struct(model._outputs_struct, lambda t: _history(t, io))}


def _own_build_config(layer):
    """A user layer's own get_build_config() (Keras 3 writes build_config in every layer
    entry; kerasish's layers are built by their calls)."""
    method = getattr(type(layer), "get_build_config", None)
    if method is None or getattr(method, "__module__", "").startswith("kerasish.") or \
            not getattr(layer, "built", False):
        return None
    return layer.get_build_config()


def _is_ref(value):
    return isinstance(value, list) and len(value) in (3, 4) and isinstance(value[0], str) \
        and all(isinstance(v, int) for v in value[1:3])


def _lookup(created, ref, where, inbound=False):
    """The tensor a [layer, node, tensor] reference names. A kerasish Functional's node 0
    is its built-in node (models/functional.py), so a Keras 3 inbound reference to a
    nested Functional's call k is its node k + 1 (tf.keras 2 and input/output lists
    count the built-in node already)."""
    name, node_index, tensor_index = ref[0], ref[1], ref[2]
    layer = created.get(name)
    if layer is None:
        raise ValueError(f"Invalid Functional config in {where}: a node refers to layer "
                         f"'{name}', which is not in the config")
    if inbound and _is_functional(layer):
        node_index += 1
    nodes = layer._inbound_nodes
    if not 0 <= node_index < len(nodes) or not nodes[node_index].output_tensors:
        if node_index > 64 * max(1, len(nodes)):
            raise ValueError(f"Invalid Functional config in {where}: node index "
                             f"{node_index} of layer '{name}' is out of range")
        raise _NotReady(name)
    outputs = nodes[node_index].output_tensors
    if not 0 <= tensor_index < len(outputs):
        raise ValueError(f"Invalid Functional config in {where}: layer '{name}' node "
                         f"{node_index} has {len(outputs)} output(s); received tensor "
                         f"index {tensor_index}")
    return outputs[tensor_index]


def _revive(value, created, where):
    """Node arguments with every tensor reference replaced by the KerasTensor."""
    if isinstance(value, dict) and value.get("class_name") == "__keras_tensor__":
        history = (value.get("config") or {}).get("keras_history")
        if not _is_ref(history):
            raise ValueError(f"Invalid Functional config in {where}: bad keras_history "
                             f"{history!r:.100}")
        return _lookup(created, history, where, inbound=True)
    if isinstance(value, list):
        return [_revive(v, created, where) for v in value]
    if isinstance(value, dict):
        return {k: _revive(v, created, where) for k, v in value.items()}
    return value


def _leaves(value):
    if isinstance(value, dict):
        return [t for v in value.values() for t in _leaves(v)]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _leaves(v)]
    return [value]


def _node_call(layer, node_data, created, where):
    """(args, kwargs) for calling `layer` as one saved node, Keras 3's or tf.keras 2's.
    Layers with `node_arguments` take Keras's call as written (several positional
    arguments, tensor and flag kwargs); every other layer takes one input (a tensor or
    a list) and its non-tensor kwargs (`training`, `mask=None`) are dropped, as before."""
    if isinstance(node_data, dict):
        args, kwargs = node_data.get("args"), node_data.get("kwargs") or {}
        if not isinstance(args, list) or not isinstance(kwargs, dict):
            raise ValueError(f"Invalid Functional config in {where}: a node of layer "
                             f"'{layer.name}' needs a list 'args' and a dict 'kwargs'; "
                             f"received {node_data!r:.200}")
        args, kwargs = _revive(args, created, where), _revive(kwargs, created, where)
        if callable(getattr(layer, "node_arguments", None)):
            tensors = _leaves(args) + _leaves(kwargs)
            if not any(isinstance(t, KerasTensor) for t in tensors):
                raise ValueError(f"Invalid Functional config in {where}: a node of layer "
                                 f"'{layer.name}' has no input tensors "
                                 f"({node_data!r:.200})")
            return args, kwargs
        tensor_kwargs = sorted(k for k, v in kwargs.items()
                               if any(isinstance(t, KerasTensor) for t in _leaves(v)))
        if len(args) > 1 and not tensor_kwargs and tracing.is_traced(layer) and \
                all(isinstance(t, KerasTensor) for t in args):
            return args, {}  # a call() taking several positional tensors (endpoint layers)
        if len(args) != 1 or tensor_kwargs:
            raise ValueError(f"Invalid Functional config in {where}: layer '{layer.name}' "
                             f"({type(layer).__name__}) takes one input (a tensor or a "
                             f"list); its node has {len(args)} positional argument(s) and "
                             f"tensor kwargs {tensor_kwargs}")
        value = args[0]
    elif isinstance(node_data, list) and all(_is_ref(r) for r in node_data) and node_data:
        value = [_lookup(created, r, where) for r in node_data]  # tf.keras 2 form
        value = value[0] if len(value) == 1 else value
    else:
        raise ValueError(f"Invalid Functional config in {where}: unreadable node "
                         f"{node_data!r:.200}")
    leaves = value if isinstance(value, list) else [value]
    if not leaves or not all(isinstance(t, KerasTensor) for t in leaves):
        raise ValueError(f"Invalid Functional config in {where}: a node's inputs are not "
                         f"all tensors ({node_data!r:.200})")
    return [value], {}


def from_config(cls, config, custom_objects=None, where="the model config"):
    from kerasish import layers as klayers
    from kerasish.saving import keras_revive, serialization

    for key in ("layers", "input_layers", "output_layers"):
        if key not in config:
            raise ValueError(f"Invalid Functional config in {where}: missing '{key}'")
    created, pending = {}, []
    for entry in config["layers"]:
        entry = serialization.normalize_layer_entry(entry, where)
        name = entry.get("name") or entry["config"].get("name")
        layer = klayers.deserialize({"class_name": entry["class_name"],
                                     "config": entry["config"]}, custom_objects)
        keras_revive.user_build_from_config(layer, entry.get("build_config"), where)
        if name in created:
            raise ValueError(f"Invalid Functional config in {where}: layer name '{name}' "
                             f"appears twice")
        created[name] = layer
        nodes = entry.get("inbound_nodes") or []
        if not isinstance(nodes, list):
            raise ValueError(f"Invalid Functional config in {where}: inbound_nodes of "
                             f"'{name}' must be a list")
        pending.append((name, layer, collections.deque(nodes)))
    _call_nodes(pending, created, where)
    refs = lambda s: _struct_refs(s, created, where)  # noqa: E731
    return cls(inputs=refs(config["input_layers"]), outputs=refs(config["output_layers"]),
               name=config.get("name"), trainable=config.get("trainable", True))


def _call_nodes(pending, created, where):
    """Call every layer on its saved nodes, each layer's nodes in order. A node whose
    input does not exist yet waits for the layer it needs and is tried again only when
    that layer gains a node, so the work is linear in the number of nodes whatever the
    order of the config (retrying every pending node per pass was quadratic: 8k layers
    listed in reverse took minutes)."""
    waiting = {}  # layer name -> indices into pending of the layers waiting on it
    ready = list(range(len(pending)))
    ready.reverse()  # pop() from the end: the config's order first
    while ready:
        i = ready.pop()
        name, layer, nodes = pending[i]
        while nodes:
            try:
                args, kwargs = _node_call(layer, nodes[0], created, where)
            except _NotReady as e:
                waiting.setdefault(e.args[0], []).append(i)
                break
            layer(*args, **kwargs)
            nodes.popleft()
            woken = waiting.pop(name, None)
            if woken:
                ready.extend(reversed(woken))
    stuck = [name for name, _, nodes in pending if nodes]
    if stuck:
        raise ValueError(f"Invalid Functional config in {where}: the graph has loops "
                         f"or missing nodes; cannot resolve the calls of {stuck[:20]}")


def _struct_refs(value, created, where):
    if _is_ref(value):
        try:
            return _lookup(created, value, where)
        except _NotReady:
            raise ValueError(f"Invalid Functional config in {where}: input/output "
                             f"{value} does not exist") from None
    if isinstance(value, dict):
        return {k: _struct_refs(v, created, where) for k, v in value.items()}
    if isinstance(value, list) and value:
        return [_struct_refs(v, created, where) for v in value]
    raise ValueError(f"Invalid Functional config in {where}: bad input/output layers "
                     f"{value!r:.100}")
