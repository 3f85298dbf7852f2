"""`LambdaCallback`: a callback built from plain functions."""

from kerasish.callbacks.callback import Callback


class LambdaCallback(Callback):
    """Callback whose hooks are the functions given.

    `on_epoch_begin`/`on_epoch_end` are called as `f(epoch, logs)`, `on_train_begin`/
    `on_train_end` as `f(logs)`, batch hooks as `f(batch, logs=logs)`. Any other hook
    can be passed by name through `**kwargs` (e.g. `on_test_end=...`); every keyword
    becomes an attribute.
    """

    def __init__(self, on_epoch_begin=None, on_epoch_end=None, on_train_begin=None,
                 on_train_end=None, on_train_batch_begin=None, on_train_batch_end=None,
                 **kwargs):
        super().__init__()
        self.__dict__.update(kwargs)
        hooks = {"on_epoch_begin": on_epoch_begin, "on_epoch_end": on_epoch_end,
                 "on_train_begin": on_train_begin, "on_train_end": on_train_end,
                 "on_train_batch_begin": on_train_batch_begin,
                 "on_train_batch_end": on_train_batch_end}
        for name, fn in hooks.items():
            if fn is not None:
                setattr(self, name, fn)
