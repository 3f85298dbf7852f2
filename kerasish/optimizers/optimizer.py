"""Optimizer base: Keras arguments, learning rate, iteration count and slot variables.

Each update is one fused kernels_numba op per trainable variable that also zeroes
the gradient, so a training step needs no separate zeroing launch.
"""

import numpy as np

import kernels_numba
from kerasish.optimizers import schedules
from kerasish.variables import Variable


class HostScalar:
    """A Variable-like scalar kept on the host (iteration count, learning rate)."""

    def __init__(self, name, path, value, dtype):
        self.name, self.path, self.dtype = name, path, dtype
        self.value = np.asarray(value, dtype=dtype)
        self.trainable = False

    @property
    def shape(self):
        return ()

    def numpy(self):
        return np.array(self.value, dtype=self.dtype)

    def assign(self, value):
        value = np.asarray(value, dtype=self.dtype)
        if value.shape != ():
            raise ValueError(f"Variable {self.path}: expected a scalar; received shape "
                             f"{value.shape}")
        self.value = value


class Optimizer:
    """Base class. Subclasses define SLOTS (slot names) and `_update(var, slots, lr)`."""

    SLOTS = ()

    def __init__(self, learning_rate=0.001, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, use_ema=False, ema_momentum=0.99,
                 ema_overwrite_frequency=None, loss_scale_factor=None,
                 gradient_accumulation_steps=None, name=None, **kwargs):
        kwargs.pop("is_legacy_optimizer", None)
        if kwargs:
            raise ValueError(f"{type(self).__name__}: unrecognized arguments {sorted(kwargs)}")
        unsupported = {"clipnorm": clipnorm, "clipvalue": clipvalue,
                       "global_clipnorm": global_clipnorm, "loss_scale_factor": loss_scale_factor,
                       "gradient_accumulation_steps": gradient_accumulation_steps}
        bad = {k: v for k, v in unsupported.items() if v is not None}
        if bad or use_ema:
            raise ValueError(f"{type(self).__name__}: unsupported arguments "
                             f"{bad or {'use_ema': use_ema}}")
        self.name = name or type(self).__name__.lower()
        self._schedule = None  # a LearningRateSchedule replaces the learning-rate variable
        self._lr = HostScalar("learning_rate", f"{self.name}/learning_rate", 0.0, np.float32)
        self.learning_rate = learning_rate
        self._iterations = HostScalar("iteration", f"{self.name}/iteration", 0, np.int64)
        self.weight_decay = _check_weight_decay(self, weight_decay)
        self._slots = {}  # id(var) -> {slot_name: Variable}
        self._tracked = []

    @property
    def learning_rate(self):
        """The rate of the next step (a schedule is evaluated at `iterations`)."""
        if self._schedule is not None:
            return float(np.float32(self._schedule(self.iterations)))
        return float(self._lr.value)

    @learning_rate.setter
    def learning_rate(self, value):
        if isinstance(value, schedules.LearningRateSchedule):
            self._schedule = value
            return
        if self._schedule is not None:
            raise TypeError(f"{type(self).__name__} was created with a LearningRateSchedule "
                            f"as its learning_rate, hence its learning rate is not settable; "
                            f"received {value!r}. Build the optimizer with a float "
                            f"learning_rate to set it.")
        self._lr.assign(_check_lr(self, value))

    lr = learning_rate

    @property
    def iterations(self):
        return int(self._iterations.value)

    @iterations.setter
    def iterations(self, value):
        self._iterations.assign(int(value))

    def build(self, variables):
        """Create zeroed slot buffers for each trainable variable (once)."""
        for var in variables:
            if not var.trainable or id(var) in self._slots:
                continue
            var.ensure_grad()
            slots = {}
            stem = var.path.replace("/", "_")
            for slot in self.SLOTS:
                init = np.full(var.shape, self._slot_initial_value(slot), np.float32)
                slots[slot] = Variable(init, f"{stem}_{slot}", trainable=False,
                                       device=var.device, path=f"{self.name}/{stem}_{slot}")
            self._slots[id(var)] = slots
            self._tracked.append(var)

    def _slot_initial_value(self, slot):
        return 0.0

    @property
    def variables(self):
        """Keras order: iteration, learning_rate (none with a schedule), then each
        variable's slots."""
        out = [self._iterations] + ([self._lr] if self._schedule is None else [])
        for var in self._tracked:
            out.extend(self._slots[id(var)].values())
        return out

    def use_blocks(self, variables, params, grads, offsets):
        """Slots as views into one block per slot, laid out like the parameter block
        (engine/parameters.py), so one update launch covers every variable: `params`
        and `grads` are the flat trainable prefix and the gradient block, `offsets`
        {id(var): start}. Slot values built so far are kept."""
        size = grads.shape[0]
        blocks = {}
        for slot in self.SLOTS:
            host = np.full((size,), self._slot_initial_value(slot), np.float32)
            block = blocks[slot] = kernels_numba.to_device(host, grads_device(grads))
            for var in variables:
                start, count = offsets[id(var)], int(np.prod(var.shape, dtype=np.int64))
                slot_var = self._slots[id(var)][slot]
                view = block[start:start + count].reshape(var.shape)
                kernels_numba.ops.copy(view, slot_var.value)
                slot_var.value = view
        self._flat = (_Flat(params, grads), {k: _Flat(b) for k, b in blocks.items()},
                      frozenset(id(v) for v in variables))

    def apply(self, variables):
        """One update of every trainable variable from its `.grad`; zeroes the gradients.
        One launch over the blocks when they cover exactly these variables."""
        lr = self.learning_rate
        step = self.iterations + 1
        flat = getattr(self, "_flat", None)
        if flat is not None and flat[2] == frozenset(id(v) for v in variables if v.trainable):
            self._update(flat[0], flat[1], lr, step)
        else:
            for var in variables:
                if var.trainable:
                    self._update(var, self._slots[id(var)], lr, step)
        self._iterations.assign(step)

    def _update(self, var, slots, lr, step):
        raise NotImplementedError

    def _decay(self):
        """Keras 3's decoupled weight decay, applied by every update op before the step:
        w -= w * weight_decay * lr (None means 0)."""
        return self.weight_decay or 0.0

    def get_config(self):
        rate = self.learning_rate if self._schedule is None else \
            schedules.serialize(self._schedule)
        return {"name": self.name, "learning_rate": rate,
                "weight_decay": self.weight_decay, "clipnorm": None, "global_clipnorm": None,
                "clipvalue": None, "use_ema": False, "ema_momentum": 0.99,
                "ema_overwrite_frequency": None, "loss_scale_factor": None,
                "gradient_accumulation_steps": None}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("learning_rate"), dict):
            config["learning_rate"] = schedules.deserialize(config["learning_rate"])
        return cls(**config)


def _check_weight_decay(opt, value):
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)) \
            or not 0 <= value < float("inf"):
        raise ValueError(f"{type(opt).__name__}: expected weight_decay to be None or a finite "
                         f"float >= 0; received weight_decay={value!r}")
    return float(value)


def _check_lr(opt, value):
    try:
        value = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{type(opt).__name__}: expected a float learning_rate or a "
                        f"LearningRateSchedule; received {value!r}") from None
    if not value >= 0:
        raise ValueError(f"{type(opt).__name__}: expected learning_rate >= 0; received {value}")
    return value


class _Flat:
    """A whole block in the place of a Variable (`.value`, `.grad`) for one update."""

    def __init__(self, value, grad=None):
        self.value, self.grad = value, grad


def grads_device(buf):
    return kernels_numba.device_of(buf)
