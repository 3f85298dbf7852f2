"""Keras 3's dict form of objects: `{"module", "class_name", "config", "registered_name"}`
(plus `build_config`/`compile_config` for layers and models), as
`keras.saving.serialize_keras_object` writes it and `.keras` files hold in config.json.

Deserialising looks classes up only in kerasish's own tables and the custom-object
registry (`serialization`): a config's `module` picks the table, it is never imported,
and nothing in a config is executed (lambdas and pickled functions are refused).
"""

import copy
import inspect
import types

import numpy as np

from kerasish.saving import serialization

# Keras layers whose build() is the default one: Keras writes no build_config for them.
_NO_BUILD_CONFIG = frozenset((
    "InputLayer", "Activation", "Reshape", "Dropout", "ReLU", "LeakyReLU", "Softmax",
    "Masking", "MaxPooling1D", "MaxPooling2D", "AveragePooling1D", "AveragePooling2D",
    "GlobalMaxPooling1D", "GlobalMaxPooling2D", "GlobalAveragePooling1D",
    "GlobalAveragePooling2D", "UpSampling1D"))
_MODULES = {"layers": "keras.layers", "initializers": "keras.initializers",
            "losses": "keras.losses", "metrics": "keras.metrics",
            "optimizers": "keras.optimizers", "schedules": "keras.optimizers.schedules"}
# Checked in this order when a module path names several (keras.optimizers.schedules).
_MODULE_WORDS = ("schedules", "optimizers", "initializers", "losses", "metrics", "models",
                 "layers")
_DTYPE_POLICIES = ("DTypePolicy", "FloatDTypePolicy")
_NUMPY_DTYPES = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32",
                 "uint64", "float16", "float32", "float64")
_MAX_DEPTH = 200  # nesting of a config; deeper is malformed (or a stack-overflow attempt)


def _tables():
    """{category: {class name: class}} of kerasish's public classes (read at call time,
    so classes added to those modules later are found)."""
    from kerasish import initializers, layers, losses, metrics, models, optimizers
    from kerasish.optimizers import schedules

    return {
        "models": {"Sequential": models.Sequential, "Functional": models.Functional,
                   "Model": models.Functional},
        "layers": dict(layers.BUILTIN),
        "initializers": {c.__name__: c for c in initializers.ALL.values()},
        "losses": dict(losses.CLASSES),
        "metrics": dict(metrics.CLASSES),
        "optimizers": {c.__name__: c for c in optimizers.ALL.values()},
        "schedules": dict(schedules.ALL),
    }


def _bases():
    from kerasish import initializers, losses, metrics, models, optimizers
    from kerasish.layers.layer import Layer
    from kerasish.optimizers import schedules

    return (("models", models.Model), ("layers", Layer),
            ("initializers", initializers.Initializer), ("losses", losses.Loss),
            ("metrics", metrics.Metric), ("optimizers", optimizers.Optimizer),
            ("schedules", schedules.LearningRateSchedule))


def _category(obj):
    for name, base in _bases():
        if isinstance(obj, base):
            return name
    return None


def _class_keys(cls, category):
    """(module, class_name, registered_name) as Keras 3 writes them for `cls`."""
    registered = serialization.get_registered_name(cls)
    if ">" in registered:  # registered custom object
        return cls.__module__, cls.__name__, registered
    if category == "models" and _tables()["models"].get(cls.__name__) is cls:
        if cls.__name__ == "Sequential":
            return "keras", "Sequential", None
        return "keras.src.models.functional", "Functional", "Functional"
    if category in _MODULES and _tables()[category].get(cls.__name__) is cls:
        return _MODULES[category], cls.__name__, None
    return cls.__module__, cls.__name__, registered  # unregistered custom class


def _dtype_policy(name):
    return {"module": "keras", "class_name": "DTypePolicy", "config": {"name": name},
            "registered_name": None}


