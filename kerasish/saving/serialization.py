"""Configs <-> objects: the custom-object registry, Keras's legacy `{"class_name",
"config"}` form that `.h5` files hold, and normalisation of configs written by
Keras 3 (module/registered_name keys) or tf.keras 2 (one-element `axis` lists)."""

import contextlib
import copy
import inspect

_GLOBAL_CUSTOM_OBJECTS = {}  # registered name ("Custom>MyLayer") -> class/function
_GLOBAL_CUSTOM_NAMES = {}  # class/function -> registered name
_SCOPE_STACK = []  # dicts pushed by custom_object_scope

_SUPPORTED_MODELS = ("Sequential", "Functional", "Model")


def register_serializable(package="Custom", name=None):
    """Class/function decorator making an object loadable from saved configs by name.

    Like `keras.saving.register_keras_serializable`: the object is registered as
    `"<package>>{name or __name__}"`, saved configs use that name, and loading finds it
    without `custom_objects`.

    Args:
        package: namespace of the registered name.
        name: the name inside the package; defaults to the object's `__name__`.
    """
    if not isinstance(package, str) or ">" in package:
        raise ValueError(f"register_serializable: expected `package` to be a string "
                         f"without '>'; received package={package!r}")
    if name is not None and (not isinstance(name, str) or not name or ">" in name):
        raise ValueError(f"register_serializable: expected `name` to be None or a "
                         f"non-empty string without '>'; received name={name!r}")

    def decorator(arg):
        if inspect.isclass(arg) and not hasattr(arg, "get_config"):
            raise ValueError(f"register_serializable: cannot register {arg.__name__}: "
                             "it has no get_config() method")
        registered = f"{package}>{name or arg.__name__}"
        if registered in _GLOBAL_CUSTOM_OBJECTS and _GLOBAL_CUSTOM_OBJECTS[registered] is not arg:
            old = _GLOBAL_CUSTOM_OBJECTS.pop(registered)
            _GLOBAL_CUSTOM_NAMES.pop(old, None)
        _GLOBAL_CUSTOM_OBJECTS[registered] = arg
        _GLOBAL_CUSTOM_NAMES[arg] = registered
        return arg

    return decorator


register_keras_serializable = register_serializable


def get_custom_objects():
    """The global registry dict (registered name -> object); may be edited directly."""
    return _GLOBAL_CUSTOM_OBJECTS


def get_registered_name(obj):
    """The name `obj` (a class, function or config-bearing instance) is saved under."""
    if not inspect.isclass(obj) and (hasattr(obj, "get_config") or
                                     not hasattr(obj, "__name__")):
        obj = type(obj)
    try:
        return _GLOBAL_CUSTOM_NAMES.get(obj, obj.__name__)
    except TypeError:  # unhashable callable
        return obj.__name__


@contextlib.contextmanager
def custom_object_scope(*scopes):
    """Within the block, the given {name: object} dicts take part in loading."""
    for scope in scopes:
        if not isinstance(scope, dict):
            raise TypeError(f"custom_object_scope: expected dicts; received "
                            f"{type(scope).__name__}")
    _SCOPE_STACK.extend(scopes)
    try:
        yield
    finally:
        del _SCOPE_STACK[len(_SCOPE_STACK) - len(scopes):]


def merged_custom_objects(custom_objects=None):
    """{name: object} for deserialisation: registry (by registered and bare name), then
    active scopes, then `custom_objects` (highest priority)."""
    if custom_objects is not None and not isinstance(custom_objects, dict):
        raise TypeError(f"custom_objects: expected a dict of name -> class; received "
                        f"{type(custom_objects).__name__}")
    merged = {}
    for registered, obj in _GLOBAL_CUSTOM_OBJECTS.items():
        merged.setdefault(registered.split(">", 1)[-1], obj)
        merged[registered] = obj
    # Lowest priority: a class registered with `name=` is also found by its own
    # __name__, which is what `get_config()` entries (and Keras's class_name) carry.
    for obj in _GLOBAL_CUSTOM_OBJECTS.values():
        merged.setdefault(getattr(obj, "__name__", None), obj)
    merged.pop(None, None)
    for scope in _SCOPE_STACK:
        merged.update(scope)
    merged.update(custom_objects or {})
    return merged


def get_registered_object(name, custom_objects=None):
    """The object saved as `name` ("Custom>MyLayer" or "MyLayer"), or None."""
    return merged_custom_objects(custom_objects).get(name)


