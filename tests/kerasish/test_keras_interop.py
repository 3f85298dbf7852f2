"""Checkpoints cross between kerasish and real Keras 3 (torch CPU backend).

Optional: needs the `keras` and `torch==2.13.0` packages (the `test` extra); skipped
with a reason when they are not importable.
"""

import os

import numpy as np
import pytest

os.environ.setdefault("KERAS_BACKEND", "torch")
pytest.importorskip("torch", reason="interop tests need torch (pip install torch==2.13.0)")
real = pytest.importorskip("keras", reason="interop tests need Keras 3 (pip install keras)")
if not real.__version__.startswith("3."):
    pytest.skip(f"interop tests need Keras 3; found keras {real.__version__}",
                allow_module_level=True)

import kerasish  # noqa: E402

TOL = 1e-5
SHAPE = (9, 7, 2)


def _stack(lib):
    L = lib.layers
    return [lib.Input(SHAPE), L.Conv2D(4, 3, activation="relu"),
            L.BatchNormalization(), L.MaxPooling2D(2), L.Conv2D(3, 2, padding="same"),
            L.Flatten(), L.Dropout(0.3), L.Dense(5, activation="relu"),
            L.Dense(3, activation="softmax")]


def _data(n=12):
    rng = np.random.default_rng(0)
    return (rng.normal(size=(n, *SHAPE)).astype(np.float32),
            rng.integers(0, 3, n).astype(np.int32))


def _max_diff(a, b):
    return float(np.abs(np.asarray(a) - np.asarray(b)).max())


def _check_optimizer(a, b, slots=True):
    """Same iteration count, learning rate and (optionally) slot values, Keras order."""
    va, vb = a.variables, b.variables
    assert int(np.asarray(va[0].numpy())) == int(np.asarray(vb[0].numpy())) > 0
    assert _max_diff(va[1].numpy(), vb[1].numpy()) == 0
    if slots:
        assert len(va) == len(vb)
        for x, y in zip(va[2:], vb[2:]):
            assert _max_diff(x.numpy(), y.numpy()) <= TOL


def test_kerasish_h5_loads_in_keras(tmp_path):
    x, y = _data()
    kerasish.utils.set_random_seed(1)
    ours = kerasish.Sequential(_stack(kerasish))
    ours.compile(kerasish.optimizers.Adam(0.01), "sparse_categorical_crossentropy",
                 metrics=["accuracy"])
    ours.fit(x, y, batch_size=4, epochs=2, verbose=0)  # BN statistics and Adam slots move
    ours.save(tmp_path / "ours.h5")
    theirs = real.models.load_model(tmp_path / "ours.h5")
    assert [type(layer).__name__ for layer in theirs.layers] == \
        [type(layer).__name__ for layer in ours.layers]
    assert _max_diff(theirs.predict(x, verbose=0), ours.predict(x, verbose=0)) <= TOL
    assert type(theirs.optimizer).__name__.endswith("Adam")
    assert float(theirs.optimizer.learning_rate) == pytest.approx(0.01)
    # Keras 3.15's h5 loader (torch backend) restores only the iteration count and the
    # learning rate, from its own files too; kerasish restores the slots as well.
    _check_optimizer(theirs.optimizer, ours.optimizer, slots=len(theirs.optimizer.variables) > 2)


def test_keras_h5_loads_in_kerasish(tmp_path):
    x, y = _data()
    real.utils.set_random_seed(2)
    theirs = real.Sequential(_stack(real))
    theirs.compile(real.optimizers.Adam(0.01), "sparse_categorical_crossentropy",
                   metrics=["accuracy"])
    theirs.fit(x, y, batch_size=4, epochs=2, verbose=0)
    theirs.save(tmp_path / "theirs.h5")
    ours = kerasish.models.load_model(tmp_path / "theirs.h5")
    assert [layer.name for layer in ours.layers] == [layer.name for layer in theirs.layers]
    assert _max_diff(ours.predict(x, verbose=0), theirs.predict(x, verbose=0)) <= TOL
    assert isinstance(ours.optimizer, kerasish.optimizers.Adam)
    _check_optimizer(ours.optimizer, theirs.optimizer)
    ours.fit(x, y, batch_size=4, epochs=1, verbose=0)  # and it keeps training


def test_metric_objects_cross_in_h5(tmp_path):
    x, y = _data()

    def metrics(lib):
        return [lib.metrics.SparseCategoricalAccuracy(),
                lib.metrics.SparseCategoricalAccuracy(name="acc2")]
    theirs = real.Sequential(_stack(real))
    theirs.compile("adam", "sparse_categorical_crossentropy", metrics=metrics(real))
    theirs.fit(x, y, verbose=0)
    theirs.save(tmp_path / "theirs.h5")
    ours = kerasish.models.load_model(tmp_path / "theirs.h5")
    logs = ours.evaluate(x, y, verbose=0, return_dict=True)
    assert sorted(logs) == ["acc2", "loss", "sparse_categorical_accuracy"]
    ours.compile("adam", "sparse_categorical_crossentropy", metrics=metrics(kerasish))
    ours.save(tmp_path / "ours.h5")
    again = real.models.load_model(tmp_path / "ours.h5")
    assert again.evaluate(x, y, verbose=0, return_dict=True) == pytest.approx(logs, abs=TOL)


