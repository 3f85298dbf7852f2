"""Model: a Layer made of a layer graph, with compile/fit/evaluate/predict and saving.

`keras.Model(inputs, outputs)` makes a Functional model (models/functional.py);
Sequential (models/sequential.py) is the chain case of the same graph. A model is
a layer: calling it on symbolic tensors nests it in another graph (the plan inlines
it), calling it on arrays runs inference. Its weights are its layers' weights, each
once (a shared layer's weights are one set) in Keras's order.
"""

import numpy as np

from kerasish import config as kconfig
from kerasish.graph import topology
from kerasish.layers.layer import Layer
from kerasish.trainer import Trainer


class Model(Trainer, Layer):
    """Base of Functional and Sequential. `Model(inputs, outputs, name=)` is Functional."""

    _is_graph_model = True

    def __new__(cls, *args, **kwargs):
        if cls is Model:
            from kerasish.models.functional import Functional

            if not args and "inputs" not in kwargs:
                raise TypeError("Model: expected `inputs` and `outputs` (the functional "
                                "API: Model(inputs=..., outputs=...)); subclassed models "
                                "with call() are not supported yet")
            return Functional(*args, **kwargs)
        return super().__new__(cls)

    def __init__(self, *args, name=None, trainable=True, **kwargs):
        """A subclassed model: layers set as attributes in `__init__`, the computation in
        `call()`, traced into a graph on the first call (or fit) like a functional model."""
        if len(args) == 2 or len(args) == 1 and "outputs" in kwargs or \
                "inputs" in kwargs and "outputs" in kwargs:
            # Keras 3: Model.__init__(inputs, outputs) from a subclass (keras-io's
            # CustomModel with its own train_step) makes a functional model of that class
            from kerasish.models.functional import Functional

            self.__class__ = _functional_subclass(type(self), Functional)
            Functional.__init__(self, *args, name=name, trainable=trainable, **kwargs)
            return
        if args or "inputs" in kwargs or "outputs" in kwargs:
            raise TypeError(f"{type(self).__name__}: passing inputs/outputs to a Model "
                            f"subclass's __init__ is not supported; use keras.Model(inputs, "
                            f"outputs) or define call()")
        if kwargs:
            raise TypeError(f"{type(self).__name__}: unexpected arguments {sorted(kwargs)}")
        from kerasish.engine import custom_steps

        if not callable(getattr(type(self), "call", None)) and \
                not any(custom_steps.overrides(self, s) for s in custom_steps.STEPS):
            raise TypeError(f"{type(self).__name__}: a Model subclass must define call() "
                            f"(or its own train_step, as a GAN's)")
        self.inputs, self.outputs, self._nodes = [], [], []
        self._inputs_struct = self._outputs_struct = None
        self._init_model(name, trainable)

    @property
    def layers(self):
        return self._tracked_layers()

    def _sublayers(self):
        return self.layers

    def _build_once(self, input_shape):
        """Trace call() for `input_shape` once (a subclassed model's graph)."""
        from kerasish.layers.layer import shape_structure

        input_shape = shape_structure(input_shape)
        if not self.inputs:
            self._build_graph(input_shape)
        expected = [tuple(t.shape[1:]) for t in self.inputs]
        got = [tuple(s[1:]) for s in (input_shape if isinstance(input_shape, list)
                                      else [input_shape])]
        if got != expected:
            raise ValueError(f"Model '{self.name}' was built for input shape(s) "
                             f"{[t.shape for t in self.inputs]}; received {input_shape}")
        return self.compute_output_shape(input_shape)

    def build(self, input_shape=None):
        if input_shape is None:
            raise ValueError(f"Model '{self.name}': build needs an input shape")
        self._build_once(input_shape)

    def _build_graph(self, input_shape):
        from kerasish.graph import tracing

        if type(self).build is not Model.build:  # the subclass's own build (weights)
            type(self).build(self, input_shape)
        self._set_device()
        tensors, args = tracing.symbolic_inputs(self, input_shape)
        structure, self.added, effects = tracing._call(self, args)
        outputs = topology.flatten_structure(structure)
        if not outputs or not all(hasattr(t, "_keras_history") for t in outputs):
            raise TypeError(f"Model '{self.name}': call() must return tensors built with "
                            f"layers or keras.ops from its inputs")
        self._inputs_struct, self.inputs = args, tensors
        self._outputs_struct, self.outputs = structure, outputs
        self._nodes, _ = topology.map_graph(tensors, outputs + self.added + effects,
                                            self.name, unused_inputs="allow")
        self.built = True
        self.input_shape = input_shape
        self.output_shape = self.compute_output_shape(input_shape)
        self._flat = None
        self._executors.clear()
        if self.compiled:
            self._build_training_state()

    @classmethod
    def from_config(cls, config, custom_objects=None):
        """`keras.Model.from_config(functional_config)`: a Functional model."""
        from kerasish.models.functional import Functional

        return Functional.from_config(config, custom_objects=custom_objects)

    def _init_model(self, name, trainable):
        Layer.__init__(self, name=name)
        self._trainable = bool(trainable)
        self.device = None
        self._flat = None
        self._init_trainer()

    # -- structure -------------------------------------------------------------------

    @property
    def trainable(self):
        return self._trainable

    @trainable.setter
    def trainable(self, value):
        """Like Keras 3: sets every inner layer's flag too."""
        if self.__dict__.get("_trainable", True) != bool(value):
            Layer.trainable_changes += 1  # training plans made before are made again
        self._trainable = bool(value)
        for layer in (self.layers if "_trainable" in self.__dict__ and
                      hasattr(self, "_executors") else ()):
            layer.trainable = value

    def _flat_graph(self, signature=None):
        """Every layer call, nested models inlined (cached until the graph changes); with
        None sizes in the inputs, one per `signature` (the data's per-sample shapes)."""
        if self._flat is None:
            self._flat = {}
        graph = self._flat.get(signature)
        if graph is None:
            graph = self._flat[signature] = topology.FlatGraph(self, signature)
        return graph

    @property
    def _dynamic(self):
        """Some size is known only from the data: None in keras.Input, or a None size the
        model's own input sizes do not fix (FlatGraph binds a nested None-size model's
        sizes from them): plans then bind the concrete shapes per signature."""
        if any(None in tuple(t.shape[1:]) for t in self.inputs):
            return True
        return bool(self.inputs) and self._flat_graph().has_none

    def _signature(self, batch):
        """The per-sample input shapes of a batch, for a dynamic model (else None)."""
        if not self.inputs or not self._dynamic:
            return None
        arrays = batch if isinstance(batch, (list, tuple)) else [batch]
        return tuple(tuple(a.shape[1:]) for a in arrays)

    def _single_io(self):
        return len(self.inputs) == 1 and len(self.outputs) == 1 and not self._dynamic and \
            self._output_losses and self._output_losses[0] is not None

    @property
    def input(self):
        return self._inputs_struct

    @property
    def output(self):
        return self._outputs_struct

    @property
    def input_names(self):
        return [t.node.layer.name for t in self.inputs]

    @property
    def output_names(self):
        if isinstance(self._outputs_struct, dict):
            return list(self._outputs_struct)
        return [t._keras_history[0].name for t in self.outputs]

    def _inputs_from_dict(self, tensors):
        missing = [n for n in self.input_names if n not in tensors]
        if missing:
            raise ValueError(f"Model '{self.name}': missing inputs {missing}; expected a "
                             f"dict with keys {self.input_names}")
        return [tensors[n] for n in self.input_names]

    def compute_output_shape(self, input_shape):
        """The outputs' shapes; for input shapes more specific than the model's (known
        sizes where it has None: a base built for (None, None, 3) called on a 40x40
        Input), the layers' shape inference re-run on them, as in Keras."""
        shapes = [tuple(t.shape) for t in self.outputs]
        given = input_shape if isinstance(input_shape, list) else [input_shape]
        own = [tuple(t.shape) for t in self.inputs]
        if own and len(given) == len(own) and \
                any(tuple(g)[1:] != s[1:] for g, s in zip(given, own)):
            shapes = topology.infer_output_shapes(self, [tuple(g) for g in given])
        return shapes if len(shapes) > 1 or isinstance(self._outputs_struct, (list, dict)) \
            else shapes[0]

    def get_layer(self, name=None, index=None):
        """A layer by name or by index into `layers` (Keras semantics and messages)."""
        kind = type(self).__name__
        if (name is None) == (index is None):
            raise ValueError(f"{kind}.get_layer: provide either a layer name or a layer "
                             f"index, not {'both' if name is not None else 'neither'}; "
                             f"received name={name!r}, index={index!r}")
        layers = self.layers
        if index is not None:
            if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
                raise TypeError(f"{kind}.get_layer: expected an int index; received "
                                f"{type(index).__name__}")
            if not -len(layers) <= index < len(layers):
                raise ValueError(f"{kind}.get_layer: was asked to retrieve layer at index "
                                 f"{index} but model only has {len(layers)} layers.")
            return layers[index]
        for layer in layers:
            if layer.name == name:
                return layer
        raise ValueError(f"{kind}.get_layer: no such layer: {name}. Existing layers are: "
                         f"{[layer.name for layer in layers]}.")

    def __call__(self, inputs, *args, training=None, mask=None, **kwargs):
        """On symbolic tensors: nest this model in a graph. On arrays: `model(x)`, the
        inference outputs for x as one batch (NumPy). Training-mode forwards run only in
        fit and train_on_batch, where their backward follows."""
        from kerasish.graph.nodes import is_symbolic
        from kerasish.tape import recording

        if recording.active() is not None:  # a GradientTape records this call
            return Layer.__call__(self, inputs, *args, training=training, mask=mask, **kwargs)
        inputs = recording._arrays_in(inputs)  # a tape's tensors are their values here
        if is_symbolic(inputs):
            return Layer.__call__(self, inputs, *args, training=training, mask=mask, **kwargs)
        if training:
            raise ValueError(f"Model '{self.name}': calling the model with training=True is "
                             f"not supported; expected training=False or None (use fit or "
                             f"train_on_batch to train)")
        from kerasish.ops.operation import eager

        return eager(self._planned_predict_on_batch(inputs))

    # -- weights ---------------------------------------------------------------------

    def _unique(self, lists):
        seen, out = set(), []
        for w in (w for ws in lists for w in ws):
            if id(w) not in seen:
                seen.add(id(w))
                out.append(w)
        return out

    @property
    def weights(self):
        return self._unique([self._weights] + [layer.weights for layer in self.layers])

    @property
    def trainable_weights(self):
        if not self.trainable:
            return []
        own = [w for w in self._weights if w.trainable]
        return self._unique([own] + [layer.trainable_weights for layer in self.layers])

    @property
    def non_trainable_weights(self):
        trainable = {id(w) for w in self.trainable_weights}
        return [w for w in self.weights if id(w) not in trainable]

    @property
    def _trainable_variables(self):
        return self.trainable_weights

    def get_weights(self):
        return [w.numpy() for w in self.weights]

    def set_weights(self, weights):
        mine = self.weights
        if len(weights) != len(mine):
            raise ValueError(f"Model '{self.name}': set_weights expected {len(mine)} arrays; "
                             f"received {len(weights)}")
        for var, value in zip(mine, weights):
            if tuple(np.shape(value)) != var.shape:
                raise ValueError(f"Model '{self.name}': weight {var.path} expects shape "
                                 f"{var.shape}; received {tuple(np.shape(value))}")
        for var, value in zip(mine, weights):
            var.assign(value)

    def count_params(self):
        if not self.built:
            raise ValueError(f"Model '{self.name}' has not been built yet: call build() or fit.")
        return int(sum(int(np.prod(w.shape)) for w in self.weights))

    def _set_device(self):
        self.device = self.device or kconfig.get_device()  # a built model keeps its device

    # -- config, summary, saving ------------------------------------------------------

    def to_json(self, **kwargs):
        from kerasish import saving

        return saving.model_to_json(self, **kwargs)

    def summary(self, line_length=None, print_fn=None, **kwargs):
        """Keras's table of layers, shapes and parameters, plus the planned buffer memory."""
        from kerasish.utils.summary import print_summary

        print_summary(self, line_length=line_length, print_fn=print_fn)

    def save(self, filepath, overwrite=True, include_optimizer=True, **kwargs):
        from kerasish import saving

        saving.save_model(self, filepath, overwrite=overwrite,
                          include_optimizer=include_optimizer)

    def save_weights(self, filepath, overwrite=True, **kwargs):
        from kerasish import saving

        saving.save_weights(self, filepath, overwrite=overwrite)

    def load_weights(self, filepath, skip_mismatch=False, by_name=False, **kwargs):
        from kerasish import saving

        saving.load_weights(self, filepath, skip_mismatch=skip_mismatch, by_name=by_name)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name}, built={self.built}>"


_FUNCTIONAL_SUBCLASSES = {}


def _functional_subclass(cls, functional):
    """cls with Functional's graph behind it (cls's own methods first), made once."""
    made = _FUNCTIONAL_SUBCLASSES.get(cls)
    if made is None:
        made = _FUNCTIONAL_SUBCLASSES[cls] = type(cls.__name__, (cls, functional),
                                                  {"__module__": cls.__module__,
                                                   "__qualname__": cls.__qualname__})
    return made
