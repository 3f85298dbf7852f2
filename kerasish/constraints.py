"""Weight constraints (Keras 3's keras.constraints): MaxNorm, NonNeg, UnitNorm, MinMaxNorm.

Keras applies a variable's constraint right after each optimizer update
(`v.assign(v.constraint(v))`). Here `apply(buffer)` does that in place on the
Variable's device buffer with one kernel (kernels_numba.ops.constraint), and
`__call__(array)` returns the constrained copy of a NumPy array (Keras lets you call a
constraint). Defaults and formulas are Keras 3's (axis=0: for a Dense kernel (in, out)
each output unit's incoming weights; [0, 1, 2] for a Conv2D kernel's filters).
"""

import numpy as np

from kernels_numba.ops import constraint as _ops

__all__ = ["Constraint", "MaxNorm", "NonNeg", "UnitNorm", "MinMaxNorm", "max_norm", "non_neg",
           "unit_norm", "min_max_norm", "get", "serialize", "deserialize"]


class Constraint:
    """Base class: `apply(buffer)` projects a weight buffer in place; the base does nothing
    (a subclass that overrides only `__call__` is refused by layers, see `check`)."""

    def __call__(self, w):
        out = np.array(w, dtype=np.float32, order="C")
        self.apply(out)
        return out

    def apply(self, array):
        """Constrain a kernels_numba float32 buffer (NumPy or device) in place."""

    def get_config(self):
        return {}

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _axis_config(axis):
    return list(axis) if isinstance(axis, tuple) else axis


class MaxNorm(Constraint):
    """Rescale each norm (over `axis`) down to at most max_value."""

    def __init__(self, max_value=2, axis=0):
        self.max_value = max_value
        self.axis = _axis_config(axis)

    def apply(self, array):
        _ops.max_norm(array, max_value=self.max_value, axis=self.axis)

    def get_config(self):
        return {"max_value": self.max_value, "axis": self.axis}


class NonNeg(Constraint):
    """w = maximum(w, 0)."""

    def apply(self, array):
        _ops.non_neg(array)


class UnitNorm(Constraint):
    """Rescale each norm (over `axis`) to 1 (w / (eps + norm))."""

    def __init__(self, axis=0):
        self.axis = _axis_config(axis)

    def apply(self, array):
        _ops.unit_norm(array, axis=self.axis)

    def get_config(self):
        return {"axis": self.axis}


class MinMaxNorm(Constraint):
    """Move each norm towards [min_value, max_value] at `rate` (1.0: strictly)."""

    def __init__(self, min_value=0.0, max_value=1.0, rate=1.0, axis=0):
        self.min_value = min_value
        self.max_value = max_value
        self.rate = rate
        self.axis = _axis_config(axis)

    def apply(self, array):
        _ops.min_max_norm(array, min_value=self.min_value, max_value=self.max_value,
                          rate=self.rate, axis=self.axis)

    def get_config(self):
        return {"min_value": self.min_value, "max_value": self.max_value, "rate": self.rate,
                "axis": self.axis}


max_norm = MaxNorm
non_neg = NonNeg
unit_norm = UnitNorm
min_max_norm = MinMaxNorm

_CLASSES = {cls.__name__: cls for cls in (Constraint, MaxNorm, NonNeg, UnitNorm, MinMaxNorm)}
_NAMES = {**_CLASSES, "constraint": Constraint, "max_norm": MaxNorm, "non_neg": NonNeg,
          "unit_norm": UnitNorm, "min_max_norm": MinMaxNorm}


def check(constraint, where, shape=None):
    """The constraint if kerasish can run it (a Constraint whose `apply` is one of the
    kernels above, or a subclass that overrides `apply` itself), else ValueError naming
    `where`. With `shape`, its values and axis are checked against the weight's rank."""
    if not isinstance(constraint, Constraint):
        raise ValueError(f"{where}={constraint!r} is not supported: kerasish applies "
                         f"constraints in place on the device, so it takes MaxNorm, NonNeg, "
                         f"UnitNorm, MinMaxNorm or a Constraint subclass defining apply()")
    cls = type(constraint)
    if cls.__call__ is not Constraint.__call__ and cls.apply is Constraint.apply:
        raise ValueError(f"{where}={constraint!r} is not supported: it overrides __call__ "
                         f"but not apply(buffer), which kerasish runs on the weight's device "
                         f"buffer after each update")
    if shape is not None and cls.apply in (MaxNorm.apply, UnitNorm.apply, MinMaxNorm.apply):
        try:  # values and axis checked now, on a stand-in of the weight's rank
            constraint.apply(np.zeros((1,) * len(shape), np.float32))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{where}={constraint!r}: {exc}") from None
    return constraint


def serialize(constraint):
    """Keras 3's form: {"module", "class_name", "config", "registered_name"}."""
    from kerasish.saving import module_objects

    return module_objects.serialize(constraint, _CLASSES, "keras.constraints")


def deserialize(config, custom_objects=None):
    """A constraint from a Keras 3 or tf.keras 2 config dict (unknown classes refused)."""
    from kerasish.saving import module_objects

    return module_objects.deserialize(config, _CLASSES, "constraint", "Constraint", custom_objects)


def get(identifier):
    """A constraint from None, a name, a config dict, a class or an instance."""
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        cls = _NAMES.get(identifier)
        if cls is None:
            raise ValueError(f"Could not interpret constraint identifier: {identifier!r}. "
                             f"Valid: {sorted(n for n in _NAMES if n.lower() != 'constraint')}")
        return cls()
    if isinstance(identifier, type):
        return identifier()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret constraint identifier: {identifier!r}")
