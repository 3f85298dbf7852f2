"""Data to plans: checking inputs and targets against the model, sample weights, the
loaders fit/evaluate/predict iterate, and the LRU cache of plans (engine/executor.py)."""

import numpy as np

from kerasish.engine import parameters, structure
from kerasish.engine.executor import PREDICT, TRAIN, Executor
from kerasish.layers.layer import Layer

_MAX_PLANS = 6  # (batch size, mode) plans kept per model; the least recently used goes


class DataPlans:
    """Mixin of Model (through Trainer): data checks, loaders and plans."""

    # -- data checks and plans ---------------------------------------------------------

    def _check_x(self, x, what):
        """Input data as a list of arrays in model-input order (built on first use)."""
        if not self.built:
            if isinstance(x, (list, tuple)) and x and hasattr(x[0], "shape") and \
                    len(x) > 1 and not hasattr(self, "_input_layer"):
                self._build_once([(None, *np.shape(a)[1:]) for a in x])
            else:
                first = x[0] if isinstance(x, (list, tuple)) and x and \
                    hasattr(x[0], "shape") else x
                self._build_once((None, *np.shape(first)[1:]))
        xs = structure.by_name(x, self.input_names, what, "input")
        xs = [structure.check_input(a, t.shape, self.name, k, what)
              for k, (a, t) in enumerate(zip(xs, self.inputs))]
        if len({len(a) for a in xs}) > 1:
            raise ValueError(f"{what}: all inputs must have the same number of samples; "
                             f"received {[len(a) for a in xs]}")
        return xs

    def _check_y(self, y, what):
        """Targets as a list in model-output order (None where an output has no loss)."""
        ys = structure.by_name(y, self.output_names, what, "target")
        out = []
        for k, (target, loss, t) in enumerate(zip(ys, self._output_losses, self.outputs)):
            if loss is None:
                out.append(None)
            elif target is None:
                raise ValueError(f"{what}: no targets for output '{self.output_names[k]}', "
                                 f"which has loss '{loss.name}'")
            else:
                out.append(structure.check_target(target, loss, t.shape, what))
        return out

    def _executor(self, batch_size, mode, signature=None, weighted=False):
        """The plan for (batch size, mode[, per-sample input shapes of a dynamic model]
        [, sample weights]), kept in a small LRU cache."""
        key = (int(batch_size), mode) + ((signature,) if signature is not None else ()) + \
            (("weighted",) if weighted else ())
        ex = self._executors.pop(key, None)
        if ex is not None and mode == TRAIN and ex.trainable_token != Layer.trainable_changes:
            # a trainable flag changed since this plan was made (after compile, as Keras 3
            # allows: its train step reads trainable_weights each step): plan again
            ex = None
        if ex is None:
            if mode == TRAIN:
                parameters.pack(self)
                parameters.attach_optimizer(self)
            ex = Executor(self, batch_size, mode, signature=signature, weighted=weighted)
            if mode != PREDICT:
                self._check_some_loss(ex)
        self._executors[key] = ex
        while len(self._executors) > _MAX_PLANS:
            self._executors.pop(next(iter(self._executors)))
        return ex

    def _executor_for(self, ex, batch, loader, mode, targets=None):
        """`ex` while this batch fits it, else one planned for the loader's batch size
        (never more than its number of samples)."""
        n, signature = _batch_len(batch), self._signature(batch)
        weighted = isinstance(targets, structure.WeightedTargets)
        if ex is None or n > ex.batch_size or ex.signature != signature or \
                ex.weighted != weighted:
            size = getattr(loader, "batch_size", 0) or 0
            samples = getattr(loader, "num_samples", None)
            if samples is not None:
                size = min(size, samples)
            ex = self._executor(max(n, size), mode, signature, weighted)
        return ex

    def _executor_on_batch(self, xs, mode, targets=None):
        """A cached plan with room for this batch (the smallest), or a new one for it."""
        n, signature = len(xs[0]), self._signature(xs)
        weighted = isinstance(targets, structure.WeightedTargets)
        tail = ((signature,) if signature is not None else ()) + \
            (("weighted",) if weighted else ())
        fits = [k for k in self._executors if k[1] == mode and k[0] >= n and k[2:] == tail]
        return self._executor(min(fits)[0] if fits else n, mode, signature, weighted)

    def _weighted(self, ys, sample_weight, class_weight, what):
        """Targets with their sample weights (WeightedTargets), or as they are."""
        ws = structure.sample_weights(ys, self._output_losses, sample_weight, class_weight,
                                      self.output_names, what)
        return ys if ws is None else structure.WeightedTargets(ys, ws)

    def _arrays_loader(self, x, y, batch_size, shuffle, what, sample_weight=None,
                       class_weight=None):
        from kerasish.data import DataLoader, make_loader

        if isinstance(x, DataLoader) or (not hasattr(x, "shape") and
                                         not isinstance(x, (list, tuple, dict))):
            if y is not None:
                raise ValueError(f"{what}: `y` must be None when `x` is a loader or generator")
            return make_loader(x, batch_size=batch_size, shuffle=shuffle), None
        batch_size = _check_count(batch_size, what)
        self._bind_labels(y, sample_weight, class_weight, what)
        xs = self._check_x(x, what)
        ys = None
        if y is not None:
            ys = self._check_y(y, what)
            for target in ys:
                if target is not None and len(target) != len(xs[0]):
                    raise ValueError(f"{what}: x and y must have the same number of "
                                     f"samples; received x: {len(xs[0])}, y: {len(target)}")
        ws = None if ys is None else structure.sample_weights(
            ys, self._output_losses, sample_weight, class_weight, self.output_names, what)
        targets = None if ys is None else _columns(ys if ws is None else ys + ws)
        # On the CPU both cores already compute: a prefetch thread only competes with
        # them (MLP step 0.97 -> 0.92 ms without it); CUDA overlaps the gather.
        prefetch = 0 if (self.device or "cpu") == "cpu" else 2
        loader = DataLoader(_columns(xs), targets, batch_size=batch_size, shuffle=shuffle,
                            prefetch=prefetch)
        loader.validated = True  # checked once here, not per batch
        loader.weighted_outputs = 0 if ws is None else len(ys)
        return loader, batch_size

    def _batches(self, loader, what, with_y=True):
        """Host batches from any loader, with labels checked for generator inputs."""
        for batch in loader:
            wb = None
            if isinstance(batch, tuple) and len(batch) >= 2:
                xb, yb = batch[0], batch[1]
                wb = batch[2] if len(batch) >= 3 else None
            elif isinstance(batch, tuple):
                xb, yb = batch[0], None
            else:
                xb, yb = batch, None
            if not loader_is_checked(loader):
                xb = self._check_x(xb, what)
                if yb is not None and with_y:
                    yb = self._check_y(yb, what)
                    if wb is not None:
                        yb = self._weighted(yb, wb, None, what)
            if with_y and yb is None and _needs_targets(self):
                raise ValueError(f"{what}: the data yields no labels (expected (x, y) batches)")
            k = getattr(loader, "weighted_outputs", 0)
            if k and with_y:  # Columns of targets then weights (_arrays_loader)
                yb = structure.WeightedTargets(yb[:k], yb[k:])
            yield _unwrap(xb), yb if isinstance(yb, structure.WeightedTargets) else _unwrap(yb)


