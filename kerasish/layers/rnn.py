"""keras.layers.RNN: Keras's generic recurrent layer around a cell.

Two ways, chosen by the cell:
- built-in cells (SimpleRNNCell, LSTMCell, GRUCell, or a StackedRNNCells of them): each
  cell is the matching recurrent layer run over the whole sequence on the fused kernels,
  one cell after another (the sequence between two cells is this layer's scratch), so
  masks, dropout and initial states work as in LSTM/GRU/SimpleRNN;
- any other cell (a class with `state_size` and `call(inputs, states)` written with
  keras.ops): the layer is a traced call() that unrolls the cell over the (known) time
  steps, its states starting from `cell.get_initial_state` or zeros.
stateful=True and unroll=True are refused by name, as by LSTM/GRU/SimpleRNN.
"""

import numpy as np

from kerasish.graph.nodes import flatten
from kerasish.layers.layer import Layer
from kerasish.layers.recurrent import with_initial_state
from kerasish.layers.rnn_cells import StackedRNNCells, _first_size, is_builtin
from kerasish.layers.wrappers import _deserialize, _serialize, _Wrapper


class RNN(_Wrapper):
    """`RNN(cell, return_sequences=False, return_state=False, go_backwards=False,
    stateful=False, unroll=False, zero_output_for_mask=False)`, as Keras 3."""

    supports_masking = True

    def __new__(cls, cell=None, *args, **kwargs):
        if cls is RNN and cell is not None:
            found = _deserialize(cell) if isinstance(cell, dict) else cell
            builtin = all(is_builtin(c) for c in found) if isinstance(found, (list, tuple)) \
                else is_builtin(found)
            if not builtin:
                return super().__new__(_CellLoop)
        return super().__new__(cls)

    def __init__(self, cell, return_sequences=False, return_state=False, go_backwards=False,
                 stateful=False, unroll=False, zero_output_for_mask=False, **kwargs):
        if isinstance(cell, dict):
            cell = _deserialize(cell)
        if isinstance(cell, (list, tuple)):
            cell = StackedRNNCells(cell)
        if not hasattr(cell, "state_size") or not (hasattr(cell, "call") or is_builtin(cell) or
                                                   isinstance(cell, StackedRNNCells)):
            raise ValueError(f"RNN: expected a cell with a `state_size` attribute and a "
                             f"`call(inputs, states)` method; received {cell!r}")
        if stateful:
            raise ValueError("RNN: stateful=True is not supported by kerasish (states kept "
                             "across batches, reset_states()); expected stateful=False")
        if unroll:  # as LSTM/GRU/SimpleRNN (the README's `stateful`/`unroll` RNNs)
            raise ValueError("RNN: unroll=True is not supported by kerasish; expected "
                             "unroll=False")
        super().__init__(**kwargs)
        self.cell = cell
        self.return_sequences, self.return_state = bool(return_sequences), bool(return_state)
        self.go_backwards, self.unroll = bool(go_backwards), bool(unroll)
        self.zero_output_for_mask = bool(zero_output_for_mask)
        self._configure()

    def __call__(self, inputs, initial_state=None, *args, **kwargs):
        if initial_state is not None:
            initial_state = flatten(initial_state)  # nested per cell for a stack
        return super().__call__(with_initial_state(self, inputs, initial_state), *args,
                                **kwargs)

    # -- built-in cells: each runs the whole sequence ---------------------------------

    def _cells(self):
        return list(self.cell.cells) if isinstance(self.cell, StackedRNNCells) else [self.cell]

    def _configure(self):
        cells = self._cells()
        if len(cells) > 1 and self.return_state:
            raise ValueError("RNN: return_state=True with StackedRNNCells is not supported by "
                             "kerasish (Keras returns the states nested per cell)")
        for k, cell in enumerate(cells):
            last = k == len(cells) - 1
            cell.return_sequences = self.return_sequences if last else True
            cell.return_state = self.return_state
            cell.go_backwards = self.go_backwards if k == 0 else False
            cell.zero_output_for_mask = self.zero_output_for_mask if last else False

    def _inner(self):
        return tuple((f"{k}:", c) for k, c in enumerate(self._cells()))

    @property
    def propagates_mask(self):
        return self.return_sequences

    def _chain_shapes(self, input_shape):
        """Each cell's input shape (its states' shapes after the sequence's)."""
        shapes = input_shape if isinstance(input_shape, list) else [tuple(input_shape)]
        seq, states = tuple(shapes[0]), [tuple(s) for s in shapes[1:]]
        if len(seq) != 3:
            raise ValueError(f"RNN {self.name}: expected input of rank 3 (batch, timesteps, "
                             f"features); received shape {seq}")
        out, k = [], 0
        for cell in self._cells():
            mine = states[k:k + cell.STATES] if states else []
            k += cell.STATES
            out.append([seq, *mine] if mine else seq)
            seq = (seq[0], seq[1], cell.units)
        if states and k != len(states):
            raise ValueError(f"RNN {self.name}: expected {k} initial state(s); received "
                             f"{len(states)}")
        return out

    def build(self, input_shape):
        prefix = f"{self._path_prefix}{self.name}/"
        if isinstance(self.cell, StackedRNNCells):
            prefix += f"{self.cell.name}/"
        for cell, shape in zip(self._cells(), self._chain_shapes(input_shape)):
            cell._path_prefix = prefix
            cell.trainable = self.trainable
            cell._build_once(shape)
        self._weights = [w for c in self._cells() for w in c._weights]
        self.built = True

    def compute_output_shape(self, input_shape):
        *_, last = self._chain_shapes(input_shape)
        return self._cells()[-1].compute_output_shape(last)

    def _bind(self):
        """Each cell's concrete shapes from this layer's (a None time size is bound per
        batch signature on this layer only)."""
        for cell, shape in zip(self._cells(), self._chain_shapes(self.input_shape)):
            cell.input_shape = shape
            cell.output_shape = cell.compute_output_shape(shape)

    def scratch_shapes(self, batch_size):
        self._bind()
        shapes = self._inner_scratch(batch_size)
        for k, cell in enumerate(self._cells()[:-1]):
            seq = self._chain_shapes(self.input_shape)[k + 1]
            seq = seq[0] if isinstance(seq, list) else seq
            shapes[f"seq{k}"] = ((batch_size, *seq[1:]), np.float32)
            shapes[f"dseq{k}"] = ((batch_size, *seq[1:]), np.float32)
        return shapes

    def _split(self, x):
        """Each cell's input (sequence, or [sequence, *states]) from this layer's."""
        seqs = [x[0] if isinstance(x, (list, tuple)) else x]
        states = list(x[1:]) if isinstance(x, (list, tuple)) else []
        n = seqs[0].shape[0]
        out, k = [], 0
        for j, cell in enumerate(self._cells()):
            seq = seqs[0] if j == 0 else self.scratch_view(f"seq{j - 1}", n)
            mine = states[k:k + cell.STATES]
            k += cell.STATES
            out.append([seq, *mine] if mine else seq)
        return out

    def _check_mask(self, mask):
        if mask is not None and self.go_backwards and len(self._cells()) > 1:
            raise NotImplementedError(f"RNN {self.name}: a mask with go_backwards=True and "
                                      f"StackedRNNCells is not supported by kerasish")

    def forward(self, y, x, training, mask=None):
        self._share_scratch()
        self._bind()
        self._check_mask(mask)
        cells, ins = self._cells(), self._split(x)
        n = ins[0][0].shape[0] if isinstance(ins[0], list) else ins[0].shape[0]
        for k, (cell, xin) in enumerate(zip(cells, ins)):
            out = y if k == len(cells) - 1 else self.scratch_view(f"seq{k}", n)
            if mask is None:
                cell.forward(out, xin, training)
            else:
                cell.forward(out, xin, training, mask=mask)

    def backward(self, dx, dy, x, y, mask=None):
        self._share_scratch()
        self._bind()
        cells, ins = self._cells(), self._split(x)
        dxs = dx if isinstance(dx, (list, tuple)) else [dx]
        dseq, dstates = dxs[0], list(dxs[1:])
        n = ins[0][0].shape[0] if isinstance(ins[0], list) else ins[0].shape[0]
        offsets = np.cumsum([0] + [c.STATES for c in cells])
        for k in range(len(cells) - 1, -1, -1):
            cell, xin = cells[k], ins[k]
            out = y if k == len(cells) - 1 else self.scratch_view(f"seq{k}", n)
            grad_out = dy if k == len(cells) - 1 else self.scratch_view(f"dseq{k}", n)
            grad_in = dseq if k == 0 else self.scratch_view(f"dseq{k - 1}", n)
            if isinstance(xin, list):
                grad_in = [grad_in, *(dstates[offsets[k]:offsets[k + 1]] or
                                      [None] * (len(xin) - 1))]
            if mask is None:
                cell.backward(grad_in, grad_out, xin, out)
            else:
                cell.backward(grad_in, grad_out, xin, out, mask=mask)

    def get_extra_state(self):
        return {f"{k}_{key}": v for k, c in enumerate(self._cells())
                for key, v in c.get_extra_state().items()}

    def set_extra_state(self, state):
        for k, c in enumerate(self._cells()):
            c.set_extra_state({key: state[f"{k}_{key}"] for key in ("seed", "step")})

    # -- config ---------------------------------------------------------------------

    def get_config(self):
        return {**super().get_config(), "return_sequences": self.return_sequences,
                "return_state": self.return_state, "go_backwards": self.go_backwards,
                "stateful": False, "unroll": self.unroll,
                "zero_output_for_mask": self.zero_output_for_mask,
                "cell": _serialize(self.cell)}


