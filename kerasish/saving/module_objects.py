"""Keras 3's config form of a module's built-in objects (regularizers, constraints):
{"module", "class_name", "config", "registered_name"}, read back with registered
custom classes first and unknown classes refused by name."""

from kerasish.saving.serialization import get_registered_name, get_registered_object


def serialize(obj, classes, module):
    """`obj` in Keras 3's form; `classes` maps the module's built-in class names."""
    if obj is None:
        return None
    cls = type(obj)
    builtin = classes.get(cls.__name__) is cls
    return {"module": module if builtin else cls.__module__,
            "class_name": cls.__name__, "config": obj.get_config(),
            "registered_name": None if builtin else get_registered_name(obj)}


def deserialize(config, classes, kind, base, custom_objects=None):
    """An object from a Keras 3 or tf.keras 2 config dict; `kind` ("regularizer") names
    it in errors, `base` is the base class name left out of the valid list."""
    if not isinstance(config, dict) or not isinstance(config.get("class_name"), str):
        raise ValueError(f"Could not interpret {kind} config: {config!r}")
    name = config["class_name"]
    cls = None
    registered = config.get("registered_name")
    if isinstance(registered, str) or custom_objects:
        cls = get_registered_object(registered or name, custom_objects) or \
            get_registered_object(name, custom_objects)
    cls = cls or classes.get(name)
    if cls is None:
        raise ValueError(f"Unknown {kind} class: {name!r}. Valid: "
                         f"{sorted(c for c in classes if c != base)} (or a class "
                         f"registered with register_keras_serializable)")
    inner = config.get("config", {})
    if not isinstance(inner, dict):
        raise ValueError(f"{kind.capitalize()} {name}: expected a config dict; received "
                         f"{inner!r}")
    try:
        return cls.from_config(inner)
    except TypeError as exc:
        raise ValueError(f"{kind.capitalize()} {name}: bad config {inner!r}: {exc}") from None
