"""keras.layers.RNN and the cells (issue 34): built-in cells on the fused kernels equal the
matching layers, custom cells unrolled, refusals by name, config round trips."""

import numpy as np
import pytest

import kerasish as keras
from kerasish import layers, ops

RNG = np.random.default_rng(0)
X = RNG.standard_normal((3, 4, 2)).astype("float32")


@pytest.mark.parametrize("cell_cls, layer_cls", [(layers.LSTMCell, layers.LSTM),
                                                 (layers.GRUCell, layers.GRU),
                                                 (layers.SimpleRNNCell, layers.SimpleRNN)])
def test_builtin_cell_equals_its_layer(cell_cls, layer_cls):
    inputs = keras.Input((4, 2))
    rnn = keras.Model(inputs, layers.RNN(cell_cls(3), return_sequences=True)(inputs))
    ref = keras.Model(inputs, layer_cls(3, return_sequences=True)(inputs))
    ref.set_weights(rnn.get_weights())
    np.testing.assert_allclose(rnn.predict(X, verbose=0), ref.predict(X, verbose=0),
                               rtol=1e-6, atol=1e-6)


def test_stack_equals_two_layers_and_trains_the_same():
    inputs = keras.Input((4, 2))
    stack = keras.Model(inputs, layers.RNN([layers.GRUCell(3), layers.LSTMCell(2)])(inputs))
    two = keras.Model(inputs, layers.LSTM(2)(layers.GRU(3, return_sequences=True)(inputs)))
    two.set_weights(stack.get_weights())
    y = RNG.standard_normal((3, 2)).astype("float32")
    for m in (stack, two):
        m.compile(optimizer=keras.optimizers.SGD(0.1), loss="mse")
        m.train_on_batch(X, y)
    for a, b in zip(stack.get_weights(), two.get_weights()):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)


def test_initial_states_and_return_state():
    inputs, h, c = keras.Input((4, 2)), keras.Input((3,)), keras.Input((3,))
    out, sh, sc = layers.RNN(layers.LSTMCell(3), return_state=True)(inputs, initial_state=[h, c])
    assert [t.shape for t in (out, sh, sc)] == [(None, 3)] * 3


def test_config_round_trip_keeps_cells():
    rnn = layers.RNN(layers.StackedRNNCells([layers.LSTMCell(3), layers.GRUCell(2,
                                                                            reset_after=False)]),
                     go_backwards=True)
    rnn(keras.Input((4, 2)))
    again = layers.RNN.from_config(rnn.get_config())
    assert type(again) is layers.RNN and again.go_backwards
    assert [type(c).__name__ for c in again.cell.cells] == ["LSTMCell", "GRUCell"]
    assert again.cell.cells[1].reset_after is False
    assert "return_sequences" not in again.cell.cells[0].get_config()


def test_stateful_refused_by_name():
    with pytest.raises(ValueError, match="RNN: stateful=True is not supported by kerasish"):
        layers.RNN(layers.LSTMCell(2), stateful=True)
    with pytest.raises(ValueError, match="GRU: stateful=True is not supported by kerasish"):
        layers.GRU(2, stateful=True)


def test_cell_called_on_a_step_refused():
    with pytest.raises(TypeError, match=r"LSTMCell 'lstm_cell.*': calling a cell on one step "
                                        r"is not supported.*keras.layers.RNN\(LSTMCell"):
        layers.LSTMCell(2)(keras.Input((3,)), [keras.Input((2,)), keras.Input((2,))])


def test_stack_return_state_refused():
    with pytest.raises(ValueError, match="return_state=True with StackedRNNCells"):
        layers.RNN([layers.LSTMCell(2), layers.LSTMCell(2)], return_state=True)


def test_not_a_cell_refused():
    with pytest.raises(ValueError, match="RNN: expected a cell with a `state_size` attribute"):
        layers.RNN(layers.Dense(2))


class _Accumulate(layers.Layer):
    """A cell whose state sums its inputs (state_size a list, get_initial_state given)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.state_size = [2]

    def get_initial_state(self, batch_size=None):
        return [ops.ones((batch_size, 2))]

    def call(self, inputs, states):
        total = states[0] + inputs
        return total * 2.0, [total]


def test_custom_cell_unrolled_with_its_initial_state():
    inputs = keras.Input((4, 2))
    out, state = layers.RNN(_Accumulate(), return_state=True)(inputs)
    model = keras.Model(inputs, [out, state])
    got_out, got_state = model.predict(X, verbose=0)
    np.testing.assert_allclose(got_state, 1 + X.sum(1), rtol=1e-6)
    np.testing.assert_allclose(got_out, 2 * (1 + X.sum(1)), rtol=1e-6)


def test_custom_cell_needs_known_timesteps():
    with pytest.raises(ValueError, match=r"RNN rnn.*timesteps known; received shape "
                                         r"\(None, None, 2\)"):
        layers.RNN(_Accumulate())(keras.Input((None, 2)))


def test_custom_cell_wrong_state_count_refused():
    inputs, a, b = keras.Input((4, 2)), keras.Input((2,)), keras.Input((2,))
    with pytest.raises(ValueError, match=r"expected 1 initial state\(s\); received 2"):
        layers.RNN(_Accumulate())(inputs, initial_state=[a, b])


def test_custom_cell_given_a_mask_refused():
    inputs = keras.Input((4,))
    x = layers.Embedding(5, 2, mask_zero=True)(inputs)
    model = keras.Model(inputs, layers.RNN(_Accumulate())(x))
    with pytest.raises(NotImplementedError, match="a mask with a custom cell in "
                                                  "keras.layers.RNN is not supported"):
        model.predict(np.ones((1, 4), "float32"), verbose=0)


def test_weights_file_has_keras_cell_layout(tmp_path):
    import h5py

    inputs = keras.Input((4, 2))
    seq = layers.RNN(layers.LSTMCell(3), return_sequences=True, name="one")(inputs)
    model = keras.Model(inputs, layers.RNN([layers.GRUCell(2, name="g"), layers.GRUCell(2),
                                            layers.SimpleRNNCell(2, name="s")], name="two")(seq))
    path = str(tmp_path / "cells.weights.h5")
    model.save_weights(path)
    with h5py.File(path) as f:
        names = []
        f.visit(names.append)
    # Keras 3 keys layers and cells by class (snake_case, _1 for a repeat), not by name
    for key in ("layers/rnn/cell/vars/2", "layers/rnn_1/cell/cells/gru_cell/vars/2",
                "layers/rnn_1/cell/cells/gru_cell_1/vars/2",
                "layers/rnn_1/cell/cells/simple_rnn_cell/vars/2"):
        assert key in names
    again = keras.Model.from_config(model.get_config())
    again.load_weights(path)
    np.testing.assert_array_equal(again.predict(X, verbose=0), model.predict(X, verbose=0))