def _needs_targets(model):
    return any(loss is not None for loss in model._output_losses)


def loader_is_checked(loader):
    """Array loaders were validated up front; generator batches are checked one by one."""
    return getattr(loader, "validated", False)


def _check_count(value, what, name="batch_size", minimum=1):
    """An int argument >= minimum (batch_size, epochs, ...), or a ValueError naming it."""
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        kind = "a positive integer" if minimum == 1 else f"an integer >= {minimum}"
        raise ValueError(f"{what}: expected {name} to be {kind}; received {name}={value!r}")
    return int(value)


def _split(x, y, fraction):
    """Keras: the LAST samples become validation data, split before shuffling."""
    first = _first_array(x)
    if not hasattr(first, "shape"):
        raise ValueError("fit: validation_split needs NumPy array inputs")
    n = len(first)
    split_at = int(np.floor(n * (1 - fraction)))
    if split_at == 0 or split_at == n:
        raise ValueError(f"fit: validation_split={fraction} leaves an empty training or "
                         f"validation set for {n} samples")
    head, tail = slice(None, split_at), slice(split_at, None)
    return _cut(x, head), _cut(y, head), (_cut(x, tail), _cut(y, tail))


def _first_array(data):
    if isinstance(data, dict):
        data = next(iter(data.values()), None)
    if isinstance(data, (list, tuple)) and data and hasattr(data[0], "shape"):
        data = data[0]
    return data


def _cut(data, rows):
    if data is None:
        return None
    if isinstance(data, dict):
        return {k: _cut(v, rows) for k, v in data.items()}
    if isinstance(data, (list, tuple)) and data and hasattr(data[0], "shape"):
        return [_cut(v, rows) for v in data]
    return data[rows]


def _columns(arrays):
    """Loader data for a list of arrays: the array itself when there is one."""
    from kerasish.data.columns import Columns

    return arrays[0] if len(arrays) == 1 else Columns(
        [np.zeros((len(arrays[0]), 0), np.float32) if a is None else a for a in arrays])


def _unwrap(batch):
    """A one-element list of arrays as the array (what one-input plans take)."""
    if isinstance(batch, list) and len(batch) == 1:
        return batch[0]
    return batch


def _batch_len(batch):
    return len(batch[0]) if isinstance(batch, list) else len(batch)
