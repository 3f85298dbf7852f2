"""Moving values between a model's Variables and the plain data of `h5_format`:
collecting weights to save, and matching loaded arrays to layers (topologically, by
name, or by native-layout position) with every count and shape checked before any
Variable is written, so a failed load leaves the model as it was."""

import logging
import math
import warnings

import numpy as np

from kerasish.saving import h5_arrays, h5_format

logger = logging.getLogger("kerasish")


def legacy_weights(layer):
    """Keras's h5 weight order: trainable weights, then non-trainable ones."""
    return list(layer.trainable_weights) + list(layer.non_trainable_weights)


def legacy_layers(model):
    """[(layer_name, [(weight_path, array)])] for `h5_format.write_model_weights`."""
    return [(layer.name, [(str(w.path), np.asarray(w.numpy())) for w in legacy_weights(layer)])
            for layer in model.layers]


def native_layers(model):
    """[(class_name, layer_name, [array], children, subgroups)] for
    `h5_format.write_native_weights`: a nested model has no arrays of its own and its
    layers as children (Keras 3's `layers/<model>/layers/...`); recurrent layers and
    wrappers keep their weights in named subgroups, as Keras 3 does (`cell`,
    `forward_layer`/`backward_layer`, `layer`)."""
    return [_host(entry) for entry in _native_entries(model)]


def _native_entries(model):
    return [(type(layer).__name__, layer.name, [], _native_entries(layer), None)
            if getattr(layer, "_is_graph_model", False) else native_entry(layer)
            for layer in model.layers]


def native_entry(layer):
    """(class, name, [Variable], None, {group: entry} or None) for one layer."""
    from kerasish.layers import recurrent, rnn, wrappers

    cls = type(layer).__name__
    if isinstance(layer, recurrent._RNN):
        return (cls, layer.name, [], None,
                {"cell": (f"{cls}Cell", layer.CELL, legacy_weights(layer), None, None)})
    if isinstance(layer, rnn.RNN):  # Keras's rnn/cell/vars, rnn/cell/cells/<cell>/vars
        cell = layer.cell
        if isinstance(cell, rnn.StackedRNNCells):
            keys = h5_format.native_layer_keys([type(c).__name__ for c in cell.cells])
            cells = {key: (type(c).__name__, c.name, legacy_weights(c), None, None)
                     for key, c in zip(keys, cell.cells)}
            inner = {"cells": ("list", "cells", [], None, cells)}
            return (cls, layer.name, [], None,
                    {"cell": (type(cell).__name__, cell.name, [], None, inner)})
        return (cls, layer.name, [], None,
                {"cell": (type(cell).__name__, cell.name, legacy_weights(cell), None, None)})
    if isinstance(layer, wrappers.Bidirectional):
        return (cls, layer.name, [], None, {"forward_layer": native_entry(layer.forward_layer),
                                            "backward_layer": native_entry(layer.backward_layer)})
    if isinstance(layer, wrappers.TimeDistributed):
        return (cls, layer.name, [], None, {"layer": native_entry(layer.layer)})
    if callable(getattr(layer, "native_groups", None)) and getattr(layer, "built", False):
        # MultiHeadAttention's EinsumDenses (Keras's empty _softmax/_dropout_layer groups
        # are not needed: Keras loads files without them)
        return (cls, layer.name, [], None, {g: (c, n, vs, None, None)
                                            for g, (c, n, vs) in layer.native_groups().items()})
    return (cls, layer.name, legacy_weights(layer), None, None)


def _host(entry):
    cls, name, variables, children, groups = entry
    return (cls, name, [np.asarray(v.numpy()) for v in variables],
            None if children is None else [_host(c) for c in children],
            None if groups is None else {k: _host(g) for k, g in groups.items()})


def _opt_value(var):
    value = np.asarray(var.numpy())
    name = str(getattr(var, "name", ""))
    # Keras stores the step counter as an int32 scalar and everything else as float32.
    return value.astype(np.int32 if name.endswith("iteration") else np.float32)


def optimizer_name(optimizer):
    name = getattr(optimizer, "name", None)
    return name if isinstance(name, str) else h5_format.snake_case(type(optimizer).__name__)


