"""Which way is better for a monitored quantity: shared by ModelCheckpoint,
EarlyStopping and ReduceLROnPlateau."""

import warnings

# Substrings of metric names that improve upwards (Keras's `_direction == "up"`).
_UP = ("acc", "auc", "precision", "recall", "f1", "iou", "r2_score", "cosine_similarity")
# Names that improve downwards: losses and error metrics.
_DOWN = ("loss", "crossentropy", "error", "mse", "mae", "mape", "msle", "rmse", "kld",
         "kl_divergence", "hinge", "poisson", "logcosh", "log_cosh")


def resolve_mode(owner, monitor, mode):
    """Return `"min"` or `"max"` for `monitor` under `mode`.

    Args:
        owner: the callback's class name, for messages.
        monitor: the logs key, e.g. `"val_loss"`.
        mode: `"auto"`, `"min"` or `"max"`; anything else warns and falls back to auto.

    Raises:
        ValueError: `mode="auto"` and the name tells neither way.
    """
    if mode not in ("auto", "min", "max"):
        warnings.warn(f"{owner} mode '{mode}' is unknown, fallback to auto mode.",
                      stacklevel=3)
        mode = "auto"
    if mode != "auto":
        return mode
    name = monitor.removeprefix("val_").lower()
    if name == "loss" or name.endswith("loss"):
        return "min"
    if any(part in name for part in _UP):
        return "max"
    if any(part in name for part in _DOWN):
        return "min"
    raise ValueError(
        f"{owner} callback received monitor={monitor}, but kerasish isn't able to "
        "automatically determine whether that metric should be maximized or minimized. "
        "Pass `mode='max'` in order to monitor based on the highest metric value, or "
        "pass `mode='min'` in order to use the lowest value.")
