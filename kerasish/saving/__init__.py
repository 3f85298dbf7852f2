"""kerasish.saving: Keras-compatible checkpoints, written atomically, read safely.

`save_model/load_model` write and read Keras 3's `.keras` zip and the legacy Keras
HDF5 layout (`.h5`), both loadable by Keras 3's `keras.models.load_model`;
`save_weights/load_weights` also speak Keras 3's `.weights.h5`; custom layers
round-trip through `get_config` plus `custom_objects` or
`@register_keras_serializable()`. `serialize_keras_object`/`deserialize_keras_object`
use Keras 3's dict form.
"""

from kerasish.saving.saving_api import (
    load_model,
    load_weights,
    model_from_json,
    model_to_json,
    save_model,
    save_weights,
)
from kerasish.saving.keras_objects import serialize_keras_object
from kerasish.saving.keras_revive import deserialize_keras_object
from kerasish.saving.serialization import (
    custom_object_scope,
    get_custom_objects,
    get_registered_name,
    get_registered_object,
    register_keras_serializable,
    register_serializable,
)

__all__ = ["save_model", "load_model", "save_weights", "load_weights", "model_to_json",
           "model_from_json", "register_serializable", "register_keras_serializable",
           "custom_object_scope", "get_custom_objects", "get_registered_name",
           "get_registered_object", "serialize_keras_object", "deserialize_keras_object"]