def _shape_json(shape):
    if isinstance(shape, (list, tuple)) and shape and isinstance(shape[0], (list, tuple)):
        return [_shape_json(s) for s in shape]
    return None if shape is None else [None if s is None else int(s) for s in shape]


# -- serialisation ---------------------------------------------------------------------

def serialize_keras_object(obj):
    """`keras.saving.serialize_keras_object`: a JSON-ready dict (or plain value) in
    Keras 3's form for layers, models, losses, metrics, optimizers, initializers,
    schedules and functions; containers are serialised item by item."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, (list, tuple)):
        items = [serialize_keras_object(x) for x in obj]
        return tuple(items) if isinstance(obj, tuple) else items
    if isinstance(obj, dict):
        return {key: serialize_keras_object(value) for key, value in obj.items()}
    if isinstance(obj, bytes):
        return {"class_name": "__bytes__", "config": {"value": obj.decode("utf-8")}}
    if isinstance(obj, np.ndarray) and obj.ndim > 0:
        return {"class_name": "__numpy__",
                "config": {"value": obj.tolist(), "dtype": str(obj.dtype)}}
    if isinstance(obj, (np.ndarray, np.generic)):
        return obj.item()
    if isinstance(obj, types.FunctionType) and obj.__name__ == "<lambda>":
        raise ValueError("serialize_keras_object: cannot serialize a lambda (kerasish never "
                         "loads code from files); use a named function decorated with "
                         "@keras.saving.register_keras_serializable()")
    if inspect.isclass(obj):
        raise TypeError(f"serialize_keras_object: expected an object, not the class "
                        f"{obj.__name__}; serialize an instance")
    if isinstance(obj, (types.FunctionType, types.BuiltinFunctionType)) or (
            callable(obj) and not hasattr(obj, "get_config") and hasattr(obj, "__name__")):
        return {"module": "builtins", "class_name": "function",
                "config": serialization.get_registered_name(obj), "registered_name": "function"}
    category = _category(obj)
    if category == "models" or getattr(obj, "_is_graph_model", False):
        return model_dict(obj, compile_config=True)
    if category == "layers":
        return layer_dict(obj)
    if not hasattr(obj, "get_config"):
        raise TypeError(f"serialize_keras_object: cannot serialize {type(obj).__name__} "
                        f"{obj!r:.80}: it has no get_config() method")
    config = obj.get_config()
    if not isinstance(config, dict):
        raise TypeError(f"serialize_keras_object: {type(obj).__name__}.get_config() must "
                        f"return a dict; received {type(config).__name__}")
    module, class_name, registered = _class_keys(type(obj), category)
    return {"module": module, "class_name": class_name,
            "config": _full_values(serialize_keras_object(config)),
            "registered_name": registered}


def _full_values(value):
    """Nested legacy `{"class_name", "config"}` dicts in Keras 3's full form."""
    if isinstance(value, list):
        return [_full_values(v) for v in value]
    if not isinstance(value, dict):
        return value
    if isinstance(value.get("class_name"), str) and "config" in value:
        return full_entry(value)
    return {k: _full_values(v) for k, v in value.items()}


def full_entry(entry):
    """A `{"class_name", "config"}` dict (legacy form) in Keras 3's full form, its class
    found by name (registered name, then kerasish's tables); unknown ones as they are."""
    if "module" in entry or str(entry["class_name"]).startswith("__"):
        return entry
    name = entry["class_name"]
    cls = serialization.get_registered_object(name)
    category = next((c for c, table in _tables().items() if name in table), None)
    if cls is None and category is not None:
        cls = _tables()[category][name]
    if cls is None:
        return entry
    category = category or _category_of_class(cls)
    if category == "models":
        return entry
    module, class_name, registered = _class_keys(cls, category)
    config = entry.get("config")
    if category == "layers" and isinstance(config, dict):
        config = _layer_config(class_name, config)
    else:
        config = _full_values(config)
    return {"module": module, "class_name": class_name, "config": config,
            "registered_name": registered}


