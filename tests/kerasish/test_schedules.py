"""keras.optimizers.schedules: formulas against float64 NumPy, use in training, h5."""

import numpy as np
import pytest

import kerasish as keras
from kerasish.optimizers import schedules

STEPS = np.array([0, 1, 2, 5, 7, 9, 10, 11, 25, 99, 1000], dtype=np.float64)


def _reference(name, s):
    """float64 NumPy versions of the Keras formulas, over an array of steps."""
    if name == "exponential":
        return 0.1 * 0.5 ** (s / 7), 0.1 * 0.5 ** np.floor(s / 7)
    if name == "inverse_time":
        return 0.1 / (1 + 0.5 * s / 7), 0.1 / (1 + 0.5 * np.floor(s / 7))
    if name == "polynomial":
        plain = (0.1 - 0.01) * (1 - np.minimum(s, 10) / 10) ** 2 + 0.01
        period = 10 * np.where(s == 0, 1, np.ceil(s / 10))
        return plain, (0.1 - 0.01) * (1 - s / period) ** 2 + 0.01
    if name == "cosine":
        plain = 0.1 * (0.9 * 0.5 * (1 + np.cos(np.pi * np.minimum(s, 10) / 10)) + 0.1)
        w = np.minimum(s, 13)
        warm = np.where(w < 3, 0.0 + (0.2 - 0.0) * w / 3,
                        0.2 * (0.9 * 0.5 * (1 + np.cos(np.pi * (w - 3) / 10)) + 0.1))
        return plain, warm
    raise AssertionError(name)


CASES = {
    "exponential": (lambda: schedules.ExponentialDecay(0.1, 7, 0.5),
                    lambda: schedules.ExponentialDecay(0.1, 7, 0.5, staircase=True)),
    "inverse_time": (lambda: schedules.InverseTimeDecay(0.1, 7, 0.5),
                     lambda: schedules.InverseTimeDecay(0.1, 7, 0.5, staircase=True)),
    "polynomial": (lambda: schedules.PolynomialDecay(0.1, 10, 0.01, power=2.0),
                   lambda: schedules.PolynomialDecay(0.1, 10, 0.01, power=2.0, cycle=True)),
    "cosine": (lambda: schedules.CosineDecay(0.1, 10, alpha=0.1),
               lambda: schedules.CosineDecay(0.0, 10, alpha=0.1, warmup_target=0.2,
                                             warmup_steps=3)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_schedule_formulas_and_configs(name):
    for make, expected in zip(CASES[name], _reference(name, STEPS)):
        schedule = make()
        got = [schedule(int(s)) for s in STEPS]
        np.testing.assert_allclose(got, expected, rtol=1e-12)
        again = schedules.deserialize(schedules.serialize(schedule))
        assert type(again) is type(schedule) and again.get_config() == schedule.get_config()


def test_piecewise_constant_boundaries_belong_to_the_left():
    schedule = schedules.PiecewiseConstantDecay([3, 8], [1.0, 0.5, 0.1])
    assert [schedule(s) for s in (0, 3, 4, 8, 9, 100)] == [1.0, 1.0, 0.5, 0.5, 0.1, 0.1]
    with pytest.raises(ValueError, match="1 less than the length of values"):
        schedules.PiecewiseConstantDecay([3, 8], [1.0, 0.5])


@pytest.mark.parametrize("cls", [schedules.ExponentialDecay, schedules.InverseTimeDecay,
                                 schedules.PolynomialDecay, schedules.CosineDecay])
def test_decay_steps_must_be_positive(cls):
    args = (0.1, 0) if cls in (schedules.PolynomialDecay, schedules.CosineDecay) else (0.1, 0, 0.5)
    with pytest.raises(ValueError, match=f"{cls.__name__}: argument `decay_steps` must be > 0"):
        cls(*args)


def _model(optimizer):
    keras.utils.set_random_seed(5)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(3, activation="relu"),
                              keras.layers.Dense(2)])
    model.compile(optimizer, "mse")
    return model


def test_training_with_a_schedule_equals_setting_the_rate_each_step(tmp_path):
    rng = np.random.default_rng(0)
    batches = [(rng.normal(size=(5, 4)).astype(np.float32),
                rng.normal(size=(5, 2)).astype(np.float32)) for _ in range(4)]
    schedule = schedules.ExponentialDecay(0.05, decay_steps=1, decay_rate=0.5)
    scheduled, manual = _model(keras.optimizers.SGD(schedule)), _model(keras.optimizers.SGD(0.05))
    for step, (x, y) in enumerate(batches[:3]):
        assert scheduled.optimizer.learning_rate == float(np.float32(0.05 * 0.5 ** step))
        manual.optimizer.learning_rate = scheduled.optimizer.learning_rate
        scheduled.train_on_batch(x, y)
        manual.train_on_batch(x, y)
    for a, b in zip(scheduled.get_weights(), manual.get_weights()):
        np.testing.assert_array_equal(a, b)
    with pytest.raises(TypeError, match="learning rate is not settable"):
        scheduled.optimizer.learning_rate = 0.1
    # Keras's variable list has no learning rate with a schedule; the h5 keeps the schedule
    assert [v.name for v in scheduled.optimizer.variables] == ["iteration"]
    scheduled.save(tmp_path / "s.h5")
    loaded = keras.models.load_model(tmp_path / "s.h5")
    assert loaded.optimizer.iterations == 3
    assert loaded.optimizer.learning_rate == scheduled.optimizer.learning_rate
    x, y = batches[3]
    loaded.train_on_batch(x, y)
    scheduled.train_on_batch(x, y)
    for a, b in zip(loaded.get_weights(), scheduled.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_unknown_schedule_in_a_config_is_named():
    with pytest.raises(ValueError, match="Unknown learning-rate schedule: 'Warmup'"):
        keras.optimizers.Adam.from_config({"learning_rate": {"class_name": "Warmup",
                                                             "config": {}}})
    with pytest.raises(TypeError, match="float learning_rate or a LearningRateSchedule"):
        keras.optimizers.Adam("fast")
