"""Keras's RNN cells: SimpleRNNCell, LSTMCell, GRUCell and StackedRNNCells.

A built-in cell is the matching recurrent layer (SimpleRNN, LSTM, GRU) with a cell's
config: `keras.layers.RNN(cell)` (kerasish/layers/rnn.py) runs it over the whole
sequence on the fused recurrent kernels (its weights are the cell's, `cell.kernel` as in
Keras), so a cell is never called on one step by itself here. StackedRNNCells holds a
list of cells; the RNN runs them one after another over the sequence, which gives the
same values as Keras's step-by-step stacking (each cell at step t reads the cell below
at step t and its own state at t - 1).
"""

from kerasish.layers.layer import Layer
from kerasish.layers.recurrent import GRU, LSTM, SimpleRNN

_SEQUENCE_KEYS = ("return_sequences", "return_state", "go_backwards", "stateful", "unroll",
                  "zero_output_for_mask")


class _Cell:
    """What turns a recurrent layer into a cell: a cell's config and Keras's weight
    paths (`rnn/lstm_cell/kernel`), sequence options set by the RNN that runs it."""

    _is_builtin_cell = True

    def __call__(self, *args, **kwargs):
        raise TypeError(f"{type(self).__name__} '{self.name}': calling a cell on one step is "
                        f"not supported by kerasish; expected it inside "
                        f"keras.layers.RNN({type(self).__name__}(...))")

    @property
    def state_size(self):
        return [self.units] * self.STATES if self.STATES > 1 else self.units

    @property
    def output_size(self):
        return self.units

    def build(self, input_shape):
        super().build(input_shape)
        for w in self._weights:
            w.path = f"{self._path_prefix}{self.name}/{w.name}"

    def get_config(self):
        config = super().get_config()
        for key in _SEQUENCE_KEYS:
            config.pop(key, None)
        return config


class SimpleRNNCell(_Cell, SimpleRNN):
    """The cell of SimpleRNN, for keras.layers.RNN."""


class LSTMCell(_Cell, LSTM):
    """The cell of LSTM, for keras.layers.RNN."""


class GRUCell(_Cell, GRU):
    """The cell of GRU, for keras.layers.RNN."""


class StackedRNNCells(Layer):
    """Cells run one above the other at every step (the output of one is the input of
    the next); the states are every cell's, in order."""

    def __init__(self, cells, **kwargs):
        from kerasish.layers.wrappers import _deserialize

        super().__init__(**kwargs)
        cells = [_deserialize(c) if isinstance(c, dict) else c for c in cells]
        if not cells:
            raise ValueError("StackedRNNCells: expected a non-empty list of cells; received []")
        for c in cells:
            if not hasattr(c, "state_size"):
                raise ValueError(f"StackedRNNCells: expected cells with a state_size "
                                 f"attribute; received {c!r}")
        self.cells = list(cells)

    def __call__(self, *args, **kwargs):
        raise TypeError(f"StackedRNNCells '{self.name}': calling the cells on one step is not "
                        f"supported by kerasish; expected them inside "
                        f"keras.layers.RNN(StackedRNNCells(...))")

    @property
    def state_size(self):
        return [c.state_size for c in self.cells]

    @property
    def output_size(self):
        last = self.cells[-1]
        return getattr(last, "output_size", None) or _first_size(last.state_size)

    def get_config(self):
        from kerasish.layers.wrappers import _serialize

        return {**super().get_config(), "cells": [_serialize(c) for c in self.cells]}


def _first_size(state_size):
    return state_size[0] if isinstance(state_size, (list, tuple)) else state_size


def is_builtin(cell):
    """A built-in cell, or a stack of them: the RNN runs them on the fused kernels."""
    if isinstance(cell, StackedRNNCells):
        return all(is_builtin(c) for c in cell.cells)
    return getattr(cell, "_is_builtin_cell", False)
