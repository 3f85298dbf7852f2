"""`activation=<any callable>`: a built-in layer whose activation is a user function.

The layer's kernels run with no activation (its fused "linear" path) and the function
runs after them through kerasish.ops on the symbolic output, so the layer becomes a
traced call (graph/tracing.py): `fn(linear_part(x))`, with backward by the ops'
gradient rules. `LinearPart` is the layer itself seen without its activation: it
owns nothing, it forwards to the layer with `activation` set to "linear" for the
duration of each call, so weights, scratch and shapes stay the layer's own.
"""

from kerasish.activations import CustomActivation
from kerasish.layers.layer import Layer


def has_custom_activation(layer):
    return isinstance(layer.__dict__.get("activation"), CustomActivation)


def call(layer, inputs):
    """What the traced call() of `layer` computes."""
    fn = layer.activation.fn
    if type(layer).__name__ == "Activation":  # the layer is its activation
        return fn(inputs)
    part = layer.__dict__.get("_linear_part")
    if part is None:
        part = layer.__dict__["_linear_part"] = LinearPart(layer)
    return fn(part(inputs))


class _Linear:
    """`with _Linear(layer):` the layer runs its kernels with no activation."""

    def __init__(self, layer):
        self.layer = layer

    def __enter__(self):
        self.saved = self.layer.__dict__["activation"]
        self.layer.__dict__["activation"] = "linear"

    def __exit__(self, *exc):
        self.layer.__dict__["activation"] = self.saved
        return False


class LinearPart(Layer):
    """The owner layer without its activation (see the module docstring)."""

    def __init__(self, owner):
        self.__dict__["owner"] = owner
        super().__init__(name=f"{owner.name}_linear_part")

    # shapes, scratch and trainability are the owner's: the plan binds them per call
    input_shape = property(lambda self: self.owner.input_shape,
                           lambda self, v: setattr(self.owner, "input_shape", v))
    output_shape = property(lambda self: self.owner.output_shape,
                            lambda self, v: setattr(self.owner, "output_shape", v))
    scratch = property(lambda self: self.owner.scratch,
                       lambda self, v: setattr(self.owner, "scratch", v))
    trainable = property(lambda self: self.owner.trainable, lambda self, v: None)

    @property
    def trainable_weights(self):
        return self.owner.trainable_weights

    @property
    def non_trainable_weights(self):
        return self.owner.non_trainable_weights

    def _tracked_layers(self):
        return []

    def build(self, input_shape):
        pass  # the owner is built before its call() is traced

    def compute_output_shape(self, input_shape):
        with _Linear(self.owner):
            return self.owner.compute_output_shape(input_shape)

    def scratch_shapes(self, batch_size):
        with _Linear(self.owner):
            return self.owner.scratch_shapes(batch_size)

    def forward(self, y, x, training):
        with _Linear(self.owner):
            self.owner.forward(y, x, training)

    def backward(self, dx, dy, x, y):
        with _Linear(self.owner):
            self.owner.backward(dx, dy, x, y)
