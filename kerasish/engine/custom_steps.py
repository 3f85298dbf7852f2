"""Keras 3's step contract: `train_step(data)`, `test_step(data)`, `predict_step(data)`
overrides run by fit/evaluate/predict and the *_on_batch calls, with `compute_loss`,
`compute_metrics`, `metrics` (reset each epoch) and `get_metrics_result`.

A model whose class overrides a step trains through it (TensorFlow-style code: the
override uses `kerasish.GradientTape` and `optimizer.apply_gradients`): the data is
batched here as Keras hands it to a step (x, (x, y) or (x, y, sample_weight), x keeping
its structure), the returned logs (numbers, arrays, recorded tensors or nested dicts of
them) become Python floats for the callbacks, and `model.metrics` are reset at each
epoch's start. Models without overrides keep the engine's planned steps; the default
steps here are what `super().train_step(data)` runs (the tape over `self(x)` and the
compiled loss).
"""

import itertools

import numpy as np

from kerasish.utils.data_packing import pack_x_y_sample_weight, unpack_x_y_sample_weight

STEPS = ("train_step", "test_step", "predict_step")


def overrides(model, name):
    """The model's class defines its own `name` step."""
    return getattr(type(model), name, None) is not getattr(CustomSteps, name)


class CompileMetrics:
    """The compiled metrics as one entry of `model.metrics` (Keras 3's "compile_metrics"):
    update_state(y, y_pred, sample_weight) updates each; result() is their dict."""

    name = "compile_metrics"

    def __init__(self, model):
        self.model = model

    def _pairs(self, y, y_pred):
        m = self.model
        ys = list(y) if isinstance(y, (list, tuple)) else [y]
        ps = list(y_pred) if isinstance(y_pred, (list, tuple)) else [y_pred]
        if isinstance(y, dict):
            ys = [y.get(n) for n in m.output_names]
        if isinstance(y_pred, dict):
            ps = [y_pred.get(n) for n in m.output_names]
        return zip(m._output_metrics, ys, ps)

    def update_state(self, y, y_pred, sample_weight=None):
        for metrics, yt, yp in self._pairs(y, y_pred):
            for metric in metrics:
                metric.update_state(np.asarray(yt), np.asarray(yp), sample_weight)

    def result(self):
        m = self.model
        several = len(m._output_metrics) > 1
        out = {}
        for name, metrics in zip(m.output_names, m._output_metrics):
            for metric in metrics:
                out[f"{name}_{metric.name}" if several else metric.name] = metric.result()
        return out

    def reset_state(self):
        for metrics in self.model._output_metrics:
            for metric in metrics:
                metric.reset_state()


