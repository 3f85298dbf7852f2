"""Public save/load entry points (what `Sequential.save/save_weights/load_weights/
to_json` and `kerasish.models.load_model/model_from_json` call).

Files cross with Keras: `.keras` is Keras 3's zip format (keras_format), `.h5`/`.hdf5`
full models use the legacy Keras layout,
`save_weights` writes Keras 3's native `.weights.h5` layout or, for other `.h5`
names, the tf.keras 2 weights-only layout; `load_weights` detects the layout from the
file's content. Every save is atomic (see `atomic`); every load validates the file
first (see `h5_safety`).
"""

import logging
import os

from kerasish.saving import atomic, h5_format, h5_safety, json_utils, keras_format, keras_zip, \
    serialization, weights_io

logger = logging.getLogger("kerasish")

_H5_SUFFIXES = (".h5", ".hdf5")
# Keras's compile config keys, in the order Keras writes training_config.
_TRAINING_KEYS = ("loss", "loss_weights", "metrics", "weighted_metrics", "run_eagerly",
                  "steps_per_execution", "jit_compile")
# tf.keras 2 optimizer config keys that Keras 3 (and kerasish) no longer take.
_LEGACY_OPTIMIZER_KEYS = ("decay", "is_legacy_optimizer", "jit_compile")


def _path(filepath, what):
    if hasattr(filepath, "__fspath__") or isinstance(filepath, str):
        return os.fspath(filepath)
    raise TypeError(f"{what}: expected `filepath` to be a str or os.PathLike; received "
                    f"{type(filepath).__name__}")


def _training_config(model):
    """Keras's `training_config`: compile args plus the optimizer's class and config."""
    optimizer = getattr(model, "optimizer", None)
    compile_config = getattr(model, "_compile_config", None)
    if optimizer is None or not compile_config:
        return None
    compile_config = dict(compile_config)
    config = {k: compile_config.pop(k, None) for k in _TRAINING_KEYS}
    config["run_eagerly"] = bool(config["run_eagerly"])
    config["steps_per_execution"] = config["steps_per_execution"] or 1
    config["jit_compile"] = bool(config["jit_compile"])
    compile_config.pop("optimizer", None)  # saved as optimizer_config below
    config.update(compile_config)
    config = serialization.serialize_object(config)
    config["optimizer_config"] = {
        "class_name": serialization.get_registered_name(optimizer),
        "config": serialization.serialize_object(optimizer.get_config())}
    return config


def save_model(model, filepath, overwrite=True, include_optimizer=True, **kwargs):
    """Save architecture, weights and (optionally) optimizer state: Keras 3's `.keras`
    zip or the legacy Keras `.h5`, chosen by the extension.

    Args:
        model: a kerasish Sequential or Functional model.
        filepath: path ending in `.keras`, `.h5` or `.hdf5`.
        overwrite: if False and the file exists, raise FileExistsError.
        include_optimizer: also save the optimizer's variables (and, for `.h5`, the
            `training_config`; a `.keras` file always has its compile config).
        zipped: Keras's argument; only True (the default, a `.keras` zip) is supported.
    """
    path = _path(filepath, "save_model")
    zipped = kwargs.pop("zipped", None)
    kwargs.pop("save_format", None)  # deprecated in Keras 3: the extension decides
    if kwargs:
        raise ValueError(f"save_model: the following argument(s) are not supported: "
                         f"{sorted(kwargs)}")
    if zipped is False:
        raise ValueError("save_model: zipped=False (an unzipped directory) is not "
                         "supported; save to a .keras file")
    if path.lower().endswith(".keras"):
        keras_format.save_model(model, path, overwrite, include_optimizer)
        return
    if not path.lower().endswith(_H5_SUFFIXES):
        raise ValueError(f"save_model: invalid filepath extension for saving; expected a "
                         f"filepath ending in .keras (Keras 3's format, recommended), .h5 "
                         f"or .hdf5; received filepath={path}")
    config = serialization.model_config(model)
    layers = weights_io.legacy_layers(model)
    training = _training_config(model) if include_optimizer else None
    optimizer = weights_io.optimizer_weights(getattr(model, "optimizer", None)) \
        if include_optimizer else None
    extra = weights_io.extra_state(model)
    with atomic.atomic_h5(path, overwrite) as f:
        h5_format.write_model_file(f, config, layers, training, optimizer)
        h5_format.write_extra_state(f, extra)


