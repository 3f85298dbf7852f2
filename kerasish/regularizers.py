"""Weight and activity regularizers (Keras 3's keras.regularizers): L1, L2, L1L2.

kerasish runs every regularizer as one fused kernel (kernels_numba.ops.regularize:
penalty += l1*sum|w| + l2*sum w^2 and its gradient), so a regularizer is usable only if
it reduces to two floats, `l1` and `l2`: L1, L2, L1L2, or a Regularizer subclass with
float `l1`/`l2` attributes whose `__call__` computes exactly that penalty (checked on
probe arrays when a layer takes it). Anything else is refused by name at layer
construction (`penalty_factors`), never silently dropped.

As Keras 3: L1 and L2 default to 0.01, L1L2 to 0.0 and 0.0; the strings are the class
names and their snake case ("l1", "l2", "l1l2", ...), plus tf.keras 2's "l1_l2"
(l1 = l2 = 0.01; Keras 3.15 has no such string). An activity regularizer's penalty is
divided by the batch size (Keras's Layer.__call__), which the engine does.
"""

import math

import numpy as np

__all__ = ["Regularizer", "L1", "L2", "L1L2", "OrthogonalRegularizer", "l1", "l2", "l1_l2",
           "orthogonal_regularizer", "get", "serialize", "deserialize", "penalty_factors"]


class Regularizer:
    """Base class: `__call__(x)` is the penalty of a weight or output array x."""

    def __call__(self, x):
        return 0.0

    @classmethod
    def from_config(cls, config):
        return cls(**config)

    def get_config(self):
        raise NotImplementedError(f"{self} does not implement get_config()")


def _factor(value, name):
    """Keras's validate_float_arg: a finite float >= 0."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.number)) or \
            not math.isfinite(float(value)) or value < 0:
        raise ValueError(f"Invalid value for argument {name}: expected a non-negative float. "
                         f"Received: {name}={value!r}")
    return float(value)


def _penalty(x, l1, l2):
    """l1*sum|x| + l2*sum x^2 in float64 (a 0 factor's term skipped, as Keras's L1L2)."""
    x = np.asarray(x, dtype=np.float64)
    total = 0.0
    if l1 != 0.0:
        total += l1 * float(np.abs(x).sum())
    if l2 != 0.0:
        total += l2 * float((x * x).sum())
    return total


class L1L2(Regularizer):
    """penalty = l1 * sum(|x|) + l2 * sum(x^2)."""

    def __init__(self, l1=0.0, l2=0.0):
        self.l1 = _factor(0.0 if l1 is None else l1, "l1")
        self.l2 = _factor(0.0 if l2 is None else l2, "l2")

    def __call__(self, x):
        return _penalty(x, self.l1, self.l2)

    def get_config(self):
        return {"l1": self.l1, "l2": self.l2}


class L1(Regularizer):
    """penalty = l1 * sum(|x|)."""

    def __init__(self, l1=0.01):
        # Keras keeps l1 as a float32 tensor: its config reads 0.009999999776482582
        self.l1 = float(np.float32(_factor(0.01 if l1 is None else l1, "l1")))
        self.l2 = 0.0

    def __call__(self, x):
        return _penalty(x, self.l1, 0.0)

    def get_config(self):
        return {"l1": self.l1}


class L2(Regularizer):
    """penalty = l2 * sum(x^2)."""

    def __init__(self, l2=0.01):
        self.l2 = _factor(0.01 if l2 is None else l2, "l2")
        self.l1 = 0.0

    def __call__(self, x):
        return _penalty(x, 0.0, self.l2)

    def get_config(self):
        return {"l2": self.l2}


class OrthogonalRegularizer(Regularizer):
    """Keras's OrthogonalRegularizer: refused (its penalty, a mean of |dot products| of
    normalised rows, is not an L1/L2 sum; kerasish has no kernel for it)."""

    def __init__(self, factor=0.01, mode="rows"):
        raise ValueError("OrthogonalRegularizer is not supported by kerasish: its penalty "
                         "(mean |dot product| of the normalised rows or columns) is not an "
                         "L1/L2 sum, which is all kerasish's regularizer kernel computes; "
                         "use L1, L2 or L1L2")


l1 = L1
l2 = L2
l1_l2 = L1L2
orthogonal_regularizer = OrthogonalRegularizer

_CLASSES = {cls.__name__: cls for cls in (Regularizer, L1, L2, L1L2, OrthogonalRegularizer)}
_NAMES = {**_CLASSES, "regularizer": Regularizer, "l1": L1, "l2": L2, "l1l2": L1L2,
          "orthogonal_regularizer": OrthogonalRegularizer}


def serialize(regularizer):
    """Keras 3's form: {"module", "class_name", "config", "registered_name"}."""
    from kerasish.saving import module_objects

    return module_objects.serialize(regularizer, _CLASSES, "keras.regularizers")