class _CellLoop(RNN):
    """RNN of a user's cell: call() unrolls `cell.call(inputs, states)` over the steps."""

    forward = Layer.forward
    backward = Layer.backward
    supports_masking = False
    mask_refusal = ("a mask with a custom cell in keras.layers.RNN is not supported by "
                    "kerasish (masks reach LSTMCell/GRUCell/SimpleRNNCell)")

    def _configure(self):
        if self.zero_output_for_mask:
            raise ValueError("RNN: zero_output_for_mask=True with a custom cell is not "
                             "supported by kerasish")

    def _cells(self):
        return list(self.cell.cells) if isinstance(self.cell, StackedRNNCells) else [self.cell]

    @property
    def propagates_mask(self):
        return False

    def build(self, input_shape):
        shapes = input_shape if isinstance(input_shape, list) else [tuple(input_shape)]
        seq = tuple(shapes[0])
        if len(seq) != 3 or seq[1] is None:
            raise ValueError(f"RNN {self.name}: a custom cell is unrolled over the steps, so "
                             f"it needs input (batch, timesteps, features) with timesteps "
                             f"known; received shape {seq}")
        width = seq[-1]
        for cell in self._cells():
            if not cell.built:
                cell.build((None, width))
                cell.built = True
            width = getattr(cell, "output_size", None) or _first_size(cell.state_size)
        self._weights = [w for c in self._cells() for w in c._weights]
        self.built = True

    def _initial_states(self, x):
        from kerasish import ops as kops

        batch = kops.shape(x)[0]
        out = []
        for cell in self._cells():
            fn = getattr(cell, "get_initial_state", None)
            if fn is not None:
                found = fn(batch_size=batch)
                out.append(list(found) if isinstance(found, (list, tuple)) else [found])
            else:
                sizes = cell.state_size if isinstance(cell.state_size, (list, tuple)) \
                    else [cell.state_size]
                out.append([kops.zeros((batch, int(s))) for s in sizes])
        return out

    def _given_states(self, states):
        out, k = [], 0
        for cell in self._cells():
            sizes = cell.state_size if isinstance(cell.state_size, (list, tuple)) \
                else [cell.state_size]
            out.append(list(states[k:k + len(sizes)]))
            k += len(sizes)
        if k != len(states):
            raise ValueError(f"RNN {self.name}: expected {k} initial state(s); received "
                             f"{len(states)}")
        return out

    def call(self, sequences, training=None):
        from kerasish import ops as kops

        if isinstance(sequences, (list, tuple)):
            x, given = sequences[0], list(sequences[1:])
        else:
            x, given = sequences, []
        states = self._given_states(given) if given else self._initial_states(x)
        steps = range(x.shape[1] - 1, -1, -1) if self.go_backwards else range(x.shape[1])
        outputs = []
        for t in steps:
            out = x[:, t, :]
            for k, cell in enumerate(self._cells()):
                out, new = cell.call(out, states[k])
                states[k] = list(new) if isinstance(new, (list, tuple)) else [new]
            outputs.append(out)
        output = kops.stack(outputs, axis=1) if self.return_sequences else outputs[-1]
        if self.return_state:
            return [output, *[s for group in states for s in group]]
        return output


_CellLoop.__name__ = _CellLoop.__qualname__ = "RNN"  # its config is Keras's RNN's
