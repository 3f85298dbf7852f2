"""kerasish.optimizers: SGD, Adam, AdamW, RMSprop, Adagrad, Nadam, Adamax, Adadelta, Lion, Ftrl,
Adafactor (Keras names, formulas, defaults, configs)."""

from kerasish.optimizers import schedules
from kerasish.optimizers.adafactor import Adafactor
from kerasish.optimizers.optimizer import Optimizer
from kerasish.optimizers.rules import SGD, Adagrad, Adam, AdamW, RMSprop
from kerasish.optimizers.rules_more import Adadelta, Adamax, Ftrl, Lion, Nadam

ALL = {cls.__name__.lower(): cls for cls in (SGD, Adam, AdamW, RMSprop, Adagrad, Nadam, Adamax,
                                              Adadelta, Lion, Ftrl, Adafactor)}


def get(identifier):
    """An optimizer from an instance, a lower-case name ('adam') or a Keras config dict."""
    if isinstance(identifier, Optimizer):
        return identifier
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str) and identifier.lower() in ALL:
        return ALL[identifier.lower()]()
    raise ValueError(f"Unknown optimizer: {identifier!r}. Valid optimizers: {sorted(ALL)}")


def deserialize(config, custom_objects=None):
    name = str(config.get("class_name", "")).lower()
    cls = (custom_objects or {}).get(config.get("class_name")) or ALL.get(name)
    if cls is None:
        raise ValueError(f"Unknown optimizer class: {config.get('class_name')!r}. "
                         f"Valid optimizers: {sorted(ALL)}")
    return cls.from_config(config.get("config", {}))


def serialize(optimizer):
    return {"module": "keras.optimizers", "class_name": type(optimizer).__name__,
            "config": optimizer.get_config(), "registered_name": None}


__all__ = ["schedules", "Optimizer", "SGD", "Adam", "AdamW", "RMSprop", "Adagrad", "Nadam",
           "Adamax", "Adadelta", "Lion", "Ftrl", "Adafactor", "get", "serialize",
           "deserialize"]
