"""The two Keras HDF5 layouts on plain data (names, dicts and NumPy arrays).

Legacy `.h5` (Keras `legacy_h5_format`; docs: keras-reference.md §2.1-2.3):
    /@model_config, @keras_version, @backend, @training_config (full-model files)
    /model_weights/@layer_names, @backend, @keras_version
    /model_weights/<layer>/@weight_names, datasets at those relative paths
    /model_weights/top_level_model_weights/@weight_names
    /optimizer_weights/@weight_names, datasets at those paths
Weights-only legacy files (tf.keras 2 `save_weights`) hold the `model_weights`
content at the root. Attribute arrays over 64512 bytes are split into `<name>0`,
`<name>1`, ... on write and joined on read.

Native `.weights.h5` (Keras 3 `saving_lib.H5IOStore`, §2.4):
    /layers/<snake_class_name[_k]>/vars/@name, datasets "0".."n-1"
    /optimizer/vars/@name, datasets "0".."n-1"
    /vars/@name (the model's own variables)

kerasish adds one group that Keras readers never look at:
    /kerasish_state/<layer>/<key>   non-variable layer state (e.g. Dropout's RNG
                                    seed and step) from `layer.get_extra_state()`

Readers take a `source` (the file name) for error messages and go through
`h5_safety`, never following links.
"""

import re

import numpy as np

from kerasish.saving import h5_arrays, h5_safety, json_utils, load_limits

HDF5_OBJECT_HEADER_LIMIT = 64512
# The Keras format version kerasish writes (its configs follow Keras 3.15).
KERAS_VERSION = "3.15.1"
BACKEND = "kerasish"


# -- chunked string attributes --------------------------------------------------------

def save_attributes(group, name, data):
    """Store a list of strings as `group.attrs[name]`, split into `name0`, `name1`, ...
    when it exceeds HDF5's 64512-byte object-header limit (Keras's exact rule)."""
    data = [d.encode("utf8") if isinstance(d, str) else bytes(d) for d in data]
    too_big = [d[:40] for d in data if len(d) > HDF5_OBJECT_HEADER_LIMIT]
    if too_big:
        raise ValueError(f"Cannot save attribute '{name}': items longer than "
                         f"{HDF5_OBJECT_HEADER_LIMIT} bytes cannot be stored in HDF5; "
                         f"received items starting {too_big}")
    data_npy = np.asarray(data)
    num_chunks = 1
    chunks = np.array_split(data_npy, num_chunks)
    while any(c.nbytes > HDF5_OBJECT_HEADER_LIMIT for c in chunks):
        num_chunks += 1
        chunks = np.array_split(data_npy, num_chunks)
    if num_chunks > 1:
        for i, chunk in enumerate(chunks):
            group.attrs[f"{name}{i}"] = chunk
    else:
        group.attrs[name] = data  # an empty list is stored as an empty float64 array


def _decode_items(value, group, name, source):
    arr = np.asarray(value)
    if arr.ndim != 1:
        raise ValueError(f"Cannot load {source}: attribute '{name}' of '{group.name}' "
                         f"must be a 1-D list of strings; received shape {arr.shape}")
    if arr.size == 0:
        return []
    out = []
    for item in arr:
        if isinstance(item, (bytes, np.bytes_)):
            try:
                item = bytes(item).decode("utf8")
            except UnicodeDecodeError as e:
                raise ValueError(f"Cannot load {source}: attribute '{name}' of "
                                 f"'{group.name}' is not valid UTF-8") from e
        if not isinstance(item, str):
            raise ValueError(f"Cannot load {source}: attribute '{name}' of '{group.name}' "
                             f"must hold strings; received {type(item).__name__}")
        out.append(str(item))
    return out


def _read_attr(group, name, source):
    h5_safety.check_attr(group, name, source)  # size checked before h5py allocates it
    value = group.attrs[name]
    h5_safety.count_attr_read(value, group, name, source)  # vlen items as read
    return value


def _unique(names, what, group, source):
    """A name list with no repeats (a Keras file never repeats one; thousands of
    repeats would each build references before any count is checked)."""
    seen = set()
    for n in names:
        if n in seen:
            raise ValueError(f"Cannot load {source}: '{what}' of '{group.name}' lists "
                             f"'{n:.100}' more than once ({len(names)} names, "
                             f"{len(set(names))} distinct)")
        seen.add(n)
    return names


