"""Nadam, Adamax, Adadelta, Lion and Ftrl with Keras 3's formulas, defaults, slot names
and configs (one fused kernels_numba op each, with weight decay and clipping fused in)."""

import numpy as np

from kerasish.optimizers.optimizer import HostScalar, Optimizer
from kernels_numba import ops


def _number(cls, name, value):
    if isinstance(value, bool) or not isinstance(value, (int, float, np.floating, np.integer)):
        raise ValueError(f"{cls}: expected {name} to be a float; received {name}={value!r}")
    return float(value)


class Nadam(Optimizer):
    """Adam with Nesterov momentum (Keras: u_t = beta_1*(1 - 0.5*0.96**t), bias-corrected by
    the running product of the u_t, kept as the float32 variable Keras saves last)."""

    SLOTS = ("momentum", "velocity")
    OP = "nadam_update"

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta_1, self.beta_2 = _number("Nadam", "beta_1", beta_1), \
            _number("Nadam", "beta_2", beta_2)
        self.epsilon = _number("Nadam", "epsilon", epsilon)
        # Keras's unnamed `backend.Variable(1.0)` (path "variable"), after the slots.
        self._u_product = HostScalar("variable", "variable", 1.0, np.float32)

    def _extra_variables(self):
        return [self._u_product]

    def _before_step(self, step):
        # float32 as Keras: u_product *= beta_1 * (1 - 0.5 * 0.96**t)
        f = np.float32
        u_t = f(self.beta_1) * (f(1.0) - f(0.5) * f(0.96) ** f(step))
        self._u_product.assign(f(self._u_product.value) * u_t)

    def _fill_scalars(self, out, lr, step):
        ops.nadam_scalars(out, lr=lr, step=step, u_product=float(self._u_product.value),
                          beta_1=self.beta_1, beta_2=self.beta_2, weight_decay=self._decay())

    def _update(self, var, slots):
        ops.nadam_update(var.value, var.grad, slots["momentum"].value, slots["velocity"].value,
                         beta_1=self.beta_1, beta_2=self.beta_2, epsilon=self.epsilon,
                         zero_grad=True, scalars=self._scalars, **self._grad)

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2,
                "epsilon": self.epsilon}


class Adamax(Optimizer):
    """Adam over the infinity norm: u = max(beta_2*u, |g|); w -= lr*m/((u+eps)(1-beta_1**t))."""

    SLOTS = ("momentum", "norm")
    OP = "adamax_update"

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.999, epsilon=1e-7, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta_1, self.beta_2 = _number("Adamax", "beta_1", beta_1), \
            _number("Adamax", "beta_2", beta_2)
        self.epsilon = _number("Adamax", "epsilon", epsilon)

    def _fill_scalars(self, out, lr, step):
        ops.adamax_scalars(out, lr=lr, step=step, beta_1=self.beta_1,
                           weight_decay=self._decay())

    def _update(self, var, slots):
        ops.adamax_update(var.value, var.grad, slots["momentum"].value, slots["norm"].value,
                          beta_1=self.beta_1, beta_2=self.beta_2, epsilon=self.epsilon,
                          zero_grad=True, scalars=self._scalars, **self._grad)

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2,
                "epsilon": self.epsilon}