def _category_of_class(cls):
    for name, base in _bases():
        if inspect.isclass(cls) and issubclass(cls, base):
            return name
    return None


def _layer_config(class_name, config):
    config = dict(config)
    if class_name != "InputLayer" and isinstance(config.get("dtype"), str):
        config["dtype"] = _dtype_policy(config["dtype"])
    return {k: (v if k == "dtype" else _full_values(serialize_keras_object(v)))
            for k, v in config.items()}


def _build_config(layer):
    if callable(getattr(layer, "get_build_config", None)):  # e.g. MultiHeadAttention's shapes
        return layer.get_build_config()
    if type(layer).__name__ in _NO_BUILD_CONFIG or not getattr(layer, "built", False):
        return None
    shape = getattr(layer, "input_shape", None)
    return None if shape is None else {"input_shape": _shape_json(shape)}


def layer_dict(layer, config=None, build=None):
    """One layer in Keras 3's form (with build_config once it is built; `build`: the one
    the model's config already holds)."""
    config = layer.get_config() if config is None else config
    module, class_name, registered = _class_keys(type(layer), "layers")
    out = {"module": module, "class_name": class_name,
           "config": _layer_config(class_name, config), "registered_name": registered}
    build = _build_config(layer) if build is None else build
    if build is not None:
        out["build_config"] = build
    return out


def model_dict(model, compile_config=True):
    """`serialize_keras_object(model)`: Keras 3's form of a Sequential or Functional
    model with every layer entry in full form (nested models recursively); with
    `compile_config` the compile arguments and optimizer of a compiled model."""
    config = copy.deepcopy(model.get_config())
    by_name = {layer.name: layer for layer in model.layers}
    entries = []
    for entry in config.get("layers", []):
        name = entry.get("name") or (entry.get("config") or {}).get("name")
        layer = by_name.get(name)
        if layer is not None and getattr(layer, "_is_graph_model", False):
            full = model_dict(layer, compile_config=False)
        elif layer is not None:
            full = layer_dict(layer, entry.get("config", {}), entry.get("build_config"))
        else:  # a Sequential's InputLayer (not in model.layers)
            full = full_entry({"class_name": entry["class_name"], "config": entry["config"]})
        for key in ("name", "inbound_nodes"):
            if key in entry:
                full[key] = entry[key]
        entries.append(full)
    config["layers"] = entries
    if isinstance(config.get("dtype"), str):
        config["dtype"] = _dtype_policy(config["dtype"])
    module, class_name, registered = _class_keys(type(model), "models")
    out = {"module": module, "class_name": class_name, "config": config,
           "registered_name": registered}
    if "input_layers" in config:
        out["build_config"] = {"input_shape": None}  # as Keras 3 writes for Functional
    elif config.get("build_input_shape") is not None:
        out["build_config"] = {"input_shape": config["build_input_shape"]}
    # Keras 3 writes {} for an uncompiled (or nested) model.
    out["compile_config"] = (get_compile_config(model) or {}) if compile_config else {}
    return out


def get_compile_config(model):
    """Keras 3's `model.get_compile_config()`: the optimizer and compile arguments in
    full form, or None for an uncompiled model."""
    compiled = getattr(model, "_compile_config", None)
    optimizer = getattr(model, "optimizer", None)
    if not compiled or optimizer is None:
        return None
    compiled = dict(compiled)
    out = {"optimizer": serialize_keras_object(optimizer)}
    for key in ("loss", "loss_weights", "metrics", "weighted_metrics"):
        out[key] = _full_values(serialize_keras_object(compiled.pop(key, None)))
    out.update({"run_eagerly": bool(compiled.pop("run_eagerly", False)),
                "steps_per_execution": compiled.pop("steps_per_execution", 1) or 1,
                "jit_compile": bool(compiled.pop("jit_compile", False))})
    out.update(serialize_keras_object(compiled))
    return out
