"""The input pipeline: batches of host NumPy arrays for fit/evaluate/predict.

The loader protocol (what `make_loader` returns and the trainer relies on):

- `iter(loader)` starts ONE epoch and returns an iterator of `(x_batch, y_batch)` NumPy
  pairs (`y_batch` is None when there are no targets). Call `iter()` again for the
  next epoch; array loaders and Sequences reshuffle on each call.
- `loader.num_batches` is the number of batches per epoch, or None when unknown
  (generators); `len(loader)` works whenever it is known.
- Stopping early is safe: leaving a `for` loop (break, exception, KeyboardInterrupt) or
  calling `.close()` on the epoch iterator stops and joins its prefetch thread.
- An exception raised while preparing a batch (in `transform`, `__getitem__`, ...)
  is re-raised from `next()` with its original traceback.

Sources: NumPy arrays (or any indexable with len()) through `DataLoader`; a `DataLoader`
as is; a Keras-style Sequence (`__len__`, `__getitem__(i) -> (x, y)`, optional
`on_epoch_end()` called after each epoch); a Python generator or iterable yielding
`(x, y)` batches (each epoch continues a one-shot generator until it is exhausted).
Per-batch transforms live in `kerasish.data.transforms`.
"""

from kerasish.data import transforms
from kerasish.data.adapters import GeneratorAdapter, SequenceAdapter, make_loader
from kerasish.data.loader import DataLoader

__all__ = ["DataLoader", "GeneratorAdapter", "SequenceAdapter", "make_loader", "transforms"]
