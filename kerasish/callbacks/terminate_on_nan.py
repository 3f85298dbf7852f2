"""`TerminateOnNaN`: stop as soon as the training loss is NaN or infinite."""

import math

from kerasish.callbacks.callback import Callback
from kerasish.utils.progbar import print_msg


class TerminateOnNaN(Callback):
    """Check `logs["loss"]` after every training batch; on NaN/Inf stop training.

    Args:
        raise_error: raise `RuntimeError` instead of setting `model.stop_training`
            (then `on_train_end` is not called, so e.g. a BackupAndRestore checkpoint
            is kept).
    """

    def __init__(self, raise_error=False):
        super().__init__()
        self.raise_error = raise_error

    def on_batch_end(self, batch, logs=None):
        loss = (logs or {}).get("loss")
        if loss is None:
            return
        try:
            bad = math.isnan(loss) or math.isinf(loss)
        except TypeError:  # not a scalar
            return
        if not bad:
            return
        if self.raise_error:
            raise RuntimeError(f"NaN or Inf loss encountered at batch {batch}. "
                               f"Loss value: {loss}. Terminating training immediately.")
        print_msg(f"Batch {batch}: Invalid loss, terminating training")
        self.model.stop_training = True