def load_attributes(group, name, source):
    """Read a (possibly chunked) string-list attribute; missing gives []."""
    if name in group.attrs:
        return _decode_items(_read_attr(group, name, source), group, name, source)
    data, i = [], 0
    while f"{name}{i}" in group.attrs:
        data.extend(_decode_items(_read_attr(group, f"{name}{i}", source), group,
                                  f"{name}{i}", source))
        i += 1
    return data


def read_text_attr(group, name, source):
    """A scalar string attribute (bytes or str, as h5py 2 and 3 return), or None."""
    if name not in group.attrs:
        return None
    value = _read_attr(group, name, source)
    if isinstance(value, np.ndarray) and value.shape == ():
        value = value[()]
    if isinstance(value, (bytes, np.bytes_)):
        try:
            value = bytes(value).decode("utf8")
        except UnicodeDecodeError as e:
            raise ValueError(f"Cannot load {source}: attribute '{name}' is not UTF-8") from e
    if not isinstance(value, str):
        raise ValueError(f"Cannot load {source}: attribute '{name}' must be a string; "
                         f"received {type(value).__name__}")
    return value


# -- legacy layout --------------------------------------------------------------------

def _write_dataset(group, name, value):
    value = np.asarray(value)
    dset = group.create_dataset(name, value.shape, dtype=value.dtype)
    if value.shape:
        dset[:] = value
    else:
        dset[()] = value


def write_weight_subset(group, named_arrays):
    """`weight_names` plus one dataset per (name, array), in the given order."""
    names = [n for n, _ in named_arrays]
    if len(set(names)) != len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise ValueError(f"Cannot save group '{group.name}': duplicate weight names {dup}")
    save_attributes(group, "weight_names", names)
    for name, value in named_arrays:
        _write_dataset(group, name, value)


def read_weight_subset(group, source):
    """[(name, DatasetRef)] in `weight_names` order: shapes known, data read on demand
    (`weights_io` checks them against the model before reading)."""
    h5_safety.reach_once(group, source)
    names = _unique(load_attributes(group, "weight_names", source), "weight_names", group,
                    source)
    return [(n, h5_arrays.DatasetRef(h5_safety.get_dataset(group, n, source), source))
            for n in names]


def write_model_weights(group, layers, top_level=()):
    """layers: [(layer_name, [(weight_name, array), ...]), ...] in model order."""
    names = [name for name, _ in layers]
    reserved = {"top_level_model_weights", EXTRA_STATE_GROUP}
    if len(set(names)) != len(names) or reserved & set(names):
        raise ValueError(f"Cannot save: layer names must be unique and not one of "
                         f"{sorted(reserved)}; received {names}")
    save_attributes(group, "layer_names", names)
    group.attrs["backend"] = BACKEND.encode("utf8")
    group.attrs["keras_version"] = KERAS_VERSION.encode("utf8")
    # Keras creates the groups sorted by name "to avoid prefix issues".
    for name, weights in sorted(layers, key=lambda item: item[0]):
        write_weight_subset(group.create_group(name), weights)
    write_weight_subset(group.create_group("top_level_model_weights"), list(top_level))


def read_model_weights(group, source):
    """{"layers": [(layer_name, [(weight_name, array)])], "top_level": [...] or None,
    "keras_version", "backend"} from a `model_weights` group (or a weights-file root)."""
    if "layer_names" not in group.attrs and "layer_names0" not in group.attrs:
        raise ValueError(f"Cannot load weights from {source}: no 'layer_names' attribute "
                         f"on '{group.name}'; this is not a Keras/kerasish .h5 weights file")
    names = _unique(load_attributes(group, "layer_names", source), "layer_names", group,
                    source)
    layers = [(name, read_weight_subset(h5_safety.get_group(group, name, source), source))
              for name in names]
    top = None
    if "top_level_model_weights" in group:
        top = read_weight_subset(
            h5_safety.get_group(group, "top_level_model_weights", source), source)
    return {"layers": layers, "top_level": top,
            "keras_version": read_text_attr(group, "keras_version", source) or "1",
            "backend": read_text_attr(group, "backend", source)}


def write_model_file(f, model_config, layers, training_config=None, optimizer_weights=None):
    """A full-model legacy `.h5` (what `model.save("x.h5")` writes)."""
    f.attrs["keras_version"] = KERAS_VERSION
    f.attrs["backend"] = BACKEND
    f.attrs["model_config"] = json_utils.dumps(model_config).encode("utf8")
    if training_config is not None:
        f.attrs["training_config"] = json_utils.dumps(training_config).encode("utf8")
    write_model_weights(f.create_group("model_weights"), layers)
    if optimizer_weights:
        write_weight_subset(f.create_group("optimizer_weights"), optimizer_weights)


