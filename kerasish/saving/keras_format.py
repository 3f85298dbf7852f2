"""Keras 3's native `.keras` format: save, load, and load_weights from one.

config.json is `serialize_keras_object(model)` (keras_objects), metadata.json the
Keras version and date, model.weights.h5 the native `.weights.h5` layout that
`save_weights` writes (layers, nested models, the optimizer's variables, plus
kerasish's extra layer state, which Keras ignores). Reading goes through
`keras_zip` (the archive) and `h5_safety` (the weights, extracted to a private
temporary file); messages name the `.keras` file.
"""

import datetime
import io
import json
import os
import shutil
import tempfile

import h5py

from kerasish.saving import h5_format, h5_safety, json_utils, keras_assets, keras_objects, \
    keras_revive, keras_zip, serialization, weights_io
from kerasish.utils import stale_temps


def _weights_bytes(model, include_optimizer):
    optimizer = getattr(model, "optimizer", None) if include_optimizer else None
    opt = None
    if optimizer is not None:
        named = weights_io.optimizer_weights(optimizer) or []
        opt = (weights_io.optimizer_name(optimizer), [v for _, v in named])
    buffer = io.BytesIO()
    with h5py.File(buffer, "w") as f:
        h5_format.write_native_weights(f, model.name, weights_io.native_layers(model), opt)
        h5_format.write_extra_state(f, weights_io.extra_state(model))
    return buffer.getvalue()


def save_model(model, filepath, overwrite=True, include_optimizer=True):
    """Write `model` as a `.keras` archive (atomically). `include_optimizer=False`
    leaves out the optimizer's variables (the compile config stays)."""
    config = keras_objects.model_dict(model, compile_config=True)
    config_json = json_utils.dumps(config)
    metadata_json = json.dumps({
        "keras_version": h5_format.KERAS_VERSION,
        "date_saved": datetime.datetime.now().strftime("%Y-%m-%d@%H:%M:%S")})
    keras_zip.write_archive(filepath, config_json, metadata_json,
                            _weights_bytes(model, include_optimizer), overwrite,
                            keras_assets.collect(model))


def _model_config(zf, source):
    config = keras_zip.read_json(zf, keras_zip.CONFIG, source)
    if keras_zip.METADATA in zf.namelist():
        metadata = keras_zip.read_json(zf, keras_zip.METADATA, source)
        if not isinstance(metadata, dict):
            raise ValueError(f"Invalid metadata.json in {source}: expected a JSON object; "
                             f"received {type(metadata).__name__}")
    if not isinstance(config, dict) or not isinstance(config.get("class_name"), str) \
            or not isinstance(config.get("config"), dict):
        raise ValueError(f"Invalid config.json in {source}: expected a JSON object with a "
                         f"string 'class_name' and a 'config' object; received "
                         f"{str(config)[:200]}")
    return config


def _rebuild(config, custom_objects, compile, source):
    where = f"config.json in {source}"
    objects = serialization.merged_custom_objects(custom_objects)
    try:
        cls, category = keras_revive.resolve_class(config, objects, where)
        if category != "models":
            raise ValueError(f"Cannot load {source}: config.json describes a "
                             f"'{config['class_name']}', not a model")
        model = keras_revive.revive_model(config, objects, where, compile=False)
    except (ValueError, TypeError, KeyError) as e:
        if source in str(e):
            raise
        raise ValueError(f"Cannot rebuild the model saved in {source}: {e}") from e
    except RecursionError as e:
        raise ValueError(f"Cannot rebuild the model saved in {source}: config.json is "
                         "nested too deeply") from e
    if compile and config.get("compile_config"):
        keras_revive.compile_from_config(model, config["compile_config"], objects, where)
    return model


_TEMP_PREFIX = "kerasish-keras-"


class _TempDir:
    """A private (0o700) directory at a given path, removed by cleanup()."""

    def __init__(self, path):
        os.mkdir(path, 0o700)
        self.name = path

    def cleanup(self):
        shutil.rmtree(self.name, ignore_errors=True)


