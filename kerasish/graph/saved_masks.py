"""Keras 3 configs record a mask as op nodes: Embedding(mask_zero=True)'s
`not_equal(ids, 0)`, Masking's `any(not_equal(x, v), axis=-1)`, entries with a
`keras.src.ops` module whose output reaches the next layers as `kwargs["mask"]`.
kerasish computes those masks itself (Embedding, Masking and the layers passing masks
on), so loading such a config skips the op entries that only feed masks and drops the
mask kwargs they feed; any other op entry, or a mask from elsewhere, is left to the
loader's usual checks (a mask given explicitly is refused by name there).
"""


def _is_op_entry(entry):
    return isinstance(entry, dict) and str(entry.get("module", "")).startswith("keras.src.ops")


def _sources(value):
    """Layer names of the tensors in a node argument structure (Keras 3's form)."""
    if isinstance(value, dict) and value.get("class_name") == "__keras_tensor__":
        history = (value.get("config") or {}).get("keras_history")
        return [history[0]] if isinstance(history, list) and history and \
            isinstance(history[0], str) else []
    if isinstance(value, dict):
        return [s for v in value.values() for s in _sources(v)]
    if isinstance(value, list):
        return [s for v in value for s in _sources(v)]
    return []


def mask_only_ops(entries):
    """Names of the op entries whose outputs only feed masks (directly or through other
    such entries)."""
    ops = {e.get("name") or (e.get("config") or {}).get("name")
           for e in entries if _is_op_entry(e)}
    readers = {}  # source name -> [(reader name, through the mask kwarg)]
    for e in entries:
        name = e.get("name") or (e.get("config") or {}).get("name") \
            if isinstance(e, dict) else None
        for node in (e.get("inbound_nodes") or []) if isinstance(e, dict) else []:
            if not isinstance(node, dict):
                continue
            kwargs = node.get("kwargs") if isinstance(node.get("kwargs"), dict) else {}
            for source in _sources(kwargs.get("mask")):
                readers.setdefault(source, []).append((name, True))
            rest = [node.get("args"), {k: v for k, v in kwargs.items() if k != "mask"}]
            for source in _sources(rest):
                readers.setdefault(source, []).append((name, False))
    found = set(ops)
    changed = True
    while changed:
        changed = False
        for name in list(found):
            if any(not mask and reader not in found for reader, mask in readers.get(name, [])):
                found.discard(name)
                changed = True
    return found


def drop_mask_kwarg(node, skipped):
    """A node without its `mask` kwarg when that mask comes from skipped op entries."""
    if not skipped or not isinstance(node, dict) or not isinstance(node.get("kwargs"), dict):
        return node
    mask = node["kwargs"].get("mask")
    sources = _sources(mask)
    if not sources or not all(s in skipped for s in sources):
        return node
    return {**node, "kwargs": {k: v for k, v in node["kwargs"].items() if k != "mask"}}
