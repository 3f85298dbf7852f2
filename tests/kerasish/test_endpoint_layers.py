"""Issue 34: endpoint layers (call(self, targets, logits, ...) given several positional
tensors), built-in losses called on symbolic tensors inside call(), and models compiled
without a loss that train on their add_loss terms (Keras 3's training guide)."""

import numpy as np
import pytest

import kerasish as keras
from kerasish import layers, ops


class Endpoint(layers.Layer):
    def __init__(self, loss_fn=None, **kwargs):
        super().__init__(**kwargs)
        self.loss_fn = loss_fn or keras.losses.MeanSquaredError()

    def call(self, targets, logits, sample_weights=None):
        self.add_loss(self.loss_fn(targets, logits, sample_weights))
        return ops.softmax(logits)


def _endpoint_model(loss_fn, units=4):
    inputs, targets = keras.Input((3,), name="inputs"), keras.Input((units,), name="targets")
    logits = layers.Dense(units)(inputs)
    out = Endpoint(loss_fn, name="endpoint")(targets, logits)
    return keras.Model([inputs, targets], out)


def _data(units=4, n=8):
    r = np.random.default_rng(0)
    return {"inputs": r.random((n, 3)).astype("float32"),
            "targets": (r.random((n, units)) > 0.5).astype("float32")}


@pytest.mark.parametrize("loss", [keras.losses.BinaryCrossentropy(from_logits=True),
                                  keras.losses.MeanSquaredError(),
                                  keras.losses.CategoricalCrossentropy(from_logits=True,
                                                                       label_smoothing=0.1),
                                  keras.losses.Huber(delta=0.5), keras.losses.KLDivergence()])
def test_symbolic_loss_equals_the_loss_on_arrays(loss):
    """The traced formula (losses/symbolic.py) gives what the loss's kernels give."""
    model = _endpoint_model(loss)
    model.compile(optimizer="sgd")
    data = _data()
    logits = data["inputs"] @ model.get_weights()[0] + model.get_weights()[1]
    expected = float(loss(data["targets"], logits))
    assert np.isclose(model.evaluate(data, verbose=0), expected, rtol=1e-5)


def test_add_loss_alone_trains():
    model = _endpoint_model(keras.losses.BinaryCrossentropy(from_logits=True))
    model.compile(optimizer=keras.optimizers.SGD(0.5))
    history = model.fit(_data(), batch_size=4, epochs=4, verbose=0, shuffle=False)
    assert sorted(history.history) == ["loss"]
    assert history.history["loss"][-1] < history.history["loss"][0]


def test_no_loss_at_all_is_refused_at_fit():
    model = keras.Sequential([keras.Input((3,)), layers.Dense(2)])
    model.compile(optimizer="sgd")  # compile itself accepts it, as Keras's does
    with pytest.raises(ValueError, match="No loss to compute"):
        model.fit(np.ones((4, 3), "float32"), np.ones((4, 2), "float32"), verbose=0)


def test_loss_needing_label_values_is_refused_symbolically():
    model_input = keras.Input((3,))
    targets = keras.Input((3,))
    with pytest.raises(ValueError, match="hinge.*symbolic tensors inside call"):
        Endpoint(keras.losses.Hinge())(targets, model_input)


def test_positional_endpoint_called_on_arrays_and_round_trips():
    model = _endpoint_model(keras.losses.MeanSquaredError())
    data = _data()
    layer = model.get_layer("endpoint")
    eager = np.asarray(layer(data["targets"], data["inputs"][:, :3] @ np.ones((3, 4), "f")))
    assert eager.shape == (8, 4)
    config = model.get_config()
    args = config["layers"][-1]["inbound_nodes"][0]["args"]
    assert len(args) == 2  # one argument per positional tensor, as Keras writes it
    clone = keras.Model.from_config(config, custom_objects={"Endpoint": Endpoint})
    clone.set_weights(model.get_weights())
    np.testing.assert_allclose(clone.predict(data, verbose=0), model.predict(data, verbose=0))


def test_non_tensor_extra_arguments_are_still_refused():
    x = keras.Input((3,))
    with pytest.raises(TypeError, match="extra arguments"):
        layers.Dense(2)(x, x)  # a built-in layer takes one input
