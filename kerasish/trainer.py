"""compile / fit / evaluate / predict and the *_on_batch calls (Keras semantics).

The loop is device-agnostic: each step is an Executor call (kernels_numba launches on
planned buffers). Loss and metrics accumulate on the device; the host reads them
every batch on the CPU (free) and at most every ~0.1 s on CUDA (a read synchronizes).
"""

import contextlib
import time
from collections import OrderedDict

import numpy as np

from kerasish import losses as klosses
from kerasish import metrics as kmetrics
from kerasish import optimizers as koptimizers
from kerasish.engine import parameters, structure
from kerasish.engine.executor import PREDICT, TEST, TRAIN, Executor
from kerasish.engine.feeder import epoch_batches

_READ_INTERVAL_S = 0.1
_MAX_PLANS = 6  # (batch size, mode) plans kept per model; the least recently used goes


class Trainer:
    """Mixin for Model: training and inference entry points."""

    def _init_trainer(self):
        self.optimizer = None
        self.loss = None
        self.compiled = False
        self.stop_training = False
        self.history = None
        self._metric_spec = None
        self._loss_spec = self._loss_weights_spec = None
        self._metrics = []
        self._output_losses, self._output_metrics, self._loss_weights = [], [], []
        self._loss_trackers, self._loss_tracker = [], None
        self._executors = OrderedDict()
        self._compile_config = None
        self._initial_epoch = None

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
        self.loss = loss if loss is None or _per_output(loss) else klosses.get(loss)
        self._metric_spec = metrics
        if isinstance(metrics, str) or isinstance(metrics, (list, tuple)) and \
                not any(isinstance(m, (list, tuple, dict)) for m in metrics):
            kmetrics.check_names(metrics)  # unknown names fail at compile, as in Keras
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
        from kerasish.distribute import current_strategy  # hook: compiled in strategy.scope()

        strategy = current_strategy()
        if strategy is not None:
            strategy.attach(self)
        if self.built:
            self._build_training_state()

    def _require_compiled(self, what):
        if not self.compiled or self.loss is None:
            raise ValueError(f"You must call `compile()` with a loss before calling "
                             f"`{what}()` on model '{self.name}'.")

    def _build_training_state(self):
        """Per-output losses and metrics, trackers, the parameter blocks and the
        optimizer's slots, on the model's device."""
        if self._loss_spec is None:
            return
        names = self.output_names
        shapes = [tuple(t.shape) for t in self.outputs]
        if _per_output(self._loss_spec):
            self._output_losses = [None if spec is None else klosses.get(spec) for spec in
                                   structure.per_output(self._loss_spec, names, "loss")]
        else:  # one loss for every output: the compiled object first, a copy for the rest
            self._output_losses = [self.loss] + [klosses.get(self._loss_spec)
                                                 for _ in names[1:]]
        if all(loss is None for loss in self._output_losses):
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
            metrics = [kmetrics.resolve(n, shape, loss.sparse) for n in
                       kmetrics.check_names(spec)]
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
        self._loss_tracker = next(t for t in self._loss_trackers if t is not None)
        parameters.pack(self)
        parameters.attach_optimizer(self)

    # -- data checks and plans ---------------------------------------------------------

    def _check_x(self, x, what):
        """Input data as a list of arrays in model-input order (built on first use)."""
        if not self.built:
            if isinstance(x, (list, tuple)) and x and hasattr(x[0], "shape") and \
                    len(x) > 1 and not hasattr(self, "_input_layer"):
                self._build_once([(None, *np.shape(a)[1:]) for a in x])
            else:
                first = x[0] if isinstance(x, (list, tuple)) and x and \
                    hasattr(x[0], "shape") else x
                self._build_once((None, *np.shape(first)[1:]))
        xs = structure.by_name(x, self.input_names, what, "input")
        xs = [structure.check_input(a, t.shape, self.name, k, what)
              for k, (a, t) in enumerate(zip(xs, self.inputs))]
        if len({len(a) for a in xs}) > 1:
            raise ValueError(f"{what}: all inputs must have the same number of samples; "
                             f"received {[len(a) for a in xs]}")
        return xs

    def _check_y(self, y, what):
        """Targets as a list in model-output order (None where an output has no loss)."""
        ys = structure.by_name(y, self.output_names, what, "target")
        out = []
        for k, (target, loss, t) in enumerate(zip(ys, self._output_losses, self.outputs)):
            if loss is None:
                out.append(None)
            elif target is None:
                raise ValueError(f"{what}: no targets for output '{self.output_names[k]}', "
                                 f"which has loss '{loss.name}'")
            else:
                out.append(structure.check_target(target, loss, t.shape, what))
        return out

    def _executor(self, batch_size, mode, signature=None):
        """The plan for (batch size, mode[, per-sample input shapes of a dynamic model]),
        kept in a small LRU cache."""
        key = (int(batch_size), mode) + ((signature,) if signature is not None else ())
        ex = self._executors.pop(key, None)
        if ex is None:
            if mode == TRAIN:
                parameters.pack(self)
                parameters.attach_optimizer(self)
            ex = Executor(self, batch_size, mode, signature=signature)
        self._executors[key] = ex
        while len(self._executors) > _MAX_PLANS:
            self._executors.pop(next(iter(self._executors)))
        return ex

    def _executor_for(self, ex, batch, loader, mode):
        """`ex` while this batch fits it, else one planned for the loader's batch size
        (never more than its number of samples)."""
        n, signature = _batch_len(batch), self._signature(batch)
        if ex is None or n > ex.batch_size or ex.signature != signature:
            size = getattr(loader, "batch_size", 0) or 0
            samples = getattr(loader, "num_samples", None)
            if samples is not None:
                size = min(size, samples)
            ex = self._executor(max(n, size), mode, signature)
        return ex

    def _executor_on_batch(self, xs, mode):
        """A cached plan with room for this batch (the smallest), or a new one for it."""
        n, signature = len(xs[0]), self._signature(xs)
        tail = (signature,) if signature is not None else ()
        fits = [k for k in self._executors if k[1] == mode and k[0] >= n and k[2:] == tail]
        return self._executor(min(fits)[0] if fits else n, mode, signature)

    def _arrays_loader(self, x, y, batch_size, shuffle, what):
        from kerasish.data import DataLoader, make_loader

        if isinstance(x, DataLoader) or (not hasattr(x, "shape") and
                                         not isinstance(x, (list, tuple, dict))):
            if y is not None:
                raise ValueError(f"{what}: `y` must be None when `x` is a loader or generator")
            return make_loader(x, batch_size=batch_size, shuffle=shuffle), None
        batch_size = _check_count(batch_size, what)
        xs = self._check_x(x, what)
        ys = None
        if y is not None:
            ys = self._check_y(y, what)
            for target in ys:
                if target is not None and len(target) != len(xs[0]):
                    raise ValueError(f"{what}: x and y must have the same number of "
                                     f"samples; received x: {len(xs[0])}, y: {len(target)}")
        loader = DataLoader(_columns(xs), None if ys is None else _columns(ys),
                            batch_size=batch_size, shuffle=shuffle)
        loader.validated = True  # checked once here, not per batch
        return loader, batch_size

    def _batches(self, loader, what, with_y=True):
        """Host batches from any loader, with labels checked for generator inputs."""
        for batch in loader:
            if isinstance(batch, tuple) and len(batch) >= 2:
                xb, yb = batch[0], batch[1]
            elif isinstance(batch, tuple):
                xb, yb = batch[0], None
            else:
                xb, yb = batch, None
            if not loader_is_checked(loader):
                xb = self._check_x(xb, what)
                if yb is not None and with_y:
                    yb = self._check_y(yb, what)
            if with_y and yb is None:
                raise ValueError(f"{what}: the data yields no labels (expected (x, y) batches)")
            yield _unwrap(xb), _unwrap(yb)

    # -- fit --------------------------------------------------------------------------

    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, initial_epoch=0, steps_per_epoch=None, validation_steps=None,
            validation_batch_size=None, validation_freq=1):
        """Train for `epochs` (the final epoch index, as Keras). Returns a History."""
        from kerasish.callbacks import CallbackList

        self._require_compiled("fit")
        if class_weight is not None or sample_weight is not None:
            raise ValueError("fit: class_weight and sample_weight are not supported yet")
        if not isinstance(validation_split, (int, float)) or not 0 <= validation_split < 1:
            raise ValueError(f"fit: expected validation_split in [0, 1); received "
                             f"{validation_split!r}")
        epochs = _check_count(epochs, "fit", "epochs", minimum=0)
        initial_epoch = _check_count(initial_epoch, "fit", "initial_epoch", minimum=0)
        if steps_per_epoch is not None:
            steps_per_epoch = _check_count(steps_per_epoch, "fit", "steps_per_epoch")
        if validation_split and validation_data is None:
            x, y, validation_data = _split(x, y, validation_split)
        loader, batch_size = self._arrays_loader(x, y, 32 if batch_size is None else batch_size,
                                                 shuffle, "fit")
        dist = getattr(self, "_distribution", None)  # hook: kerasish.distribute strategy
        if dist is not None:
            loader = dist.shard_loader(loader)  # this rank's slice of each global batch
        self._train_loader = loader  # BackupAndRestore saves its shuffle state
        val = None
        if validation_data is not None:
            val = self._validation_loader(validation_data, validation_batch_size or batch_size)
        steps = _len_or_none(loader) if steps_per_epoch is None else steps_per_epoch
        cbs = CallbackList(callbacks, add_history=True, add_progbar=verbose != 0, model=self,
                           verbose=verbose, epochs=epochs, steps=steps)
        self.stop_training = False
        self._initial_epoch = None
        try:
            cbs.on_train_begin()
            if dist is not None:  # hook: rank 0's weights, optimizer and resume point
                dist.on_train_begin()
            epoch_logs = {}
            start = self._initial_epoch if self._initial_epoch is not None else initial_epoch
            self._initial_epoch = None  # BackupAndRestore's resume point is used once
            for epoch in range(start, epochs):
                cbs.on_epoch_begin(epoch)
                logs = self._train_epoch(loader, cbs, steps, steps_per_epoch)
                epoch_logs = dict(logs)
                if val is not None and _validate_now(epoch, validation_freq):
                    val_logs = self._evaluate_loader(val, cbs, validation_steps, "fit")
                    epoch_logs.update({f"val_{k}": v for k, v in val_logs.items()})
                cbs.on_epoch_end(epoch, epoch_logs)
                if dist is not None:  # hook: any rank's stop stops every rank
                    self.stop_training = dist.any_stop(self.stop_training)
                if self.stop_training:
                    break
            cbs.on_train_end(epoch_logs)
        except BaseException:
            cbs.close()  # no half-drawn bar after an interrupt or an error
            raise
        return self.history

    def _validation_loader(self, data, batch_size):
        from kerasish.data import make_loader

        if isinstance(data, tuple) and len(data) in (2, 3):
            if len(data) == 3 and data[2] is not None:
                raise ValueError("fit: validation sample weights are not supported")
            return self._arrays_loader(data[0], data[1], batch_size or 32, False,
                                       "fit(validation_data)")[0]
        return make_loader(data, batch_size=batch_size or 32, shuffle=False)

    def _train_epoch(self, loader, cbs, steps, max_steps):
        self._reset_metrics()
        last_read = 0.0
        logs = {}
        ex, batches = None, epoch_batches(self, loader, "fit", TRAIN)
        with contextlib.closing(batches):  # stops the prefetch threads on any exit
            for batch, (xb, yb) in enumerate(batches):
                if max_steps is not None and batch >= max_steps:
                    break
                cbs.on_train_batch_begin(batch)
                ex = self._executor_for(ex, xb, loader, TRAIN)
                ex.train_step(xb, yb)
                now = time.perf_counter()
                # distributed: every rank reads (a collective) at the same batches
                if self.device == "cpu" or now - last_read >= _READ_INTERVAL_S or \
                        getattr(self, "_distribution", None) is not None or \
                        (steps is not None and batch + 1 == steps):
                    logs, last_read = self._read_logs(), now
                cbs.on_train_batch_end(batch, logs)
                if getattr(self, "_distribution", None) is not None:  # hook: stop together
                    self.stop_training = self._distribution.any_stop(self.stop_training)
                if self.stop_training:
                    break
        if ex is None:
            raise ValueError("fit: the training data yielded no batches in this epoch "
                             "(an empty generator or Sequence?)")
        return self._read_logs()

    def _reset_metrics(self):
        for tracker in self._loss_trackers:
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
        if len(self._output_losses) == 1:
            logs = {"loss": self._loss_tracker.result()}
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
        return {"loss": total, **dict(sorted(rest.items()))}

    def _log_values(self, logs):
        """evaluate's list: loss first, then the other logs in order."""
        values = list(logs.values())
        return values[0] if len(values) == 1 else values

    @property
    def metrics_names(self):
        if not self.compiled or not self._loss_trackers:
            return []
        return list(self._read_logs())

    # -- evaluate / predict -----------------------------------------------------------

    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None,
                 steps=None, callbacks=None, return_dict=False):
        """Loss and metrics on the data: [loss, *metrics] (a scalar when only the loss)."""
        from kerasish.callbacks import CallbackList

        self._require_compiled("evaluate")
        if sample_weight is not None:
            raise ValueError("evaluate: sample_weight is not supported yet")
        loader, _ = self._arrays_loader(x, y, 32 if batch_size is None else batch_size, False,
                                        "evaluate")
        total = _len_or_none(loader) if steps is None else steps
        cbs = CallbackList(callbacks, add_progbar=verbose != 0, model=self, verbose=verbose,
                           epochs=1, steps=total)
        logs = self._evaluate_loader(loader, cbs, steps, "evaluate")
        return logs if return_dict else self._log_values(logs)

    def _evaluate_loader(self, loader, cbs, steps, what):
        self._reset_metrics()
        if cbs is not None:
            cbs.on_test_begin()
        logs = {}
        ex, batches = None, epoch_batches(self, loader, what, TEST)
        with contextlib.closing(batches):
            for batch, (xb, yb) in enumerate(batches):
                if steps is not None and batch >= steps:
                    break
                if cbs is not None:
                    cbs.on_test_batch_begin(batch)
                ex = self._executor_for(ex, xb, loader, TEST)
                ex.test_step(xb, yb)
                if cbs is not None:
                    logs = self._read_logs() if self.device == "cpu" else logs
                    cbs.on_test_batch_end(batch, logs)
        if ex is None:
            raise ValueError(f"{what}: received empty data")
        logs = self._read_logs()
        if cbs is not None:
            cbs.on_test_end(logs)
        return logs

    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        """Model outputs for x, concatenated: one NumPy array per output, in the
        structure of the model's outputs (an array, a list or a dict)."""
        from kerasish.callbacks import CallbackList
        from kerasish.data import DataLoader, make_loader

        if hasattr(x, "shape") or isinstance(x, (list, tuple, dict)):
            batch_size = _check_count(32 if batch_size is None else batch_size, "predict")
            loader = DataLoader(_columns(self._check_x(x, "predict")), batch_size=batch_size,
                                shuffle=False)
            loader.validated = True
        else:
            loader = make_loader(x, batch_size=batch_size or 32, shuffle=False)
        cbs = CallbackList(callbacks, add_progbar=verbose != 0, model=self, verbose=verbose,
                           epochs=1, steps=_len_or_none(loader) if steps is None else steps)
        cbs.on_predict_begin()
        outputs, ex = [], None
        for batch, (xb, _) in enumerate(self._batches(loader, "predict", with_y=False)):
            if steps is not None and batch >= steps:
                break
            cbs.on_predict_batch_begin(batch)
            ex = self._executor_for(ex, xb, loader, PREDICT)
            outputs.append(ex.predict_step(xb))
            cbs.on_predict_batch_end(batch, {"outputs": self._structured(outputs[-1])})
        cbs.on_predict_end()
        if not outputs:
            raise ValueError("predict: received empty data")
        return self._structured([np.concatenate(parts) for parts in zip(*outputs)])

    def _structured(self, arrays):
        """Per-output arrays packed like the model's outputs."""
        from kerasish.graph.topology import structure_like

        struct = self._outputs_struct
        return arrays[0] if not isinstance(struct, (list, dict)) else \
            structure_like(struct, arrays)

    # -- single batches -----------------------------------------------------------------

    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None,
                       return_dict=False):
        """One training step on one batch; metrics are reset first (Keras 3)."""
        self._require_compiled("train_on_batch")
        x, y = self._check_x(x, "train_on_batch"), self._check_y(y, "train_on_batch")
        self._reset_metrics()
        self._executor_on_batch(x, TRAIN).train_step(x, y)
        return self._batch_result(return_dict)

    def test_on_batch(self, x, y=None, sample_weight=None, return_dict=False):
        self._require_compiled("test_on_batch")
        x, y = self._check_x(x, "test_on_batch"), self._check_y(y, "test_on_batch")
        self._reset_metrics()
        self._executor_on_batch(x, TEST).test_step(x, y)
        return self._batch_result(return_dict)

    def predict_on_batch(self, x):
        x = self._check_x(x, "predict_on_batch")
        return self._structured(self._executor_on_batch(x, PREDICT).predict_step(x))

    def _batch_result(self, return_dict):
        logs = self._read_logs()
        return logs if return_dict else self._log_values(logs)