def _optimizer_from_config(config, custom_objects, source):
    from kerasish import optimizers

    if not isinstance(config, dict) or not isinstance(config.get("class_name"), str):
        raise ValueError(f"Invalid optimizer_config in {source}: {str(config)[:200]}")
    inner = dict(config.get("config") or {})
    if "lr" in inner and "learning_rate" not in inner:
        inner["learning_rate"] = inner.pop("lr")
    for key in _LEGACY_OPTIMIZER_KEYS:
        if key in inner:
            value = inner.pop(key)
            if key == "decay" and value:
                logger.warning("%s: optimizer argument decay=%s is no longer supported "
                               "and is ignored.", source, value)
    cls = serialization.get_registered_object(config["class_name"], custom_objects)
    if cls is not None:
        return cls.from_config(inner)
    return optimizers.deserialize({"class_name": config["class_name"], "config": inner})


def _compile_object(obj, custom_objects):
    """A saved loss/metric: registered custom objects are rebuilt, the rest passed on."""
    if isinstance(obj, dict) and isinstance(obj.get("class_name"), str):
        cls = serialization.get_registered_object(obj["class_name"], custom_objects)
        if cls is not None:
            return cls.from_config(obj.get("config") or {}) if hasattr(cls, "from_config") \
                else cls
        if obj["class_name"] == "MeanMetricWrapper":  # tf.keras 2 metric by user name
            return (obj.get("config") or {}).get("name") or obj
        return obj
    if isinstance(obj, str):
        return serialization.get_registered_object(obj, custom_objects) or obj
    if isinstance(obj, list):
        return [_compile_object(o, custom_objects) for o in obj]
    return obj


def _compile_from_training_config(model, training, custom_objects, source):
    if not isinstance(training, dict):
        raise ValueError(f"Invalid training_config in {source}: expected a JSON object; "
                         f"received {type(training).__name__}")
    metrics = training.get("metrics")
    # tf.keras 2 stores one metric list per output: [[...]] for a single output.
    if isinstance(metrics, list) and len(metrics) == 1 and isinstance(metrics[0], list):
        metrics = metrics[0]
    kwargs = {"optimizer": _optimizer_from_config(training.get("optimizer_config"),
                                                  custom_objects, source),
              "loss": _compile_object(training.get("loss"), custom_objects)}
    if metrics:
        kwargs["metrics"] = _compile_object(metrics, custom_objects)
    for key in ("loss_weights", "weighted_metrics"):
        if training.get(key) is not None:
            kwargs[key] = _compile_object(training[key], custom_objects)
    try:
        model.compile(**kwargs)
    except (ValueError, TypeError, KeyError) as e:
        raise ValueError(f"Cannot compile the model loaded from {source} with its saved "
                         f"training_config ({e}); pass compile=False to load it "
                         "uncompiled") from e


def _is_keras_zip(path):
    """A `.keras` archive by content, or by name when the file is not HDF5 either."""
    if keras_zip.is_zip(path):
        return True
    if not path.lower().endswith(".keras"):
        return False
    try:
        with open(path, "rb") as fh:
            return fh.read(8) != b"\x89HDF\r\n\x1a\n"
    except OSError:
        return True  # keras_zip names the problem


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    """Load a model saved by `save_model` (or by Keras 3 as `.keras`/`.h5`, or by
    tf.keras 2 as `.h5`); the format is detected from the file's content.

    Args:
        filepath: the `.keras` or `.h5` file.
        custom_objects: {name: class} for custom layers, losses, optimizers.
        compile: compile with the saved training/compile config and restore the
            optimizer.
        safe_mode: Keras's flag, accepted and without effect: in Keras it allows a
            `Lambda` layer's marshaled code when False; kerasish has no Lambda layer
            and refuses `Lambda` configs (and `__lambda__` entries) by name in both
            modes, so no code from a file is ever run.

    Returns:
        The model; compiled when the file has a training config and compile=True.
    """
    source = _path(filepath, "load_model")
    if _is_keras_zip(source):
        return keras_format.load_model(source, custom_objects, compile, safe_mode)
    with h5_safety.open_for_read(source) as f:
        data = h5_format.read_model_file(f, source)
        extra = h5_format.read_extra_state(f, source)
    try:
        with weights_io.build_budget(source, weights_io.file_weight_bytes(data["weights"])):
            model = serialization.model_from_config(data["model_config"], custom_objects,
                                                    source)
    except (ValueError, TypeError, KeyError) as e:
        if source in str(e):
            raise
        raise ValueError(f"Cannot rebuild the model saved in {source}: {e}") from e
    weights_io.load_legacy(model, data["weights"], source)
    weights_io.restore_extra_state(model, extra)
    if not compile:
        return model
    if data["training_config"] is None:
        logger.warning("No training configuration found in %s, so the model was *not* "
                       "compiled. Compile it manually.", source)
        return model
    _compile_from_training_config(model, data["training_config"], custom_objects, source)
    if data["optimizer_weights"]:
        weights_io.restore_optimizer(model, data["optimizer_weights"], source)
    return model


