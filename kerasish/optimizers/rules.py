"""SGD, Adam, AdamW, RMSprop and Adagrad with Keras's exact formulas and defaults.

Every one takes weight_decay (Keras 3's decoupled form, w -= w * weight_decay * lr
before the update, as its base optimizer applies it), fused into the update op.
"""

from kerasish.optimizers.optimizer import Optimizer
from kernels_numba import ops


class SGD(Optimizer):
    """w -= lr*g, or with momentum m = momentum*m - lr*g; w += m (nesterov variant)."""

    def __init__(self, learning_rate=0.01, momentum=0.0, nesterov=False, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        if not 0.0 <= float(momentum) <= 1.0:
            raise ValueError(f"SGD: expected momentum in [0, 1]; received momentum={momentum!r}")
        self.momentum, self.nesterov = float(momentum), bool(nesterov)
        self.SLOTS = ("momentum",) if self.momentum > 0 else ()

    OP = "sgd_update"

    def _update(self, var, slots):
        ops.sgd_update(var.value, var.grad, slots["momentum"].value if slots else None,
                       momentum=self.momentum, nesterov=self.nesterov, zero_grad=True,
                       scalars=self._scalars, **self._grad)

    def get_config(self):
        return {**super().get_config(), "momentum": self.momentum, "nesterov": self.nesterov}


class Adam(Optimizer):
    """Adam in Keras's epsilon-hat form (epsilon not bias-corrected)."""

    SLOTS = ("momentum", "velocity")
    OP = "adam_update"

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                 amsgrad=False, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        if amsgrad:
            raise ValueError("Adam: amsgrad=True is not supported")
        self.beta_1, self.beta_2, self.epsilon = float(beta_1), float(beta_2), float(epsilon)

    def _fill_scalars(self, out, lr, step):
        ops.adam_scalars(out, lr=lr, step=step, beta_1=self.beta_1, beta_2=self.beta_2,
                         weight_decay=self._decay())

    def _update(self, var, slots):
        ops.adam_update(var.value, var.grad, slots["momentum"].value, slots["velocity"].value,
                        beta_1=self.beta_1, beta_2=self.beta_2, epsilon=self.epsilon,
                        zero_grad=True, scalars=self._scalars, **self._grad)

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2,
                "epsilon": self.epsilon, "amsgrad": False}


class AdamW(Adam):
    """Adam with decoupled weight decay w -= w*wd*lr before each step (default wd 0.004)."""

    def __init__(self, learning_rate=0.001, weight_decay=0.004, **kwargs):
        if weight_decay is None:
            raise ValueError("AdamW: weight_decay must be a float; received None")
        super().__init__(learning_rate=learning_rate, weight_decay=float(weight_decay), **kwargs)


class RMSprop(Optimizer):
    """v = rho*v + (1-rho)*g^2; w -= lr*g/sqrt(v + eps) (eps inside the sqrt, as Keras)."""

    def __init__(self, learning_rate=0.001, rho=0.9, momentum=0.0, epsilon=1e-7,
                 centered=False, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.rho, self.momentum, self.epsilon = float(rho), float(momentum), float(epsilon)
        self.centered = bool(centered)
        self.SLOTS = ("velocity",) + (("momentum",) if self.momentum > 0 else ()) + \
            (("average_gradient",) if self.centered else ())

    OP = "rmsprop_update"

    def _update(self, var, slots):
        get = slots.get
        ops.rmsprop_update(var.value, var.grad, slots["velocity"].value,
                           get("momentum").value if get("momentum") else None,
                           get("average_gradient").value if get("average_gradient") else None,
                           rho=self.rho, momentum=self.momentum, epsilon=self.epsilon,
                           centered=self.centered, zero_grad=True, scalars=self._scalars,
                           **self._grad)

    def get_config(self):
        return {**super().get_config(), "rho": self.rho, "momentum": self.momentum,
                "epsilon": self.epsilon, "centered": self.centered}


class Adagrad(Optimizer):
    """acc += g^2; w -= lr*g/sqrt(acc + eps); acc starts at initial_accumulator_value."""

    SLOTS = ("accumulator",)
    OP = "adagrad_update"

    def __init__(self, learning_rate=0.001, initial_accumulator_value=0.1, epsilon=1e-7,
                 **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.initial_accumulator_value = float(initial_accumulator_value)
        self.epsilon = float(epsilon)

    def _slot_initial_value(self, slot):
        return self.initial_accumulator_value

    def _update(self, var, slots):
        ops.adagrad_update(var.value, var.grad, slots["accumulator"].value,
                           epsilon=self.epsilon, zero_grad=True, scalars=self._scalars,
                           **self._grad)

    def get_config(self):
        return {**super().get_config(),
                "initial_accumulator_value": self.initial_accumulator_value,
                "epsilon": self.epsilon}
