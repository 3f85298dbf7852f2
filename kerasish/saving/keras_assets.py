"""Layer assets in a `.keras` archive: Keras 3's `save_assets(dir_path)` /
`load_assets(dir_path)` hooks (keras/src/saving/saving_lib.py).

Saving calls each layer's (and the model's) `save_assets` with an empty temporary
directory; what it writes is stored under `assets/<inner path>/`, the inner path being
Keras's: `layers/<name>` for a functional or Sequential model's layers, `<parent>/<attr>`
for a sublayer held in an attribute (`<parent>/<attr>/<name>` in a list), so files cross
with Keras both ways. Loading extracts a layer's members, checked as the weights are
(sizes, bombs; the archive's names were checked for traversal when it was opened), into
a private temporary directory and calls `load_assets` on it.
"""

import os
import tempfile

from kerasish.saving import keras_zip

ASSETS = "assets"
MAX_ASSET_BYTES = 4 << 30  # per member


def _join(*parts):
    return "/".join(p for p in parts if p)


def asset_layers(model):
    """(inner path, layer) for the model and every layer inside, Keras's paths."""
    from kerasish.layers.layer import Layer

    out, seen = [], set()

    def visit(obj, path):
        if id(obj) in seen:
            return
        seen.add(id(obj))
        out.append((path, obj))
        if getattr(obj, "_is_graph_model", False) and not _subclassed(obj):
            for layer in obj.layers:
                visit(layer, _join(path, "layers", layer.name))
            return
        for attr, value in sorted(vars(obj).items()):
            if attr.startswith("_"):
                continue
            if isinstance(value, Layer):
                visit(value, _join(path, attr))
            elif isinstance(value, (list, tuple)):
                for item in value:
                    if isinstance(item, Layer):
                        visit(item, _join(path, attr, item.name))

    visit(model, "")
    return out


def _subclassed(model):
    from kerasish.models.functional import Functional
    from kerasish.models.sequential import Sequential

    return not isinstance(model, (Functional, Sequential))


def _has(layer, hook):
    return callable(getattr(layer, hook, None))


def collect(model):
    """{archive member name: bytes} of every layer's save_assets output."""
    members = {}
    for path, layer in asset_layers(model):
        if not _has(layer, "save_assets"):
            continue
        with tempfile.TemporaryDirectory(prefix="kerasish-assets-") as tmp:
            layer.save_assets(tmp)
            for root, _, files in os.walk(tmp):
                for name in sorted(files):
                    full = os.path.join(root, name)
                    rel = os.path.relpath(full, tmp).replace(os.sep, "/")
                    with open(full, "rb") as fh:
                        members[_join(ASSETS, path, rel)] = fh.read()
    return members


def restore(zf, model, source):
    """Each layer's load_assets on a private copy of its `assets/<path>/` members (its
    sublayers' folders inside, as Keras's directory store gives them)."""
    names = [n for n in zf.namelist() if n.startswith(ASSETS + "/") and not n.endswith("/")]
    for path, layer in asset_layers(model):
        if not _has(layer, "load_assets"):
            continue
        prefix = _join(ASSETS, path) + "/"
        with tempfile.TemporaryDirectory(prefix="kerasish-assets-") as tmp:
            for name in names:
                if name.startswith(prefix):
                    _extract(zf, name, os.path.join(tmp, *name[len(prefix):].split("/")),
                             tmp, source)
            layer.load_assets(tmp)


def _extract(zf, name, dest, root, source):
    dest = os.path.normpath(dest)
    if os.path.commonpath([dest, os.path.normpath(root)]) != os.path.normpath(root):
        raise ValueError(f"Refusing to load {source}: asset member {name!r:.200} leaves "
                         f"its layer's folder")
    info = keras_zip._check_member(zf, name, MAX_ASSET_BYTES, source)
    os.makedirs(os.path.dirname(dest), exist_ok=True)
    with open(dest, "wb") as out:
        keras_zip._stream(zf, info, name, source, out.write)
