"""`CallbackList`: calls every callback's hook, in order, with Keras-style logs."""

from kerasish.callbacks.callback import Callback
from kerasish.callbacks.history import History
from kerasish.callbacks.progbar_logger import ProgbarLogger


def _pythonify_logs(logs):
    """Sorted keys, values as Python floats where possible, nested dicts flattened
    (Keras's `pythonify_logs`; the sorting is why `accuracy` prints before `loss`)."""
    result = {}
    for key, value in sorted(logs.items()):
        if isinstance(value, dict):
            result.update(_pythonify_logs(value))
            continue
        try:
            value = float(value)
        except (TypeError, ValueError):
            pass
        result[key] = value
    return result


_TRAIN_BATCH_HOOKS = ("on_train_batch_begin", "on_train_batch_end", "on_batch_begin",
                      "on_batch_end")


def _overrides(cb, hook):
    return getattr(getattr(cb, hook), "__func__", None) is not getattr(Callback, hook)


class CallbackList(Callback):
    """Container that forwards each hook to a list of callbacks.

    A `History` and then a `ProgbarLogger` are appended after the user's callbacks
    (unless already present), so user callbacks can add keys to the epoch logs
    before they are recorded and printed.

    If a hook raises (an error in a user callback, a KeyboardInterrupt), the progress
    bar is closed and the exception propagates unchanged. The training loop should call
    `close()` when it is interrupted outside a hook.

    Args:
        callbacks: list of `Callback` instances, or None.
        add_history: append a `History` if none is in `callbacks`.
        add_progbar: append a `ProgbarLogger` if none is in `callbacks`.
        model: the model, passed to every callback's `set_model`.
        **params: `verbose`, `epochs`, `steps`, passed to every `set_params`.
    """

    def __init__(self, callbacks=None, add_history=False, add_progbar=False, model=None,
                 **params):
        super().__init__()
        if isinstance(callbacks, Callback):
            callbacks = [callbacks]
        self.callbacks = list(callbacks) if callbacks else []
        for i, cb in enumerate(self.callbacks):
            if not isinstance(cb, Callback):
                raise TypeError(
                    "CallbackList: expected callbacks to be kerasish.callbacks.Callback "
                    f"instances; received {type(cb).__name__} at index {i}")
        self._history = next((c for c in self.callbacks if isinstance(c, History)), None)
        self._progbar = next((c for c in self.callbacks if isinstance(c, ProgbarLogger)), None)
        if self._history is None and add_history:
            self._history = History()
            self.callbacks.append(self._history)
        if self._progbar is None and add_progbar:
            self._progbar = ProgbarLogger()
            self.callbacks.append(self._progbar)
        dist = getattr(model, "_distribution", None)  # hook: only rank 0 prints and writes
        if dist is not None and not dist.is_chief:
            self.callbacks = [cb for cb in self.callbacks if not getattr(cb, "chief_only", False)]
            self._progbar = None
        self.set_model(model)
        self.set_params(params)

    def __iter__(self):
        return iter(self.callbacks)

    def __len__(self):
        return len(self.callbacks)

    def append(self, callback):
        self.callbacks.append(callback)

    def set_params(self, params):
        self.params = params
        if params:
            for cb in self.callbacks:
                cb.set_params(params)

    def set_model(self, model):
        if model is None:
            return
        super().set_model(model)
        if self._history is not None:
            model.history = self._history
        for cb in self.callbacks:
            cb.set_model(model)

    def close(self):
        """Take any progress bar off the screen after an interruption. Idempotent."""
        for cb in self.callbacks:
            if isinstance(cb, ProgbarLogger):
                cb.close(aborted=True)

    def uses_train_batch_hooks(self):
        """Whether any callback has its own training batch hook. When none has, fit calls
        none and reads no per-batch logs (tf.keras's `_should_call_train_batch_hooks`):
        the reference MLP's step spent ~13 us of 400 there."""
        return any(_overrides(cb, hook) for cb in self.callbacks for hook in _TRAIN_BATCH_HOOKS)

    def _call(self, hook, *args):
        try:
            for cb in self.callbacks:
                getattr(cb, hook)(*args)
        except BaseException:
            self.close()
            raise

    def _call_batch(self, hook, batch, logs):
        # Keras passes batch logs by keyword: `def on_train_batch_end(self, batch, **kw)`
        # must keep working.
        try:
            for cb in self.callbacks:
                getattr(cb, hook)(batch, logs=logs)
        except BaseException:
            self.close()
            raise

    # training
    def on_train_begin(self, logs=None):
        self._call("on_train_begin", _pythonify_logs(logs or {}))

    def on_train_end(self, logs=None):
        self._call("on_train_end", _pythonify_logs(logs or {}))

    def on_epoch_begin(self, epoch, logs=None):
        self._call("on_epoch_begin", epoch, _pythonify_logs(logs or {}))

    def on_epoch_end(self, epoch, logs=None):
        # The caller's dict is updated in place, as in Keras: keys callbacks add (e.g.
        # `learning_rate`) are then also in the logs the trainer passes to on_train_end.
        if logs is None:
            logs = {}
        clean = _pythonify_logs(logs)
        logs.clear()
        logs.update(clean)
        self._call("on_epoch_end", epoch, logs)

    def on_batch_begin(self, batch, logs=None):
        self._call_batch("on_batch_begin", batch, _pythonify_logs(logs or {}))

    def on_batch_end(self, batch, logs=None):
        self._call_batch("on_batch_end", batch, _pythonify_logs(logs or {}))

    def on_train_batch_begin(self, batch, logs=None):
        self._call_batch("on_train_batch_begin", batch, _pythonify_logs(logs or {}))

    def on_train_batch_end(self, batch, logs=None):
        self._call_batch("on_train_batch_end", batch, _pythonify_logs(logs or {}))

    # evaluation
    def on_test_begin(self, logs=None):
        self._call("on_test_begin", _pythonify_logs(logs or {}))

    def on_test_end(self, logs=None):
        self._call("on_test_end", _pythonify_logs(logs or {}))

    def on_test_batch_begin(self, batch, logs=None):
        self._call_batch("on_test_batch_begin", batch, _pythonify_logs(logs or {}))

    def on_test_batch_end(self, batch, logs=None):
        self._call_batch("on_test_batch_end", batch, _pythonify_logs(logs or {}))

    # prediction: batch logs may hold output arrays, so they are passed as they are
    def on_predict_begin(self, logs=None):
        self._call("on_predict_begin", _pythonify_logs(logs or {}))

    def on_predict_end(self, logs=None):
        self._call("on_predict_end", _pythonify_logs(logs or {}))

    def on_predict_batch_begin(self, batch, logs=None):
        self._call_batch("on_predict_batch_begin", batch, logs or {})

    def on_predict_batch_end(self, batch, logs=None):
        self._call_batch("on_predict_batch_end", batch, logs or {})