def loader_is_checked(loader):
    """Array loaders were validated up front; generator batches are checked one by one."""
    return getattr(loader, "validated", False)


def _check_count(value, what, name="batch_size", minimum=1):
    """An int argument >= minimum (batch_size, epochs, ...), or a ValueError naming it."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        kind = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ValueError(f"{what}: expected {name} to be {kind}; received {name}={value!r}")
    return int(value)


def _len_or_none(loader):
    """Batches per epoch, or None for a generator of unknown length."""
    return getattr(loader, "num_batches", None)


def _split(x, y, fraction):
    """Keras: the LAST samples become validation data, split before shuffling."""
    first = _first_array(x)
    if not hasattr(first, "shape"):
        raise ValueError("fit: validation_split needs NumPy array inputs")
    n = len(first)
    split_at = int(np.floor(n * (1 - fraction)))
    if split_at == 0 or split_at == n:
        raise ValueError(f"fit: validation_split={fraction} leaves an empty training or "
                         f"validation set for {n} samples")
    head, tail = slice(None, split_at), slice(split_at, None)
    return _cut(x, head), _cut(y, head), (_cut(x, tail), _cut(y, tail))


def _first_array(data):
    if isinstance(data, dict):
        data = next(iter(data.values()), None)
    if isinstance(data, (list, tuple)) and data and hasattr(data[0], "shape"):
        data = data[0]
    return data


def _cut(data, rows):
    if data is None:
        return None
    if isinstance(data, dict):
        return {k: _cut(v, rows) for k, v in data.items()}
    if isinstance(data, (list, tuple)) and data and hasattr(data[0], "shape"):
        return [_cut(v, rows) for v in data]
    return data[rows]


def _validate_now(epoch, freq):
    if isinstance(freq, int):
        return (epoch + 1) % freq == 0
    return (epoch + 1) in freq


def _columns(arrays):
    """Loader data for a list of arrays: the array itself when there is one."""
    from kerasish.data.columns import Columns

    return arrays[0] if len(arrays) == 1 else Columns(
        [np.zeros((len(arrays[0]), 0), np.float32) if a is None else a for a in arrays])


def _unwrap(batch):
    """A one-element list of arrays as the array (what one-input plans take)."""
    if isinstance(batch, list) and len(batch) == 1:
        return batch[0]
    return batch


def _batch_len(batch):
    return len(batch[0]) if isinstance(batch, list) else len(batch)


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
    return klosses.serialize(klosses.get(loss))


def _serialize_metrics(metrics):
    if metrics is None:
        return None
    if isinstance(metrics, dict) and "class_name" not in metrics:  # by output name
        return {k: _serialize_metrics(v) for k, v in metrics.items()}
    if isinstance(metrics, (list, tuple)):
        return [(_serialize_metrics(m) or []) if isinstance(m, (list, tuple)) or m is None
                else kmetrics.serialize(kmetrics.check_names([m])[0]) for m in metrics] or None
    return [kmetrics.serialize(kmetrics.check_names([metrics])[0])]
