"""Adafactor with Keras 3's formula, defaults, slots and config: factored second moments
r (rows) and c (columns) for variables of rank >= 2, a full velocity below, one
kernels_numba launch per variable (ops.adafactor_update; see its docstring for the math).

Its update reads whole-variable sums (rms of w and of the scaled gradient), so the
variables are updated one by one, never as one parameter block. Gradient clipping
(clipnorm, clipvalue, global_clipnorm) is refused by name.
"""

import numpy as np

import kernels_numba
from kerasish.optimizers.optimizer import Optimizer
from kerasish.optimizers.rules_more import _number
from kerasish.variables import Variable
from kernels_numba import ops


class Adafactor(Optimizer):
    SLOTS = ("velocity",)
    OP = "adafactor_update"

    def __init__(self, learning_rate=0.001, beta_2_decay=-0.8, epsilon_1=1e-30,
                 epsilon_2=1e-3, clip_threshold=1.0, relative_step=True, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        clips = {k: getattr(self, k) for k in ("clipnorm", "clipvalue", "global_clipnorm")}
        if any(v is not None for v in clips.values()):
            raise ValueError(f"Adafactor: gradient clipping is not supported in kerasish; "
                             f"received {clips}")
        self.beta_2_decay = _number("Adafactor", "beta_2_decay", beta_2_decay)
        self.epsilon_1 = _number("Adafactor", "epsilon_1", epsilon_1)
        self.epsilon_2 = _number("Adafactor", "epsilon_2", epsilon_2)
        self.clip_threshold = _number("Adafactor", "clip_threshold", clip_threshold)
        if not self.clip_threshold > 0:
            raise ValueError(f"Adafactor: expected clip_threshold > 0; received "
                             f"clip_threshold={clip_threshold!r}")
        self.relative_step = bool(relative_step)  # Keras's formula takes the min either way
        self._workspaces = {}

    def build(self, variables):
        """r and c (Keras names them after the variable) for rank >= 2, then velocity."""
        self._built_once = True
        for var in variables:
            if not var.trainable or id(var) in self._slots:
                continue
            var.ensure_grad()
            shape = tuple(var.shape)
            stem = var.path.replace("/", "_")
            # below rank 2 Keras still makes r and c: scalar placeholders the update ignores
            shapes = {"r": shape[:-1], "c": (*shape[:-2], shape[-1])} if len(shape) >= 2 \
                else {"r": (), "c": ()}
            shapes["velocity"] = shape
            slots = {}
            for slot, slot_shape in shapes.items():
                name = var.name if slot in ("r", "c") else f"{stem}_velocity"
                slots[slot] = Variable(np.zeros(slot_shape, np.float32), name, trainable=False,
                                       device=var.device, path=f"{self.name}/{name}")
            self._slots[id(var)] = slots
            self._workspaces[id(var)] = kernels_numba.zeros(
                ops.adafactor_workspace_shape(shape), np.float32, var.device)
            self._tracked.append(var)

    def use_blocks(self, variables, params, grads, offsets):
        pass  # whole-variable sums: updated one variable at a time (module docstring)

    def _fill_scalars(self, out, lr, step):
        ops.adafactor_scalars(out, lr=lr, step=step, beta_2_decay=self.beta_2_decay,
                              weight_decay=self._decay())

    def _update(self, var, slots):
        r, c = (slots["r"], slots["c"]) if len(var.shape) >= 2 else (None, None)
        ops.adafactor_update(var.value.reshape(var.shape or (1,)), var.grad.reshape(
            var.shape or (1,)), None if r is None else r.value.reshape(r.shape),
            None if c is None else c.value.reshape(c.shape),
            slots["velocity"].value.reshape(var.shape or (1,)), self._workspaces[id(var)],
            epsilon_1=self.epsilon_1, epsilon_2=self.epsilon_2,
            clip_threshold=self.clip_threshold, scalars=self._scalars, zero_grad=True)

    def get_config(self):
        return {**super().get_config(), "beta_2_decay": self.beta_2_decay,
                "epsilon_1": self.epsilon_1, "epsilon_2": self.epsilon_2,
                "clip_threshold": self.clip_threshold, "relative_step": self.relative_step}
