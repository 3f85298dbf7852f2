"""`deserialize_keras_object`: objects from Keras 3's dict form (or the legacy
`{"class_name", "config"}` form), written by kerasish or by Keras.

A class is found by its registered name or class name among the custom objects
(`custom_objects`, `custom_object_scope`, `register_keras_serializable`), then in
kerasish's tables, the one the `module` names (keras.layers, keras.optimizers, ...).
Modules are never imported; a class from any other module must be registered.
Lambdas, type specs and other code-bearing entries are refused, whatever `safe_mode`.
"""

import inspect

import numpy as np

from kerasish.saving import serialization
from kerasish.saving.keras_objects import (
    _DTYPE_POLICIES,
    _MAX_DEPTH,
    _MODULE_WORDS,
    _NUMPY_DTYPES,
    _category_of_class,
    _tables,
)

_KERAS_PACKAGES = ("keras", "kerasish", "tf_keras")


def deserialize_keras_object(config, custom_objects=None, safe_mode=True, where=None,
                             **kwargs):
    """`keras.saving.deserialize_keras_object`: the object a config describes.

    Args:
        config: a dict from `serialize_keras_object` (or Keras), a list of them, a
            string (returned as it is unless it names a custom object) or a plain value.
        custom_objects: {name: class or function} used before the registry.
        safe_mode: accepted for Keras compatibility; kerasish is always safe (no code
            from a config is ever run).
        where: what to call the config in error messages (e.g. "config.json in m.keras").
    """
    where = where or "the config"
    objects = serialization.merged_custom_objects(custom_objects)
    try:
        return revive(config, objects, where)
    except RecursionError as e:
        raise ValueError(f"Cannot deserialize {where}: it is nested too deeply") from e


def revive(config, objects, where, depth=0):
    if depth > _MAX_DEPTH:
        raise ValueError(f"Cannot deserialize {where}: it is nested more than "
                         f"{_MAX_DEPTH} levels deep")
    if config is None or isinstance(config, (bool, int, float)):
        return config
    if isinstance(config, str):
        obj = objects.get(config)
        return config if obj is None else obj
    if isinstance(config, (list, tuple)):
        return [revive(x, objects, where, depth + 1) for x in config]
    if not isinstance(config, dict):
        raise TypeError(f"Cannot deserialize {where}: expected a dict, a list or a plain "
                        f"value; received {type(config).__name__}")
    if "class_name" not in config or "config" not in config:
        return {k: revive(v, objects, where, depth + 1) for k, v in config.items()}
    class_name = config["class_name"]
    if not isinstance(class_name, str):
        raise ValueError(f"Cannot deserialize {where}: 'class_name' must be a string; "
                         f"received {class_name!r:.100}")
    inner = {} if config["config"] is None else config["config"]
    if class_name.startswith("__"):
        return _special(class_name, inner, objects, where, depth)
    if class_name == "function":
        return _function(inner, objects, where)
    cls, category = resolve_class(config, objects, where)
    if category == "dtype":
        return inner.get("name", "float32") if isinstance(inner, dict) else "float32"
    if not isinstance(inner, dict):
        raise ValueError(f"Cannot deserialize {where}: the config of '{class_name}' must be "
                         f"a dict; received {type(inner).__name__}")
    if category == "models":
        return revive_model(config, objects, where)
    if category == "layers":
        return _layer(config, cls, where)
    if category == "initializers":  # Keras 3.15 keys that mean "off"
        inner = {k: v for k, v in inner.items()
                 if not (k in ("input_axes", "output_axes") and v is None)}
    if not inspect.isclass(cls):
        return cls  # a registered function
    if not hasattr(cls, "from_config"):
        raise ValueError(f"Cannot deserialize {where}: class '{class_name}' has no "
                         "from_config() method")
    try:
        return cls.from_config(dict(inner))
    except (TypeError, ValueError, KeyError) as e:
        raise ValueError(f"Cannot deserialize '{class_name}' in {where}: {e}") from e


def _module_category(module):
    """The table a Keras module path names; None to search all; "other" for a module
    outside Keras (its classes must be registered)."""
    if not isinstance(module, str) or not module:
        return None
    parts = module.split(".")
    if parts[0] not in _KERAS_PACKAGES:
        return "other"
    return next((word for word in _MODULE_WORDS if word in parts), None)


def resolve_class(config, objects, where):
    """(class, category) for a dict-form config; ValueError naming `where` if unknown."""
    class_name, module = config["class_name"], config.get("module")
    registered = config.get("registered_name")
    for key in (registered, class_name):
        if isinstance(key, str) and objects.get(key) is not None:
            return objects[key], _category_of_class(objects[key])
    if class_name in _DTYPE_POLICIES:
        return None, "dtype"
    if class_name == "Lambda":
        raise ValueError(f"Refusing to deserialize {where}: it holds a Lambda layer, whose "
                         "config carries Python code; kerasish has no Lambda layer and "
                         "never runs code from a file (safe_mode=False does not change "
                         "that). Write the computation as a custom layer registered with "
                         "@keras.saving.register_keras_serializable()")
    category = _module_category(module)
    tables = _tables()
    for name in ([category] if category in tables else [] if category else list(tables)):
        cls = tables[name].get(class_name)
        if cls is not None:
            return cls, name
    origin = f" (module '{module}'" + (f", registered as '{registered}')" if isinstance(
        registered, str) and registered != class_name else ")") if module else ""
    known = f"; kerasish's {category} are {sorted(tables[category])}" \
        if category in tables else ""
    raise ValueError(f"Cannot deserialize {where}: unknown class '{class_name}'{origin}"
                     f"{known}. A custom class must be decorated with "
                     "@keras.saving.register_keras_serializable() or passed in "
                     "custom_objects")