def save_weights(model, filepath, overwrite=True):
    """Save the weights: `.weights.h5` in Keras 3's native layout (with the optimizer
    state once it exists), other `.h5`/`.hdf5` names in the legacy weights-only one."""
    path = _path(filepath, "save_weights")
    lower = path.lower()
    if lower.endswith(".weights.h5"):
        optimizer = getattr(model, "optimizer", None)
        opt = None
        if optimizer is not None:
            named = weights_io.optimizer_weights(optimizer) or []
            opt = (weights_io.optimizer_name(optimizer), [v for _, v in named])
        layers, extra = weights_io.native_layers(model), weights_io.extra_state(model)
        with atomic.atomic_h5(path, overwrite) as f:
            h5_format.write_native_weights(f, model.name, layers, opt)
            h5_format.write_extra_state(f, extra)
    elif lower.endswith(_H5_SUFFIXES):
        layers, extra = weights_io.legacy_layers(model), weights_io.extra_state(model)
        with atomic.atomic_h5(path, overwrite) as f:
            h5_format.write_model_weights(f, layers)
            h5_format.write_extra_state(f, extra)
    else:
        raise ValueError(f"save_weights: the filename must end in .weights.h5 (or .h5 / "
                         f".hdf5 for the legacy layout); received filepath={path}")


def load_weights(model, filepath, skip_mismatch=False, by_name=False):
    """Load weights saved by `save_weights`/`save_model` or by Keras, into `model`.

    Args:
        model: a built kerasish model.
        filepath: a `.weights.h5` (native), a legacy `.h5` or a `.keras` file; the
            layout is detected.
        skip_mismatch: warn and skip weights whose count or shape differ.
        by_name: match layers by name instead of by position.
    """
    source = _path(filepath, "load_weights")
    if _is_keras_zip(source):
        keras_format.load_weights(model, source, skip_mismatch, by_name)
        return
    with h5_safety.open_for_read(source) as f:
        native = h5_format.is_native_layout(f)
        if native:
            data = h5_format.read_native_weights(f, source)
        else:
            data = h5_format.read_model_weights(h5_format.weights_root(f, source), source)
            data["optimizer"] = None
        extra = h5_format.read_extra_state(f, source)
    if native:
        weights_io.load_native(model, data, source, skip_mismatch, by_name)
        if data["optimizer"] is not None and getattr(model, "optimizer", None) is not None:
            name = weights_io.optimizer_name(model.optimizer)
            saved = [(f"{name}/{i}", a) for i, a in enumerate(data["optimizer"][1])]
            weights_io.restore_optimizer(model, saved, source)
    else:
        weights_io.load_legacy(model, data, source, skip_mismatch, by_name)
    weights_io.restore_extra_state(model, extra)


def model_to_json(model, **kwargs):
    """The architecture as JSON (legacy form, like the h5 `model_config`)."""
    config = serialization.model_config(model)
    # "module" routes Keras 3's model_from_json to keras.Sequential; the layer entries
    # stay in the legacy form, which its Sequential.from_config reads.
    out = {"module": "keras", "class_name": config["class_name"], "config": config["config"],
           "registered_name": None, "keras_version": h5_format.KERAS_VERSION,
           "backend": h5_format.BACKEND}
    if out["class_name"] != "Sequential":
        out["module"], out["registered_name"] = None, out["class_name"]
    return json_utils.dumps(out, **kwargs)


def model_from_json(json_string, custom_objects=None):
    """A fresh (uncompiled) model from `model_to_json` or Keras's `to_json` output."""
    if not isinstance(json_string, (str, bytes, bytearray)):
        raise TypeError(f"model_from_json: expected a JSON string; received "
                        f"{type(json_string).__name__}")
    config = json_utils.loads(json_string, "the model JSON")
    with weights_io.build_budget("the model JSON"):  # the total limit only
        return serialization.model_from_config(config, custom_objects, "the model JSON")