def optimizer_weights(optimizer):
    """[(name, array)] over `optimizer.variables` in Keras order, or None."""
    variables = list(getattr(optimizer, "variables", None) or []) if optimizer else []
    if not variables:
        return None
    prefix = optimizer_name(optimizer)
    out = []
    for v in variables:
        path = getattr(v, "path", None) or f"{prefix}/{v.name}"
        out.append((str(path), _opt_value(v)))
    return out


def _shape(var):
    return tuple(int(s) for s in var.shape)


def _skip_or_raise(message, skip_mismatch):
    if not skip_mismatch:
        raise ValueError(message)
    warnings.warn(f"Skipping: {message}", stacklevel=4)


def _check_layer(layer, file_name, values, source, where, skip_mismatch, count_skips=False):
    """[(var, value)] for one layer after checking the weight count and each shape."""
    symbolic = legacy_weights(layer)
    if len(values) != len(symbolic):
        msg = (f"Weight count mismatch for {where} (named {layer.name} in the model, "
               f"{file_name} in {source}): the layer expects {len(symbolic)} weight(s) "
               f"{[_shape(v) for v in symbolic]}; the file has {len(values)} "
               f"{[np.shape(v) for _, v in values]}")
        if count_skips:
            _skip_or_raise(msg, skip_mismatch)
            return []
        raise ValueError(msg)
    pairs = []
    for var, (wname, value) in zip(symbolic, values):
        if _shape(var) != tuple(value.shape):
            _skip_or_raise(
                f"Shape mismatch in {where} (named {layer.name} in the model, {file_name} "
                f"in {source}) for weight {var.path}: the model expects shape "
                f"{_shape(var)}; the file has shape {tuple(value.shape)} ('{wname}')",
                skip_mismatch)
            continue
        pairs.append((var, value))
    return pairs


def _assign_all(pairs):
    for var, value in pairs:
        var.assign(value)


def load_legacy(model, data, source, skip_mismatch=False, by_name=False):
    """Assign `h5_format.read_model_weights` data to the model's layers."""
    saved = data["layers"]
    if by_name:
        index = {}
        for layer in model.layers:
            index.setdefault(layer.name, []).append(layer)
        pairs = []
        for k, (name, values) in enumerate(saved):
            for layer in index.get(name, []):
                pairs += _check_layer(layer, name, values, source, f"layer #{k}",
                                      skip_mismatch, count_skips=True)
    else:
        model_layers = [layer for layer in model.layers if legacy_weights(layer)]
        file_layers = [(name, values) for name, values in saved if values]
        if len(model_layers) != len(file_layers):
            hint = "" if getattr(model, "built", True) else " (the model is not built yet)"
            raise ValueError(
                f"Layer count mismatch when loading weights from {source}: the model has "
                f"{len(model_layers)} layers with weights {[layer.name for layer in model_layers]}"
                f"{hint}; the file has {len(file_layers)} {[n for n, _ in file_layers]}")
        pairs = []
        for k, (layer, (name, values)) in enumerate(zip(model_layers, file_layers)):
            pairs += _check_layer(layer, name, values, source, f"layer #{k}", skip_mismatch)
    if data.get("top_level"):
        _skip_or_raise(f"Weight count mismatch for top-level weights in {source}: the "
                       f"model has 0 top-level weights; the file has {len(data['top_level'])}",
                       skip_mismatch)
    _read_and_assign(pairs)


def load_native(model, data, source, skip_mismatch=False, by_name=False):
    """Assign `h5_format.read_native_weights` data (matched by structure position, or
    by the stored layer name with `by_name`); nested models match their children."""
    _read_and_assign(_native_pairs(model, data["layers"], "layers", source, skip_mismatch,
                                   by_name))


def _native_pairs(model, saved, prefix, source, skip_mismatch, by_name):
    keys = h5_format.native_layer_keys([type(layer).__name__ for layer in model.layers])
    by_stored_name = {entry[0]: key for key, entry in saved.items() if entry[0] is not None}
    pairs, used = [], set()
    for k, (layer, key) in enumerate(zip(model.layers, keys)):
        if by_name:
            key = by_stored_name.get(layer.name)
            if key is None:
                continue
        elif key not in saved and not legacy_weights(layer):
            continue
        used.add(key)
        _, arrays, children, groups = saved.get(key, (None, [], None, None))
        if getattr(layer, "_is_graph_model", False) and children is not None:
            pairs += _native_pairs(layer, children, f"{prefix}/{key}/layers", source,
                                   skip_mismatch, by_name)
            continue
        expected = native_entry(layer)
        if expected[4] is not None and groups and not arrays:  # Keras 3's subgroups
            arrays = _group_arrays(expected[4], groups, f"{prefix}/{key}", source)
        values = [(f"{prefix}/{key}/vars/{i}", a) for i, a in enumerate(arrays)]
        pairs += _check_layer(layer, f"{prefix}/{key}", values, source, f"layer #{k}",
                              skip_mismatch, count_skips=True)
    extra = [key for key, (_, arrays, children, groups) in saved.items()
             if (arrays or children or groups) and key not in used]
    if extra and not by_name:
        _skip_or_raise(f"{source} has weights for layers {extra} under '{prefix}' that the "
                       f"model does not have (the model's layers are {keys})", skip_mismatch)
    return pairs


