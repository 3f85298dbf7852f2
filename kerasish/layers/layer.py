"""Layer: the base class every kerasish layer (and every custom layer) subclasses.

Contract for subclasses (see docs/custom_layers.md):
- `build(input_shape)`: create weights with `add_weight`; input_shape has a None batch.
- `compute_output_shape(input_shape)`: output shape, None batch.
- `forward(y, x, training)`: write the output for input buffer x into the preallocated y.
- `backward(dx, dy, x, y)`: write dL/dx into dx (dx is None for the first layer) and
  ACCUMULATE dL/dw into each trainable weight's `.grad`. dy may be overwritten.
- `scratch_shapes(batch_size)`: {name: (shape, dtype)} for buffers kept between forward
  and backward (masks, argmax, statistics); the executor allocates them once into
  `self.scratch`, sized for the largest batch: slice `[:n]` for smaller batches.
- `get_config()`: constructor arguments, so the layer can be re-created from config.
Buffers are NumPy arrays on the CPU and device arrays on CUDA; call kernels_numba.ops.
"""

import re
from collections import Counter

import numpy as np

from kerasish import config as kconfig
from kerasish import constraints, initializers, regularizers
from kerasish.layers.weight_checks import (
    _check_weight_kwargs,
    _checked_rule,
    _checked_weight_shape,
)
from kerasish.variables import Variable

_name_counts = Counter()

# Keras config keys accepted and ignored when they hold their default (so configs
# written by Keras load): LoRA and quantization.
_IGNORED_WHEN_NONE = ("lora_rank", "lora_alpha", "quantization_config")

# Keras's `<prefix>_regularizer` / `<prefix>_constraint` arguments, by the weight they
# govern (the add_weight name); `activity_regularizer` governs the layer's output.
_RULE_WEIGHTS = {"kernel": "kernel", "bias": "bias", "gamma": "gamma", "beta": "beta",
                 "embeddings": "embeddings", "depthwise": "depthwise_kernel",
                 "pointwise": "pointwise_kernel", "recurrent": "recurrent_kernel"}
RULE_KEYS = tuple(f"{p}_{kind}" for p in _RULE_WEIGHTS for kind in ("regularizer", "constraint"))


def unique_name(base):
    """Keras-style auto names: dense, dense_1, dense_2, ..."""
    n = _name_counts[base]
    _name_counts[base] += 1
    return base if n == 0 else f"{base}_{n}"


def reset_names():
    _name_counts.clear()


