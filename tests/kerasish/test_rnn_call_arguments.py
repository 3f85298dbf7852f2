"""RNN layers' call arguments (issue 34): initial_state= as Keras takes it, checked."""

import numpy as np
import pytest

import kerasish as keras
from kerasish import layers


def test_initial_state_keyword_equals_list_input():
    seq, h, c = keras.Input((3, 2)), keras.Input((4,)), keras.Input((4,))
    lstm = layers.LSTM(4)
    a = keras.Model([seq, h, c], lstm(seq, initial_state=[h, c]))
    b = keras.Model([seq, h, c], lstm([seq, h, c]))
    rng = np.random.default_rng(0)
    data = [rng.standard_normal(s).astype("float32") for s in ((2, 3, 2), (2, 4), (2, 4))]
    np.testing.assert_array_equal(a.predict(data, verbose=0), b.predict(data, verbose=0))
    plain = layers.LSTM(4)
    zero = keras.Model(seq, plain(seq))
    plain.set_weights(lstm.get_weights())
    zero = zero.predict(data[0], verbose=0)
    assert not np.allclose(zero, a.predict(data, verbose=0))  # the states were used


def test_initial_state_positional():
    seq, h = keras.Input((3, 2)), keras.Input((4,))
    out = layers.GRU(4)(seq, h)
    assert out.shape == (None, 4)


def test_states_in_both_places_refused():
    seq, h = keras.Input((3, 2)), keras.Input((4,))
    with pytest.raises(ValueError, match="GRU .*either in the input list or as "
                                         "initial_state=; received both"):
        layers.GRU(4)([seq, h], initial_state=h)


def test_wrong_state_count_refused():
    seq, h = keras.Input((3, 2)), keras.Input((4,))
    with pytest.raises(ValueError, match=r"expected 2 initial state\(s\) of shape "
                                         r"\(batch, 4\); received shapes \[\(None, 4\)\]"):
        layers.LSTM(4)(seq, initial_state=[h])


def test_wrong_state_width_refused():
    seq, h = keras.Input((3, 2)), keras.Input((5,))
    with pytest.raises(ValueError, match=r"SimpleRNN .*expected 1 initial state\(s\) of "
                                         r"shape \(batch, 4\); received shapes \[\(None, 5\)\]"):
        layers.SimpleRNN(4)(seq, initial_state=h)
