"""compile / fit / evaluate / predict and the *_on_batch calls (Keras semantics).

The loop is device-agnostic: each step is an Executor call (kernels_numba launches on
planned buffers). Loss and metrics accumulate on the device; the host reads them
every batch on the CPU (free) and at most every ~0.1 s on CUDA (a read synchronizes).
"""

import contextlib
import functools
import itertools
import time
from collections import OrderedDict

import numpy as np

import kernels_numba
from kerasish.engine import custom_steps
from kerasish.engine.compile_state import CompileState
from kerasish.engine.custom_steps import CustomSteps
from kerasish.engine.data_plans import (
    DataPlans,
    _check_count,
    _columns,
    _cut,
    _first_array,
    _split,
    loader_is_checked,
)
from kerasish.engine.executor import PREDICT, TEST, TRAIN
from kerasish.engine.feeder import epoch_batches

_READ_INTERVAL_S = 0.1


def _cpu_work(method):
    """Run a training or inference entry point inside kernels_numba.cpu_work() on the CPU:
    NumPy's OpenBLAS at one thread until it returns, then as it was
    (kernels_numba/first_use.py); on CUDA nothing is changed."""
    @functools.wraps(method)
    def run(self, *args, **kwargs):
        if getattr(self, "device", None) == "cuda":
            return method(self, *args, **kwargs)
        with kernels_numba.cpu_work():
            return method(self, *args, **kwargs)
    return run


