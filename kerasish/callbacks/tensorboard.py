"""`TensorBoard`: Keras 3's event files, written with the `tensorboard` package alone.

Needs `pip install tensorboard` (the `tensorboard` extra); no TensorFlow. Events go
through tensorboard's own `EventFileWriter` (TFRecord framing with masked CRC32C) as
the summaries TF2's `tf.summary` writes: scalars as float32 tensors of the scalars
plugin, histograms as (k, 3) tensors of the histograms plugin, the model as the Keras
JSON of the graph plugin (its "conceptual graph").
"""

import math
import os
import time
import warnings

import numpy as np

from kerasish.callbacks.callback import Callback

__all__ = ["TensorBoard"]

_INSTALL = ("keras.callbacks.TensorBoard needs the `tensorboard` package (TensorFlow is "
            "not needed): pip install tensorboard, or pip install -e '.[tensorboard]' in "
            "a kerasish checkout")


def _tensorboard():
    """The tensorboard pieces used here, or an ImportError saying how to get them."""
    try:
        from tensorboard.compat.proto import event_pb2, summary_pb2
        from tensorboard.plugins.histogram.summary_v2 import histogram_pb
        from tensorboard.plugins.scalar.summary_v2 import scalar_pb
        from tensorboard.summary.writer.event_file_writer import EventFileWriter
        from tensorboard.util import tensor_util
    except ImportError as e:
        raise ImportError(f"{_INSTALL} (import failed: {e})") from None
    return {"event_pb2": event_pb2, "summary_pb2": summary_pb2, "scalar_pb": scalar_pb,
            "histogram_pb": histogram_pb, "EventFileWriter": EventFileWriter,
            "tensor_util": tensor_util}


def _refuse(name, value, why):
    raise ValueError(f"TensorBoard: {name} is not supported by kerasish ({why}); "
                     f"received {name}={value!r}")


def _scalar(value):
    """A log value as a float, or None when it is not a number (skipped)."""
    try:
        value = np.asarray(value)
        return float(value) if value.shape == () and value.dtype.kind in "biuf" else None
    except (TypeError, ValueError):
        return None


