"""Callbacks that change `model.optimizer.learning_rate`: LearningRateScheduler and
ReduceLROnPlateau."""

import warnings

import numpy as np

from kerasish.callbacks._monitor import resolve_mode
from kerasish.callbacks.callback import Callback
from kerasish.utils.progbar import print_msg


def _optimizer(callback):
    optimizer = getattr(callback.model, "optimizer", None)
    if optimizer is None or not hasattr(optimizer, "learning_rate"):
        raise ValueError(f"{type(callback).__name__}: optimizer must have a "
                         '"learning_rate" attribute; compile the model first.')
    return optimizer


class LearningRateScheduler(Callback):
    """Set the learning rate at the start of every epoch.

    Args:
        schedule: `schedule(epoch, lr) -> float` (epoch 0-based, lr the current
            rate); a one-argument `schedule(epoch)` also works.
        verbose: 0 quiet, 1 prints each update.

    The rate is also added to the epoch logs as `learning_rate`.
    """

    def __init__(self, schedule, verbose=0):
        super().__init__()
        self.schedule = schedule
        self.verbose = verbose

    def on_epoch_begin(self, epoch, logs=None):
        optimizer = _optimizer(self)
        try:
            lr = self.schedule(epoch, float(optimizer.learning_rate))
        except TypeError:  # the old one-argument API
            lr = self.schedule(epoch)
        if not isinstance(lr, (float, np.floating)):
            raise ValueError("The output of the `schedule` function should be a float. "
                             f"Got: {lr}")
        optimizer.learning_rate = float(lr)
        if self.verbose > 0:
            print_msg(f"\nEpoch {epoch + 1}: LearningRateScheduler setting learning "
                      f"rate to {lr}.")

    def on_epoch_end(self, epoch, logs=None):
        if logs is not None:
            logs["learning_rate"] = float(_optimizer(self).learning_rate)


class ReduceLROnPlateau(Callback):
    """Multiply the learning rate by `factor` when `monitor` stops improving.

    Args:
        monitor: logs key to watch. Defaults to `"val_loss"`.
        factor: `new_lr = max(lr * factor, min_lr)`; must be < 1.
        patience: epochs without improvement before reducing.
        verbose: 0 quiet, 1 prints each reduction.
        mode: `"auto"`, `"min"` or `"max"`.
        min_delta: an improvement must beat the best by more than this.
        cooldown: epochs to wait after a reduction before counting again.
        min_lr: lower bound on the learning rate.

    The rate is also added to the epoch logs as `learning_rate`.

    Raises:
        ValueError: `factor >= 1`, or `mode="auto"` with an unknown direction.
    """

    def __init__(self, monitor="val_loss", factor=0.1, patience=10, verbose=0, mode="auto",
                 min_delta=1e-4, cooldown=0, min_lr=0.0):
        super().__init__()
        if factor >= 1.0:
            raise ValueError("ReduceLROnPlateau does not support a factor >= 1.0. "
                             f"Received factor={factor}")
        self.monitor = monitor
        self.factor = factor
        self.min_lr = min_lr
        self.min_delta = min_delta
        self.patience = patience
        self.verbose = verbose
        self.cooldown = cooldown
        self.mode = resolve_mode("ReduceLROnPlateau", monitor, mode)
        self._reset()

    def _reset(self):
        self.best = np.inf if self.mode == "min" else -np.inf
        self.cooldown_counter = 0
        self.wait = 0

    def _improved(self, current):
        if self.mode == "min":
            return current < self.best - self.min_delta
        return current > self.best + self.min_delta

    def in_cooldown(self):
        return self.cooldown_counter > 0

    def on_train_begin(self, logs=None):
        self._reset()

    def on_epoch_end(self, epoch, logs=None):
        logs = {} if logs is None else logs
        optimizer = _optimizer(self)
        logs["learning_rate"] = float(optimizer.learning_rate)
        current = logs.get(self.monitor)
        if current is None:
            warnings.warn(f"Learning rate reduction is conditioned on metric "
                          f"`{self.monitor}` which is not available. Available metrics "
                          f"are: {','.join(logs)}.", stacklevel=3)
            return
        if self.in_cooldown():
            self.cooldown_counter -= 1
            self.wait = 0
        if self._improved(current):
            self.best = current
            self.wait = 0
        elif not self.in_cooldown():
            self.wait += 1
            if self.wait >= self.patience:
                old_lr = float(optimizer.learning_rate)
                if old_lr > np.float32(self.min_lr):
                    new_lr = max(old_lr * self.factor, self.min_lr)
                    optimizer.learning_rate = new_lr
                    if self.verbose > 0:
                        print_msg(f"\nEpoch {epoch + 1}: ReduceLROnPlateau reducing "
                                  f"learning rate to {new_lr}.")
                    self.cooldown_counter = self.cooldown
                    self.wait = 0
