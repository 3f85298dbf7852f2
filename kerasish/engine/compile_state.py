"""compile and what it sets up: per-output losses, loss weights and metrics, their
trackers, the parameter blocks and the optimizer; reading the logs (Keras 3 names)."""

import kernels_numba
from kerasish import config as kconfig
from kerasish import losses as klosses
from kerasish import metrics as kmetrics
from kerasish import optimizers as koptimizers
from kerasish.engine import compute_loss, parameters, structure, traced_loss, traced_metric


class CompileState:
    """Mixin of Model (through Trainer): compile and the logs."""

    # -- compile ----------------------------------------------------------------------

    def compile(self, optimizer="rmsprop", loss=None, loss_weights=None, metrics=None,
                weighted_metrics=None, run_eagerly=False, steps_per_execution=1,
                jit_compile="auto", auto_scale_loss=True):
        """Configure training: optimizer, loss(es) and metrics (Keras names and objects);
        for several outputs a list (one per output) or a dict by output name."""
        if weighted_metrics is not None:
            raise ValueError("compile: weighted_metrics is not supported yet")
        self.optimizer = koptimizers.get(optimizer)
        self._loss_spec, self._loss_weights_spec = loss, loss_weights
        self.loss = loss if loss is None or _per_output(loss) else get_loss(loss)
        self._metric_spec = metrics
        if isinstance(metrics, str) or isinstance(metrics, (list, tuple)) and \
                not any(isinstance(m, (list, tuple, dict)) for m in metrics):
            # unknown names fail at compile, as in Keras
            kmetrics.check_names([m for m in _as_list(metrics) if not _custom_metric(m)])
        self._metrics = []
        self._executors.clear()
        self._compile_config = {
            "loss": _serialize_losses(loss),
            "loss_weights": loss_weights,
            "metrics": _serialize_metrics(metrics),
            "weighted_metrics": None, "run_eagerly": False, "steps_per_execution": 1,
            "jit_compile": False,
        }
        self.compiled = True
        if (getattr(self, "device", None) or kconfig.get_device()) != "cuda":
            # the intent to train on the CPU: numba's threads, and on a fresh machine the
            # compile-ahead helper, start now, ahead of the first step's compiles (never
            # at import: kernels_numba/first_use.py)
            kernels_numba.first_use.prepare()
        from kerasish.distribute import current_strategy  # hook: compiled in strategy.scope()

        strategy = current_strategy()
        if strategy is not None:
            strategy.attach(self)
        if self.built:
            self._build_training_state()

    def compute_loss(self, x=None, y=None, y_pred=None, sample_weight=None, training=True,
                     **kwargs):
        """Keras 3's training hook. Override it in a Model subclass (traced: see
        engine/compute_loss.py). `super().compute_loss(...)` inside an override, while it
        is traced, gives the compiled loss of the (one) output on those tensors; the
        add_loss terms and regularizers join the step's loss as they always do. Called
        elsewhere (in a custom train_step, on a GradientTape's tensors or on arrays) it is
        the compiled losses' weighted sum of (y, y_pred) (engine/custom_steps.py)."""
        from kerasish.engine import custom_steps

        spec = self._loss_spec
        if not self.__dict__.get("_tracing_compute_loss"):
            if compute_loss.overrides(self) and not custom_steps.overrides(self, "train_step"):
                raise ValueError(f"Model '{self.name}': calling Model.compute_loss outside "
                                 f"a traced override is not supported yet; an override "
                                 f"must compute its loss from x, y and y_pred itself")
            return custom_steps.compiled_loss(self, y, y_pred, sample_weight)
        if spec is None or _per_output(spec):
            raise ValueError(f"Model '{self.name}': super().compute_loss() inside a traced "
                             f"override, without one compiled loss, is not supported yet; "
                             f"received loss={spec!r}")
        loss = get_loss(spec)
        if sample_weight is None:
            return loss(y, y_pred)
        if isinstance(loss, traced_loss.TracedLoss):
            raise ValueError(f"Model '{self.name}': super().compute_loss() with sample "
                             f"weights and the custom loss '{loss.name}' is not supported "
                             f"yet")
        return loss(y, y_pred, sample_weight)  # a (None, 1) column: matched to the values

    def _bind_labels(self, y, sample_weight=None, class_weight=None, what="fit"):
        """With a compute_loss override: the label kind from the data (its plan's y),
        the training state rebuilt when it changes."""
        if not compute_loss.overrides(self):
            return
        first = y[0] if isinstance(y, (list, tuple)) and y and hasattr(y[0], "shape") else y
        if first is None or not hasattr(first, "shape"):
            return
        out = tuple(self.outputs[0].shape) if self.outputs else None
        sparse = compute_loss.label_kind(first, out)
        if sparse != self.__dict__.get("_labels_sparse", False):
            self._labels_sparse = sparse
            if self.built and self.compiled:
                self._build_training_state()
                self._executors.clear()

    def _require_compiled(self, what):
        """compile() ran; without a loss the model trains on its add_loss terms and
        regularizers (Keras's endpoint layers), checked when its plan is made
        (`_check_some_loss`)."""
        if not self.compiled:
            raise ValueError(f"You must call `compile()` before calling `{what}()` on "
                             f"model '{self.name}'.")

    def _check_some_loss(self, ex):
        """Keras's compute_loss with no compiled loss, no add_loss and no regularizer."""
        if all(loss is None for loss in self._output_losses) and \
                not ex.plan.graph.added_ids and not ex.penalties.active:
            raise ValueError(f"No loss to compute. Provide a `loss` argument in "
                             f"`compile()` (model '{self.name}' has no add_loss terms or "
                             f"regularizers either).")

    def _build_training_state(self):
        """Per-output losses and metrics, trackers, the parameter blocks and the
        optimizer's slots, on the model's device."""
        names = self.output_names
        shapes = [tuple(t.shape) for t in self.outputs]
        if compute_loss.overrides(self):  # the model's own compute_loss is output 0's loss
            if len(names) != 1:
                raise ValueError(f"Model '{self.name}': a compute_loss override with several "
                                 f"outputs is not supported yet; received {len(names)} "
                                 f"outputs")
            self._output_losses = [compute_loss.ComputeLoss(
                self, self.__dict__.get("_labels_sparse", False))]
        elif self._loss_spec is None:  # no compiled loss: add_loss terms and regularizers
            self._output_losses = [None] * len(names)
        elif _per_output(self._loss_spec):
            self._output_losses = [None if spec is None else get_loss(spec) for spec in
                                   structure.per_output(self._loss_spec, names, "loss")]
        else:  # one loss for every output: the compiled object first, a copy for the rest
            self._output_losses = [self.loss] + [get_loss(self._loss_spec)
                                                 for _ in names[1:]]
        if self._loss_spec is not None and all(loss is None for loss in self._output_losses):
            raise ValueError(f"compile: model '{self.name}' has no loss for any output")
        weights = structure.per_output(self._loss_weights_spec, names, "loss_weights", 1.0)
        self._loss_weights = [1.0 if w is None else float(w) for w in weights]
        self._output_metrics = []
        specs = structure.metrics_per_output(self._metric_spec, names)
        for loss, shape, spec in zip(self._output_losses, shapes, specs):
            if loss is None:
                if spec:
                    raise ValueError("compile: metrics for an output without a loss are "
                                     "not supported (its targets are not read)")
                self._output_metrics.append([])
                continue
            loss.check_output(shape)
            metrics = []
            for entry in spec:
                if _custom_metric(entry):  # a Metric subclass: its update_state traced
                    metric = traced_metric.wrap(entry)
                    metric.bind_labels(loss.sparse)
                    metrics.append(metric)
                    continue
                metrics += [kmetrics.resolve(n, shape, loss.sparse)
                            for n in kmetrics.check_names([entry])]
            for metric in metrics:
                if getattr(metric, "sparse", loss.sparse) != loss.sparse:
                    needs = "integer labels" if metric.sparse else "one-hot targets"
                    raise ValueError(f"metric '{metric.name}' needs {needs}, but loss "
                                     f"'{loss.name}' uses the other kind of labels")
                metric.build(self.device)
            self._output_metrics.append(metrics)
        self._metrics = [m for ms in self._output_metrics for m in ms]
        single = len(names) == 1
        self._loss_trackers = [
            None if loss is None else kmetrics.LossMean("loss" if single else f"{n}_loss")
            for loss, n in zip(self._output_losses, names)]
        for tracker in self._loss_trackers:
            if tracker is not None:
                tracker.build(self.device)
        self._loss_tracker = next((t for t in self._loss_trackers if t is not None), None)
        self._added_loss_tracker = kmetrics.LossMean("added_losses")
        self._added_loss_tracker.build(self.device)
        parameters.pack(self)
        parameters.attach_optimizer(self)


    def _reset_metrics(self):
        for tracker in self._loss_trackers + [self._added_loss_tracker]:
            if tracker is not None:
                tracker.reset()
        for metric in self._metrics:
            metric.reset()

    def _read_logs(self, _reduced=False):
        """One output: loss, then its metrics. Several: loss (the weighted sum), then
        `<output>_loss` and `<output>_<metric>` in sorted order, as Keras 3 logs them."""
        dist = getattr(self, "_distribution", None)  # hook: the sums and counts of all ranks
        if dist is not None and not _reduced:
            return dist.reduce_logs(lambda: self._read_logs(_reduced=True))
        added = self._added_loss_tracker.result() if self._added_loss_tracker else 0.0
        if len(self._output_losses) == 1:
            own = self._loss_tracker.result() if self._loss_tracker is not None else 0.0
            logs = {"loss": own + added}  # add_loss terms included
            for metric in self._metrics:
                logs[metric.name] = metric.result()
            return logs
        names, rest, total = self.output_names, {}, 0.0
        for name, tracker, weight, metrics in zip(names, self._loss_trackers,
                                                  self._loss_weights, self._output_metrics):
            if tracker is not None:
                rest[tracker.name] = value = tracker.result()
                total += weight * value
            for metric in metrics:
                rest[f"{name}_{metric.name}"] = metric.result()
        return {"loss": total + added, **dict(sorted(rest.items()))}

    def _log_values(self, logs):
        """evaluate's list: loss first, then the other logs in order."""
        values = list(logs.values())
        return values[0] if len(values) == 1 else values

    @property
    def metrics_names(self):
        if not self.compiled or not self._output_losses:
            return []
        return list(self._read_logs())


