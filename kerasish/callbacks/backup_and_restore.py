"""`BackupAndRestore`: resume an interrupted `fit` at the right epoch."""

import json
import os
import shutil

from kerasish.callbacks.callback import Callback

_WEIGHTS = "latest.weights.h5"
_METADATA = "training_metadata.json"


def _write_json_atomically(path, data):
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(data, f)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)  # readers see the old file or the new one, never half


def _read_metadata(path):
    """{"epoch": int >= 0, "batch": int >= 0, "loader": dict or None}, or ValueError
    naming the file."""
    try:
        with open(path) as f:
            meta = json.load(f)
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise ValueError(f"BackupAndRestore: corrupt backup metadata {path}: not valid "
                         f"JSON ({e})") from e
    if not isinstance(meta, dict):
        raise ValueError(f"BackupAndRestore: corrupt backup metadata {path}: expected a "
                         f"JSON object; received {type(meta).__name__}")
    for key in ("epoch", "batch"):
        value = meta.get(key, 0)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"BackupAndRestore: corrupt backup metadata {path}: expected "
                             f"'{key}' an int >= 0; received {value!r}")
    if "epoch" not in meta:
        raise ValueError(f"BackupAndRestore: corrupt backup metadata {path}: no 'epoch'")
    loader = meta.get("loader")
    if loader is not None and not isinstance(loader, dict):
        raise ValueError(f"BackupAndRestore: corrupt backup metadata {path}: expected "
                         f"'loader' an object; received {type(loader).__name__}")
    return meta


class BackupAndRestore(Callback):
    """Back up the weights and the epoch count so an interrupted `fit` can resume.

    At each save it writes `backup_dir/latest.weights.h5` (`model.save_weights`) and
    then `backup_dir/training_metadata.json` (`{"epoch": E, "batch": B, "loader": S}`,
    E = epochs completed, S = the shuffling state of fit's DataLoader so a resumed
    `shuffle=True` run draws the same orders), the JSON atomically. At `on_train_begin` it loads both if present and
    sets `model._initial_epoch = E`, so `fit` restarts at epoch E. A finished `fit`
    deletes the backup; an interrupted one (exception, KeyboardInterrupt) keeps it.

    Args:
        backup_dir: directory for the backup; keep it for this callback alone.
        save_freq: `"epoch"`, or an int N to also save every N training batches (the
            epoch being trained is then redone on resume).
        double_checkpoint: keep the previous backup as `_latest.weights.h5` /
            `_training_metadata.json`, used if the latest one cannot be read.
        delete_checkpoint: delete the backup files when `fit` completes. Unlike Keras,
            only the files this callback writes are removed, and the directory only if
            it is then empty.

    Raises:
        ValueError: empty `backup_dir` or a bad `save_freq`; at `on_train_begin`, corrupt
            metadata (not JSON, a negative epoch, ...), naming the file.
    """

    chief_only = True  # under kerasish.distribute: runs on rank 0 only

    def __init__(self, backup_dir, save_freq="epoch", double_checkpoint=False,
                 delete_checkpoint=True):
        super().__init__()
        if not backup_dir:
            raise ValueError("BackupAndRestore: empty `backup_dir` argument passed")
        is_int = isinstance(save_freq, int) and not isinstance(save_freq, bool)
        if save_freq != "epoch" and not (is_int and save_freq > 0):
            raise ValueError("BackupAndRestore: invalid value for argument `save_freq`. "
                             f"Received: save_freq={save_freq!r}. Expected either 'epoch' "
                             "or a positive integer value.")
        self.backup_dir = os.fspath(backup_dir)
        self.save_freq = save_freq
        self.double_checkpoint = double_checkpoint
        self.delete_checkpoint = delete_checkpoint
        self._weights_path = os.path.join(self.backup_dir, _WEIGHTS)
        self._metadata_path = os.path.join(self.backup_dir, _METADATA)
        self._prev_weights_path = os.path.join(self.backup_dir, "_" + _WEIGHTS)
        self._prev_metadata_path = os.path.join(self.backup_dir, "_" + _METADATA)
        self._batches_since_save = 0
        self._last_batch_seen = 0
        self._current_epoch = 0

    def on_train_begin(self, logs=None):
        self._batches_since_save = 0
        self._last_batch_seen = 0
        try:
            self._load(self._weights_path, self._metadata_path)
        except (OSError, ValueError, KeyError):
            if not (self.double_checkpoint and os.path.exists(self._prev_weights_path)):
                raise
            self._load(self._prev_weights_path, self._prev_metadata_path)

    def _load(self, weights_path, metadata_path):
        self._current_epoch = 0
        if os.path.exists(weights_path):
            if not getattr(self.model, "built", True):
                raise ValueError(
                    "To use the BackupAndRestore callback, your model must be built "
                    f"before you call `fit()`. Model {self.model} is unbuilt. You can "
                    "build it beforehand by calling it on a batch of data.")
            self.model.load_weights(weights_path)
        if os.path.exists(metadata_path):
            meta = _read_metadata(metadata_path)
            loader = self._loader()
            if loader is not None and meta.get("loader") is not None:
                try:
                    loader.set_state(meta["loader"])
                except ValueError as e:
                    raise ValueError(f"BackupAndRestore: corrupt backup metadata "
                                     f"{metadata_path}: 'loader': {e}") from e
            self.model._initial_epoch = meta["epoch"]
            self._current_epoch = meta["epoch"]

    def _loader(self):
        """The training DataLoader, when the trainer exposes it (`model._train_loader`)
        and it has a shuffling state to keep (generators and Sequences do not)."""
        loader = getattr(self.model, "_train_loader", None)
        return loader if callable(getattr(loader, "get_state", None)) else None

    def on_epoch_begin(self, epoch, logs=None):
        self._current_epoch = epoch

    def on_epoch_end(self, epoch, logs=None):
        self._current_epoch = epoch + 1
        self._last_batch_seen = 0
        if self.save_freq == "epoch":
            self._save(epoch_end=True)

    def on_train_batch_end(self, batch, logs=None):
        if self.save_freq == "epoch":
            return
        if batch <= self._last_batch_seen:  # a new epoch started
            self._batches_since_save += batch + 1
        else:
            self._batches_since_save += batch - self._last_batch_seen
        self._last_batch_seen = batch
        if self._batches_since_save >= self.save_freq:
            self._batches_since_save = 0
            self._save(epoch_end=False)

    def _save(self, epoch_end):
        os.makedirs(self.backup_dir, exist_ok=True)
        if self.double_checkpoint:
            for src, dst in ((self._weights_path, self._prev_weights_path),
                             (self._metadata_path, self._prev_metadata_path)):
                if os.path.exists(src):
                    shutil.copyfile(src, dst)
        # Weights first: a crash in between leaves the old epoch count with newer
        # weights, which only repeats an epoch.
        self.model.save_weights(self._weights_path)
        meta = {"epoch": self._current_epoch, "batch": self._last_batch_seen}
        loader = self._loader()
        if loader is not None:
            # Mid-epoch, the epoch is redone on resume: keep the order it started with.
            meta["loader"] = loader.get_state(epoch_start=not epoch_end)
        _write_json_atomically(self._metadata_path, meta)

    def on_train_end(self, logs=None):
        if not self.delete_checkpoint:
            return
        for path in (self._weights_path, self._metadata_path, self._prev_weights_path,
                     self._prev_metadata_path):
            if os.path.exists(path):
                os.remove(path)
        try:
            os.rmdir(self.backup_dir)
        except OSError:  # missing, or holds other files: leave it
            pass
