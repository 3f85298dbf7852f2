"""Optimizer base: Keras arguments, learning rate, iteration count, slot variables, clipping.

Each update is one fused kernels_numba op per trainable variable (or one for the whole
parameter block) that also zeroes the gradient, so a training step needs no separate
zeroing launch. Per-step values (learning rate or schedule value, Adam's corrected rate,
weight_decay * lr, Nadam's momentum cache) are computed on the host into a small host
array and sent with ONE copy per step into a device buffer the update kernels read
(ops.StepScalars), so the launches' arguments are the same on every step. Gradient
clipping is fused into that op too: clipvalue elementwise; clipnorm / global_clipnorm
through per-variable sums of squares and scale factors computed on the device
(ops.sum_squares, ops.clip_norm_scales) that the update kernel reads, so a clipped step
has no host round trip.
"""

import re

import numpy as np

import kernels_numba
from kernels_numba import ops
from kerasish.optimizers import schedules
from kerasish.optimizers.gradient_apply import apply_gradient_values
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


class ScalarVariable(HostScalar):
    """The learning-rate variable `optimizer.learning_rate` returns, as Keras 3 does: it
    keeps its identity when the rate is set (`opt.learning_rate = 1e-4` assigns it),
    has `.assign()`/`.numpy()`, and reads as a number (float(), arithmetic, compare)."""

    def __float__(self):
        return float(self.value)

    def __array__(self, dtype=None, copy=None):
        return np.array(self.value, dtype=dtype or self.dtype)

    def __repr__(self):
        return f"<Variable path={self.path}, shape=(), dtype={np.dtype(self.dtype).name}, " \
               f"value={float(self.value)}>"

    def __eq__(self, other):
        o = _number_or_none(other)
        return NotImplemented if o is None else float(self) == o

    def __ne__(self, other):
        o = _number_or_none(other)
        return NotImplemented if o is None else float(self) != o

    __hash__ = object.__hash__

    def __neg__(self):
        return -float(self)


def _number_or_none(other):
    return float(other) if isinstance(other, (int, float, np.number, HostScalar)) else None


def _scalar_op(name):
    def op(self, other):
        o = _number_or_none(other)
        return NotImplemented if o is None else getattr(float(self), name)(o)
    op.__name__ = name
    return op


for _name in ("add", "sub", "mul", "truediv", "pow", "radd", "rsub", "rmul", "rtruediv",
              "rpow", "lt", "le", "gt", "ge"):
    setattr(ScalarVariable, f"__{_name}__", _scalar_op(f"__{_name}__"))
del _name