class _Weights:
    """model.weights.h5 of an open archive, extracted to a private temporary directory
    for as long as the block runs (lazily read datasets reopen it by name). The
    directory is named for this process (`kerasish-keras-<pid>-<hex>`), and each load
    first removes those of processes that are gone (a SIGKILLed load cleans nothing)."""

    def __init__(self, zf, source):
        self.zf, self.source = zf, source
        self.label = f"{source} (member {keras_zip.WEIGHTS})"

    def __enter__(self):
        root = tempfile.gettempdir()
        stale_temps.remove_dead(root, _TEMP_PREFIX)
        self._dir = _TempDir(os.path.join(root, stale_temps.name(_TEMP_PREFIX)))
        self.path = os.path.join(self._dir.name, keras_zip.WEIGHTS)
        try:
            keras_zip.extract_weights(self.zf, self.path, self.source)
            with h5_safety.open_for_read(self.path) as f:
                if not h5_format.is_native_layout(f):
                    raise ValueError(f"Cannot load {self.label}: it is not in Keras 3's "
                                     "weights layout (no 'layers'/'vars' groups)")
                self.data = h5_format.read_native_weights(f, self.label)
                self.extra = h5_format.read_extra_state(f, self.label)
        except (OSError, ValueError) as e:
            self._dir.cleanup()
            raise self._renamed(e) from e
        except BaseException:  # KeyboardInterrupt in a long-lived process: no leftovers
            self._dir.cleanup()
            raise
        return self

    def _renamed(self, e):
        """The error with the temporary path replaced by the archive's name."""
        message = str(e)
        if self.path not in message:
            return e
        message = message.replace(self.path, self.label)
        return OSError(message) if isinstance(e, OSError) else ValueError(message)

    def __exit__(self, *exc):
        self._dir.cleanup()

    def load_into(self, model, optimizer=True, skip_mismatch=False, by_name=False):
        try:
            weights_io.load_native(model, self.data, self.label, skip_mismatch, by_name)
            saved = self.data["optimizer"]
            if optimizer and saved is not None and getattr(model, "optimizer", None):
                name = weights_io.optimizer_name(model.optimizer)
                named = [(f"{name}/{i}", a) for i, a in enumerate(saved[1])]
                weights_io.restore_optimizer(model, named, self.label)
            weights_io.restore_extra_state(model, self.extra)
        except (OSError, ValueError) as e:
            renamed = self._renamed(e)
            if renamed is e:
                raise
            raise renamed from e


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    """A model from a `.keras` file written by kerasish or Keras 3: architecture,
    weights and, with `compile`, the compile config and the optimizer's state.
    `safe_mode` changes nothing: kerasish has no Lambda layer and runs no code from a
    file in either mode (Lambda configs and marshaled lambdas are refused by name)."""
    source = os.fspath(filepath)
    with keras_zip.open_archive(source) as zf:
        config = _model_config(zf, source)
        with _Weights(zf, source) as weights:  # shapes known before the model is built
            with weights_io.build_budget(source, weights_io.file_weight_bytes(weights.data)):
                model = _rebuild(config, custom_objects, compile, source)
            weights.load_into(model, optimizer=compile)
        keras_assets.restore(zf, model, source)  # after the weights, as Keras 3
    return model


def load_weights(model, filepath, skip_mismatch=False, by_name=False):
    """`model.load_weights("x.keras")`: the layer weights of a `.keras` file (as Keras,
    the optimizer state too when the model has a built optimizer)."""
    source = os.fspath(filepath)
    with keras_zip.open_archive(source) as zf:
        with _Weights(zf, source) as weights:
            optimizer = getattr(model, "optimizer", None)
            weights.load_into(model, optimizer=bool(optimizer is not None and
                                                    getattr(optimizer, "built", False)),
                              skip_mismatch=skip_mismatch, by_name=by_name)
