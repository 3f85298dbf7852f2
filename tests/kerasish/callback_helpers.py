"""A fake model and the trainer's loop, shared by the callback tests.

The fake keeps weights in memory and writes JSON "save" files, so callbacks can be driven
through CallbackList exactly as kerasish.trainer drives them without a real model.
"""

import json
import os

import numpy as np

from kerasish import callbacks as cb


class FakeOptimizer:
    def __init__(self, learning_rate=0.01):
        self.learning_rate = learning_rate


class FakeModel:
    """The model surface callbacks use; weights are [w] with w = [epochs trained]."""

    def __init__(self, built=True):
        self.stop_training = False
        self.optimizer = FakeOptimizer()
        self.built = built
        self.history = None
        self._initial_epoch = None
        self._w = [np.zeros(2)]
        self.saves = []

    def get_weights(self):
        return [w.copy() for w in self._w]

    def set_weights(self, weights):
        self._w = [np.array(w) for w in weights]

    def _write(self, filepath, kind):
        with open(filepath, "w") as f:
            json.dump({"kind": kind, "w": self._w[0].tolist()}, f)
        self.saves.append(os.path.basename(filepath))

    def save(self, filepath, overwrite=True):
        self._write(filepath, "model")

    def save_weights(self, filepath):
        self._write(filepath, "weights")

    def load_weights(self, filepath):
        with open(filepath) as f:
            self._w = [np.array(json.load(f)["w"])]


def run_fit(model, callbacks=(), *, epochs=3, steps=2, verbose=0, losses=None,
            val=True, clock=None, batch_loss=None, initial_epoch=0):
    """The trainer's loop from the CallbackList contract. Epoch e has loss losses[e]
    (default 1/(e+1)); each batch adds 1 to the weights and 5 ms to the clock."""
    losses = losses or [1.0 / (e + 1) for e in range(epochs)]
    cbs = cb.CallbackList(list(callbacks), add_history=True, add_progbar=verbose != 0,
                          model=model, verbose=verbose, epochs=epochs, steps=steps)
    model.stop_training = False
    model._initial_epoch = None
    cbs.on_train_begin()
    start = model._initial_epoch if model._initial_epoch is not None else initial_epoch
    logs = {}
    for epoch in range(start, epochs):
        cbs.on_epoch_begin(epoch)
        for batch in range(steps):
            cbs.on_train_batch_begin(batch)
            model._w[0] += 1
            if clock is not None:
                clock.t += 0.005
            loss = batch_loss(epoch, batch) if batch_loss else losses[epoch]
            cbs.on_train_batch_end(batch, {"loss": np.float32(loss), "accuracy": 0.5})
            if model.stop_training:
                break
        logs = {"loss": losses[epoch], "accuracy": 1 - losses[epoch]}
        if val:
            logs.update(val_loss=losses[epoch] + 0.125, val_accuracy=0.75)
        cbs.on_epoch_end(epoch, logs)
        if model.stop_training:
            break
    cbs.on_train_end(logs)
    return model.history