class TensorBoard(Callback):
    """Write Keras 3's TensorBoard logs: `log_dir/train` and `log_dir/validation`.

    Scalars (float32, as TensorFlow writes them): `epoch_<name>` at step = epoch for
    every training log and `epoch_learning_rate` in train/, the `val_*` logs without
    their prefix in validation/; with `update_freq` "batch" or N, `batch_<name>` (the
    running epoch means the callbacks receive) every N training batches, at step =
    the batch count since `fit` began (from 1); after each validation pass and each
    `evaluate`, `evaluation_<name>_vs_iterations` at step = optimizer.iterations in
    validation/; with `write_steps_per_second`, `batch_steps_per_second` and
    `epoch_steps_per_second`.

    Args:
        log_dir: the run's directory (created; use one per run).
        histogram_freq: every that many epochs (0: never), a histogram of every layer
            weight, tag `<weight path>/histogram`, step = epoch (non-finite values are
            left out, with a warning).
        write_graph: write the model's Keras JSON (tag "keras", step 0) that the Graphs
            dashboard draws as the conceptual graph, for Sequential and Functional
            models (there is no op graph to write).
        write_images: must be False (weight images are not supported).
        write_steps_per_second: also log training steps per second.
        update_freq: "epoch", "batch" (= 1) or an int N >= 1 (every N batches).
        profile_batch: must be 0 (no profiler; Keras refuses it on torch too).
        embeddings_freq, embeddings_metadata: must be 0 / None (no projector).

    Raises:
        ImportError: the `tensorboard` package is missing (the message says how to
            install it).
        ValueError: a bad argument, or one of the refused features asked for.
    """

    chief_only = True  # under kerasish.distribute: runs on rank 0 only

    @property
    def _tb(self):
        if self._tb_pieces is None:
            self._tb_pieces = _tensorboard()
        return self._tb_pieces

    def __init__(self, log_dir="logs", histogram_freq=0, write_graph=True, write_images=False,
                 write_steps_per_second=False, update_freq="epoch", profile_batch=0,
                 embeddings_freq=0, embeddings_metadata=None):
        super().__init__()
        self._tb_pieces = None  # imported at the first write: constructs without it, as Keras
        self.log_dir = os.fspath(log_dir)
        if isinstance(histogram_freq, bool) or not isinstance(histogram_freq, int) or \
                histogram_freq < 0:
            raise ValueError(f"TensorBoard: expected histogram_freq an int >= 0; received "
                             f"{histogram_freq!r}")
        if update_freq == "batch":
            update_freq = 1
        if update_freq != "epoch" and (isinstance(update_freq, bool) or
                                       not isinstance(update_freq, int) or update_freq < 1):
            raise ValueError(f"TensorBoard: expected update_freq 'epoch', 'batch' or an int "
                             f">= 1; received {update_freq!r}")
        if write_images:
            _refuse("write_images", write_images, "weights are not written as images")
        if profile_batch not in (0, None, "0", (0, 0)):
            _refuse("profile_batch", profile_batch, "there is no profiler")
        if embeddings_freq:
            _refuse("embeddings_freq", embeddings_freq, "there is no embedding projector")
        if embeddings_metadata is not None:
            _refuse("embeddings_metadata", embeddings_metadata,
                    "there is no embedding projector")
        self.histogram_freq = histogram_freq
        self.write_graph = bool(write_graph)
        self.write_images = False
        self.write_steps_per_second = bool(write_steps_per_second)
        self.update_freq = update_freq
        self._train_dir = os.path.join(self.log_dir, "train")
        self._val_dir = os.path.join(self.log_dir, "validation")
        self._writers = {}
        self._in_fit = False
        self._graph_pending = False
        self._global_train_batch = 0
        self._batch_start = self._epoch_start = 0.0
        self._epoch_start_iterations = 0

    # -- writing ----------------------------------------------------------------------

    def _writer(self, which):
        if which not in self._writers:  # created lazily: no empty event files
            path = self._train_dir if which == "train" else self._val_dir
            self._writers[which] = self._tb["EventFileWriter"](path, filename_suffix=".v2")
        return self._writers[which]

    def _emit(self, which, summary, step):
        event = self._tb["event_pb2"].Event(wall_time=time.time(), step=int(step),
                                           summary=summary)
        self._writer(which).add_event(event)

    def _scalars(self, which, logs, prefix, step, suffix=""):
        for name, value in logs.items():
            value = _scalar(value)
            if value is not None:
                self._emit(which, self._tb["scalar_pb"](f"{prefix}{name}{suffix}", value), step)

    def _flush(self):
        for writer in self._writers.values():
            writer.flush()

    def _close(self):
        for writer in self._writers.values():
            writer.close()
        self._writers = {}

    def _iterations(self):
        optimizer = getattr(self.model, "optimizer", None)
        return int(getattr(optimizer, "iterations", 0) or 0)

    def _learning_rate(self):
        optimizer = getattr(self.model, "optimizer", None)
        lr = getattr(optimizer, "learning_rate", None)
        if lr is None:
            return None
        if hasattr(lr, "numpy"):  # a Variable-like
            lr = lr.numpy()
        return _scalar(lr)

    def _write_model(self):
        """The graph plugin's Keras model summary (what Keras's keras_model_summary
        writes): the model's JSON as a string tensor."""
        if type(self.model).__name__ not in ("Sequential", "Functional"):
            return
        try:
            config = self.model.to_json()
        except Exception as e:  # noqa: BLE001 (as Keras: a model that can't serialize)
            warnings.warn(f"TensorBoard: the model failed to serialize as JSON, no graph "
                          f"written ({e})", RuntimeWarning, stacklevel=3)
            return
        pb = self._tb["summary_pb2"]
        metadata = pb.SummaryMetadata(plugin_data=pb.SummaryMetadata.PluginData(
            plugin_name="graph_keras_model", content=b"1"))
        tensor = self._tb["tensor_util"].make_tensor_proto(
            np.array(config.encode("utf-8"), dtype=object))
        summary = pb.Summary()
        summary.value.add(tag="keras", metadata=metadata, tensor=tensor)
        self._emit("train", summary, 0)

    def _write_histograms(self, epoch):
        for layer in getattr(self.model, "layers", []):
            for weight in layer.weights:
                values = np.asarray(weight.numpy(), dtype=np.float64).ravel()
                finite = values[np.isfinite(values)]
                name = weight.path.replace(":", "_")
                if finite.size != values.size:
                    warnings.warn(f"TensorBoard: weight {name} holds "
                                  f"{values.size - finite.size} non-finite values at epoch "
                                  f"{epoch}; its histogram leaves them out",
                                  RuntimeWarning, stacklevel=3)
                self._emit("train", self._tb["histogram_pb"](f"{name}/histogram", finite),
                           epoch)

    # -- hooks ------------------------------------------------------------------------

    def on_train_begin(self, logs=None):
        self._in_fit = True
        self._global_train_batch = 0
        self._graph_pending = self.write_graph

    def on_train_end(self, logs=None):
        self._in_fit = False
        self._close()

    def on_epoch_begin(self, epoch, logs=None):
        if self.write_steps_per_second:
            self._epoch_start = time.perf_counter()
            self._epoch_start_iterations = self._iterations()

    def on_train_batch_begin(self, batch, logs=None):
        self._global_train_batch += 1
        if self.write_steps_per_second:
            self._batch_start = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        if self._graph_pending:  # the model is built by now
            self._graph_pending = False
            self._write_model()
        if self.update_freq == "epoch" or self._global_train_batch % self.update_freq:
            return
        step = self._global_train_batch
        if self.write_steps_per_second:
            elapsed = time.perf_counter() - self._batch_start
            rate = 1.0 / elapsed if elapsed > 0 else math.inf
            self._scalars("train", {"steps_per_second": rate}, "batch_", step)
        if isinstance(logs, dict):
            self._scalars("train", logs, "batch_", step)

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        train = {k: v for k, v in logs.items() if not k.startswith("val_")}
        val = {k[4:]: v for k, v in logs.items() if k.startswith("val_")}
        lr = self._learning_rate()
        if lr is not None:
            train["learning_rate"] = lr
        if self.write_steps_per_second:
            elapsed = time.perf_counter() - self._epoch_start
            steps = self._iterations() - self._epoch_start_iterations
            train["steps_per_second"] = steps / elapsed if elapsed > 0 else math.inf
        self._scalars("train", train, "epoch_", epoch)
        if val:
            self._scalars("validation", val, "epoch_", epoch)
        if self.histogram_freq and epoch % self.histogram_freq == 0:
            self._write_histograms(epoch)
        self._flush()

    def on_test_end(self, logs=None):
        if getattr(self.model, "optimizer", None) is not None and logs:
            self._scalars("validation", logs, "evaluation_", self._iterations(),
                          suffix="_vs_iterations")
        if self._in_fit:
            self._flush()
        else:  # a standalone evaluate(): nothing else will close the file
            self._close()
