"""BatchNormalization over the last (channels) axis, Keras defaults."""

import numpy as np

from kerasish.layers.channels_first import ChannelsAxis
from kerasish.layers.core import _init_config, check_number
from kerasish.layers.layer import Layer
from kernels_numba import ops


class BatchNormalization(ChannelsAxis, Layer):
    """Normalizes with batch statistics in training and moving statistics in inference.

    moving = moving * momentum + batch_stat * (1 - momentum), biased batch variance.
    Weights (Keras order): gamma, beta, moving_mean, moving_variance.
    A frozen layer (trainable=False) runs in inference mode in training too, as Keras 3:
    moving statistics, and none of the four weights changes (the transfer-learning idiom).
    """
    config_none_keys = ("beta_regularizer", "beta_constraint", "gamma_regularizer",
                        "gamma_constraint")

    def __init__(self, axis=-1, momentum=0.99, epsilon=1e-3, center=True, scale=True,
                 beta_initializer="zeros", gamma_initializer="ones",
                 moving_mean_initializer="zeros", moving_variance_initializer="ones",
                 synchronized=False, renorm=False, renorm_clipping=None, renorm_momentum=0.99,
                 **kwargs):
        super().__init__(**kwargs)
        if renorm or synchronized:
            raise ValueError(f"BatchNormalization: renorm and synchronized are not supported; "
                             f"expected False; received renorm={renorm!r}, "
                             f"synchronized={synchronized!r}")
        one = axis[0] if isinstance(axis, (list, tuple)) and len(axis) == 1 else axis
        if isinstance(one, bool) or not isinstance(one, (int, np.integer)):
            raise ValueError(f"BatchNormalization: expected `axis` to be an int (the channels "
                             f"axis, -1); received axis={axis!r}")
        self.axis = int(one)
        self.momentum = check_number("BatchNormalization", "momentum", momentum,
                                     "in [0, 1]", lambda v: 0 <= v <= 1)
        self.epsilon = check_number("BatchNormalization", "epsilon", epsilon, "> 0",
                                    lambda v: v > 0)
        self.center, self.scale = bool(center), bool(scale)
        self.initializers = {"beta": beta_initializer, "gamma": gamma_initializer,
                             "moving_mean": moving_mean_initializer,
                             "moving_variance": moving_variance_initializer}

    def build(self, input_shape):
        if self.axis not in (-1, len(input_shape) - 1):
            raise ValueError(f"BatchNormalization {self.name}: only the last axis is supported; "
                             f"received axis={self.axis} for input shape {input_shape}")
        c = (input_shape[-1],)
        init = self.initializers
        self.gamma = self.add_weight("gamma", c, init["gamma"]) if self.scale else None
        self.beta = self.add_weight("beta", c, init["beta"]) if self.center else None
        self.moving_mean = self.add_weight("moving_mean", c, init["moving_mean"], trainable=False)
        self.moving_variance = self.add_weight("moving_variance", c, init["moving_variance"],
                                               trainable=False)

    # batchnorm_backward computes dx and the parameter gradients together.
    needs_input_gradient = True

    def scratch_shapes(self, batch_size):
        c = (self.input_shape[-1],)
        # *_sink: gradients nobody reads (frozen layer, scale/center off).
        return {"mean": (c, np.float32), "rstd": (c, np.float32), "ones": (c, np.float32),
                "zeros": (c, np.float32), "dgamma_sink": (c, np.float32),
                "dbeta_sink": (c, np.float32)}

    def _params(self):
        if not self.scale:
            ops.fill(self.scratch["ones"], 1.0)
        if not self.center:
            ops.fill(self.scratch["zeros"], 0.0)
        gamma = self.gamma.value if self.scale else self.scratch["ones"]
        beta = self.beta.value if self.center else self.scratch["zeros"]
        return gamma, beta

    def forward(self, y, x, training):
        c = x.shape[x.ndim - 1]
        x2, y2 = x.reshape((x.size // c, c)), y.reshape((y.size // c, c))
        gamma, beta = self._params()
        if training and self.trainable:
            ops.batchnorm_forward_train(
                y2, self.scratch["mean"], self.scratch["rstd"], self.moving_mean.value,
                self.moving_variance.value, x2, gamma, beta,
                momentum=self.momentum, epsilon=self.epsilon)
        else:
            ops.batchnorm_forward_infer(y2, x2, gamma, beta, self.moving_mean.value,
                                        self.moving_variance.value, epsilon=self.epsilon)

    def backward(self, dx, dy, x, y):
        c = x.shape[x.ndim - 1]
        gamma = self.gamma.value if self.scale else self.scratch["ones"]
        rows = x.size // c
        if not self.trainable:  # the forward was inference mode: an affine map per channel
            if dx is not None:
                ops.batchnorm_backward_infer(dx.reshape((rows, c)), dy.reshape((rows, c)), gamma,
                                             self.moving_variance.value, epsilon=self.epsilon)
            return
        dgamma = self.gamma.grad if self.scale else self.scratch["dgamma_sink"]
        dbeta = self.beta.grad if self.center else self.scratch["dbeta_sink"]
        ops.batchnorm_backward(dx.reshape((rows, c)), dgamma, dbeta, dy.reshape((rows, c)),
                               x.reshape((rows, c)), gamma, self.scratch["mean"],
                               self.scratch["rstd"])

    def get_config(self):
        config = super().get_config()
        config.update({
            "axis": -1, "momentum": self.momentum, "epsilon": self.epsilon,
            "center": self.center, "scale": self.scale,
            **{f"{k}_initializer": _init_config(v) for k, v in self.initializers.items()},
            "synchronized": False, "renorm": False, "renorm_clipping": None,
            "renorm_momentum": 0.99,
        })
        return config