@pytest.mark.parametrize("name,args,kwargs", [
    ("ExponentialDecay", (0.1, 7, 0.5), {"staircase": True}),
    ("InverseTimeDecay", (0.1, 7, 0.5), {}),
    ("PiecewiseConstantDecay", ([3, 8], [1.0, 0.5, 0.1]), {}),
    ("PolynomialDecay", (0.1, 10, 0.01), {"power": 2.0, "cycle": True}),
    ("CosineDecay", (0.0, 10), {"alpha": 0.1, "warmup_target": 0.2, "warmup_steps": 3}),
])
def test_schedules_match_keras_and_cross_in_h5(tmp_path, name, args, kwargs):
    theirs_schedule = getattr(real.optimizers.schedules, name)(*args, **kwargs)
    ours_schedule = getattr(kerasish.optimizers.schedules, name)(*args, **kwargs)
    for step in (0, 1, 3, 4, 8, 9, 12, 40):
        assert ours_schedule(step) == pytest.approx(float(theirs_schedule(step)), rel=1e-6)
    x, y = _data()
    theirs = real.Sequential(_stack(real))
    theirs.compile(real.optimizers.SGD(theirs_schedule), "sparse_categorical_crossentropy")
    theirs.fit(x, y, batch_size=4, verbose=0)
    theirs.save(tmp_path / "theirs.h5")
    ours = kerasish.models.load_model(tmp_path / "theirs.h5")
    assert ours.optimizer.get_config()["learning_rate"]["config"] == \
        theirs.optimizer.get_config()["learning_rate"]["config"]
    assert ours.optimizer.learning_rate == pytest.approx(float(theirs.optimizer.learning_rate))
    ours.save(tmp_path / "ours.h5")
    again = real.models.load_model(tmp_path / "ours.h5")
    assert type(again.optimizer._learning_rate).__name__ == name


def test_activation_and_rescaling_layers_cross_in_h5(tmp_path):
    x, _ = _data(4)

    def stack(lib):
        L = lib.layers
        return [lib.Input(SHAPE), L.Rescaling(0.5, offset=-0.25), L.Conv2D(3, 3),
                L.LeakyReLU(negative_slope=0.1), L.Flatten(),
                L.Dense(6), L.ReLU(), L.Dense(3), L.Softmax()]
    theirs = real.Sequential(stack(real))
    theirs.save(tmp_path / "theirs.h5")
    ours = kerasish.models.load_model(tmp_path / "theirs.h5")
    assert [type(layer).__name__ for layer in ours.layers] == \
        [type(layer).__name__ for layer in theirs.layers]
    assert _max_diff(ours.predict(x, verbose=0), theirs.predict(x, verbose=0)) <= TOL
    ours = kerasish.Sequential(stack(kerasish))
    ours.save(tmp_path / "ours.h5")
    again = real.models.load_model(tmp_path / "ours.h5")
    assert again.layers[2].negative_slope == pytest.approx(0.1)
    assert again.layers[0].offset == pytest.approx(-0.25)
    assert _max_diff(again.predict(x, verbose=0), ours.predict(x, verbose=0)) <= TOL


def test_weights_h5_both_ways(tmp_path):
    x, _ = _data(3)
    real.utils.set_random_seed(3)
    kerasish.utils.set_random_seed(3)
    theirs, ours = real.Sequential(_stack(real)), kerasish.Sequential(_stack(kerasish))
    theirs.save_weights(tmp_path / "theirs.weights.h5")
    ours.load_weights(tmp_path / "theirs.weights.h5")
    assert _max_diff(ours.predict(x, verbose=0), theirs.predict(x, verbose=0)) <= TOL
    ours = kerasish.Sequential(_stack(kerasish))
    for name in ("ours.weights.h5", "ours.h5"):  # native and legacy layouts
        ours.save_weights(tmp_path / name)
        theirs.load_weights(tmp_path / name)
        assert _max_diff(ours.predict(x, verbose=0), theirs.predict(x, verbose=0)) <= TOL


def test_json_both_ways():
    theirs = real.Sequential(_stack(real))
    ours = kerasish.models.model_from_json(theirs.to_json())
    assert [type(layer).__name__ for layer in ours.layers] == \
        [type(layer).__name__ for layer in theirs.layers]
    back = real.models.model_from_json(kerasish.saving.model_to_json(ours))
    assert [layer.get_config()["name"] for layer in back.layers] == \
        [layer.name for layer in ours.layers]
    assert back.layers[0].get_config()["filters"] == 4
