"""optimizers.Adafactor on kerasish: trains, slots as Keras makes them, config round trip,
refusals naming the argument (the step-by-step check against Keras is the conformance
case api_optimizer_adafactor)."""

import numpy as np
import pytest

import kerasish as keras


def test_trains_and_keeps_keras_slots():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((32, 4)).astype(np.float32)
    y = x @ rng.standard_normal((4, 2)).astype(np.float32)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2)])
    opt = keras.optimizers.Adafactor(learning_rate=0.1)
    model.compile(opt, "mse")
    history = model.fit(x, y, epochs=5, batch_size=8, verbose=0).history["loss"]
    assert history[-1] < history[0]
    shapes = [tuple(v.shape) for v in opt.variables]
    assert shapes == [(), (), (4,), (2,), (4, 2), (), (), (2,)]  # kernel r, c, v; bias's


def test_config_round_trip_and_refusals():
    opt = keras.optimizers.Adafactor(beta_2_decay=-0.5, clip_threshold=2.0)
    back = keras.optimizers.Adafactor.from_config(opt.get_config())
    assert back.get_config() == opt.get_config()
    assert isinstance(keras.optimizers.get("adafactor"), keras.optimizers.Adafactor)
    with pytest.raises(ValueError, match="Adafactor: gradient clipping is not supported"):
        keras.optimizers.Adafactor(clipnorm=1.0)
    with pytest.raises(ValueError, match="Adafactor: expected clip_threshold > 0"):
        keras.optimizers.Adafactor(clip_threshold=0.0)