class Optimizer:
    """Base class. Subclasses define SLOTS (slot names), OP (the kernels_numba update op),
    `_fill_scalars(out, lr, step)` (its per-step values, ops.SCALARS[OP]) and
    `_update(var, slots)` (one launch reading `self._scalars`)."""

    SLOTS = ()
    OP = None

    def __init__(self, learning_rate=0.001, weight_decay=None, clipnorm=None, clipvalue=None,
                 global_clipnorm=None, use_ema=False, ema_momentum=0.99,
                 ema_overwrite_frequency=None, loss_scale_factor=None,
                 gradient_accumulation_steps=None, name=None, **kwargs):
        kwargs.pop("is_legacy_optimizer", None)
        if kwargs:
            raise ValueError(f"{type(self).__name__}: unrecognized arguments {sorted(kwargs)}")
        unsupported = {"loss_scale_factor": loss_scale_factor,
                       "gradient_accumulation_steps": gradient_accumulation_steps}
        bad = {k: v for k, v in unsupported.items() if v is not None}
        if bad:
            raise ValueError(f"{type(self).__name__}: unsupported arguments {bad}")
        if use_ema:
            raise ValueError(f"{type(self).__name__}: use_ema=True (an exponential moving "
                             f"average of the weights) is not supported; received "
                             f"use_ema={use_ema!r}, ema_momentum={ema_momentum!r}")
        clips = {"clipnorm": clipnorm, "clipvalue": clipvalue,
                 "global_clipnorm": global_clipnorm}
        if sum(v is not None for v in clips.values()) > 1:
            raise ValueError(f"{type(self).__name__}: only one of `clipnorm`, `clipvalue` and "
                             f"`global_clipnorm` can be set. Received: clipnorm={clipnorm}, "
                             f"clipvalue={clipvalue}, global_clipnorm={global_clipnorm}")
        for key, value in clips.items():
            setattr(self, key, _check_clip(self, key, value))
        self.name = name or _snake_case(type(self).__name__)  # Keras: rm_sprop, adam_w
        self._schedule = None  # a LearningRateSchedule replaces the learning-rate variable
        self._lr = ScalarVariable("learning_rate", f"{self.name}/learning_rate", 0.0,
                                  np.float32)
        self.learning_rate = learning_rate
        self._iterations = HostScalar("iteration", f"{self.name}/iteration", 0, np.int64)
        self.weight_decay = _check_weight_decay(self, weight_decay)
        self._slots = {}  # id(var) -> {slot_name: Variable}
        self._tracked = []
        self._built_once = False
        self._known = {}  # id(var) -> var: every variable build() was given
        self._trainable_variables = []  # in build order (apply(grads) without variables)
        self._grad = {}  # the clipping keywords of the update being run
        self._norms = None  # per-variable-set norm buffers (clipnorm/global_clipnorm)
        self._step_scalars = None  # ops.StepScalars: the per-step values on the device
        self._scalars = None  # its device buffer, during apply()

    @property
    def learning_rate(self):
        """The learning-rate variable (Keras 3: `.assign()`, `float()`, saved with the
        optimizer), or with a schedule its value at `iterations` (a float)."""
        if self._schedule is not None:
            return float(np.float32(self._schedule(self.iterations)))
        return self._lr

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

    @property
    def built(self):
        return self._built_once

    def build(self, variables):
        """Create zeroed slot buffers for each trainable variable (once). The variables
        may come from several models; apply()/apply_gradients() then accept any of them
        (Keras 3: the variables the optimizer was built with)."""
        self._built_once = True
        for var in variables:
            if id(var) not in self._known:
                self._known[id(var)] = var
                self._trainable_variables.append(var)
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
        return out + (self._extra_variables() if self._built_once else [])

    def _extra_variables(self):
        """Variables Keras creates in build() after the slots (Nadam's u_product)."""
        return []

    def _before_step(self, step):
        """Once per step, before the updates (Nadam advances its u_product here)."""

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
                view = block[start:start + count].reshape(slot_var.value.shape)
                kernels_numba.copy_buffer(view, slot_var.value)
                slot_var.value = view
        self._flat = (_Flat(params, grads), {k: _Flat(b) for k, b in blocks.items()},
                      frozenset(id(v) for v in variables))
        # One [start, end) segment per variable (sorted): per-variable gradient norms over
        # the block; the alignment gaps belong to none and read as 0 in the update.
        bounds = sorted((offsets[id(v)], offsets[id(v)] + int(np.prod(v.shape, dtype=np.int64)))
                        for v in variables)
        device = grads_device(grads)
        self._flat_norms = (kernels_numba.to_device(np.array(bounds, np.int64).reshape(-1, 2),
                                                    device),
                            kernels_numba.zeros((len(bounds),), np.float32, device),
                            kernels_numba.zeros((len(bounds),), np.float32, device))

    def apply_gradients(self, grads_and_vars):
        """Keras 3: one step from (gradient, variable) pairs; returns `iterations`."""
        pairs = list(grads_and_vars)
        if not pairs:
            raise ValueError(f"{type(self).__name__}.apply_gradients: expected (gradient, "
                             f"variable) pairs; received an empty list")
        grads, variables = zip(*pairs)
        self.apply(list(grads), list(variables))
        return self._iterations

    def apply(self, grads, trainable_variables=None):
        """Keras 3's `apply(grads, trainable_variables=None)`: each gradient (an array,
        a tape gradient, or None to skip its variable, with Keras's warning) is copied
        into its variable's `.grad` and the variables get one update through the same
        fused kernels as fit's. Without variables, the gradients match the variables
        the optimizer was built with, one to one. The optimizer is built on the first
        call; a variable it was not built with is refused, as in Keras 3.
        (`apply(variables)` on Variables alone is the engine's in-place form.)"""
        grads = list(grads)
        if trainable_variables is None and grads and \
                all(isinstance(g, Variable) for g in grads):
            return self.apply_in_place(grads)
        return apply_gradient_values(self, grads, trainable_variables)

    def apply_in_place(self, variables):
        """One update of every trainable variable from its `.grad`; zeroes the gradients.
        One launch over the blocks when they cover exactly these variables. The step's
        values go to the device in one copy first (`_upload_scalars`)."""
        flat = getattr(self, "_flat", None)
        trainable = [v for v in variables if v.trainable]
        norm = self.clipnorm or self.global_clipnorm  # Keras: 0 or None = no clipping
        use_flat = flat is not None and flat[2] == frozenset(id(v) for v in trainable)
        step = self._begin_step(flat[0].grad if use_flat else
                                trainable[0].grad if trainable else None)
        if use_flat:
            if norm:
                segments, sums, scales = self._flat_norms
                ops.sum_squares(sums, flat[0].grad, segments)
                # global: every segment gets the one factor (the gaps, in none, stay 0)
                ops.clip_norm_scales(scales, sums, clipnorm=norm,
                                     global_norm=not self.clipnorm)
                self._grad = {"grad_scale": scales, "segments": segments}
            else:
                self._grad = self._clipvalue_kw()
            self._update(flat[0], flat[1])
        else:
            scales = self._variable_scales(trainable, norm) if norm else None
            self._grad = self._clipvalue_kw()
            for k, var in enumerate(trainable):
                if scales is not None:
                    self._grad = {"grad_scale": scales[k:k + 1] if self.clipnorm else scales}
                self._update(var, self._slots[id(var)])
        self._grad = {}
        self._iterations.assign(step)

    def _begin_step(self, like):
        """The host half of a step: lr (or the schedule's value), the optimizer's own
        per-step state (_before_step), and this step's values sent to the device buffer
        on the device of `like` in one copy (none to send without variables)."""
        lr = float(self.learning_rate)
        step = self.iterations + 1
        self._before_step(step)
        if like is not None:
            self._upload_scalars(like, lr, step)
        return step

    def advance_step(self):
        """Everything apply() does on the host, without its launches: for a launch plan
        that replays the update launches recorded from an earlier apply() (their
        arguments never change; the new values travel in the scalars buffer). Call it
        just before replaying them; then the iteration count advances as apply()'s."""
        if self._step_scalars is None:
            raise RuntimeError(f"{type(self).__name__}.advance_step(): apply() has not run "
                               f"yet, so there are no update launches to replay")
        self._iterations.assign(self._begin_step(self._step_scalars.buffer))

    def _upload_scalars(self, like, lr, step):
        """This step's values into the host array, then one copy to the device buffer on
        the device of `like` (made once per device: the kernels always read the same)."""
        device = grads_device(like)
        buf = self._step_scalars
        if buf is None or buf.device != device:
            buf = self._step_scalars = ops.StepScalars(len(ops.SCALARS[self.OP]), device)
        self._fill_scalars(buf.host(), lr, step)
        buf.upload()
        self._scalars = buf.buffer

    def _fill_scalars(self, out, lr, step):
        """Default: (lr, weight_decay * lr), the layout of most updates."""
        out[0] = lr
        out[1] = self._decay() * lr

    def _clipvalue_kw(self):
        return {"clipvalue": self.clipvalue} if self.clipvalue else {}

    def _variable_scales(self, trainable, norm):
        """Scale factors for variables updated one by one (no parameter block): each
        variable's sum of squares into one slot, then clipnorm's per-variable factors
        or global_clipnorm's single one."""
        key = tuple(id(v) for v in trainable)
        if self._norms is None or self._norms[0] != key:
            device = grads_device(trainable[0].grad) if trainable else kernels_numba.CPU
            n = max(len(trainable), 1)
            self._norms = (key, kernels_numba.zeros((n,), np.float32, device),
                           kernels_numba.zeros((n,), np.float32, device),
                           kernels_numba.zeros((1,), np.float32, device))
        _, sums, scales, one = self._norms
        if not trainable:
            return None
        for k, var in enumerate(trainable):
            ops.sum_squares(sums[k:k + 1], var.grad)
        if self.clipnorm:
            ops.clip_norm_scales(scales, sums, clipnorm=norm)
            return scales
        ops.clip_norm_scales(one, sums, clipnorm=norm, global_norm=True)
        return one

    def _update(self, var, slots):
        raise NotImplementedError

    def _decay(self):
        """Keras 3's decoupled weight decay, applied by every update op before the step:
        w -= w * weight_decay * lr (None means 0)."""
        return self.weight_decay or 0.0

    def get_config(self):
        rate = float(self._lr.value) if self._schedule is None else \
            schedules.serialize(self._schedule)
        return {"name": self.name, "learning_rate": rate,
                "weight_decay": self.weight_decay, "clipnorm": self.clipnorm,
                "global_clipnorm": self.global_clipnorm, "clipvalue": self.clipvalue,
                "use_ema": False, "ema_momentum": 0.99,
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


def _snake_case(name):
    """Keras's naming.to_snake_case, its default optimizer name (without the _1, _2 it
    adds for later instances in one process)."""
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


def _check_clip(opt, key, value):
    """None or a finite number >= 0 (0, like None, clips nothing, as in Keras)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)) \
            or not 0 <= value < float("inf"):
        raise ValueError(f"{type(opt).__name__}: expected {key} to be None or a finite "
                         f"float >= 0; received {key}={value!r}")
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