def _per_output(spec):
    """A list, or a dict by output name (a {"class_name": ...} dict is one loss)."""
    return isinstance(spec, (list, tuple)) or isinstance(spec, dict) and \
        "class_name" not in spec


def _serialize_losses(loss):
    if isinstance(loss, (str, type(None))):
        return loss
    if isinstance(loss, (list, tuple)):
        return [_serialize_losses(x) for x in loss]
    if _per_output(loss):
        return {k: _serialize_losses(v) for k, v in loss.items()}
    if traced_loss.traced(loss) is not None:  # a user function or Loss subclass: by name
        return getattr(loss, "name", None) or loss.__name__
    return klosses.serialize(klosses.resolve(loss))


def _as_list(x):
    return list(x) if isinstance(x, (list, tuple)) else [x]


def _custom_metric(m):
    """A keras.metrics.Metric subclass with its own update_state, or a user function
    (both traced)."""
    from kerasish.metrics.base import Metric

    return isinstance(m, Metric) and type(m).update_state is not Metric.update_state or \
        traced_metric.is_function(m)


def get_loss(spec):
    """A loss object the plan can run: built-in (kerasish.losses) or traced."""
    return traced_loss.traced(spec) or klosses.resolve(spec)


def _serialize_metrics(metrics):
    if metrics is None:
        return None
    if isinstance(metrics, dict) and "class_name" not in metrics:  # by output name
        return {k: _serialize_metrics(v) for k, v in metrics.items()}
    if isinstance(metrics, (list, tuple)):
        return [(_serialize_metrics(m) or []) if isinstance(m, (list, tuple)) or m is None
                else m if traced_metric.is_function(m)  # serialized by its registered name
                else {"class_name": type(m).__name__, "config": m.get_config()}
                if _custom_metric(m) else kmetrics.serialize(kmetrics.check_names([m])[0])
                for m in metrics] or None
    return [kmetrics.serialize(kmetrics.check_names([metrics])[0])]
