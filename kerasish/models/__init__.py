"""kerasish.models: Model (functional), Sequential, load_model, save_model, model_from_json,
clone_model."""

from kerasish.models.cloning import clone_model
from kerasish.models.functional import Functional
from kerasish.models.model import Model
from kerasish.models.sequential import Sequential


def load_model(filepath, custom_objects=None, compile=True, safe_mode=True):
    """Load a model saved by `model.save(...)` as `.keras` or `.h5` (by kerasish,
    Keras 3 or tf.keras 2)."""
    from kerasish import saving

    return saving.load_model(filepath, custom_objects=custom_objects, compile=compile,
                             safe_mode=safe_mode)


def save_model(model, filepath, overwrite=True, **kwargs):
    """`keras.models.save_model`: `.keras` or `.h5`, by the extension."""
    from kerasish import saving

    saving.save_model(model, filepath, overwrite=overwrite, **kwargs)


def model_from_json(json_string, custom_objects=None):
    from kerasish import saving

    return saving.model_from_json(json_string, custom_objects=custom_objects)


__all__ = ["Sequential", "Model", "Functional", "load_model", "save_model", "model_from_json",
           "clone_model"]