def snake_case(name):
    s = re.sub(r"(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub(r"([a-z])([A-Z])", r"\1_\2", s).lower().replace("2_d", "2d")


class Layer:
    """Base layer. Subclasses set weights in build and implement forward/backward.

    Regularizers and constraints: every Keras `<prefix>_regularizer`/`_constraint`
    argument (kernel, bias, gamma, beta, embeddings, depthwise, pointwise, recurrent) is
    kept as an attribute of that name and attached by `add_weight` to the weight it
    governs (`var.regularizer`, `var.constraint`); `activity_regularizer` is kept for the
    engine, which adds the penalties to the loss and applies constraints after updates.
    A layer whose weight names differ from Keras's argument prefixes maps them in
    `RULE_WEIGHTS` (DepthwiseConv2D: depthwise -> "kernel").
    """

    RULE_WEIGHTS = _RULE_WEIGHTS
    activity_regularizer = None
    # Keys Keras's get_config writes for this class even when unset (None): its
    # regularizer/constraint arguments (kerasish otherwise writes only the set ones)
    config_none_keys = ()
    trainable_changes = 0  # counts every layer's trainable flips (the launch plan's token)

    def __init__(self, trainable=True, name=None, dtype=None, input_shape=None,
                 input_dim=None, batch_input_shape=None, activity_regularizer=None, **kwargs):
        for key in _IGNORED_WHEN_NONE:
            if kwargs.get(key, None) is None:
                kwargs.pop(key, None)
        rules = {key: kwargs.pop(key) for key in RULE_KEYS if key in kwargs}
        if kwargs:
            raise ValueError(
                f"Unrecognized keyword arguments passed to {type(self).__name__}: {kwargs}"
            )
        if dtype not in (None, "float32") and not isinstance(dtype, dict):
            raise ValueError(f"{type(self).__name__}: only dtype float32 is supported; "
                             f"received dtype={dtype!r}")
        self.name = name or unique_name(snake_case(type(self).__name__))
        self._set_rules(rules, activity_regularizer)
        self.trainable = trainable
        self.built = False
        self._weights = []
        self.scratch = {}
        self.input_shape = None
        self.output_shape = None
        if input_dim is not None and input_shape is None:
            input_shape = (input_dim,)
        if batch_input_shape is not None and input_shape is None:
            input_shape = tuple(batch_input_shape)[1:]
        self._input_shape_arg = tuple(input_shape) if input_shape is not None else None
        self._path_prefix = ""
        self._inbound_nodes = []  # graph/nodes.py: one Node per symbolic call
        self._eager_models = {}  # input shapes -> a one-layer model, for layer(array)

    def _set_rules(self, rules, activity):
        """Check and keep the regularizer/constraint arguments (refused by name here,
        not at the first training step)."""
        where = f"{type(self).__name__} '{self.name}'"
        governed = {}
        for key, value in rules.items():
            if value is None:
                continue
            prefix, kind = key.rsplit("_", 1)
            weight = self.RULE_WEIGHTS.get(prefix, prefix)
            if governed.setdefault((weight, kind), key) != key:
                raise ValueError(f"{where}: {governed[(weight, kind)]} and {key} both govern "
                                 f"weight '{weight}'; pass one of them")
            setattr(self, key, _checked_rule(kind, value, f"{where}: {key}"))
        if activity is not None:
            self.activity_regularizer = _checked_rule(
                "regularizer", activity, f"{where}: activity_regularizer")

    def _rule_for(self, weight, kind):
        """The regularizer or constraint this layer's arguments give weight `weight`."""
        for prefix, name in self.RULE_WEIGHTS.items():
            if name == weight:
                value = getattr(self, f"{prefix}_{kind}", None)
                if value is not None:
                    return value
        return None

    def _check_rules_used(self):
        """Keras refuses weight rules a layer has no weight for: so do we, after build
        (a rule for an absent optional weight, e.g. bias with use_bias=False, is kept)."""
        given = [k for k in RULE_KEYS if getattr(self, k, None) is not None]
        if given and not self._weights and not self._tracked_layers():
            raise ValueError(f"{type(self).__name__} '{self.name}' has no weights; received "
                             f"{', '.join(given)}")

    @property
    def _weight_rules(self):
        """{weight name: (regularizer, constraint)} for the weights that have either."""
        out = {}
        for weight in dict.fromkeys(self.RULE_WEIGHTS.values()):
            pair = (self._rule_for(weight, "regularizer"), self._rule_for(weight, "constraint"))
            if pair != (None, None):
                out[weight] = pair
        return out

    @property
    def trainable(self):
        return self.__dict__.get("_trainable", True)

    @trainable.setter
    def trainable(self, value):
        """Like Keras 3: a layer's tracked sub-layers follow it. A change drops every
        replayed launch plan (engine/launch_plan.py: the next steps run live)."""
        if self.__dict__.get("_trainable", True) != bool(value):
            Layer.trainable_changes += 1
        self._trainable = bool(value)
        for sub in self._tracked_layers():
            sub.trainable = value

    # -- weights --------------------------------------------------------------------

    def add_weight(self, *args, shape=None, initializer=None, dtype=None, trainable=True,
                   name=None, **kwargs):
        """Create a weight initialised on the host and copied to the model's device.

        Keras 3's keywords (`add_weight(shape=..., initializer=..., name=...)`, defaults
        glorot_uniform, or zeros for a non-trainable weight), or kerasish's positional
        form `add_weight(name, shape, initializer, trainable)`.
        """
        if args and isinstance(args[0], str):  # (name, shape, initializer, trainable)
            name, args = args[0], args[1:]
            legacy = dict(zip(("shape", "initializer", "trainable"), args))
        else:  # Keras 3: (shape, initializer, dtype, trainable)
            legacy = dict(zip(("shape", "initializer", "dtype", "trainable"), args))
        shape = legacy.get("shape", shape)
        initializer = legacy.get("initializer", initializer)
        dtype = legacy.get("dtype", dtype)
        trainable = legacy.get("trainable", trainable)
        regularizer, constraint = kwargs.pop("regularizer", None), kwargs.pop("constraint", None)
        _check_weight_kwargs(self, kwargs)
        if name is None:
            name = f"variable_{len(self._weights)}" if self._weights else "variable"
        if initializer is None:
            initializer = "glorot_uniform" if trainable else "zeros"
        if shape is None:
            shape = ()
        if dtype not in (None, "float32", np.float32):
            raise ValueError(f"{self.name}.add_weight: only float32 weights are supported; "
                             f"received dtype={dtype!r}")
        init = initializers.get(initializer)
        shape = _checked_weight_shape(self, name, shape)
        value = np.asarray(init(shape), dtype=np.float32).reshape(shape)
        where = f"{type(self).__name__} '{self.name}': weight '{name}'"
        # explicit add_weight(regularizer=, constraint=) win over the layer's arguments
        regularizer = regularizer if regularizer is not None else \
            self._rule_for(name, "regularizer")
        constraint = constraint if constraint is not None else self._rule_for(name, "constraint")
        if regularizer is not None:
            regularizer = _checked_rule("regularizer", regularizer, f"{where} regularizer")
        if constraint is not None:
            constraint = constraints.check(_checked_rule("constraint", constraint, f"{where} "
                                                         "constraint"), f"{where}", shape)
        var = Variable(value, name, trainable=trainable, device=kconfig.get_device(),
                       path=f"{self._path_prefix}{self.name}/{name}")
        var.regularizer, var.constraint = regularizer, constraint
        self._weights.append(var)
        return var

    @property
    def weights(self):
        return list(self.trainable_weights) + list(self.non_trainable_weights)

    @property
    def trainable_weights(self):
        if not self.trainable:
            return []
        own = [w for w in self._weights if w.trainable]
        return _unique(own + [w for sub in self._tracked_layers()
                              for w in sub.trainable_weights])

    @property
    def non_trainable_weights(self):
        own = list(self._weights) if not self.trainable else \
            [w for w in self._weights if not w.trainable]
        trainable = {id(w) for w in self.trainable_weights}
        inner = [w for sub in self._tracked_layers() for w in sub.weights
                 if id(w) not in trainable]
        return _unique(own + inner)

    # Keras 3's names for the same lists (custom train steps use them)
    trainable_variables = property(lambda self: self.trainable_weights)
    non_trainable_variables = property(lambda self: self.non_trainable_weights)
    variables = property(lambda self: self.weights)

    def _tracked_layers(self):
        """Layers held in public attributes (also in lists/dicts): Keras tracks them, so
        a custom layer's sub-layers' weights are its weights too."""
        found = []
        for key, value in self.__dict__.items():
            if key.startswith("_"):
                continue
            items = value.values() if isinstance(value, dict) else \
                value if isinstance(value, (list, tuple)) else (value,)
            for item in items:
                if isinstance(item, Layer) and item is not self and \
                        not getattr(item, "is_operation", False) and \
                        not any(item is f for f in found):
                    found.append(item)
        return found

    def get_weights(self):
        return [w.numpy() for w in self.weights]

    def set_weights(self, weights):
        mine = self.weights
        if len(weights) != len(mine):
            raise ValueError(
                f"Layer {self.name} weight shape mismatch: set_weights was called with a weight "
                f"list of length {len(weights)}, but the layer was expecting {len(mine)} weights."
            )
        for var, value in zip(mine, weights):
            if tuple(np.shape(value)) != var.shape:
                raise ValueError(
                    f"Layer {self.name} weight shape mismatch for {var.name}: expected "
                    f"{var.shape}; received {tuple(np.shape(value))}"
                )
        for var, value in zip(mine, weights):
            var.assign(value)

    def count_params(self):
        if not self.built:
            raise ValueError(f"Layer {self.name} is not built yet: call build() or fit first.")
        return int(sum(np.prod(w.shape) for w in self._weights))

    @property
    def losses(self):
        """Keras 3's `layer.losses`: the add_loss values of the last call on arrays (this
        layer's and every sublayer's), then each regularized trainable weight's penalty
        for its current value. Symbolic calls and fit record no values."""
        from kerasish.ops.operation import eager

        found = list(self.__dict__.get("_losses", ()))
        for layer in self._flatten_layers():
            found += layer.__dict__.get("_losses", ())
        for var in self.trainable_weights:
            if getattr(var, "regularizer", None) is not None:
                found.append(eager(np.asarray(var.regularizer(var.numpy()), np.float32)))
        return found

    def _sublayers(self):
        return self._tracked_layers()

    def _flatten_layers(self):
        """Every layer inside this one (nested models, sublayers), each once."""
        out, seen, todo = [], {id(self)}, list(self._sublayers())
        while todo:
            layer = todo.pop(0)
            if id(layer) in seen:
                continue
            seen.add(id(layer))
            out.append(layer)
            todo += layer._sublayers()
        return out

    def add_loss(self, loss):
        """Keras's add_loss inside call(): a scalar (or summed) tensor added to the
        model's training loss, with its gradient (e.g. activity regularization)."""
        from kerasish.graph import tracing

        if not hasattr(loss, "_keras_history"):
            raise TypeError(f"Layer '{self.name}': add_loss takes a tensor computed in call() "
                            f"with keras.ops; received {type(loss).__name__}")
        tracing.add_loss(self, loss)

    # -- calls: symbolic (records a node) or on arrays (runs eagerly) -----------------

    def __call__(self, inputs, *args, training=None, mask=None, **kwargs):
        from kerasish.graph import calls

        return calls.call_layer(self, inputs, args, training, mask, kwargs)

    @property
    def input(self):
        return self._node_attr("input")

    @property
    def output(self):
        return self._node_attr("output")

    def _node_attr(self, what):
        if not self._inbound_nodes:
            raise AttributeError(f"Layer '{self.name}' has never been called and thus has "
                                 f"no defined {what}.")
        node = self._inbound_nodes[0]
        return node.input_structure if what == "input" else node.outputs

    # -- graph contract ---------------------------------------------------------------

    def build(self, input_shape):
        """Create weights for `input_shape` (None batch). Default: no weights."""
        self.built = True

    def _build_once(self, input_shape):
        """Build on the first call; later calls must bring the same per-sample shape."""
        input_shape = shape_structure(input_shape)
        from kerasish.graph import tracing

        if tracing.is_traced(self):  # call(): a graph of ops and layers, per signature
            found = tracing.trace(self, input_shape)
            self._pending_trace = found
            self.input_shape, self.output_shape = input_shape, tracing.output_shapes(found)
            return self.output_shape
        if self.built and self.input_shape is not None and \
                not _same_sample_shape(self.input_shape, input_shape):
            raise ValueError(f"Input of layer '{self.name}' is incompatible with the layer: "
                             f"expected shape {self.input_shape}, received shape "
                             f"{input_shape}")
        if not self.built:
            self.build(input_shape)
            self.built = True
            self._check_rules_used()
        self.input_shape = input_shape
        try:
            out = self.compute_output_shape(input_shape)
        except TypeError:  # arithmetic on a None size: a layer that needs every size known
            if not _has_none_size(input_shape):
                raise
            raise ValueError(
                f"{type(self).__name__} '{self.name}': received input shape {input_shape}, "
                f"with a None size (known only from the data, None in keras.Input); this "
                f"layer needs every non-batch size known, e.g. Flatten of a None spatial "
                f"size cannot give a fixed width (use a global pooling layer, or give "
                f"keras.Input the image size)") from None
        self.output_shape = shape_structure(out)
        return self.output_shape

    def compute_output_shape(self, input_shape):
        return tuple(input_shape)

    def scratch_shapes(self, batch_size):
        return {}

    def forward(self, y, x, training):
        raise NotImplementedError(f"{type(self).__name__}.forward is not implemented")

    def backward(self, dx, dy, x, y):
        raise NotImplementedError(f"{type(self).__name__}.backward is not implemented")

    def scratch_view(self, name, n):
        """The first n rows of scratch buffer `name`."""
        buf = self.scratch[name]
        return buf if buf.shape[0] == n else buf[:n]

    # -- config ---------------------------------------------------------------------

    def get_config(self):
        config = {"name": self.name, "trainable": self.trainable, "dtype": "float32"}
        if self._input_shape_arg is not None:
            config["batch_input_shape"] = [None, *self._input_shape_arg]
        if self.activity_regularizer is not None:
            config["activity_regularizer"] = regularizers.serialize(
                regularizers.get(self.activity_regularizer))
        for key in RULE_KEYS:  # Keras's serialized form, only where set (as Keras reads)
            value = getattr(self, key, None)
            if value is not None:
                module = regularizers if key.endswith("_regularizer") else constraints
                config[key] = module.serialize(module.get(value))
        for key in type(self).config_none_keys:
            config.setdefault(key, None)
        return config

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if isinstance(config.get("dtype"), dict):  # Keras 3 DTypePolicy config
            config["dtype"] = None
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}, built={self.built}>"


def shape_structure(shape):
    """A shape as a tuple, or a list of such tuples for layers with several tensors."""
    if isinstance(shape, (list, tuple)) and shape and \
            all(isinstance(s, (list, tuple)) for s in shape):
        return [tuple(s) for s in shape]
    return tuple(shape)


def _has_none_size(shape):
    """Some non-batch size of `shape` (or of one of a list of shapes) is None."""
    if isinstance(shape, list):
        return any(_has_none_size(s) for s in shape)
    return None in tuple(shape)[1:]


def _same_sample_shape(a, b):
    """Equal but for the batch axis (the first) of each shape."""
    if isinstance(a, list) or isinstance(b, list):
        return isinstance(a, list) and isinstance(b, list) and len(a) == len(b) and \
            all(_same_sample_shape(x, y) for x, y in zip(a, b))
    return tuple(a[1:]) == tuple(b[1:])


def _unique(variables):
    seen, out = set(), []
    for v in variables:
        if id(v) not in seen:
            seen.add(id(v))
            out.append(v)
    return out