def read_model_file(f, source):
    """{"model_config", "training_config" (or None), "weights" (read_model_weights),
    "optimizer_weights" ([(name, array)] or None), "keras_version", "backend"}."""
    text = read_text_attr(f, "model_config", source)
    if text is None:
        raise ValueError(f"No model config found in the file at {source}: it has no "
                         "'model_config' attribute (a weights-only file? use "
                         "model.load_weights)")
    model_config = json_utils.loads(text, f"the 'model_config' attribute of {source}")
    training = read_text_attr(f, "training_config", source)
    if training is not None:
        training = json_utils.loads(training, f"the 'training_config' attribute of {source}")
    if "model_weights" not in f:
        raise ValueError(f"Cannot load {source}: it has a model config but no "
                         "'model_weights' group")
    weights = read_model_weights(h5_safety.get_group(f, "model_weights", source), source)
    optimizer = None
    if "optimizer_weights" in f:
        optimizer = read_weight_subset(
            h5_safety.get_group(f, "optimizer_weights", source), source)
    return {"model_config": model_config, "training_config": training, "weights": weights,
            "optimizer_weights": optimizer,
            "keras_version": read_text_attr(f, "keras_version", source),
            "backend": read_text_attr(f, "backend", source)}


def weights_root(f, source):
    """The group holding `layer_names` in a legacy file: the root (weights-only file)
    or `model_weights` (full-model file), as Keras 3's `load_weights` decides."""
    if "layer_names" not in f.attrs and "layer_names0" not in f.attrs and "model_weights" in f:
        return h5_safety.get_group(f, "model_weights", source)
    return f


# -- native .weights.h5 layout --------------------------------------------------------

def snake_case(name):
    """Keras's `naming.to_snake_case` (the native layout's group keys)."""
    name = re.sub(r"\W+", "", name)
    name = re.sub("(.)([A-Z][a-z]+)", r"\1_\2", name)
    return re.sub("([a-z])([A-Z])", r"\1_\2", name).lower()


def native_layer_keys(class_names):
    """Group keys for a layer list: snake_case(class) with `_1`, `_2` for repeats."""
    used, keys = {}, []
    for cls in class_names:
        key = snake_case(cls)
        if key in used:
            used[key] += 1
            key = f"{key}_{used[key]}"
        else:
            used[key] = 0
        keys.append(key)
    return keys


def _write_vars(parent, name, arrays):
    group = parent.create_group("vars")
    group.attrs["name"] = name
    for i, value in enumerate(arrays):
        group[str(i)] = np.asarray(value)


def write_native_weights(f, model_name, layers, optimizer=None):
    """layers: [(class_name, layer_name, [array, ...], children or None)] in model order
    (children: a nested model's own list); optimizer: (name, [array, ...]) or None
    (Keras writes it once it is built)."""
    _write_layers(f.create_group("layers"), layers)
    if optimizer is not None:
        _write_vars(f.create_group("optimizer"), optimizer[0], optimizer[1])
    _write_vars(f, model_name, [])


def _write_layers(root, layers):
    keys = native_layer_keys([entry[0] for entry in layers])
    for key, entry in zip(keys, layers):
        _write_entry(root.create_group(key), entry)


def _write_entry(group, entry):
    _, name, arrays, children, groups = (tuple(entry) + (None,))[:5]
    if children is not None:
        _write_layers(group.create_group("layers"), children)
    for key, sub in (groups or {}).items():  # Keras 3's cell / forward_layer / layer
        _write_entry(group.create_group(key), sub)
    _write_vars(group, name, arrays)


def _read_vars(group, source):
    """(name attr or None, [DatasetRef, ...]) from a `vars` group with datasets 0..n-1."""
    keys = list(group.keys())
    if sorted(keys, key=lambda k: (len(k), k)) != [str(i) for i in range(len(keys))]:
        raise ValueError(f"Cannot load {source}: '{group.name}' must hold datasets "
                         f"named 0..{len(keys) - 1}; received {sorted(keys)[:10]}")
    name = read_text_attr(group, "name", source)
    return name, [h5_arrays.DatasetRef(h5_safety.get_dataset(group, str(i), source), source)
                  for i in range(len(keys))]


