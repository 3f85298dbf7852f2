"""`ProgbarLogger`: prints fit/evaluate/predict progress (keras-reference.md §3.1)."""

import sys

import kernels_numba
from kerasish.callbacks.callback import Callback
from kerasish.utils import progbar as _progbar
from kerasish.utils.progbar import Progbar, print_msg, resolve_verbose

COMPILE_MESSAGE = "compiling kernels for this CPU; cached for next time"


def _say_compiling():
    # Above a live tqdm bar (redrawn under it); otherwise on stderr, so the Keras lines
    # on stdout stay exactly Keras's.
    bar = _progbar._active_bar() if _progbar._active_bar is not None else None
    if bar is not None and not bar.disable:
        print_msg(COMPILE_MESSAGE)
    else:
        sys.stderr.write(COMPILE_MESSAGE + "\n")
        sys.stderr.flush()


class ProgbarLogger(Callback):
    """Prints progress in Keras 3's formats. `fit` adds one when `verbose != 0`.

    verbose=1: a tqdm bar on a terminal or in Jupyter, then Keras's final line; to a
    file or a pipe, whole lines only (see `kerasish.utils.progbar`). verbose=2: one
    line per epoch. `'auto'` is 1 when interactive, else 2. `Epoch i/N` is printed only
    when `epochs > 1`. The validation pass inside `fit` prints nothing.

    Args:
        plain_interval: seconds between progress lines when the output is not
            interactive (the end-of-epoch line is always printed).
    """

    chief_only = True  # under kerasish.distribute: runs on rank 0 only

    def __init__(self, plain_interval=30.0):
        super().__init__()
        self.plain_interval = plain_interval
        self.progbar = None
        self.target = None
        self.verbose = 1
        self.epochs = 1
        self.seen = 0
        self._called_in_fit = False
        self._unlisten = None

    def set_params(self, params):
        self.verbose = resolve_verbose(params.get("verbose", 1))
        self.epochs = params.get("epochs", 1) or 1
        self.target = params.get("steps")

    def close(self, aborted=False):
        """Take the bar off the screen (kept visible when `aborted`)."""
        if self.progbar is not None:
            self.progbar.close(aborted=aborted)
        self.progbar = None
        self._stop_listening()

    def _stop_listening(self):
        if self._unlisten is not None:
            self._unlisten()
            self._unlisten = None

    def _start(self):
        self.close()
        self.seen = 0
        if self.verbose:
            # A cold numba cache compiles kernels in the first steps (seconds): say why the
            # bar waits, once per process, and only when something really compiles.
            if not kernels_numba.kernels_compiled():
                self._unlisten = kernels_numba.on_first_compile(_say_compiling)
            self.progbar = Progbar(self.target, verbose=self.verbose, unit_name="step",
                                   plain_interval=self.plain_interval)

    def _update(self, batch, logs):
        self.seen = batch + 1
        if self.progbar is not None:
            self.progbar.update(self.seen, logs)

    def _finalize(self, logs):
        self._stop_listening()
        if self.progbar is None:
            return
        if self.progbar.target is None:  # unknown length: now we know it
            self.progbar.target = self.seen
        self.progbar.finalize(logs)
        self.progbar = None

    def on_train_begin(self, logs=None):
        self._called_in_fit = True

    def on_train_end(self, logs=None):
        self.close()
        self._called_in_fit = False

    def on_epoch_begin(self, epoch, logs=None):
        self.close()
        # Before the bar exists: a live tqdm bar would be drawn above this line.
        if self.verbose and self.epochs > 1:
            print_msg(f"Epoch {epoch + 1}/{self.epochs}")
        self._start()

    def on_train_batch_end(self, batch, logs=None):
        self._update(batch, logs)

    def on_epoch_end(self, epoch, logs=None):
        self._finalize(logs)

    def on_test_begin(self, logs=None):
        if not self._called_in_fit:
            self._start()

    def on_test_batch_end(self, batch, logs=None):
        if not self._called_in_fit:
            self._update(batch, logs)

    def on_test_end(self, logs=None):
        if not self._called_in_fit:
            self._finalize(logs)

    def on_predict_begin(self, logs=None):
        self._start()

    def on_predict_batch_end(self, batch, logs=None):
        self._update(batch, None)  # the bar shows no outputs

    def on_predict_end(self, logs=None):
        self._finalize(None)
