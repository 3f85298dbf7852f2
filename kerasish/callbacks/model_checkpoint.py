"""`ModelCheckpoint`: save the model or its weights during `fit`."""

import os
import warnings

from kerasish.callbacks._monitor import resolve_mode
from kerasish.callbacks.callback import Callback
from kerasish.utils.progbar import print_msg

_H5 = (".h5", ".hdf5")


def _check_filepath(filepath, save_weights_only):
    if save_weights_only and not filepath.endswith(_H5):
        raise ValueError(
            "ModelCheckpoint: when using `save_weights_only=True`, the filepath provided "
            "must end in `.weights.h5` (or legacy `.h5`). Received: "
            f"filepath={filepath}")
    if not save_weights_only and not filepath.endswith((".keras", *_H5)):
        raise ValueError(
            "ModelCheckpoint: the filepath provided must end in `.keras` (Keras model "
            f"format) or `.h5` (legacy HDF5). Received: filepath={filepath}")


class ModelCheckpoint(Callback):
    """Save the model (`model.save`) or its weights (`model.save_weights`) during fit.

    Args:
        filepath: str or PathLike ending in `.keras` or `.h5` (`.weights.h5` for
            weights). It is formatted with `epoch` (1-based), the epoch logs and, with
            an int `save_freq`, `batch` (1-based): `"ckpt-{epoch:02d}-{val_loss:.2f}.keras"`.
        monitor: logs key compared for `save_best_only`. Defaults to `"val_loss"`.
        verbose: 0 silent, 1 prints a message on each save decision.
        save_best_only: save only when `monitor` improves on the best so far.
        save_weights_only: write weights only.
        mode: `"auto"`, `"min"` or `"max"`: which way `monitor` improves.
        save_freq: `"epoch"` or an int N: save every N training batches.
        initial_value_threshold: the best value to beat at the start.

    Raises:
        ValueError: bad `save_freq` or filepath extension.
    """

    chief_only = True  # under kerasish.distribute: runs on rank 0 only

    def __init__(self, filepath, monitor="val_loss", verbose=0, save_best_only=False,
                 save_weights_only=False, mode="auto", save_freq="epoch",
                 initial_value_threshold=None):
        super().__init__()
        self.filepath = os.fspath(filepath)
        self.monitor = monitor
        self.verbose = verbose
        self.save_best_only = save_best_only
        self.save_weights_only = save_weights_only
        self.save_freq = save_freq
        self.best = initial_value_threshold
        is_int = isinstance(save_freq, int) and not isinstance(save_freq, bool)
        if save_freq != "epoch" and not (is_int and save_freq > 0):
            raise ValueError(
                f"ModelCheckpoint: unrecognized save_freq: {save_freq!r}. "
                "Expected save_freq are 'epoch' or positive integer values")
        _check_filepath(self.filepath, save_weights_only)
        # Only the comparison needs a direction; resolve it now so a bad name fails
        # before training rather than after the first epoch.
        self.mode = resolve_mode("ModelCheckpoint", monitor, mode) if save_best_only else mode
        self._batches_since_save = 0
        self._last_batch_seen = 0
        self._current_epoch = 0

    def _is_improvement(self, current):
        if self.best is None:
            return True
        return current < self.best if self.mode == "min" else current > self.best

    def on_epoch_begin(self, epoch, logs=None):
        self._current_epoch = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self._should_save_on_batch(batch):
            self._save_model(self._current_epoch, batch, logs)

    def on_epoch_end(self, epoch, logs=None):
        if self.save_freq == "epoch":
            self._save_model(epoch, None, logs)

    def _should_save_on_batch(self, batch):
        if self.save_freq == "epoch":
            return False
        if batch <= self._last_batch_seen:  # a new epoch started
            self._batches_since_save += batch + 1
        else:
            self._batches_since_save += batch - self._last_batch_seen
        self._last_batch_seen = batch
        if self._batches_since_save >= self.save_freq:
            self._batches_since_save = 0
            return True
        return False

    def _get_file_path(self, epoch, batch, logs):
        try:
            if batch is None or "batch" in logs:
                return self.filepath.format(epoch=epoch + 1, **logs)
            return self.filepath.format(epoch=epoch + 1, batch=batch + 1, **logs)
        except KeyError as e:
            raise KeyError(f'Failed to format this callback filepath: "{self.filepath}". '
                           f"Reason: {e}") from e

    def _should_save(self, epoch, logs, filepath):
        if not self.save_best_only:
            if self.verbose > 0:
                print_msg(f"\nEpoch {epoch + 1}: saving model to {filepath}")
            return True
        current = logs.get(self.monitor)
        if current is None:
            warnings.warn(f"Can save best model only with {self.monitor} available.",
                          stacklevel=3)
            return True
        best_str = "None" if self.best is None else f"{self.best:.5f}"
        if self._is_improvement(current):
            if self.verbose > 0:
                print_msg(f"\nEpoch {epoch + 1}: {self.monitor} improved from {best_str} "
                          f"to {current:.5f}, saving model to {filepath}")
            self.best = current
            return True
        if self.verbose > 0:
            print_msg(f"\nEpoch {epoch + 1}: {self.monitor} did not improve from {best_str}")
        return False

    def _save_model(self, epoch, batch, logs):
        logs = logs or {}
        filepath = self._get_file_path(epoch, batch, logs)
        if not self._should_save(epoch, logs, filepath):
            return
        if os.path.isdir(filepath):
            raise OSError("Please specify a non-directory filepath for ModelCheckpoint. "
                          f"Filepath used is an existing directory: {filepath}")
        dirname = os.path.dirname(filepath)
        if dirname:
            os.makedirs(dirname, exist_ok=True)
        if self.save_weights_only:
            self.model.save_weights(filepath)
        else:
            self.model.save(filepath, overwrite=True)
        if self.verbose > 0:
            print_msg(f"\nEpoch {epoch + 1}: finished saving model to {filepath}")
