"""Learning-rate schedules (`keras.optimizers.schedules`): the rate as a function of the step.

An optimizer built with a schedule evaluates it on the host once per training step, at
its iteration count before the update (0 for the first step), as Keras does, and
passes the float32 result to the update kernels. Formulas, defaults, configs and
argument checks follow Keras 3.
"""

import math


class LearningRateSchedule:
    """Base class: subclasses define `__call__(step)` and `get_config()`."""

    def __call__(self, step):
        raise NotImplementedError(f"{type(self).__name__} must implement __call__(step)")

    def get_config(self):
        raise NotImplementedError(f"{type(self).__name__} must implement get_config()")

    @classmethod
    def from_config(cls, config):
        return cls(**config)


def _check_decay_steps(owner, decay_steps):
    if not decay_steps > 0:
        raise ValueError(f"{owner}: argument `decay_steps` must be > 0. "
                         f"Received: decay_steps={decay_steps}")


class ExponentialDecay(LearningRateSchedule):
    """initial_learning_rate * decay_rate ** (step / decay_steps) (floored if staircase)."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False,
                 name="ExponentialDecay"):
        _check_decay_steps(type(self).__name__, decay_steps)
        self.initial_learning_rate, self.decay_steps = initial_learning_rate, decay_steps
        self.decay_rate, self.staircase, self.name = decay_rate, staircase, name

    def __call__(self, step):
        p = step / self.decay_steps
        return self.initial_learning_rate * self.decay_rate ** (math.floor(p) if self.staircase
                                                                else p)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "decay_rate": self.decay_rate,
                "staircase": self.staircase, "name": self.name}


class InverseTimeDecay(ExponentialDecay):
    """initial_learning_rate / (1 + decay_rate * step / decay_steps) (floored if staircase)."""

    def __init__(self, initial_learning_rate, decay_steps, decay_rate, staircase=False,
                 name="InverseTimeDecay"):
        super().__init__(initial_learning_rate, decay_steps, decay_rate, staircase, name)

    def __call__(self, step):
        p = step / self.decay_steps
        return self.initial_learning_rate / (1 + self.decay_rate * (math.floor(p)
                                                                    if self.staircase else p))


class PiecewiseConstantDecay(LearningRateSchedule):
    """values[0] while step <= boundaries[0], values[i] while step <= boundaries[i], then
    values[-1]."""

    def __init__(self, boundaries, values, name="PiecewiseConstant"):
        if len(boundaries) != len(values) - 1:
            raise ValueError(f"PiecewiseConstantDecay: the length of boundaries should be 1 "
                             f"less than the length of values. Received: boundaries="
                             f"{boundaries} of length {len(boundaries)}, and values={values} "
                             f"of length {len(values)}.")
        self.boundaries, self.values, self.name = list(boundaries), list(values), name

    def __call__(self, step):
        for boundary, value in zip(self.boundaries, self.values):
            if step <= boundary:
                return value
        return self.values[-1]

    def get_config(self):
        return {"boundaries": self.boundaries, "values": self.values, "name": self.name}


class PolynomialDecay(LearningRateSchedule):
    """(initial - end) * (1 - step / decay_steps) ** power + end; with `cycle` the decay
    restarts at every multiple of decay_steps, else the step stops at decay_steps."""

    def __init__(self, initial_learning_rate, decay_steps, end_learning_rate=0.0001,
                 power=1.0, cycle=False, name="PolynomialDecay"):
        _check_decay_steps(type(self).__name__, decay_steps)
        self.initial_learning_rate, self.decay_steps = initial_learning_rate, decay_steps
        self.end_learning_rate, self.power = end_learning_rate, power
        self.cycle, self.name = cycle, name

    def __call__(self, step):
        decay_steps = self.decay_steps
        if self.cycle:
            decay_steps *= 1 if step == 0 else math.ceil(step / self.decay_steps)
        else:
            step = min(step, decay_steps)
        fraction_left = 1 - step / decay_steps
        return ((self.initial_learning_rate - self.end_learning_rate)
                * fraction_left ** self.power + self.end_learning_rate)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "end_learning_rate": self.end_learning_rate,
                "power": self.power, "cycle": self.cycle, "name": self.name}


class CosineDecay(LearningRateSchedule):
    """Optional linear warmup from initial_learning_rate to warmup_target over
    warmup_steps, then a cosine from there down to alpha times it over decay_steps."""

    def __init__(self, initial_learning_rate, decay_steps, alpha=0.0, name="CosineDecay",
                 warmup_target=None, warmup_steps=0):
        _check_decay_steps(type(self).__name__, decay_steps)
        self.initial_learning_rate, self.decay_steps = initial_learning_rate, decay_steps
        self.alpha, self.name = alpha, name
        self.warmup_target, self.warmup_steps = warmup_target, warmup_steps

    def _cosine(self, step, decay_from):
        cosine = 0.5 * (1.0 + math.cos(math.pi * step / self.decay_steps))
        return decay_from * ((1 - self.alpha) * cosine + self.alpha)

    def __call__(self, step):
        if self.warmup_target is None:
            return self._cosine(min(step, self.decay_steps), self.initial_learning_rate)
        step = min(step, self.decay_steps + self.warmup_steps)
        if step < self.warmup_steps:
            return (self.initial_learning_rate + (self.warmup_target - self.initial_learning_rate)
                    * step / self.warmup_steps)
        return self._cosine(step - self.warmup_steps, self.warmup_target)

    def get_config(self):
        return {"initial_learning_rate": self.initial_learning_rate,
                "decay_steps": self.decay_steps, "alpha": self.alpha, "name": self.name,
                "warmup_target": self.warmup_target, "warmup_steps": self.warmup_steps}


ALL = {cls.__name__: cls for cls in (ExponentialDecay, InverseTimeDecay, PiecewiseConstantDecay,
                                      PolynomialDecay, CosineDecay)}


def serialize(schedule):
    return {"module": "keras.optimizers.schedules", "class_name": type(schedule).__name__,
            "config": schedule.get_config(), "registered_name": None}


def deserialize(config, custom_objects=None):
    """A schedule from Keras's {"class_name", "config"} form (custom classes by name)."""
    name = config.get("class_name") if isinstance(config, dict) else None
    cls = (custom_objects or {}).get(name) or ALL.get(name)
    if cls is None:
        from kerasish.saving import serialization

        cls = serialization.get_registered_object(name) if isinstance(name, str) else None
    if cls is None:
        raise ValueError(f"Unknown learning-rate schedule: {name!r}. Valid schedules: "
                         f"{sorted(ALL)}, or register a custom LearningRateSchedule")
    return cls.from_config(dict(config.get("config") or {}))


__all__ = ["LearningRateSchedule", *ALL, "serialize", "deserialize"]