class Adadelta(Optimizer):
    """Adadelta (Keras): running averages of g^2 and of the squared updates; w += lr*delta."""

    SLOTS = ("accumulated_grad", "accumulated_delta_var")
    OP = "adadelta_update"

    def __init__(self, learning_rate=0.001, rho=0.95, epsilon=1e-7, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.rho = _number("Adadelta", "rho", rho)
        self.epsilon = _number("Adadelta", "epsilon", epsilon)

    def _update(self, var, slots):
        ops.adadelta_update(var.value, var.grad, slots["accumulated_grad"].value,
                            slots["accumulated_delta_var"].value, rho=self.rho,
                            epsilon=self.epsilon, zero_grad=True, scalars=self._scalars,
                            **self._grad)

    def get_config(self):
        return {**super().get_config(), "rho": self.rho, "epsilon": self.epsilon}


class Lion(Optimizer):
    """Lion (Keras): w -= lr*sign(beta_1*m + (1-beta_1)*g); m = beta_2*m + (1-beta_2)*g."""

    SLOTS = ("momentum",)
    OP = "lion_update"

    def __init__(self, learning_rate=0.001, beta_1=0.9, beta_2=0.99, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        self.beta_1 = _number("Lion", "beta_1", beta_1)
        self.beta_2 = _number("Lion", "beta_2", beta_2)
        if not 0 < self.beta_1 <= 1:
            raise ValueError("Lion: argument `beta_1` must be in the [0, 1] range. Otherwise, "
                             "the optimizer degenerates to SignSGD. Received: "
                             f"beta_1={beta_1}.")

    def _update(self, var, slots):
        ops.lion_update(var.value, var.grad, slots["momentum"].value, beta_1=self.beta_1,
                        beta_2=self.beta_2, zero_grad=True, scalars=self._scalars,
                        **self._grad)

    def get_config(self):
        return {**super().get_config(), "beta_1": self.beta_1, "beta_2": self.beta_2}


_FTRL_NONNEGATIVE = ("initial_accumulator_value", "l1_regularization_strength",
                     "l2_regularization_strength", "l2_shrinkage_regularization_strength")


class Ftrl(Optimizer):
    """FTRL-proximal (Keras): accumulator (starts at initial_accumulator_value) and linear
    slots, L1/L2/L2-shrinkage regularization, learning_rate_power <= 0, beta."""

    SLOTS = ("accumulator", "linear")
    OP = "ftrl_update"

    def __init__(self, learning_rate=0.001, learning_rate_power=-0.5,
                 initial_accumulator_value=0.1, l1_regularization_strength=0.0,
                 l2_regularization_strength=0.0, l2_shrinkage_regularization_strength=0.0,
                 beta=0.0, **kwargs):
        super().__init__(learning_rate=learning_rate, **kwargs)
        values = {"initial_accumulator_value": initial_accumulator_value,
                  "l1_regularization_strength": l1_regularization_strength,
                  "l2_regularization_strength": l2_regularization_strength,
                  "l2_shrinkage_regularization_strength": l2_shrinkage_regularization_strength}
        for name in _FTRL_NONNEGATIVE:  # Keras's checks and wording
            value = _number("Ftrl", name, values[name])
            if not value >= 0.0:
                raise ValueError(f"Ftrl: `{name}` needs to be positive or zero. Received: "
                                 f"{name}={values[name]}.")
            setattr(self, name, value)
        self.learning_rate_power = _number("Ftrl", "learning_rate_power", learning_rate_power)
        if not self.learning_rate_power <= 0.0:
            raise ValueError("Ftrl: `learning_rate_power` needs to be negative or zero. "
                             f"Received: learning_rate_power={learning_rate_power}.")
        self.beta = _number("Ftrl", "beta", beta)

    def _slot_initial_value(self, slot):
        return self.initial_accumulator_value if slot == "accumulator" else 0.0

    def _fill_scalars(self, out, lr, step):
        ops.ftrl_scalars(out, lr=lr, beta=self.beta,
                         l2_regularization_strength=self.l2_regularization_strength,
                         weight_decay=self._decay())

    def _update(self, var, slots):
        ops.ftrl_update(var.value, var.grad, slots["accumulator"].value, slots["linear"].value,
                        learning_rate_power=self.learning_rate_power,
                        l1_regularization_strength=self.l1_regularization_strength,
                        l2_regularization_strength=self.l2_regularization_strength,
                        l2_shrinkage_regularization_strength=(
                            self.l2_shrinkage_regularization_strength),
                        beta=self.beta, zero_grad=True, scalars=self._scalars, **self._grad)

    def get_config(self):
        return {**super().get_config(), "learning_rate_power": self.learning_rate_power,
                **{name: getattr(self, name) for name in _FTRL_NONNEGATIVE},
                "beta": self.beta}
