"""model.summary(): Keras 3's box table (width 76 without a terminal), plus the memory plan."""

import numpy as np

_POSITIONS = (0.45, 0.80, 1.0)


def _size(nbytes):
    units = ["B", "KB", "MB", "GB", "TB"]
    value, i = float(nbytes), 0
    while value >= 1024 and i < len(units) - 1:
        value, i = value / 1024, i + 1
    return f"{value:.2f} {units[i]}"


def _wrap(text, width):
    """Split a cell's text into lines of at most `width` characters, at spaces if possible."""
    lines, line = [], ""
    for word in text.split(" "):
        candidate = f"{line} {word}".strip()
        if len(candidate) <= width:
            line = candidate
        else:
            if line:
                lines.append(line)
            line = word
    lines.append(line)
    return lines


def _row(cells, widths, aligns):
    wrapped = [_wrap(c, w - 2) for c, w in zip(cells, widths)]
    height = max(len(w) for w in wrapped)
    out = []
    for k in range(height):
        parts = []
        for lines, w, align in zip(wrapped, widths, aligns):
            text = lines[k] if k < len(lines) else ""
            parts.append(" " + (text.rjust(w - 2) if align == "r" else text.ljust(w - 2)) + " ")
        out.append("│" + "│".join(parts) + "│")
    return out


def _shape(shape):
    return "(" + ", ".join("None" if s is None else str(s) for s in shape) + \
        ("," if len(shape) == 1 else "") + ")"


def summary_text(model, line_length=None):
    width = line_length or 76
    edges = [int(width * p) for p in _POSITIONS]
    widths = [edges[0] - 1, edges[1] - edges[0] - 2, edges[2] - edges[1] - 1]
    top = "┏" + "┳".join("━" * w for w in widths) + "┓"
    head_sep = "┡" + "╇".join("━" * w for w in widths) + "┩"
    mid = "├" + "┼".join("─" * w for w in widths) + "┤"
    bottom = "└" + "┴".join("─" * w for w in widths) + "┘"
    head = _row(["Layer (type)", "Output Shape", "Param #"], widths, "llr")
    lines = [f'Model: "{model.name}"', top, *[h.replace("│", "┃") for h in head], head_sep]
    last = {n.layer: n for n in getattr(model, "_nodes", ())}  # Keras: the last call's shape
    for i, layer in enumerate(model.layers):
        node = last.get(layer)
        if model.built and node is not None and len(node.output_tensors) == 1:
            shape = _shape(node.output_tensors[0].shape)
        else:
            shape = _shape(layer.output_shape) if model.built and layer.output_shape else "?"
        params = f"{layer.count_params():,}" if layer.built else "0 (unbuilt)"
        if i:
            lines.append(mid)
        lines.extend(_row([f"{layer.name} ({type(layer).__name__})", shape, params], widths, "llr"))
    lines.append(bottom)
    trainable = sum(int(np.prod(w.shape)) for w in model.trainable_weights)
    total = sum(int(np.prod(w.shape)) for w in model.weights)
    opt = 0
    if model.optimizer is not None and getattr(model.optimizer, "_tracked", None):
        opt = sum(int(np.prod(v.shape)) if v.shape else 1 for v in model.optimizer.variables)
    lines.append(f" Total params: {total + opt:,} ({_size(4 * (total + opt))})")
    lines.append(f" Trainable params: {trainable:,} ({_size(4 * trainable)})")
    lines.append(f" Non-trainable params: {total - trainable:,} ({_size(4 * (total - trainable))})")
    if opt:
        lines.append(f" Optimizer params: {opt:,} ({_size(4 * opt)})")
    signature = next((k[2] for k in model._executors if len(k) > 2), None)
    if model.built and model._dynamic and signature is None:
        lines.append(" Planned buffers: sized from the data's shapes (None in the inputs) "
                     "at the first fit/predict")
    elif model.built:
        batch = max([k[0] for k in model._executors] or [32])
        plan = planned_bytes(model, batch, signature)
        detail = ", ".join(f"{k} {_size(v)}" for k, v in plan.items())
        lines.append(f" Planned buffers on {model.device} at batch {batch}: "
                     f"{_size(sum(plan.values()))} ({detail})")
    return "\n".join(lines)


def planned_bytes(model, batch_size, signature=None):
    """Bytes of every buffer a training (or, uncompiled, inference) step plans, by kind:
    the plan's own size table, plus parameters, gradients and optimizer slots."""
    from kerasish.engine.executor import PREDICT, TRAIN, Executor

    mode = TRAIN if model.compiled and model._output_losses else PREDICT
    out = {"parameters": sum(4 * int(np.prod(w.shape)) for w in model.weights)}
    grads = sum(4 * int(np.prod(w.shape)) for w in model.trainable_weights)
    if mode == TRAIN:
        out["gradients"] = grads
        out["optimizer"] = grads * len(getattr(model.optimizer, "SLOTS", ()))
    out.update(Executor(model, batch_size, mode, allocate=False,
                        signature=signature).planned_bytes())
    return out


def print_summary(model, line_length=None, print_fn=None):
    text = summary_text(model, line_length)
    (print_fn or print)(text)
