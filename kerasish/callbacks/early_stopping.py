"""`EarlyStopping`: stop `fit` when a monitored quantity stops improving."""

import warnings

import numpy as np

from kerasish.callbacks._monitor import resolve_mode
from kerasish.callbacks.callback import Callback
from kerasish.utils.progbar import print_msg


class EarlyStopping(Callback):
    """Stop training when `monitor` has not improved for `patience` epochs.

    Keras 3 semantics: `wait` counts epochs without an improvement larger than
    `min_delta`; training stops when `wait >= patience` (never after the first
    epoch). With `restore_best_weights`, the best epoch's weights are put back in
    `on_train_end` whether or not training stopped early.

    Args:
        monitor: logs key to watch. Defaults to `"val_loss"`.
        min_delta: smallest change that counts as an improvement.
        patience: epochs without improvement before stopping.
        verbose: 0 silent, 1 prints when it stops and when it restores.
        mode: `"auto"`, `"min"` or `"max"`.
        baseline: training stops unless the model improves on this value
            (`wait` is reset only by epochs that beat both the baseline and the best).
        restore_best_weights: restore the weights of the best epoch at the end.
        start_from_epoch: epochs to ignore (warm-up) before monitoring.

    Raises:
        ValueError: `mode="auto"` and the direction of `monitor` cannot be inferred.
    """

    def __init__(self, monitor="val_loss", min_delta=0, patience=0, verbose=0, mode="auto",
                 baseline=None, restore_best_weights=False, start_from_epoch=0):
        super().__init__()
        self.monitor = monitor
        self.patience = patience
        self.verbose = verbose
        self.baseline = baseline
        self.restore_best_weights = restore_best_weights
        self.start_from_epoch = start_from_epoch
        self.mode = resolve_mode("EarlyStopping", monitor, mode)
        # Signed like Keras: subtracting it makes "improvement" mean "by more than |d|".
        self.min_delta = -abs(min_delta) if self.mode == "min" else abs(min_delta)
        self.wait = 0
        self.stopped_epoch = 0
        self.best_weights = None
        self.best_epoch = 0
        self.best = np.inf if self.mode == "min" else -np.inf

    def _is_improvement(self, value, reference):
        if self.mode == "min":
            return value - self.min_delta < reference
        return value - self.min_delta > reference

    def on_train_begin(self, logs=None):
        # Allow instances to be re-used.
        self.wait = 0
        self.stopped_epoch = 0
        self.best_weights = None
        self.best_epoch = 0
        self.best = np.inf if self.mode == "min" else -np.inf

    def _weights(self):
        return [np.array(w, copy=True) for w in self.model.get_weights()]

    def on_epoch_end(self, epoch, logs=None):
        current = self.get_monitor_value(logs)
        if current is None or epoch < self.start_from_epoch:
            return
        if self.restore_best_weights and self.best_weights is None:
            # Until something improves, the first monitored epoch is the best.
            self.best_weights = self._weights()
            self.best_epoch = epoch
        self.wait += 1
        if self._is_improvement(current, self.best):
            self.best = current
            self.best_epoch = epoch
            if self.restore_best_weights:
                self.best_weights = self._weights()
            if self.baseline is None or self._is_improvement(current, self.baseline):
                self.wait = 0
            return
        if self.wait >= self.patience and epoch > 0:
            self.stopped_epoch = epoch
            self.model.stop_training = True

    def on_train_end(self, logs=None):
        if self.stopped_epoch > 0 and self.verbose > 0:
            print_msg(f"Epoch {self.stopped_epoch + 1}: early stopping")
        if self.restore_best_weights and self.best_weights is not None:
            if self.verbose > 0:
                print_msg("Restoring model weights from the end of the best epoch: "
                          f"{self.best_epoch + 1}.")
            self.model.set_weights(self.best_weights)

    def get_monitor_value(self, logs):
        logs = logs or {}
        value = logs.get(self.monitor)
        if value is None:
            warnings.warn(f"Early stopping conditioned on metric `{self.monitor}` which is "
                          f"not available. Available metrics are: {','.join(logs)}",
                          stacklevel=3)
        return value
