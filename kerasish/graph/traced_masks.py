"""Masks through a traced call() layer, as Keras 3 sets them (Layer._set_mask_metadata).

A custom layer supports masking when it says so (`supports_masking = True`) or overrides
`compute_mask`: its outputs then carry `compute_mask(inputs, previous_mask)`, which by
default is the incoming mask. kerasish keeps masks beside the tensors (float32 (N, T)
buffers), so an override is run once on symbolic inputs with a stand-in for the
previous mask: returning it passes the mask on, returning None drops it; computing a
new mask there (also with no incoming mask: a custom Embedding's `ops.not_equal(inputs,
0)`), or reading the mask inside `call(..., mask=None)`, is refused by name.
"""

import inspect


class _PreviousMask:
    """What a compute_mask override receives as previous_mask while it is inspected."""

    def __repr__(self):
        return "<the incoming mask>"


def _overrides_compute_mask(layer):
    from kerasish.layers.layer import Layer

    found = getattr(type(layer), "compute_mask", None)
    return found is not None and found is not getattr(Layer, "compute_mask", None)


def passes_mask(layer, inputs):
    """Whether the traced layer's outputs carry its first input's mask (see module doc);
    `inputs` are the symbolic inputs of its node."""
    where = f"Layer '{layer.name}' ({type(layer).__name__})"
    refused = getattr(layer, "mask_refusal", None)  # a traced built-in that would misuse it
    if refused:
        raise NotImplementedError(f"{where} receives a mask: {refused}")
    call = getattr(type(layer), "call", None)
    if call is not None and "mask" in inspect.signature(call).parameters:
        raise NotImplementedError(
            f"{where} receives a mask and its call() takes `mask`: reading the mask inside "
            f"a custom layer's call(mask=) is not supported by kerasish (masks from "
            f"Embedding(mask_zero=True) and Masking reach the built-in layers)")
    if not _overrides_compute_mask(layer):
        return bool(getattr(layer, "supports_masking", False))
    previous = _PreviousMask()
    try:
        out = layer.compute_mask(inputs, previous)
    except Exception as exc:  # noqa: BLE001 - any failure means the mask is computed
        raise NotImplementedError(
            f"{where}: a compute_mask override that computes a new mask is not supported by "
            f"kerasish (expected it to return the incoming mask or None; it raised "
            f"{type(exc).__name__}: {exc})") from None
    if out is previous:
        return True
    if out is None:
        return False
    raise NotImplementedError(
        f"{where}: a compute_mask override that computes a new mask is not supported by "
        f"kerasish (expected it to return the incoming mask or None; received "
        f"{type(out).__name__})")


def makes_no_mask(layer, inputs):
    """A traced layer given no mask: refuse a compute_mask override that makes one."""
    if not _overrides_compute_mask(layer):
        return
    try:
        out = layer.compute_mask(inputs, None)
    except Exception:  # noqa: BLE001 - it needs a previous mask: it makes none of its own
        return
    if out is not None:
        raise NotImplementedError(
            f"Layer '{layer.name}' ({type(layer).__name__}): a compute_mask override that "
            f"computes a new mask is not supported by kerasish (masks come from "
            f"Embedding(mask_zero=True) and Masking; received {type(out).__name__})")