class Trainer(CompileState, DataPlans, CustomSteps):
    """Mixin for Model: training and inference entry points (compile and the logs in
    engine/compile_state.py, data checks, loaders and plans in engine/data_plans.py)."""

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
        self._loss_trackers, self._loss_tracker, self._added_loss_tracker = [], None, None
        self._executors = OrderedDict()
        self._compile_config = None
        self._initial_epoch = None

    # -- fit --------------------------------------------------------------------------

    @_cpu_work
    def fit(self, x=None, y=None, batch_size=None, epochs=1, verbose="auto", callbacks=None,
            validation_split=0.0, validation_data=None, shuffle=True, class_weight=None,
            sample_weight=None, initial_epoch=0, steps_per_epoch=None, validation_steps=None,
            validation_batch_size=None, validation_freq=1):
        """Train for `epochs` (the final epoch index, as Keras). Returns a History."""
        from kerasish.callbacks import CallbackList

        self._require_compiled("fit")
        if custom_steps.overrides(self, "train_step"):  # Keras 3's step contract
            return self._custom_fit(x, y, batch_size, epochs, verbose, callbacks,
                                    validation_data, shuffle, sample_weight, initial_epoch,
                                    steps_per_epoch)
        if not isinstance(validation_split, (int, float)) or not 0 <= validation_split < 1:
            raise ValueError(f"fit: expected validation_split in [0, 1); received "
                             f"{validation_split!r}")
        epochs = _check_count(epochs, "fit", "epochs", minimum=0)
        initial_epoch = _check_count(initial_epoch, "fit", "initial_epoch", minimum=0)
        if steps_per_epoch is not None:
            steps_per_epoch = _check_count(steps_per_epoch, "fit", "steps_per_epoch")
        if validation_split and validation_data is None:
            x, y, validation_data = _split(x, y, validation_split)
            if sample_weight is not None:
                sample_weight = _cut(sample_weight, slice(None, len(_first_array(y))))
        loader, batch_size = self._arrays_loader(x, y, 32 if batch_size is None else batch_size,
                                                 shuffle, "fit", sample_weight, class_weight)
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
        finally:
            self._train_loader = None  # it holds the training arrays: not past fit
        return self.history

    def _validation_loader(self, data, batch_size):
        from kerasish.data import make_loader

        if isinstance(data, tuple) and len(data) in (2, 3):
            weights = data[2] if len(data) == 3 else None
            return self._arrays_loader(data[0], data[1], batch_size or 32, False,
                                       "fit(validation_data)", weights)[0]
        return make_loader(data, batch_size=batch_size or 32, shuffle=False)

    def _train_epoch(self, loader, cbs, steps, max_steps):
        self._reset_metrics()
        last_read = 0.0
        logs = {}
        ex, batches = None, epoch_batches(self, loader, "fit", TRAIN)
        # fit's own loader on the CPU gathers each batch on demand in this thread, so the
        # plan's input buffers are free to take it (never a user's or a prefetching one;
        # on CUDA input_buffers gives None)
        direct = loader_is_checked(loader) and getattr(loader, "prefetch", None) == 0 and \
            hasattr(loader, "gather_into")
        dist = getattr(self, "_distribution", None)  # hook: kerasish.distribute
        hooks = cbs.uses_train_batch_hooks()
        with contextlib.closing(batches):  # stops the prefetch threads on any exit
            # islice: never pull a batch past steps_per_epoch (a generator keeps it)
            for batch, (xb, yb) in enumerate(itertools.islice(batches, max_steps)):
                if hooks:
                    cbs.on_train_batch_begin(batch)
                ex = self._executor_for(ex, xb, loader, TRAIN, yb)
                if direct:  # the next batches go straight into ex's input buffers
                    loader.gather_into = ex.input_buffers
                ex.train_step(xb, yb)
                if hooks or dist is not None:
                    now = time.perf_counter()
                    # distributed: every rank reads (a collective) at the same batches
                    if self.device == "cpu" or now - last_read >= _READ_INTERVAL_S or \
                            dist is not None or (steps is not None and batch + 1 == steps):
                        logs, last_read = self._read_logs(), now
                if hooks:
                    cbs.on_train_batch_end(batch, logs)
                if dist is not None:  # stop together
                    self.stop_training = dist.any_stop(self.stop_training)
                if self.stop_training:
                    break
        if ex is None:
            raise ValueError("fit: the training data yielded no batches in this epoch "
                             "(an empty generator or Sequence?)")
        return self._read_logs()

    # -- evaluate / predict -----------------------------------------------------------

    @_cpu_work
    def evaluate(self, x=None, y=None, batch_size=None, verbose="auto", sample_weight=None,
                 steps=None, callbacks=None, return_dict=False):
        """Loss and metrics on the data: [loss, *metrics] (a scalar when only the loss)."""
        from kerasish.callbacks import CallbackList

        self._require_compiled("evaluate")
        if custom_steps.overrides(self, "test_step"):
            logs = self._custom_evaluate(x, y, batch_size, sample_weight, steps=steps)
            return logs if return_dict else self._log_values(logs)
        loader, _ = self._arrays_loader(x, y, 32 if batch_size is None else batch_size, False,
                                        "evaluate", sample_weight)
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
            for batch, (xb, yb) in enumerate(itertools.islice(batches, steps)):
                if cbs is not None:
                    cbs.on_test_batch_begin(batch)
                ex = self._executor_for(ex, xb, loader, TEST, yb)
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

    @_cpu_work
    def predict(self, x, batch_size=None, verbose="auto", steps=None, callbacks=None):
        """Model outputs for x, concatenated: one NumPy array per output, in the
        structure of the model's outputs (an array, a list or a dict)."""
        from kerasish.callbacks import CallbackList
        from kerasish.data import DataLoader, make_loader

        if custom_steps.overrides(self, "predict_step"):
            return self._custom_predict(x, batch_size, steps)
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
        """Per-output arrays packed like the model's outputs (a list of one output gives
        the array, as Keras 3's predict does)."""
        from kerasish.graph.topology import structure_like

        struct = self._outputs_struct
        if not isinstance(struct, (list, dict)) or \
                isinstance(struct, list) and len(struct) == 1:
            return arrays[0]
        return structure_like(struct, arrays)

    # -- single batches -----------------------------------------------------------------

    @_cpu_work
    def train_on_batch(self, x, y=None, sample_weight=None, class_weight=None,
                       return_dict=False):
        """One training step on one batch; metrics are reset first (Keras 3)."""
        self._require_compiled("train_on_batch")
        if custom_steps.overrides(self, "train_step"):  # Keras 3: metrics reset first
            self.reset_metrics()
            logs = custom_steps._floats(self.train_step(
                custom_steps.pack_x_y_sample_weight(x, y, sample_weight)))
            return logs if return_dict else self._log_values(logs)
        self._bind_labels(y, sample_weight, class_weight, "train_on_batch")
        x, y = self._check_x(x, "train_on_batch"), self._check_y(y, "train_on_batch")
        y = self._weighted(y, sample_weight, class_weight, "train_on_batch")
        self._reset_metrics()
        self._executor_on_batch(x, TRAIN, y).train_step(x, y)
        return self._batch_result(return_dict)

    @_cpu_work
    def test_on_batch(self, x, y=None, sample_weight=None, return_dict=False):
        self._require_compiled("test_on_batch")
        if custom_steps.overrides(self, "test_step"):
            self.reset_metrics()
            logs = custom_steps._floats(self.test_step(
                custom_steps.pack_x_y_sample_weight(x, y, sample_weight)))
            return logs if return_dict else self._log_values(logs)
        self._bind_labels(y, sample_weight, None, "test_on_batch")
        x, y = self._check_x(x, "test_on_batch"), self._check_y(y, "test_on_batch")
        y = self._weighted(y, sample_weight, None, "test_on_batch")
        self._reset_metrics()
        self._executor_on_batch(x, TEST, y).test_step(x, y)
        return self._batch_result(return_dict)

    @_cpu_work
    def predict_on_batch(self, x):
        if custom_steps.overrides(self, "predict_step"):
            return custom_steps._values(self.predict_step(x))
        return self._planned_predict_on_batch(x)

    def _planned_predict_on_batch(self, x):
        """model(x) on arrays, and predict_on_batch without a predict_step override."""
        x = self._check_x(x, "predict_on_batch")
        return self._structured(self._executor_on_batch(x, PREDICT).predict_step(x))

    def _batch_result(self, return_dict):
        logs = self._read_logs()
        return logs if return_dict else self._log_values(logs)


def _len_or_none(loader):
    """Batches per epoch, or None for a generator of unknown length."""
    return getattr(loader, "num_batches", None)


def _validate_now(epoch, freq):
    if isinstance(freq, int):
        return (epoch + 1) % freq == 0
    return (epoch + 1) in freq

