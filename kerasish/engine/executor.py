"""The static layer graph executor: buffers planned once, then a fixed list of launches.

For a built Sequential model and a batch size, the executor allocates every buffer a
step needs (input, activations, activation gradients, labels, per-row losses) once.
A step then only copies the host batch in and runs kernels_numba ops: no allocation.
Batches smaller than the planned size (the last partial batch) use row views.
On CUDA the trainer feeds batches through two input slots instead (engine/feeder.py):
their copies are issued ahead on a copy stream and a step only waits for its own.

Activation gradients ping-pong between two flat buffers: while walking backward only
the gradient of a layer's output and of its input are alive at once. Layers that
only reshape (Flatten, Reshape) alias their input buffer instead of copying.
"""

import numpy as np

import kernels_numba

TRAIN, TEST, PREDICT = "train", "test", "predict"


def _bytes(shape, dtype=np.float32):
    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


def _view(flat, shape):
    """The first prod(shape) elements of a flat buffer, shaped."""
    return flat[: int(np.prod(shape, dtype=np.int64))].reshape(shape)


def _rows_view(buf, n):
    return buf if buf.shape[0] == n else buf[:n]


class Step:
    """Views of every buffer for one concrete batch size n."""

    def __init__(self, ex, n, slot=0):
        self.n = n
        shapes = ex.act_shapes
        self.acts = [None] * len(shapes)
        self.acts[0] = _rows_view(ex.x_slots[slot], n)
        for i, layer in enumerate(ex.layers):
            shape = (n, *shapes[i + 1][1:])
            if getattr(layer, "aliases_input", False):
                self.acts[i + 1] = self.acts[i].reshape(shape)
            else:
                self.acts[i + 1] = _rows_view(ex.acts[i + 1], n)
        out = self.acts[-1]
        self.rows = out.size // out.shape[out.ndim - 1]
        self.y_pred = out.reshape((self.rows, out.shape[out.ndim - 1]))
        self.forward = [(layer, self.acts[i], self.acts[i + 1]) for i, layer in
                        enumerate(ex.layers)]
        if ex.mode == PREDICT:
            return
        self.y_true = _rows_view(ex.y_slots[slot], self.rows)
        self.per_row = _rows_view(ex.per_row, self.rows)
        self.loss_scratch = {k: _rows_view(v, self.rows) for k, v in ex.loss_scratch.items()}
        if ex.mode == TRAIN:
            self._plan_backward(ex, n)

    def _plan_backward(self, ex, n):
        shapes = ex.act_shapes
        grads = [None] * len(shapes)
        current = 0
        grads[-1] = _view(ex.grad_flats[current], (n, *shapes[-1][1:]))
        self.dy_pred = grads[-1].reshape(self.y_pred.shape)
        self.backward = []
        for i in range(len(ex.layers) - 1, -1, -1):
            layer = ex.layers[i]
            shape = (n, *shapes[i][1:])
            if getattr(layer, "aliases_input", False):
                grads[i] = grads[i + 1].reshape(shape)
                continue
            needs_dx = i > 0 or getattr(layer, "needs_input_gradient", False)
            if needs_dx:
                current = 1 - current
                grads[i] = _view(ex.grad_flats[current], shape)
            self.backward.append((layer, grads[i], grads[i + 1], self.acts[i], self.acts[i + 1]))


