"""A two-input, two-output functional model with a shared layer and a nested Sequential
crosses .h5 and .weights.h5 both ways with real Keras 3 (torch CPU backend)."""

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

TOL = 1e-6


def build(lib):
    L = lib.layers
    a, b = lib.Input((4,), name="a"), lib.Input((3,), name="b")
    shared = L.Dense(5, activation="tanh", name="shared")
    inner = lib.Sequential([lib.Input((10,)), L.Dense(6, activation="relu", name="d6"),
                            L.Dense(2, name="d2")], name="inner")
    x, y = shared(a), shared(L.Dense(4, name="proj")(b))
    z = L.Concatenate(name="cat")([x, y])
    o1 = L.Dense(3, activation="softmax", name="out1")(z)
    model = lib.Model(inputs=[a, b], outputs=[o1, inner(z)], name="func")
    # "mean_squared_error", not "mse": Keras 3.15 cannot reload its own h5 with "mse" in
    # a loss list ("Could not deserialize 'keras.metrics.mse'").
    model.compile(lib.optimizers.Adam(0.01), ["sparse_categorical_crossentropy",
                                              "mean_squared_error"],
                  loss_weights=[1.0, 0.5], metrics=[["accuracy"], []])
    return model


def data(n=16):
    rng = np.random.default_rng(0)
    return ([rng.normal(size=(n, 4)).astype(np.float32),
             rng.normal(size=(n, 3)).astype(np.float32)],
            [rng.integers(0, 3, n).astype(np.int32), rng.normal(size=(n, 2)).astype(np.float32)])


def max_diff(a, b):
    return max(float(np.abs(np.asarray(p) - np.asarray(q)).max()) for p, q in zip(a, b))


def same_optimizer_state(a, b):
    va, vb = a.optimizer.variables, b.optimizer.variables
    assert len(va) == len(vb)
    assert int(np.asarray(va[0].numpy())) == int(np.asarray(vb[0].numpy())) > 0
    assert max_diff([v.numpy() for v in va[1:]], [v.numpy() for v in vb[1:]]) <= TOL


def test_same_layer_order_and_weights_order_as_keras():
    ours, theirs = build(kerasish), build(real)
    assert [l.name for l in ours.layers] == [l.name for l in theirs.layers]
    assert [w.shape for w in ours.weights] == [tuple(w.shape) for w in theirs.weights]


def test_kerasish_files_load_in_keras(tmp_path):
    x, y = data()
    ours = build(kerasish)
    ours.fit(x, y, batch_size=8, epochs=2, verbose=0)
    ours.save(tmp_path / "m.h5")
    ours.save_weights(tmp_path / "m.weights.h5")
    expected = ours.predict(x, verbose=0)
    theirs = real.models.load_model(tmp_path / "m.h5")
    assert max_diff(theirs.predict(x, verbose=0), expected) <= TOL
    # Keras 3.15 restores only the step count and learning rate of a functional model
    # from a legacy .h5 (its own files too: training such a model after loading fails
    # inside Keras with "Unknown variable"), so those are what can be compared.
    reference = build(real)
    reference.fit(x, y, batch_size=8, epochs=1, verbose=0)
    reference.save(tmp_path / "own.h5")
    own = real.models.load_model(tmp_path / "own.h5")
    assert len(theirs.optimizer.variables) == len(own.optimizer.variables)
    for mine, loaded in zip(ours.optimizer.variables, theirs.optimizer.variables):
        assert float(np.asarray(mine.numpy())) == float(np.asarray(loaded.numpy()))
    fresh = build(real)
    fresh.load_weights(tmp_path / "m.weights.h5")
    assert max_diff(fresh.predict(x, verbose=0), expected) <= TOL


def test_keras_files_load_in_kerasish_and_training_resumes(tmp_path):
    x, y = data()
    theirs = build(real)
    theirs.fit(x, y, batch_size=8, epochs=2, verbose=0)
    theirs.save(tmp_path / "k.h5")
    theirs.save_weights(tmp_path / "k.weights.h5")
    expected = theirs.predict(x, verbose=0)
    ours = kerasish.models.load_model(tmp_path / "k.h5")
    assert max_diff(ours.predict(x, verbose=0), expected) <= TOL
    same_optimizer_state(theirs, ours)
    fresh = build(kerasish)
    fresh.load_weights(tmp_path / "k.weights.h5")
    assert max_diff(fresh.predict(x, verbose=0), expected) <= TOL
    # Resuming continues Keras's run: one more epoch from the restored Adam state
    # equals Keras's own next epoch on the same batches.
    steps = ours.optimizer.iterations
    ours.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    theirs.fit(x, y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    assert ours.optimizer.iterations == steps + 2
    assert max_diff(ours.get_weights(), [w.numpy() for w in theirs.weights]) <= 1e-5