def _shape(value):
    if isinstance(value, list) and value and isinstance(value[0], list):
        return [_shape(v) for v in value]
    if not isinstance(value, list) or not all(v is None or isinstance(v, int) and v >= 0
                                              for v in value):
        raise ValueError(f"expected a shape (a list of ints or nulls); received {value!r:.80}")
    return tuple(value)


def _layer(config, cls, where):
    entry = serialization.normalize_layer_entry(config, where)
    try:
        layer = cls.from_config(entry["config"])
    except (TypeError, ValueError, KeyError) as e:
        raise ValueError(f"Cannot deserialize layer '{config['class_name']}' in {where}: "
                         f"{e}") from e
    build = config.get("build_config")
    shape = build.get("input_shape") if isinstance(build, dict) else None
    if user_build_from_config(layer, build, where):
        return layer
    if shape is not None and not getattr(layer, "built", False):
        try:
            layer._build_once(_shape(shape))
        except (TypeError, ValueError) as e:
            raise ValueError(f"Cannot build layer '{layer.name}' from the build_config in "
                             f"{where}: {e}") from e
    return layer


def user_build_from_config(layer, build, where):
    """Keras 3 calls a layer's build_from_config(build_config) right after from_config:
    a layer's own override runs (kerasish's layers build when connected); True if ran."""
    method = getattr(type(layer), "build_from_config", None)
    if method is None or getattr(method, "__module__", "").startswith("kerasish.") or \
            not isinstance(build, dict) or getattr(layer, "built", False):
        return False
    try:
        layer.build_from_config(build)
    except (TypeError, ValueError, KeyError) as e:
        raise ValueError(f"Cannot build layer '{layer.name}' with its build_from_config in "
                         f"{where}: {e}") from e
    layer.built = True  # Keras's build wrapper marks it; a later call does not build again
    return True


def revive_model(config, objects, where, compile=True):
    """A model from its Keras 3 dict (top-level config.json or a nested entry), compiled
    with its compile_config when there is one and `compile`."""
    registered = config.get("registered_name")
    name = registered if isinstance(registered, str) and ">" in registered \
        else config["class_name"]
    model = serialization.model_from_config({"class_name": name, "config": config["config"]},
                                            objects, where)
    compile_config = config.get("compile_config")
    if compile and compile_config:
        compile_from_config(model, compile_config, objects, where)
    return model


def compile_from_config(model, compile_config, objects, where):
    """`model.compile_from_config`: compile with the saved optimizer, losses, metrics."""
    if not isinstance(compile_config, dict):
        raise ValueError(f"Invalid compile_config in {where}: expected a JSON object; "
                         f"received {type(compile_config).__name__}")
    optimizer = compile_config.get("optimizer")
    kwargs = {"optimizer": "rmsprop" if optimizer is None else
              revive(optimizer, objects, f"the optimizer in {where}")}
    for key in ("loss", "loss_weights", "metrics", "weighted_metrics"):
        if compile_config.get(key) is not None:
            kwargs[key] = revive(compile_config[key], objects, f"the {key} in {where}")
    try:
        model.compile(**kwargs)
    except (ValueError, TypeError, KeyError) as e:
        raise ValueError(f"Cannot compile the model loaded from {where} with its saved "
                         f"compile_config ({e}); pass compile=False to load it "
                         "uncompiled") from e


def _function(name, objects, where):
    from kerasish import activations, losses, metrics

    if not isinstance(name, str):
        raise ValueError(f"Cannot deserialize {where}: a function entry must name the "
                         f"function with a string; received {name!r:.100}")
    if objects.get(name) is not None:
        return objects[name]
    if ">" not in name:  # Keras: a registered function saved by its bare name
        for key, obj in objects.items():
            if key.endswith(f">{name}"):
                return obj
    if name in activations.ALL and callable(getattr(activations, name, None)):
        return getattr(activations, name)
    if name in losses.STRINGS:
        fn = getattr(losses, name, None)
        return fn if callable(fn) else name
    if name.lower() in getattr(metrics, "VALID", ()):
        return name
    raise ValueError(f"Cannot deserialize {where}: unknown function '{name}'. A custom "
                     "function must be decorated with "
                     "@keras.saving.register_keras_serializable() or passed in "
                     "custom_objects")


def _special(class_name, inner, objects, where, depth):
    if class_name in ("__numpy__", "__tensor__"):
        dtype = inner.get("dtype") if isinstance(inner, dict) else None
        if dtype not in _NUMPY_DTYPES:
            raise ValueError(f"Cannot deserialize {where}: {class_name} with dtype "
                             f"{dtype!r:.40}; expected one of {list(_NUMPY_DTYPES)}")
        try:
            return np.array(inner.get("value"), dtype=dtype)
        except (TypeError, ValueError, OverflowError) as e:
            raise ValueError(f"Cannot deserialize {where}: bad {class_name} value ({e})") from e
    if class_name == "__bytes__" and isinstance(inner, dict) and \
            isinstance(inner.get("value"), str):
        return inner["value"].encode("utf-8")
    if class_name == "__ellipsis__":
        return Ellipsis
    if class_name == "__slice__" and isinstance(inner, dict):
        return slice(*(revive(inner.get(k), objects, where, depth + 1)
                       for k in ("start", "stop", "step")))
    if class_name == "__lambda__":
        raise ValueError(f"Refusing to deserialize {where}: it holds a Python lambda "
                         "(code), and kerasish never runs code from a saved config "
                         "(safe_mode=False does not change that); replace it with a named "
                         "function decorated with @keras.saving.register_keras_serializable()")
    raise ValueError(f"Cannot deserialize {where}: unsupported entry '{class_name}'")