class Executor:
    """Buffers and step functions for one model, one batch size and one mode."""

    def __init__(self, model, batch_size, mode):
        self.model, self.mode, self.batch_size = model, mode, int(batch_size)
        self.device = model.device
        self.layers = model.layers
        self.act_shapes = model._act_shapes  # per-sample shapes with None batch
        b, dev = self.batch_size, self.device
        empty = kernels_numba.empty
        model._ensure_scratch(b)
        self.x = empty((b, *self.act_shapes[0][1:]), np.float32, dev)
        self.acts = [self.x]
        for i, layer in enumerate(self.layers):
            if getattr(layer, "aliases_input", False):
                self.acts.append(None)
            else:
                self.acts.append(empty((b, *self.act_shapes[i + 1][1:]), np.float32, dev))
        out_shape = (b, *self.act_shapes[-1][1:])
        rows = int(np.prod(out_shape[:-1], dtype=np.int64))
        self.steps = {}
        self.x_slots, self.y_slots = [self.x], []  # input slots (2 once a feeder exists)
        self._feeder = None
        if mode == PREDICT:
            return
        loss = model.loss
        if loss.sparse:
            self.y_true = empty((rows,), np.int32, dev)
        else:
            self.y_true = empty((rows, out_shape[-1]), np.float32, dev)
        self.y_slots.append(self.y_true)
        self.per_row = empty((rows,), np.float32, dev)
        self.loss_scratch = {k: empty(shape, dt, dev) for k, (shape, dt) in
                             loss.scratch_shapes(rows, out_shape[-1]).items()}
        if mode == TRAIN:
            biggest = max(_bytes((b, *s[1:])) for s in self.act_shapes) // 4
            self.grad_flats = [empty((biggest,), np.float32, dev) for _ in range(2)]

    def step(self, n, slot=0):
        """Cached views for batch size n and input slot (at most 2 sizes x 2 slots)."""
        s = self.steps.get((n, slot))
        if s is None:
            if n > self.batch_size:
                raise ValueError(f"batch of {n} samples exceeds the planned batch size "
                                 f"{self.batch_size}")
            s = self.steps[(n, slot)] = Step(self, n, slot)
        return s

    def feeder(self):
        """The double-buffered async input of this executor (created once; CUDA path)."""
        if self._feeder is None:
            from kerasish.engine.feeder import DeviceFeeder

            self._feeder = DeviceFeeder(self)
        return self._feeder

    def load(self, s, x, y=None):
        kernels_numba.copy_from_host(s.acts[0], x)
        if y is not None:
            kernels_numba.copy_from_host(s.y_true, y)

    def _begin(self, x, y):
        """Views for this batch, its input on the device: a Staged batch (feeder) only
        makes the compute stream wait for its copy; a host batch is copied now."""
        if hasattr(x, "slot"):
            s = self.step(x.n, x.slot)
            x.wait()
            return s
        s = self.step(len(x))
        self.load(s, x, y)
        return s

    @staticmethod
    def _end(x):
        if hasattr(x, "slot"):
            x.release()

    def forward(self, s, training):
        for layer, x, y in s.forward:
            if not getattr(layer, "aliases_input", False):
                layer.forward(y, x, training)

    def train_step(self, x, y):
        """Forward, loss, backward and optimizer update for one host batch."""
        model = self.model
        s = self._begin(x, y)
        try:
            self.forward(s, True)
            self._loss_and_metrics(s)
            model.loss.backward(s.dy_pred, s.y_pred, s.y_true, 1.0 / s.rows, s.loss_scratch)
            for layer, dx, dy, xin, yout in s.backward:
                layer.backward(dx, dy, xin, yout)
            model.optimizer.apply(model._trainable_variables)
        finally:
            self._end(x)

    def test_step(self, x, y):
        s = self._begin(x, y)
        try:
            self.forward(s, False)
            self._loss_and_metrics(s)
        finally:
            self._end(x)

    def predict_step(self, x):
        s = self.step(len(x))
        self.load(s, x)
        self.forward(s, False)
        return kernels_numba.to_host(s.acts[-1])

    def _loss_and_metrics(self, s):
        model = self.model
        model.loss.forward(s.per_row, s.y_pred, s.y_true, s.loss_scratch)
        model._loss_tracker.update_from_losses(s.per_row, s.rows)
        for metric in model._metrics:
            metric.update(s.y_pred, s.y_true, s.rows)

    @staticmethod
    def planned_bytes(model, batch_size):
        """Bytes of every planned buffer for a training step at `batch_size`, by kind."""
        b = batch_size
        params = sum(_bytes(w.shape) for layer in model.layers for w in layer.weights)
        trainable = [w for layer in model.layers for w in layer.trainable_weights]
        grads = sum(_bytes(w.shape) for w in trainable)
        n_slots = len(getattr(model.optimizer, "SLOTS", ())) if model.optimizer else 2
        acts = _bytes((b, *model._act_shapes[0][1:])) + sum(
            _bytes((b, *model._act_shapes[i + 1][1:]))
            for i, layer in enumerate(model.layers) if not getattr(layer, "aliases_input", False))
        act_grads = 2 * max(_bytes((b, *s[1:])) for s in model._act_shapes)
        scratch = sum(_bytes(shape, dt) for layer in model.layers
                      for shape, dt in layer.scratch_shapes(b).values())
        return {"parameters": params, "gradients": grads, "optimizer": grads * n_slots,
                "activations": acts, "activation gradients": act_grads, "scratch": scratch}
