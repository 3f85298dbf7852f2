"""JSON helpers for configs: NumPy values and config-bearing objects encode like
Keras's `json_utils.get_json_type`; decoding errors name where the text came from."""

import json

import numpy as np


def get_json_type(obj):
    """`json.dumps(default=...)`: NumPy scalars/arrays, tuples' kin, get_config objects."""
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, (bytes, bytearray)):
        return bytes(obj).decode("utf8")
    if isinstance(obj, (set, frozenset)):
        return sorted(obj)
    if hasattr(obj, "get_config"):
        from kerasish.saving import serialization

        return serialization.serialize_object(obj)
    if callable(obj) and hasattr(obj, "__name__"):
        return obj.__name__
    raise TypeError(f"Cannot serialize object of type {type(obj).__name__} to JSON: {obj!r}")


def dumps(obj, **kwargs):
    """`json.dumps` with `get_json_type` for non-JSON values."""
    return json.dumps(obj, default=get_json_type, **kwargs)


def loads(text, source):
    """`json.loads` that raises ValueError naming `source` on malformed text."""
    if isinstance(text, (bytes, bytearray)):
        text = bytes(text).decode("utf8")
    try:
        return json.loads(text)
    except (ValueError, RecursionError) as e:  # ValueError: also ints over 4300 digits
        raise ValueError(f"Cannot parse {source} as JSON: {e}") from e
