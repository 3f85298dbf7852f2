"""`CSVLogger`: one CSV row per epoch."""

import collections.abc
import csv
import os

import numpy as np

from kerasish.callbacks.callback import Callback


def _cell(value):
    if isinstance(value, str):
        return value
    if isinstance(value, collections.abc.Iterable) and not (
            isinstance(value, np.ndarray) and value.ndim == 0):
        return f'"[{", ".join(map(str, value))}]"'
    return value


class CSVLogger(Callback):
    """Stream the epoch logs to a CSV file, as Keras 3 does.

    The header is `epoch` (0-based) then the first epoch's log keys, sorted. When the
    first epoch has no `val_*` key, `val_<key>` columns are added anyway (validation may
    start later with `validation_freq`); missing values are written as `NA`. The file is
    flushed after every row. Rows use the csv module's excel dialect (`\\r\\n` endings).

    Args:
        filename: path of the CSV file.
        separator: one character between fields.
        append: append to an existing file (the header is written only if it is empty).
    """

    chief_only = True  # under kerasish.distribute: runs on rank 0 only

    def __init__(self, filename, separator=",", append=False):
        super().__init__()
        self.sep = separator
        self.filename = os.fspath(filename)
        self.append = append
        self.writer = None
        self.keys = None
        self.append_header = True
        self.csv_file = None

    def on_train_begin(self, logs=None):
        self.append_header = True
        if self.append:
            if os.path.exists(self.filename):
                with open(self.filename) as f:
                    self.append_header = not f.readline()
            mode = "a"
        else:
            mode = "w"
        if self.csv_file is not None and not self.csv_file.closed:
            self.csv_file.close()
        self.csv_file = open(self.filename, mode, newline="")
        self.writer = None
        self.keys = None

    def on_epoch_end(self, epoch, logs=None):
        logs = logs or {}
        if self.keys is None:
            self.keys = sorted(logs)
            if self.keys and not any(k.startswith("val_") for k in self.keys):
                self.keys.extend(["val_" + k for k in self.keys])
        if self.writer is None:
            dialect = type("CSVLoggerDialect", (csv.excel,), {"delimiter": self.sep})
            self.writer = csv.DictWriter(self.csv_file, fieldnames=["epoch"] + self.keys,
                                         dialect=dialect)
            if self.append_header:
                self.writer.writeheader()
        row = {"epoch": epoch}
        row.update((key, _cell(logs.get(key, "NA"))) for key in self.keys)
        self.writer.writerow(row)
        self.csv_file.flush()

    def on_train_end(self, logs=None):
        if self.csv_file is not None and not self.csv_file.closed:
            self.csv_file.close()
        self.writer = None
