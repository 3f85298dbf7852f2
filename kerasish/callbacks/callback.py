"""The `Callback` base class: Keras 3's hooks (keras-reference.md §1.7)."""


class Callback:
    """Base class for objects that hook into `fit`, `evaluate` and `predict`.

    Override any hook. Every hook takes `logs`, a dict of Python floats with sorted
    keys (`loss`, each metric, `val_*` at epoch end when there is validation data).
    Batch logs hold the running epoch means.

    Attributes:
        params: dict with `verbose`, `epochs` and `steps`, set by `set_params`.
        model: the model being trained, set by `set_model`. Set
            `model.stop_training = True` to end `fit` after the current batch.
    """

    # Class-level defaults: subclasses that forget `super().__init__()` still work.
    params = None
    _model = None

    def __init__(self):
        self.params = None
        self._model = None

    def set_params(self, params):
        self.params = params

    def set_model(self, model):
        self._model = model

    @property
    def model(self):
        return self._model

    @model.setter
    def model(self, model):  # tf.keras 2 code assigns it directly
        self._model = model

    # training
    def on_train_begin(self, logs=None):
        """Called once at the start of `fit`."""

    def on_train_end(self, logs=None):
        """Called once at the end of `fit`, with the last epoch's logs."""

    def on_epoch_begin(self, epoch, logs=None):
        """Called at the start of each epoch; `epoch` is 0-based."""

    def on_epoch_end(self, epoch, logs=None):
        """Called at the end of each epoch. Keys added to `logs` here are seen by the
        callbacks that come later (History and ProgbarLogger are always last)."""

    def on_batch_begin(self, batch, logs=None):
        """Legacy alias of `on_train_batch_begin`."""

    def on_batch_end(self, batch, logs=None):
        """Legacy alias of `on_train_batch_end`."""

    def on_train_batch_begin(self, batch, logs=None):
        """Called before each training batch; `batch` is 0-based within the epoch."""
        self.on_batch_begin(batch, logs=logs)

    def on_train_batch_end(self, batch, logs=None):
        """Called after each training batch with the running epoch means."""
        self.on_batch_end(batch, logs=logs)

    # evaluation
    def on_test_begin(self, logs=None):
        """Called at the start of `evaluate` (and of fit's validation pass)."""

    def on_test_end(self, logs=None):
        """Called at the end of `evaluate` with its final logs."""

    def on_test_batch_begin(self, batch, logs=None):
        """Called before each evaluation batch."""

    def on_test_batch_end(self, batch, logs=None):
        """Called after each evaluation batch."""

    # prediction
    def on_predict_begin(self, logs=None):
        """Called at the start of `predict`."""

    def on_predict_end(self, logs=None):
        """Called at the end of `predict`."""

    def on_predict_batch_begin(self, batch, logs=None):
        """Called before each prediction batch."""

    def on_predict_batch_end(self, batch, logs=None):
        """Called after each prediction batch."""
