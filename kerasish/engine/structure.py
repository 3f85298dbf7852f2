"""Per-input and per-output structure: compile arguments and data, as Keras 3 takes them.

A model has inputs and outputs in order (with names). `compile(loss=, loss_weights=,
metrics=)` takes one value for every output, a list (one per output) or a dict by
output name; `fit(x=, y=)` takes an array, a list or a dict by input/output name.
Everything here turns those into plain lists in the model's order, checked.
"""

import numpy as np


class WeightedTargets:
    """A batch's targets with their per-sample weights (one array per output or None)."""

    __slots__ = ("targets", "weights")

    def __init__(self, targets, weights):
        self.targets, self.weights = targets, weights


def sample_weights(ys, losses, sample_weight, class_weight, names, what):
    """Per-output float32 sample weights (None: unweighted), Keras 3's rules: one array
    for every output, a list or a dict by output name; class_weight {class: weight}
    from the labels (single-output models); both given multiply."""
    n = len(ys)
    if sample_weight is None and class_weight is None:
        return None
    if sample_weight is not None and class_weight is not None:
        raise ValueError(f"{what}: You cannot `class_weight` and `sample_weight` at the same "
                         f"time (as Keras 3); fold the class weights into sample_weight")
    if sample_weight is None:
        per = [None] * n
    elif isinstance(sample_weight, dict) or isinstance(sample_weight, (list, tuple)) and n > 1:
        per = by_name(sample_weight, names, what, "sample weight")
    else:
        per = [sample_weight] * n
    out = []
    for y, loss, w in zip(ys, losses, per):
        if loss is None or y is None:
            out.append(None)
            continue
        w = np.ones(len(y), np.float32) if w is None else np.asarray(w, np.float32)
        if w.ndim == 0 or len(w) != len(y) or not np.all(np.isfinite(w)):
            raise ValueError(f"{what}: sample_weight must be finite, one value per sample "
                             f"({len(y)}); received shape {np.shape(w)}")
        if class_weight is not None:
            w = w * _class_weights(y, loss, class_weight, what).reshape(
                (len(y),) + (1,) * (w.ndim - 1))
        out.append(w)
    return out


def _class_weights(y, loss, class_weight, what):
    if not isinstance(class_weight, dict) or not class_weight:
        raise ValueError(f"{what}: class_weight must be a dict {{class index: weight}}; "
                         f"received {class_weight!r:.100}")
    y = np.asarray(y)
    if loss.sparse:
        labels = y.reshape(len(y), -1)[:, 0]
    elif y.ndim >= 2 and y.shape[-1] > 1:
        labels = y.reshape(len(y), -1, y.shape[-1])[:, 0].argmax(-1)
    else:
        labels = np.round(y.reshape(len(y), -1)[:, 0])
    table = np.ones(int(max(max(class_weight), labels.max())) + 1, np.float32)
    for k, v in class_weight.items():
        table[int(k)] = float(v)
    return table[labels.astype(np.int64)]


def per_output(spec, names, what, default=None):
    """`spec` as one entry per output name (a single value applies to every output)."""
    n = len(names)
    if isinstance(spec, dict):
        unknown = sorted(set(spec) - set(names))
        if unknown:
            raise ValueError(f"compile: unknown output names {unknown} in `{what}`; the "
                             f"model's outputs are {names}")
        return [spec.get(name, default) for name in names]
    if isinstance(spec, (list, tuple)) and (n > 1 or what == "loss_weights"):
        if len(spec) != n:
            raise ValueError(f"compile: `{what}` has {len(spec)} entries; expected one per "
                             f"model output ({n}: {names})")
        return list(spec)
    if isinstance(spec, (list, tuple)) and len(spec) == 1 and what == "loss":
        return list(spec)
    return [spec] * n


def metrics_per_output(metrics, names):
    """compile(metrics=) as a list of metric lists, one per output (Keras 3 rules)."""
    if metrics is None:
        return [[] for _ in names]
    if isinstance(metrics, dict):
        return [_as_list(m) for m in per_output(metrics, names, "metrics", [])]
    metrics = _as_list(metrics)
    if len(names) == 1:
        return [metrics]
    if len(metrics) != len(names):
        raise ValueError(f"compile: for a model with {len(names)} outputs {names}, "
                         f"`metrics` must be a dict by output name or a list with one "
                         f"entry per output; received {len(metrics)} entries")
    return [_as_list(m) for m in metrics]


def _as_list(m):
    if m is None:
        return []
    return list(m) if isinstance(m, (list, tuple)) else [m]