def serialize_object(obj):
    """Legacy form of a value for JSON: configs as {"class_name", "config"}, functions
    by name, containers recursively, plain values as they are."""
    if obj is None or isinstance(obj, (bool, int, float, str)):
        return obj
    if isinstance(obj, dict):
        return {str(k): serialize_object(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [serialize_object(v) for v in obj]
    if hasattr(obj, "get_config") and not inspect.isclass(obj):
        return {"class_name": get_registered_name(obj),
                "config": serialize_object(obj.get_config())}
    if hasattr(obj, "item") and not callable(obj):  # NumPy scalar
        return obj.item()
    if callable(obj) and hasattr(obj, "__name__"):
        return get_registered_name(obj)
    raise TypeError(f"Cannot serialize {type(obj).__name__} for saving: {obj!r}")


# -- layer and model configs -----------------------------------------------------------

def legacy_layer_entry(entry, layer=None):
    """One `layers` item in the legacy form Keras writes to h5: class_name + config."""
    if layer is not None and not entry.get("registered_name"):
        class_name = get_registered_name(layer)
    else:
        class_name = entry.get("registered_name") or entry["class_name"]
    return {"class_name": class_name, "config": entry["config"]}


def model_config(model):
    """`{"class_name": "Sequential" | "Functional", "config": ...}` with legacy layer
    entries (a functional config's entries already are: name and inbound_nodes kept)."""
    config = copy.deepcopy(model.get_config())
    if "input_layers" in config:
        return {"class_name": get_registered_name(model), "config": config}
    layers = [layer for layer in getattr(model, "layers", [])]
    entries = config.get("layers", [])
    # The config lists the InputLayer first when there is one; model.layers does not.
    offset = len(entries) - len(layers)
    config["layers"] = [
        legacy_layer_entry(e, layers[i - offset] if 0 <= i - offset < len(layers) else None)
        for i, e in enumerate(entries)]
    return {"class_name": get_registered_name(model), "config": config}


# Keras 3 config keys that kerasish layers do not take; dropped only while they hold
# the value that means "feature off", so a file that uses the feature still fails.
_DEFAULT_ONLY_KEYS = {
    "InputLayer": {"optional": False, "sparse": False, "ragged": False},
    "BatchNormalization": {"synchronized": False, "renorm": False, "renorm_clipping": None},
}
_INITIALIZER_DEFAULT_ONLY = {"input_axes": None, "output_axes": None}  # Keras 3.15


def _fix_layer_config(class_name, config):
    """Rewrite tf.keras 2 leftovers (as Keras 3's legacy deserializer does) and drop
    Keras 3 keys that only carry their off value."""
    axis = config.get("axis")
    if isinstance(axis, list) and len(axis) == 1:
        config["axis"] = axis[0]
    for key, off in _DEFAULT_ONLY_KEYS.get(class_name, {}).items():
        if key in config and config[key] == off:
            del config[key]
    if class_name == "BatchNormalization" and "renorm" not in config:
        config.pop("renorm_momentum", None)  # meaningless without renorm
    for key, value in config.items():
        if isinstance(value, dict) and isinstance(value.get("config"), dict):
            inner = value["config"]
            value = dict(value, config={k: v for k, v in inner.items()
                                        if not (k in _INITIALIZER_DEFAULT_ONLY and v is None)})
            config[key] = value
    return config


def normalize_layer_entry(entry, where):
    """A layer entry from any Keras version as {"class_name", "config"}."""
    if not isinstance(entry, dict) or not isinstance(entry.get("class_name"), str) \
            or not isinstance(entry.get("config", {}), dict):
        raise ValueError(f"Invalid layer entry in {where}: expected a dict with a string "
                         f"'class_name' and a dict 'config'; received {entry!r:.200}")
    class_name = entry["class_name"]
    registered = entry.get("registered_name")
    if isinstance(registered, str) and ">" in registered:
        class_name = registered  # Keras 3 new-style entry of a registered custom layer
    config = dict(entry.get("config", {}))
    if class_name in _SUPPORTED_MODELS:  # a nested model: normalise its layers too
        config = normalize_model_config({"class_name": class_name, "config": config},
                                        where)["config"]
    out = {"class_name": class_name, "config": _fix_layer_config(entry["class_name"], config)}
    for key in ("name", "inbound_nodes", "build_config"):  # functional graph entries
        if key in entry:
            out[key] = entry[key]
    return out


def normalize_model_config(config, where):
    """Validate a saved model config and return it with normalised layer entries."""
    if not isinstance(config, dict) or not isinstance(config.get("config"), dict) \
            or not isinstance(config.get("class_name"), str):
        raise ValueError(f"Invalid model config in {where}: expected a dict with "
                         f"'class_name' and 'config'; received {str(config)[:200]}")
    class_name = config["class_name"]
    inner = dict(config["config"])
    if class_name not in _SUPPORTED_MODELS and get_registered_object(class_name) is None:
        raise ValueError(f"Cannot load {where}: its model is a '{class_name}'; kerasish "
                         f"loads only {list(_SUPPORTED_MODELS)} models")
    layers = inner.get("layers")
    if not isinstance(layers, list):
        raise ValueError(f"Invalid model config in {where}: 'layers' must be a list; "
                         f"received {type(layers).__name__}")
    inner["layers"] = [normalize_layer_entry(e, where) for e in layers]
    return {"class_name": class_name, "config": inner}


def model_from_config(config, custom_objects=None, where="the model config"):
    """A model (kerasish Sequential or a registered subclass) from a saved config."""
    from kerasish import models

    config = normalize_model_config(config, where)
    objects = merged_custom_objects(custom_objects)
    name = config["class_name"]
    cls = objects.get(name) or (models.Functional if name == "Model" else getattr(models, name))
    with custom_object_scope(dict(custom_objects or {})):  # activations look them up too
        return cls.from_config(config["config"], custom_objects=objects)