def _group_arrays(expected, groups, where, source):
    """The arrays of a layer stored in Keras 3's named subgroups, in weight order."""
    out = []
    for key, (_, _, variables, _, inner) in expected.items():
        if key not in groups:
            raise ValueError(f"Cannot load {source}: '{where}' has no '{key}' group (found "
                             f"{sorted(groups)})")
        _, arrays, _, found = groups[key]
        out += _group_arrays(inner, found or {}, f"{where}/{key}", source) if inner \
            else list(arrays)
    return out


def restore_optimizer(model, saved, source):
    """Build the optimizer's slots, then assign the saved [(name, array)] in order.

    Like Keras, a state that does not fit (another optimizer, another model: a count
    or shape mismatch) is reported and the optimizer keeps its fresh state. Every
    shape is checked before any data is read and every value before any is assigned:
    nothing is ever partially assigned. A state that fits but holds impossible values
    (a negative or fractional step count, a NaN or negative learning rate) is a
    corrupt file: ValueError naming it.
    """
    optimizer = getattr(model, "optimizer", None)
    if optimizer is None or not saved:
        return False
    if not getattr(optimizer, "built", False) and hasattr(optimizer, "build"):
        optimizer.build(list(getattr(model, "trainable_weights", None) or
                             [w for layer in model.layers for w in layer.trainable_weights]))
    variables = list(optimizer.variables)
    if len(saved) != len(variables):
        logger.warning(
            "Error in loading the saved optimizer state from %s: the file has %d "
            "variables, the optimizer %s expects %d %s. As a result, your model is "
            "starting with a freshly initialized optimizer.", source, len(saved),
            optimizer_name(optimizer), len(variables),
            [str(getattr(v, "path", v.name)) for v in variables][:12])
        return False
    for var, (name, value) in zip(variables, saved):
        shape, got = _shape(var), tuple(np.shape(value))
        if shape != got and not (math.prod(shape) == 1 and math.prod(got) == 1):
            logger.warning(
                "Error in loading the saved optimizer state from %s: variable %s has shape "
                "%s but the saved '%s' has shape %s. As a result, your model is starting "
                "with a freshly initialized optimizer.", source,
                getattr(var, "path", var.name), shape, name, got)
            return False
    values = h5_arrays.read_all([value for _, value in saved])
    pairs = []
    for var, (name, _), value in zip(variables, saved, values):
        value = _check_opt_value(var, name, np.asarray(value).reshape(_shape(var)), source)
        pairs.append((var, value))
    _assign_all(pairs)
    return True


def _check_opt_value(var, name, value, source):
    """The step counter must be a non-negative integer, the learning rate finite >= 0."""
    path = str(getattr(var, "path", None) or getattr(var, "name", ""))
    leaf = path.rsplit("/", 1)[-1]
    if value.dtype.kind not in "biuf":
        raise ValueError(f"Cannot load the optimizer state from {source}: '{name}' (for "
                         f"{path}) must be numeric; received dtype {value.dtype}")
    if leaf in ("iteration", "iterations"):
        v = float(value)
        if not (np.isfinite(v) and v >= 0 and v == int(v) and v < 2 ** 63):
            raise ValueError(f"Cannot load the optimizer state from {source}: '{name}' "
                             f"(the step counter {path}) must be an integer >= 0; "
                             f"received {value.item()!r}")
    elif leaf == "learning_rate":
        v = float(value)
        if not (np.isfinite(v) and v >= 0):
            raise ValueError(f"Cannot load the optimizer state from {source}: '{name}' "
                             f"(the learning rate {path}) must be a finite number >= 0; "
                             f"received {value.item()!r}")
    return value