class CustomSteps:
    """Mixin of Model (through Trainer): the step methods and their drivers."""

    # -- the contract ----------------------------------------------------------------

    def train_step(self, data):
        """Keras's default step: the tape over self(x, training=True), compute_loss,
        the optimizer, the loss tracker, compute_metrics."""
        from kerasish.tape.gradient_tape import GradientTape

        x, y, sample_weight = unpack_x_y_sample_weight(data)
        with GradientTape() as tape:
            y_pred = self(x, training=True)
            loss = self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight,
                                     training=True)
        variables = list(self.trainable_weights)
        if variables:
            grads = tape.gradient(loss, variables)
            self.optimizer.apply(grads, variables)
        self._step_loss_tracker().update_state(np.asarray(loss), sample_weight=_rows(x))
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def test_step(self, data):
        x, y, sample_weight = unpack_x_y_sample_weight(data)
        y_pred = self(x, training=False)
        loss = self.compute_loss(x=x, y=y, y_pred=y_pred, sample_weight=sample_weight,
                                 training=False)
        self._step_loss_tracker().update_state(np.asarray(loss), sample_weight=_rows(x))
        return self.compute_metrics(x, y, y_pred, sample_weight)

    def predict_step(self, data):
        x, _, _ = unpack_x_y_sample_weight(data)
        return self(x, training=False)

    def compute_metrics(self, x, y, y_pred, sample_weight=None):
        """Update the compiled metrics; return every metric's result (get_metrics_result)."""
        if self.compiled and any(self._output_metrics):
            CompileMetrics(self).update_state(y, y_pred, sample_weight)
        return self.get_metrics_result()

    def get_metrics_result(self):
        logs = {}
        for metric in self.metrics:
            value = metric.result()
            if isinstance(value, dict):
                logs.update(value)
            else:
                logs[metric.name] = value
        return _floats(logs)

    @property
    def metrics(self):
        """Keras 3: the loss tracker and the compiled metrics (once compiled), then every
        keras.metrics.Metric held in an attribute of the model, in assignment order."""
        from kerasish.metrics.base import Metric

        out = []
        if getattr(self, "compiled", False):
            out.append(self._step_loss_tracker())
            if any(getattr(self, "_output_metrics", None) or ()):
                out.append(CompileMetrics(self))
        seen = {id(m) for m in out}
        for key, value in self.__dict__.items():  # the engine's own trackers are private
            if isinstance(value, Metric) and id(value) not in seen and \
                    not key.startswith("_"):
                seen.add(id(value))
                out.append(value)
        return out

    def reset_metrics(self):
        for metric in self.metrics:
            metric.reset_state()

    def _step_loss_tracker(self):
        from kerasish.metrics.base import Mean

        tracker = self.__dict__.get("_custom_loss_tracker")
        if tracker is None:
            tracker = self.__dict__["_custom_loss_tracker"] = Mean(name="loss")
        return tracker

    # -- drivers (fit/evaluate/predict with an override) ------------------------------

    def _custom_fit(self, x, y, batch_size, epochs, verbose, callbacks, validation_data,
                    shuffle, sample_weight, initial_epoch, steps_per_epoch):
        from kerasish.callbacks import CallbackList

        batches = _Batches(x, y, sample_weight, batch_size, shuffle, "fit")
        steps = steps_per_epoch or batches.steps
        cbs = CallbackList(callbacks, add_history=True, add_progbar=verbose != 0, model=self,
                           verbose=verbose, epochs=epochs, steps=steps)
        self.stop_training = False
        cbs.on_train_begin()
        epoch_logs = {}
        try:
            for epoch in range(initial_epoch, epochs):
                self.reset_metrics()
                cbs.on_epoch_begin(epoch)
                logs = {}
                for batch, data in enumerate(itertools.islice(batches.epoch(), steps_per_epoch)):
                    cbs.on_train_batch_begin(batch)
                    logs = _floats(self.train_step(data))
                    cbs.on_train_batch_end(batch, logs)
                    if self.stop_training:
                        break
                epoch_logs = dict(logs)
                if validation_data is not None:
                    vx, vy, vw = unpack_x_y_sample_weight(validation_data) if isinstance(
                        validation_data, (tuple, list)) else (validation_data, None, None)
                    val = self._custom_evaluate(vx, vy, batch_size, vw, cbs)
                    epoch_logs.update({f"val_{k}": v for k, v in val.items()})
                cbs.on_epoch_end(epoch, epoch_logs)
                if self.stop_training:
                    break
            cbs.on_train_end(epoch_logs)
        except BaseException:
            cbs.close()
            raise
        return self.history

    def _custom_evaluate(self, x, y, batch_size, sample_weight, cbs=None, steps=None):
        self.reset_metrics()
        logs = {}
        batches = _Batches(x, y, sample_weight, batch_size, False, "evaluate")
        for batch, data in enumerate(itertools.islice(batches.epoch(), steps)):
            if cbs is not None:
                cbs.on_test_batch_begin(batch)
            logs = _floats(self.test_step(data))
            if cbs is not None:
                cbs.on_test_batch_end(batch, logs)
        return logs

    def _custom_predict(self, x, batch_size, steps=None):
        outs = []
        batches = _Batches(x, None, None, batch_size, False, "predict")
        for data in itertools.islice(batches.epoch(), steps):
            outs.append(_values(self.predict_step(data)))
        if not outs:
            raise ValueError("predict: the data yielded no batches")
        return _concat(outs)


