"""The Metric base: device accumulators updated by kernels_numba launches per batch, the
host reading them only in `result()`; plus Keras's eager API on arrays.

`build(device)` allocates the state, `reset()` zeroes it, `update(y_pred, y_true, rows)`
adds one batch (device rows: y_pred (rows, K), y_true int32 (rows,) for sparse metrics
or float32 like y_pred). `acc` is the first accumulator and `count` the host-side
sample count (the distributed reducer sums both). Keras's `update_state(y_true,
y_pred, sample_weight=None)`, `result()`, `reset_state()` work on host arrays, on the
metric's device (the CPU until it is built for another).
"""

import inspect

import numpy as np

import kernels_numba
from kernels_numba import ops


class Metric:
    direction = "up"
    default_name = None
    sparse = False

    def __init__(self, name=None, dtype=None):
        if dtype not in (None, "float32", np.float32):
            raise ValueError(f"{type(self).__name__}: only float32 metrics are supported; "
                             f"received dtype={dtype!r}")
        self.name = name or self.default_name
        self.acc = None
        self.count = 0
        self._buffers = {}

    # -- state -----------------------------------------------------------------------

    def state_shapes(self):
        """name -> shape of each float32 accumulator (the first is `acc`)."""
        return {"acc": (1,)}

    def build(self, device):
        if self.acc is not None and kernels_numba.device_of(self.acc) == device:
            return
        self.state = {k: kernels_numba.zeros(s, np.float32, device)
                      for k, s in self.state_shapes().items()}
        self.acc = next(iter(self.state.values()))
        self._buffers = {}
        self.count = 0

    @property
    def device(self):
        return None if self.acc is None else kernels_numba.device_of(self.acc)

    def reset(self):
        for buf in self.state.values():
            ops.fill(buf, 0.0)
        self.count = 0

    def scratch(self, name, shape, dtype=np.float32):
        """A reusable device buffer of at least shape[0] rows (allocated when it grows)."""
        buf = self._buffers.get(name)
        if buf is None or buf.shape[0] < shape[0] or buf.shape[1:] != tuple(shape[1:]) \
                or buf.dtype != dtype:
            buf = self._buffers[name] = kernels_numba.empty(tuple(shape), dtype, self.device)
        return buf[: shape[0]]

    def sum_into(self, acc, x):
        ws = self.scratch("workspace", ops.sum_workspace_shape(max(x.size, 1 << 12)))
        ops.sum_into(acc, x, workspace=ws)

    def update(self, y_pred, y_true, rows):
        raise NotImplementedError

    def update_weighted(self, y_pred, y_true, rows, weights):
        raise ValueError(f"{type(self).__name__}: sample_weight is not supported yet")

    def result(self):
        if self.count == 0:
            return 0.0
        return float(kernels_numba.to_host(self.acc)[0]) / self.count

    # -- state variables of Metric subclasses (update_state traced: engine/traced_metric)

    def add_variable(self, shape=(), initializer="zeros", dtype=None, aggregation="sum",
                     name=None):
        """Keras 3's Metric.add_variable: a non-trainable Variable on the model's device,
        updated in a subclass's update_state with assign_add/assign."""
        from kerasish import config, initializers
        from kerasish.metrics.state_variable import StateVariable

        if dtype not in (None, "float32", np.float32):
            raise ValueError(f"{self.name}.add_variable: only float32 state is supported; "
                             f"received dtype={dtype!r}")
        found = self.__dict__.setdefault("_state_variables", [])
        name = name or f"variable_{len(found)}"
        shape = tuple(int(s) for s in shape)
        value = np.asarray(initializers.get(initializer)(shape), np.float32).reshape(shape)
        var = StateVariable(value, name, trainable=False, device=config.get_device(),
                       path=f"{self.name}/{name}")
        found.append(var)
        return var

    add_weight = add_variable

    @property
    def variables(self):
        return list(self.__dict__.get("_state_variables", []))

    # -- Keras's eager API -------------------------------------------------------------

    def update_state(self, y_true, y_pred, sample_weight=None):
        if self.acc is None:
            self.build("cpu")
        y_pred = np.ascontiguousarray(y_pred, dtype=np.float32)
        if y_pred.ndim == 0:
            y_pred = y_pred.reshape(1, 1)
        elif y_pred.ndim == 1:  # (N,) predictions: one column, as Keras expands them
            y_pred = y_pred.reshape(-1, 1)
        rows = y_pred.reshape(-1, y_pred.shape[-1])
        y_true = np.asarray(y_true)
        if self.sparse:
            truth = y_true.reshape(-1).astype(np.int32)
            want = rows.shape[0]
        else:
            truth = y_true.astype(np.float32)
            want = rows.size
        if truth.size != want:
            raise ValueError(f"{self.name}: y_true with shape {y_true.shape} does not match "
                             f"y_pred with shape {y_pred.shape}")
        truth = np.ascontiguousarray(truth.reshape((-1,) if self.sparse else rows.shape))
        dev = self.device
        yp, yt = kernels_numba.to_device(rows, dev), kernels_numba.to_device(truth, dev)
        if sample_weight is None:
            self.update(yp, yt, rows.shape[0])
            return
        w = np.asarray(sample_weight, np.float64)
        lead = y_pred.shape[:-1]
        try:
            w = np.broadcast_to(w.reshape(w.shape + (1,) * (len(lead) - w.ndim))
                                if w.ndim < len(lead) else w.reshape(lead), lead)
        except ValueError:
            raise ValueError(f"{self.name}: sample_weight with shape {np.shape(sample_weight)} "
                             f"does not broadcast to {lead}") from None
        self.update_weighted(yp, yt, rows.shape[0], w.reshape(-1))

    def reset_state(self):
        if self.acc is not None:
            self.reset()

    def __call__(self, y_true, y_pred, sample_weight=None):
        self.update_state(y_true, y_pred, sample_weight)
        return self.result()

    # -- configs ---------------------------------------------------------------------

    def get_config(self):
        return {"name": self.name, "dtype": "float32"}

    @classmethod
    def from_config(cls, config):
        config = dict(config)
        if config.get("dtype") in (None, "float32") or isinstance(config.get("dtype"), dict):
            config.pop("dtype", None)
        accepted = inspect.signature(cls.__init__).parameters
        unknown = sorted(k for k in config if k not in accepted)
        if unknown:
            raise ValueError(f"{cls.__name__}.from_config: unsupported config keys {unknown}")
        return cls(**config)

    def __repr__(self):
        return f"<{type(self).__name__} name={self.name!r}>"