def by_name(data, names, what, kind):
    """Model data (one array, a list, or a dict by name) as a list in model order."""
    n = len(names)
    if isinstance(data, dict):
        missing = [k for k in names if k not in data]
        extra = sorted(set(data) - set(names))
        if (missing and kind == "input") or extra:
            raise ValueError(f"{what}: the {kind} dict must have the keys {names}; "
                             f"received keys {sorted(data)}")
        return [data.get(k) for k in names]
    if isinstance(data, (list, tuple)) and n > 1:
        if len(data) != n:
            raise ValueError(f"{what}: the model has {n} {kind}s {names}; received a "
                             f"list of {len(data)} arrays")
        return list(data)
    if isinstance(data, (list, tuple)) and len(data) == 1 and hasattr(data[0], "shape"):
        return [data[0]]
    if n > 1:
        raise ValueError(f"{what}: the model has {n} {kind}s {names}; expected a list or "
                         f"a dict of {n} arrays, received one {type(data).__name__}")
    return [data]


def check_input(x, expected, model_name, index, what):
    """One input array: numeric, with a batch axis and the model's per-sample shape."""
    x = np.asarray(x)
    if x.dtype.kind not in "biuf":
        raise TypeError(f"{what}: expected numeric input data; received dtype {x.dtype}")
    if x.ndim == 0:
        raise ValueError(f"{what}: expected input data with a batch axis; received a "
                         f"scalar {x!r}")
    if len(x) == 0:
        raise ValueError(f"{what}: received empty input data (shape {x.shape})")
    if expected is not None:
        x = _adjust_rank(x, tuple(expected))
    if expected is not None and not same_sizes(x.shape[1:], expected[1:]):
        raise ValueError(
            f"Input {index} of model '{model_name}' is incompatible: expected shape "
            f"{(None, *expected[1:])}, received shape {(None, *x.shape[1:])}")
    return x


def _adjust_rank(x, expected):
    """Keras's functional models (Functional._adjust_input_rank): one axis more ending
    in size 1 is squeezed; one axis less, where the input's last size is 1, expanded
    (a 1-D array for Input((1,)))."""
    if x.ndim == len(expected) + 1 and x.shape[-1] == 1:
        return x.reshape(x.shape[:-1])
    if x.ndim == len(expected) - 1 and expected[-1] == 1:
        return x.reshape((*x.shape, 1))
    return x


def check_target(y, loss, out, what):
    """Labels as `loss` needs them for an output of shape `out`: int32 class ids
    (sparse losses) or float32 targets."""
    y = np.asarray(y)
    if y.dtype.kind not in "biuf":
        raise TypeError(f"{what}: expected numeric labels; received dtype {y.dtype}")
    out = tuple(out)
    if loss.sparse:
        if y.ndim == len(out) and y.shape[-1] == 1:
            y = y.reshape(y.shape[:-1])
        if not same_sizes(y.shape[1:], out[1:-1]):
            raise ValueError(f"{what}: sparse labels must have shape {(None, *out[1:-1])} "
                             f"for model output {out}; received {y.shape}")
        if y.size and (y.dtype.kind == "f" and not np.all(np.isfinite(y)) or
                       not np.array_equal(y, np.round(y))):
            raise ValueError(f"{what}: sparse labels must be integers; received "
                             f"non-integer values")
        classes = out[-1]
        if y.size and (y.min() < 0 or y.max() >= classes):
            raise ValueError(
                f"{what}: labels must be in [0, {classes}) for loss '{loss.name}' with "
                f"{classes} output classes; received labels in [{y.min()}, {y.max()}]")
        return y.astype(np.int32)
    if y.ndim == len(out) - 1 and out[-1] == 1:
        y = y.reshape((*y.shape, 1))
    if not same_sizes(y.shape[1:], out[1:]):
        raise ValueError(f"{what}: targets must have shape {(None, *out[1:])} for loss "
                         f"'{loss.name}'; received {y.shape}")
    if getattr(loss, "kind", None) == "binary" and y.size:
        if y.dtype.kind == "f" and not np.all(np.isfinite(y)) or y.min() < 0 or y.max() > 1:
            raise ValueError(f"{what}: targets for loss '{loss.name}' must be in [0, 1]; "
                             f"received values in [{np.nanmin(y)}, {np.nanmax(y)}]")
    return y.astype(np.float32)


def same_sizes(got, expected):
    """Per-sample shapes equal, None in `expected` matching any size."""
    return len(got) == len(expected) and all(e is None or int(g) == e
                                             for g, e in zip(got, expected))


def shapes_fit(received, expected):
    """Equal per-sample shapes, where a None expected size takes any received size."""
    received, expected = tuple(received)[1:], tuple(expected)[1:]
    return len(received) == len(expected) and all(
        e is None or e == r for e, r in zip(expected, received))