def deserialize(config, custom_objects=None):
    """A regularizer from a Keras 3 or tf.keras 2 config dict (unknown classes refused)."""
    from kerasish.saving import module_objects

    return module_objects.deserialize(config, _CLASSES, "regularizer", "Regularizer",
                                      custom_objects)


def get(identifier):
    """A regularizer from None, a name, a config dict, a class or an instance."""
    if identifier is None:
        return None
    if isinstance(identifier, dict):
        return deserialize(identifier)
    if isinstance(identifier, str):
        if identifier == "l1_l2":  # tf.keras 2's string (Keras 3.15 refuses it)
            return L1L2(l1=0.01, l2=0.01)
        cls = _NAMES.get(identifier)
        if cls is None:
            raise ValueError(f"Could not interpret regularizer identifier: {identifier!r}. "
                             f"Valid: {sorted(n for n in _NAMES if n.lower() != 'regularizer')}")
        return cls()
    if isinstance(identifier, type):
        return identifier()
    if callable(identifier):
        return identifier
    raise ValueError(f"Could not interpret regularizer identifier: {identifier!r}")


_PROBES = (np.array([[0.5, -1.25, 0.0], [2.0, -0.75, 1.5]]),
           np.array([3.0, -0.1, 0.2, -2.5]))


def penalty_factors(regularizer, where):
    """(l1, l2) floats of a regularizer kerasish can run, or ValueError naming `where`
    (e.g. "Dense 'dense': kernel_regularizer") and saying why."""
    if isinstance(regularizer, (L1, L2, L1L2)) and \
            type(regularizer).__call__ in (L1.__call__, L2.__call__, L1L2.__call__):
        return regularizer.l1, regularizer.l2
    why = ("kerasish runs regularizers as a fused L1/L2 kernel, so it takes L1, L2, L1L2, "
           "or a Regularizer with float attributes l1 and l2 whose __call__(x) is "
           "l1*sum(|x|) + l2*sum(x**2)")
    a, b = getattr(regularizer, "l1", 0.0), getattr(regularizer, "l2", 0.0)
    if not hasattr(regularizer, "l1") and not hasattr(regularizer, "l2"):
        raise ValueError(f"{where}={regularizer!r} is not supported: {why}; it has no l1/l2 "
                         f"attributes")
    try:
        a, b = _factor(float(a), "l1"), _factor(float(b), "l2")
        for x in _PROBES:
            got, want = float(regularizer(x)), _penalty(x, a, b)
            if not abs(got - want) <= 1e-5 * max(1.0, abs(want)):
                raise ValueError(f"its __call__ gave {got} where l1*sum|x| + l2*sum x^2 is "
                                 f"{want}")
    except Exception as exc:  # noqa: BLE001 - any failure of the probe is a refusal
        raise ValueError(f"{where}={regularizer!r} is not supported: {why} ({exc})") from None
    return a, b