class LossMean(Metric):
    """Mean of per-sample losses (the `loss` entry of the logs)."""

    direction = "down"

    def update_from_losses(self, per_row, rows):
        ops.sum_into(self.acc, per_row)
        self.count += rows


class MeanMetric(Metric):
    """Mean over samples of per-row values written by `values(out, y_pred, y_true)`;
    weighted: sum(w v) / sum(w), as Keras's MeanMetricWrapper."""

    def values(self, out, y_pred, y_true):
        raise NotImplementedError

    def update(self, y_pred, y_true, rows):
        v = self.scratch("values", (rows,))
        self.values(v, y_pred, y_true)
        self.sum_into(self.acc, v)
        self.count += rows

    def update_weighted(self, y_pred, y_true, rows, weights):
        v = self.scratch("values", (rows,))
        self.values(v, y_pred, y_true)
        w = kernels_numba.to_device(np.ascontiguousarray(weights, np.float32), self.device)
        ops.multiply(v, v, w)
        self.sum_into(self.acc, v)
        self.count += float(weights.sum())


class Mean(Metric):
    """Keras's Mean: update_state(values, sample_weight=None); mean of all values seen.
    (Standalone: in compile, Keras would pass (y_true, y_pred) as (values, weights).)"""

    default_name = "mean"
    weighted_count = True

    def __init__(self, name=None, dtype=None):
        super().__init__(name, dtype)

    def update_state(self, values, sample_weight=None):
        if self.acc is None:
            self.build("cpu")
        v = np.ascontiguousarray(values, np.float32).reshape(-1)
        if sample_weight is not None:
            w = np.broadcast_to(np.asarray(sample_weight, np.float32).reshape(
                np.shape(sample_weight) + (1,) * (np.ndim(values) - np.ndim(sample_weight))),
                np.shape(values)).reshape(-1)
        if v.size == 0:
            return
        buf = kernels_numba.to_device(v, self.device)
        if sample_weight is not None:
            ops.multiply(buf, buf, kernels_numba.to_device(np.ascontiguousarray(w), self.device))
        self.sum_into(self.acc, buf)
        self.count += float(w.sum()) if sample_weight is not None else v.size

    def __call__(self, values, sample_weight=None):
        self.update_state(values, sample_weight)
        return self.result()

    def update(self, y_pred, y_true, rows):
        raise ValueError(f"{type(self).__name__} takes values (update_state(values)); "
                         "it cannot be a compile() metric")


class Sum(Mean):
    default_name = "sum"

    def result(self):
        return 0.0 if self.acc is None else float(kernels_numba.to_host(self.acc)[0])