def compiled_loss(model, y, y_pred, sample_weight=None):
    """The compiled losses' weighted sum for (y, y_pred): each loss object called as
    Keras calls it (on a GradientTape's tensors: recorded, so it has a gradient)."""
    if not model.compiled:
        raise ValueError(f"You must call `compile()` before calling `compute_loss()` on "
                         f"model '{model.name}'.")
    if not model._output_losses and model._loss_spec is not None and model.built:
        model._build_training_state()
    losses = model._output_losses
    if not losses or all(loss is None for loss in losses):
        raise ValueError(f"No loss to compute. Provide a `loss` argument in `compile()` "
                         f"(model '{model.name}').")
    several = len(losses) > 1
    ys = [y.get(n) for n in model.output_names] if isinstance(y, dict) else \
        list(y) if several else [y]
    ps = [y_pred.get(n) for n in model.output_names] if isinstance(y_pred, dict) else \
        list(y_pred) if several else [y_pred]
    total = None
    for loss, weight, yt, yp in zip(losses, model._loss_weights, ys, ps):
        if loss is None:
            continue
        value = loss(yt, yp) if sample_weight is None else loss(yt, yp, sample_weight)
        if weight != 1.0:
            value = value * weight
        total = value if total is None else total + value
    return total


def _rows(x):
    first = x
    while isinstance(first, (list, tuple, dict)):
        first = next(iter(first.values())) if isinstance(first, dict) else first[0]
    return np.shape(first)[0] if np.ndim(first) else 1


def _floats(logs):
    """A step's logs as Python floats (arrays of one value, recorded tensors, numbers;
    nested dicts flattened, as Keras 3's fit does)."""
    if not isinstance(logs, dict):
        raise TypeError(f"train_step/test_step: expected a dict of logs; received "
                        f"{type(logs).__name__}")
    out = {}
    for k, v in logs.items():
        if isinstance(v, dict):
            out.update(_floats(v))
            continue
        a = np.asarray(v, dtype=np.float64)
        out[k] = float(a) if a.size == 1 else a
    return out


def _values(out):
    if isinstance(out, dict):
        return {k: _values(v) for k, v in out.items()}
    if isinstance(out, (list, tuple)):
        return [_values(v) for v in out]
    return np.asarray(out, np.float32)


def _concat(outs):
    first = outs[0]
    if isinstance(first, dict):
        return {k: np.concatenate([o[k] for o in outs]) for k in first}
    if isinstance(first, list):
        return [np.concatenate([o[i] for o in outs]) for i in range(len(first))]
    return np.concatenate(outs)


class _Batches:
    """Batches as Keras hands them to a step: arrays (a structure of them) cut into
    batch_size rows, shuffled each epoch (kerasish's seed); a loader, generator or
    Sequence yields its own batches."""

    def __init__(self, x, y, sample_weight, batch_size, shuffle, what):
        self.x, self.y, self.w = x, y, sample_weight
        self.shuffle = shuffle
        self.arrays = _is_arrays(x)
        if self.arrays:
            self.n = _rows(x)
            for part, name in ((y, "y"), (sample_weight, "sample_weight")):
                if part is not None and _rows(part) != self.n:
                    raise ValueError(f"{what}: x and {name} must have the same number of "
                                     f"samples; received {self.n} and {_rows(part)}")
            self.batch_size = 32 if batch_size is None else int(batch_size)
            if self.batch_size <= 0:
                raise ValueError(f"{what}: expected batch_size > 0; received {batch_size}")
            self.steps = -(-self.n // self.batch_size)
        else:
            if y is not None:
                raise ValueError(f"{what}: `y` must be None when `x` is a loader or generator")
            from kerasish.data import make_loader

            self.loader = make_loader(x, batch_size=batch_size, shuffle=shuffle)
            try:
                self.steps = len(self.loader)
            except TypeError:
                self.steps = None

    def epoch(self):
        if not self.arrays:
            for batch in self.loader:
                yield batch
            return
        from kerasish import random

        order = np.arange(self.n)
        if self.shuffle:
            order = np.random.default_rng(random.new_seed()).permutation(self.n)
        for start in range(0, self.n, self.batch_size):
            idx = order[start:start + self.batch_size]
            yield pack_x_y_sample_weight(_take(self.x, idx), _take(self.y, idx),
                                         _take(self.w, idx))


def _is_arrays(x):
    if isinstance(x, dict):
        return all(_is_arrays(v) for v in x.values())
    if isinstance(x, (list, tuple)):
        return bool(x) and all(_is_arrays(v) for v in x)
    return isinstance(x, np.ndarray) or hasattr(x, "__array__") and hasattr(x, "shape")


def _take(x, idx):
    if x is None:
        return None
    if isinstance(x, dict):
        return {k: _take(v, idx) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_take(v, idx) for v in x)
    return np.asarray(x)[idx]
