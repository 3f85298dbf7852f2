"""compile / fit / evaluate / predict and the *_on_batch calls (Keras semantics).

The loop is device-agnostic: each step is an Executor call (kernels_numba launches on
planned buffers). Loss and metrics accumulate on the device; the host reads them
every batch on the CPU (free) and at most every ~0.1 s on CUDA (a read synchronizes).
"""

import contextlib
import time

import numpy as np

from kerasish import losses as klosses
from kerasish import metrics as kmetrics
from kerasish import optimizers as koptimizers
from kerasish.engine.executor import PREDICT, TEST, TRAIN, Executor
from kerasish.engine.feeder import epoch_batches

_READ_INTERVAL_S = 0.1


class Trainer:
    """Mixin for Sequential: training and inference entry points."""

    def _init_trainer(self):
        self.optimizer = None
        self.loss = None
        self.compiled = False
        self.stop_training = False
        self.history = None
        self._metric_specs = []
        self._metrics = []
        self._loss_tracker = None
        self._executors = {}
        self._compile_config = None
        self._initial_epoch = None

    # -- compile ----------------------------------------------------------------------

    def compile(self, optimizer="rmsprop", loss=None, loss_weights=None, metrics=None,
                weighted_metrics=None, run_eagerly=False, steps_per_execution=1,
                jit_compile="auto", auto_scale_loss=True):
        """Configure training: optimizer, loss and metrics (Keras names and objects)."""
        if loss_weights is not None or weighted_metrics is not None:
            raise ValueError("compile: loss_weights and weighted_metrics are not supported "
                             "(single-output Sequential models only)")
        self.optimizer = koptimizers.get(optimizer)
        self.loss = klosses.get(loss) if loss is not None else None
        self._metric_specs = kmetrics.check_names(metrics)
        self._metrics = []
        self._executors = {}
        self._compile_config = {
            "loss": loss if isinstance(loss, (str, type(None))) else klosses.serialize(self.loss),
            "loss_weights": None,
            "metrics": [kmetrics.serialize(m) for m in self._metric_specs] or None,
            "weighted_metrics": None, "run_eagerly": False, "steps_per_execution": 1,
            "jit_compile": False,
        }
        self.compiled = True
        if self.built:
            self._build_training_state()

    def _require_compiled(self, what):
        if not self.compiled or self.loss is None:
            raise ValueError(f"You must call `compile()` with a loss before calling "
                             f"`{what}()` on model '{self.name}'.")

    def _build_training_state(self):
        """Optimizer slots, gradient buffers, loss/metric accumulators on the model's device."""
        if self.loss is None:
            return
        self.loss.check_output(self._act_shapes[-1])
        self.optimizer.build(self._trainable_variables)
        self._loss_tracker = kmetrics.LossMean("loss")
        self._loss_tracker.build(self.device)
        sparse = self.loss.sparse
        self._metrics = [kmetrics.resolve(n, self._act_shapes[-1], sparse)
                         for n in self._metric_specs]
        for metric in self._metrics:
            if getattr(metric, "sparse", sparse) != sparse:
                needs = "integer labels" if metric.sparse else "one-hot targets"
                raise ValueError(f"metric '{metric.name}' needs {needs}, but loss "
                                 f"'{self.loss.name}' uses the other kind of labels")
            metric.build(self.device)

    # -- data checks ------------------------------------------------------------------

    def _check_x(self, x, what):
        x = np.asarray(x)
        if x.dtype.kind not in "biuf":
            raise TypeError(f"{what}: expected numeric input data; received dtype {x.dtype}")
        if x.ndim == 0:
            raise ValueError(f"{what}: expected input data with a batch axis; received a "
                             f"scalar {x!r}")
        if len(x) == 0:
            raise ValueError(f"{what}: received empty input data (shape {x.shape})")
        if not self.built:
            self.build((None, *x.shape[1:]))
        expected = tuple(self._act_shapes[0][1:])
        if tuple(x.shape[1:]) != expected:
            raise ValueError(
                f"Input 0 of model '{self.name}' is incompatible: expected shape "
                f"{(None, *expected)}, received shape {(None, *x.shape[1:])}")
        return x

    def _check_y(self, y, what):
        """Labels as the loss needs them: int32 class ids (sparse) or float32 targets."""
        y = np.asarray(y)
        if y.dtype.kind not in "biuf":
            raise TypeError(f"{what}: expected numeric labels; received dtype {y.dtype}")
        out = tuple(self._act_shapes[-1])
        if self.loss.sparse:
            if y.ndim == len(out) and y.shape[-1] == 1:
                y = y.reshape(y.shape[:-1])
            if tuple(y.shape[1:]) != out[1:-1]:
                raise ValueError(f"{what}: sparse labels must have shape {(None, *out[1:-1])} "
                                 f"for model output {out}; received {y.shape}")
            if y.size and (y.dtype.kind == "f" and not np.all(np.isfinite(y)) or
                           not np.array_equal(y, np.round(y))):
                raise ValueError(f"{what}: sparse labels must be integers; received "
                                 f"non-integer values")
            classes = out[-1]
            if y.size and (y.min() < 0 or y.max() >= classes):
                raise ValueError(
                    f"{what}: labels must be in [0, {classes}) for loss '{self.loss.name}' with "
                    f"{classes} output classes; received labels in [{y.min()}, {y.max()}]")
            return y.astype(np.int32)
        if y.ndim == len(out) - 1 and out[-1] == 1:
            y = y.reshape((*y.shape, 1))
        if tuple(y.shape[1:]) != out[1:]:
            raise ValueError(f"{what}: targets must have shape {(None, *out[1:])} for loss "
                             f"'{self.loss.name}'; received {y.shape}")
        return y.astype(np.float32)

    def _executor(self, batch_size, mode):
        key = (int(batch_size), mode)
        ex = self._executors.get(key)
        if ex is None:
            ex = self._executors[key] = Executor(self, batch_size, mode)
        return ex

    def _executor_for(self, ex, n, loader, mode):
        """`ex` while a batch of n fits it, else one planned for max(n, loader batch size)."""
        if ex is None or n > ex.batch_size:
            ex = self._executor(max(n, getattr(loader, "batch_size", 0) or 0), mode)
        return ex

    def _arrays_loader(self, x, y, batch_size, shuffle, what):
        from kerasish.data import DataLoader, make_loader

        if isinstance(x, DataLoader) or (not hasattr(x, "shape") and not isinstance(x, list)):
            if y is not None:
                raise ValueError(f"{what}: `y` must be None when `x` is a loader or generator")
            return make_loader(x, batch_size=batch_size, shuffle=shuffle), None
        batch_size = _check_count(batch_size, what)
        x = self._check_x(x, what)
        if y is not None:
            y = self._check_y(y, what)
            if len(x) != len(y):
                raise ValueError(f"{what}: x and y must have the same number of samples; "
                                 f"received x: {len(x)}, y: {len(y)}")
        loader = make_loader(x, y, batch_size=batch_size, shuffle=shuffle)
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
            yield np.asarray(xb), yb

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
                ex = self._executor_for(ex, len(xb), loader, TRAIN)
                ex.train_step(xb, yb)
                now = time.perf_counter()
                if self.device == "cpu" or now - last_read >= _READ_INTERVAL_S or \
                        (steps is not None and batch + 1 == steps):
                    logs, last_read = self._read_logs(), now
                cbs.on_train_batch_end(batch, logs)
                if self.stop_training:
                    break
        return self._read_logs()

    def _reset_metrics(self):
        self._loss_tracker.reset()
        for metric in self._metrics:
            metric.reset()

    def _read_logs(self):
        logs = {"loss": self._loss_tracker.result()}
        for metric in self._metrics:
            logs[metric.name] = metric.result()
        return logs

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
        if return_dict:
            return logs
        values = [logs["loss"]] + [logs[m.name] for m in self._metrics]
        return values[0] if len(values) == 1 else values

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
                ex = self._executor_for(ex, len(xb), loader, TEST)
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
        """Model outputs for x, concatenated into one NumPy array."""
        from kerasish.callbacks import CallbackList
        from kerasish.data import make_loader

        if hasattr(x, "shape") or isinstance(x, list):
            batch_size = _check_count(32 if batch_size is None else batch_size, "predict")
            loader = make_loader(self._check_x(x, "predict"), batch_size=batch_size,
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
            ex = self._executor_for(ex, len(xb), loader, PREDICT)
            outputs.append(ex.predict_step(xb))
            cbs.on_predict_batch_end(batch, {"outputs": outputs[-1]})
        cbs.on_predict_end()
        if not outputs:
            raise ValueError("predict: received empty data")
        return np.concatenate(outputs)

    # -- single batches -----------------------------------------------------------------

    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None,
                       return_dict=False):
        """One training step on one batch; metrics are reset first (Keras 3)."""
        self._require_compiled("train_on_batch")
        x, y = self._check_x(x, "train_on_batch"), self._check_y(y, "train_on_batch")
        self._reset_metrics()
        self._executor(len(x), TRAIN).train_step(x, y)
        return self._batch_result(return_dict)

    def test_on_batch(self, x, y=None, sample_weight=None, return_dict=False):
        self._require_compiled("test_on_batch")
        x, y = self._check_x(x, "test_on_batch"), self._check_y(y, "test_on_batch")
        self._reset_metrics()
        self._executor(len(x), TEST).test_step(x, y)
        return self._batch_result(return_dict)

    def predict_on_batch(self, x):
        x = self._check_x(x, "predict_on_batch")
        return self._executor(len(x), PREDICT).predict_step(x)

    def _batch_result(self, return_dict):
        logs = self._read_logs()
        if return_dict:
            return logs
        values = [logs["loss"]] + [logs[m.name] for m in self._metrics]
        return values[0] if len(values) == 1 else values


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
    if not hasattr(x, "shape"):
        raise ValueError("fit: validation_split needs NumPy array inputs")
    n = len(x)
    split_at = int(np.floor(n * (1 - fraction)))
    if split_at == 0 or split_at == n:
        raise ValueError(f"fit: validation_split={fraction} leaves an empty training or "
                         f"validation set for {n} samples")
    return x[:split_at], y[:split_at], (x[split_at:], y[split_at:])


def _validate_now(epoch, freq):
    if isinstance(freq, int):
        return (epoch + 1) % freq == 0
    return (epoch + 1) in freq