def extra_state(model):
    """[(layer_name, state)] from layers that define `get_extra_state()`: state that
    is not a Variable but that bit-identical resumption needs (dropout RNG step)."""
    return [(layer.name, dict(layer.get_extra_state())) for layer in model.layers
            if callable(getattr(layer, "get_extra_state", None))]


def restore_extra_state(model, saved):
    """Give each layer with `set_extra_state` its saved state, matched by layer name.

    Every entry is checked first (the keys and shapes the layer's own state has,
    integers where it holds integers, finite numbers) and only then set, so a corrupt
    entry raises ValueError naming the file and changes nothing."""
    source = getattr(saved, "source", "the file")
    todo = []
    for layer in model.layers:
        state = saved.get(layer.name)
        if state and callable(getattr(layer, "set_extra_state", None)):
            expected = dict(layer.get_extra_state()) if callable(
                getattr(layer, "get_extra_state", None)) else None
            todo.append((layer, _check_extra(layer, state, expected, source)))
    for layer, state in todo:
        layer.set_extra_state(state)


def _check_extra(layer, state, expected, source):
    where = f"the saved state of layer {layer.name} in {source}"
    if expected is None:
        return state
    if sorted(state) != sorted(expected):
        raise ValueError(f"Cannot load {where}: expected the keys {sorted(expected)}; "
                         f"received {sorted(state)}")
    for key, value in state.items():
        want, value = np.asarray(expected[key]), np.asarray(value)
        if want.shape != value.shape or value.dtype.kind not in "biuf":
            raise ValueError(f"Cannot load {where}: '{key}' must be {want.dtype} of shape "
                             f"{want.shape}; received {value.dtype} of shape {value.shape}")
        integral = want.dtype.kind in "biu" or isinstance(expected[key], (int, np.integer))
        bad = ~np.isfinite(value) if value.dtype.kind == "f" else np.zeros(value.shape, bool)
        if integral and value.dtype.kind == "f":
            bad |= np.isfinite(value) & (np.abs(value) >= 2.0 ** 63)
            bad |= np.isfinite(value) & (value != np.round(value))
        if np.any(bad):
            raise ValueError(f"Cannot load {where}: '{key}' must hold finite "
                             f"{'integers' if integral else 'numbers'}; received {value!r}")
    return state


def _read_and_assign(pairs):
    """Read every value (DatasetRefs whose shapes were checked), then assign them all:
    a read error leaves the model as it was."""
    values = h5_arrays.read_all([value for _, value in pairs])
    _assign_all([(var, value) for (var, _), value in zip(pairs, values)])


def file_weight_bytes(data):
    """The bytes the weights in `h5_format` data (native or legacy) take as float32,
    from their declared shapes (nothing read): what a model built from the same file
    may declare (plus load_limits' slack)."""
    total = 0

    def native(entries):
        nonlocal total
        for _, arrays, children, groups in entries:
            total += sum(4 * math.prod(a.shape) for a in arrays)
            native((children or {}).values())
            native((groups or {}).values())

    if isinstance(data.get("layers"), dict):
        native(data["layers"].values())
        if data.get("model"):
            total += sum(4 * math.prod(a.shape) for a in data["model"][1])
    else:
        for _, values in data.get("layers") or []:
            total += sum(4 * math.prod(v.shape) for _, v in values)
        total += sum(4 * math.prod(v.shape) for _, v in data.get("top_level") or [])
    return total


def build_budget(source, file_bytes=None):
    """The context in which a model is built from `source`: its layers may declare at
    most the weights the file holds (plus slack) and at most load_limits' total, each
    weight checked before it is allocated (layers/weight_budget)."""
    from kerasish.layers import weight_budget
    from kerasish.saving import load_limits

    limit, why = load_limits.weight_limit()
    reason = f"{why} (building the model saved in {source})"
    if file_bytes is not None:
        held = file_bytes + load_limits.LIMITS.weight_slack_bytes
        if held < limit:
            limit, reason = held, (
                f"{source} holds {file_bytes:,} bytes of weights (as float32), and a "
                f"model built from it may declare at most "
                f"{load_limits.LIMITS.weight_slack_bytes:,} more "
                "(load_limits.LIMITS.weight_slack_bytes); a config declaring weights "
                "the file does not hold")
    return weight_budget.limit(limit, reason)
