"""`History`: the per-epoch logs that `fit` returns (keras-reference.md §1.6)."""

from kerasish.callbacks.callback import Callback


class History(Callback):
    """Records the epoch logs. `fit` adds one automatically and returns it.

    Attributes:
        history: dict of lists, one value per completed epoch, e.g.
            `{'accuracy': [...], 'loss': [...], 'val_accuracy': [...], 'val_loss': [...]}`.
        epoch: the 0-based indices of the completed epochs.
        params: `{'verbose': ..., 'epochs': ..., 'steps': ...}`.
    """

    def __init__(self):
        super().__init__()
        self.history = {}
        self.epoch = []

    def on_train_begin(self, logs=None):
        self.epoch = []

    def on_epoch_end(self, epoch, logs=None):
        self.epoch.append(epoch)
        for key, value in (logs or {}).items():
            self.history.setdefault(key, []).append(value)
        # An interrupted fit returns nothing, but model.history still holds the
        # completed epochs.
        if self.model is not None:
            self.model.history = self