def is_native_layout(f):
    """True for a Keras 3 `.weights.h5` (no `layer_names`, a `layers`/`vars` group)."""
    legacy = ("layer_names" in f.attrs or "layer_names0" in f.attrs or "model_weights" in f)
    return not legacy and any(k in f for k in ("layers", "vars", "optimizer",
                                                "_layer_checkpoint_dependencies"))


def read_native_weights(f, source):
    """{"layers": {key: (name, [arrays], children)}, "optimizer": (name, [arrays]) or None,
    "model": (name, [arrays]) or None}."""
    root_name = "layers" if "layers" in f else "_layer_checkpoint_dependencies"
    layers = {}
    if root_name in f:
        layers = _read_layers(h5_safety.get_group(f, root_name, source), source, 0)
    optimizer = None
    if "optimizer" in f:
        group = h5_safety.get_group(f, "optimizer", source)
        if "vars" in group:
            optimizer = _read_vars(h5_safety.get_group(group, "vars", source), source)
    model = _read_vars(h5_safety.get_group(f, "vars", source), source) if "vars" in f else None
    return {"layers": layers, "optimizer": optimizer, "model": model}


def _read_layers(root, source, depth):
    """{key: (name or None, [DatasetRef], children or None, {group: entry})} for a
    `layers` group (children: a nested model's layers; groups: named sub-objects).
    Each group is reached once (h5_safety.reach_once) and at most max_depth deep."""
    limit = load_limits.LIMITS.max_depth
    if depth > limit:
        raise ValueError(f"Cannot load {source}: models nested more than {limit} "
                         f"deep under '{root.name}' (load_limits.LIMITS.max_depth)")
    h5_safety.reach_once(root, source)
    return {key: _read_entry(h5_safety.get_group(root, key, source), source, depth)
            for key in root.keys()}


def _read_entry(entry, source, depth):
    limit = load_limits.LIMITS.max_depth
    if depth > limit:
        raise ValueError(f"Cannot load {source}: groups nested more than {limit} "
                         f"deep under '{entry.name}' (load_limits.LIMITS.max_depth)")
    h5_safety.reach_once(entry, source)
    name, arrays = _read_vars(h5_safety.get_group(entry, "vars", source), source) \
        if "vars" in entry else (None, [])
    children = _read_layers(h5_safety.get_group(entry, "layers", source), source,
                            depth + 1) if "layers" in entry else None
    groups = {k: _read_entry(h5_safety.get_group(entry, k, source), source, depth + 1)
              for k in entry.keys() if k not in ("vars", "layers")}
    return (name, arrays, children, groups)


# -- kerasish-only extra state ---------------------------------------------------------

EXTRA_STATE_GROUP = "kerasish_state"


def write_extra_state(f, entries):
    """entries: [(layer_name, {key: numeric value})]; skipped when empty."""
    entries = [(name, state) for name, state in entries if state]
    if not entries:
        return
    root = f.create_group(EXTRA_STATE_GROUP)
    for name, state in entries:
        group = root.create_group(name)
        for key, value in state.items():
            _write_dataset(group, key, np.asarray(value))


def read_extra_state(f, source):
    """{layer_name: {key: array}} ({} when the file has none)."""
    out = _ExtraState()
    out.source = source  # for weights_io.restore_extra_state's messages
    if EXTRA_STATE_GROUP not in f:
        return out
    root = h5_safety.get_group(f, EXTRA_STATE_GROUP, source)
    for name in root.keys():
        group = h5_safety.get_group(root, name, source)
        h5_safety.reach_once(group, source)
        out[name] = {key: _read_small(h5_safety.get_dataset(group, key, source), source)
                     for key in group.keys()}
    return out


class _ExtraState(dict):
    """{layer_name: {key: array}} that remembers the file it came from."""

    source = None


_MAX_EXTRA_STATE_BYTES = 1 << 16  # RNG seeds and counters: a few bytes each


def _read_small(dset, source):
    declared = int(np.prod(dset.shape, dtype=np.int64)) * dset.dtype.itemsize
    if declared > _MAX_EXTRA_STATE_BYTES:
        raise ValueError(f"Cannot load {source}: layer state '{dset.name}' declares "
                         f"{declared} bytes {dset.shape} {dset.dtype}; expected at most "
                         f"{_MAX_EXTRA_STATE_BYTES}")
    return h5_safety.read_array(dset, source)
