"""fit / evaluate / predict through the static graph, against NumPy references."""

import gc
import threading

import numpy as np
import pytest

import kerasish as keras
import kernels_numba
from kerasish import layers, models, optimizers


def blobs(n=96, features=6, classes=3, seed=0):
    rng = np.random.default_rng(seed)
    centers = rng.normal(0, 3, (classes, features))
    y = rng.integers(0, classes, n)
    x = centers[y] + rng.normal(0, 1, (n, features))
    return x.astype(np.float32), y.astype(np.int64)


def mlp(optimizer="adam", loss="sparse_categorical_crossentropy", out_activation="softmax"):
    model = models.Sequential([keras.Input((6,)), layers.Dense(8, activation="relu"),
                               layers.Dense(3, activation=out_activation)])
    model.compile(optimizer=optimizer, loss=loss, metrics=["accuracy"])
    return model


def test_fit_learns_and_history(capsys):
    keras.utils.set_random_seed(0)
    x, y = blobs()
    model = mlp(optimizer=optimizers.Adam(0.02))
    history = model.fit(x, y, epochs=15, batch_size=16, verbose=0, validation_split=0.25)
    assert set(history.history) == {"loss", "accuracy", "val_loss", "val_accuracy"}
    assert len(history.history["loss"]) == 15
    assert history.history["loss"][-1] < history.history["loss"][0]
    loss, acc = model.evaluate(x, y, verbose=0)
    assert acc > 0.9 and loss < 0.5
    probs = model.predict(x, batch_size=7, verbose=0)
    assert probs.shape == (96, 3)
    np.testing.assert_allclose(probs.sum(axis=1), 1, rtol=1e-5)
    assert capsys.readouterr().out == ""


def test_partial_last_batch_is_kept():
    x, y = blobs(n=10)
    model = mlp()
    seen = []
    cb = keras.callbacks.LambdaCallback(on_train_batch_end=lambda b, logs: seen.append(b))
    model.fit(x, y, batch_size=4, epochs=1, verbose=0, callbacks=[cb])
    assert seen == [0, 1, 2]  # 4 + 4 + 2


def keras_adam_reference(w, grads, lr=0.01, b1=0.9, b2=0.999, eps=1e-7):
    m, v = np.zeros_like(w), np.zeros_like(w)
    for t, g in enumerate(grads, start=1):
        alpha = lr * np.sqrt(1 - b2**t) / (1 - b1**t)
        m += (g - m) * (1 - b1)
        v += (g * g - v) * (1 - b2)
        w = w - m * alpha / (np.sqrt(v) + eps)
    return w


def linear_mse_setup():
    rng = np.random.default_rng(3)
    x = rng.normal(size=(5, 4)).astype(np.float32)
    t = rng.normal(size=(5, 2)).astype(np.float32)
    return x, t


@pytest.mark.parametrize("opt", ["sgd", "sgd_nesterov", "adam"])
def test_optimizer_steps_match_float64_reference(on_device, opt):
    """A linear model with MSE: gradients are analytic, so each step is checkable."""
    x, t = linear_mse_setup()
    model = models.Sequential([keras.Input((4,)), layers.Dense(2)])
    optimizer = {"sgd": optimizers.SGD(0.1), "adam": optimizers.Adam(0.01),
                 "sgd_nesterov": optimizers.SGD(0.05, momentum=0.9, nesterov=True)}[opt]
    model.compile(optimizer=optimizer, loss="mse")
    w = model.layers[0].kernel.numpy().astype(np.float64)
    b = np.zeros(2)
    m_w, m_b, v_w, v_b = (np.zeros_like(w), np.zeros_like(b), np.zeros_like(w), np.zeros_like(b))
    for step in range(1, 4):
        model.train_on_batch(x, t)
        err = x.astype(np.float64) @ w + b - t
        gw = 2 * x.T.astype(np.float64) @ err / err.size
        gb = 2 * err.sum(0) / err.size
        if opt == "sgd":
            w, b = w - 0.1 * gw, b - 0.1 * gb
        elif opt == "sgd_nesterov":
            m_w, m_b = 0.9 * m_w - 0.05 * gw, 0.9 * m_b - 0.05 * gb
            w, b = w + 0.9 * m_w - 0.05 * gw, b + 0.9 * m_b - 0.05 * gb
        else:
            alpha = 0.01 * np.sqrt(1 - 0.999**step) / (1 - 0.9**step)
            m_w += (gw - m_w) * 0.1
            m_b += (gb - m_b) * 0.1
            v_w += (gw * gw - v_w) * 0.001
            v_b += (gb * gb - v_b) * 0.001
            w = w - m_w * alpha / (np.sqrt(v_w) + 1e-7)
            b = b - m_b * alpha / (np.sqrt(v_b) + 1e-7)
    np.testing.assert_allclose(model.layers[0].kernel.numpy(), w, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(model.layers[0].bias.numpy(), b, rtol=1e-5, atol=1e-6)
    assert model.optimizer.iterations == 3


def test_no_allocation_after_first_step():
    x, y = blobs(n=64)
    model = models.Sequential([keras.Input((6,)), layers.Dense(8, activation="relu"),
                               layers.Dropout(0.2), layers.BatchNormalization(),
                               layers.Dense(3, activation="softmax")])
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    model.fit(x, y, batch_size=10, epochs=1, verbose=0)
    before = kernels_numba.allocation_count()
    model.fit(x, y, batch_size=10, epochs=3, verbose=0)
    assert kernels_numba.allocation_count() == before


def test_memory_stays_flat_over_epochs():
    import resource

    x, y = blobs(n=256)
    model = mlp()
    model.fit(x, y, batch_size=32, epochs=1, verbose=0)
    gc.collect()
    allocations = kernels_numba.allocation_count()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    threads = threading.active_count()  # other tests' daemon threads may already run
    model.fit(x, y, batch_size=32, epochs=20, verbose=0)
    gc.collect()
    assert kernels_numba.allocation_count() == allocations
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - rss < 20_000  # KiB
    assert threading.active_count() <= threads  # fit leaves no thread behind


def test_fit_keeps_no_reference_to_the_training_data():
    # a model outlives its fit: it must not hold the arrays (Keras does not)
    import weakref

    x, y = blobs(n=64)
    model = mlp()
    refs = [weakref.ref(x), weakref.ref(y)]
    model.fit(x, y, batch_size=16, epochs=1, verbose=0,
              callbacks=[keras.callbacks.LambdaCallback()])
    del x, y
    gc.collect()
    assert [r() is None for r in refs] == [True, True]


def test_accuracy_resolution_and_from_logits():
    x, y = blobs()
    model = mlp(optimizer=optimizers.SGD(learning_rate=0.1),
                loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True),
                out_activation=None)
    model.fit(x, y, epochs=5, batch_size=8, verbose=0)
    assert type(model._metrics[0]).__name__ == "SparseCategoricalAccuracy"
    onehot = keras.utils.to_categorical(y, 3)
    model2 = mlp(loss="categorical_crossentropy")
    model2.fit(x, onehot, epochs=3, verbose=0)
    assert type(model2._metrics[0]).__name__ == "CategoricalAccuracy"
    model3 = models.Sequential([keras.Input((6,)), layers.Dense(1, activation="sigmoid")])
    model3.compile("adam", "binary_crossentropy", metrics=["accuracy"])
    model3.fit(x, (y == 1).astype(np.float32), epochs=2, verbose=0)
    assert type(model3._metrics[0]).__name__ == "BinaryAccuracy"


def test_metric_objects_keep_their_names_and_survive_h5(tmp_path):
    x, y = blobs()
    metrics = [keras.metrics.SparseCategoricalAccuracy(),
               keras.metrics.SparseCategoricalAccuracy(name="acc_again")]
    model = mlp()
    model.compile("adam", "sparse_categorical_crossentropy", metrics=metrics)
    keras.utils.set_random_seed(3)
    history = model.fit(x, y, epochs=2, batch_size=16, validation_split=0.25, verbose=0)
    assert sorted(history.history) == ["acc_again", "loss", "sparse_categorical_accuracy",
                                       "val_acc_again", "val_loss",
                                       "val_sparse_categorical_accuracy"]
    assert history.history["acc_again"] == history.history["sparse_categorical_accuracy"]
    by_string = mlp()  # the same run with the metric named by string: same numbers
    by_string.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    by_string.set_weights(model.get_weights())
    assert by_string.evaluate(x, y, verbose=0)[1] == model.evaluate(x, y, verbose=0)[1]
    model.save(tmp_path / "m.h5")
    loaded = keras.models.load_model(tmp_path / "m.h5")
    assert [m.name for m in loaded._metrics] == ["sparse_categorical_accuracy", "acc_again"]
    assert loaded.evaluate(x, y, verbose=0) == model.evaluate(x, y, verbose=0)
    binary = keras.metrics.BinaryAccuracy(threshold=0.3)
    assert keras.metrics.BinaryAccuracy.from_config(binary.get_config()).threshold == 0.3
    with pytest.raises(ValueError, match="only float32"):
        keras.metrics.CategoricalAccuracy(dtype="float64")
    with pytest.raises(ValueError, match="needs one-hot targets"):
        model.compile("adam", "sparse_categorical_crossentropy",
                      metrics=[keras.metrics.CategoricalAccuracy()])


def test_learning_rate_settable_between_epochs():
    x, y = blobs()
    model = mlp(optimizer="sgd")
    assert model.optimizer.learning_rate == pytest.approx(0.01)
    model.optimizer.learning_rate = 0.5
    model.fit(x, y, epochs=1, verbose=0)
    assert model.optimizer.learning_rate == pytest.approx(0.5)


@pytest.mark.parametrize("call,match,exc", [
    (lambda m, x, y: models.Sequential([keras.Input((6,)), layers.Dense(3)]).fit(x, y),
     "compile", ValueError),
    (lambda m, x, y: m.fit(x, y[:-1], verbose=0), "same number of samples", ValueError),
    (lambda m, x, y: m.fit(x[:, :5], y, verbose=0), r"expected shape \(None, 6\)", ValueError),
    (lambda m, x, y: m.fit(x[None], y, verbose=0), "incompatible", ValueError),
    (lambda m, x, y: m.fit(x, y + 5, verbose=0), r"labels must be in \[0, 3\)", ValueError),
    (lambda m, x, y: m.fit(x, y - 1, verbose=0), r"labels must be in \[0, 3\)", ValueError),
    (lambda m, x, y: m.fit(x, y, batch_size=0, verbose=0), "batch_size", ValueError),
    (lambda m, x, y: m.fit(x, y, epochs="2", verbose=0),
     r"fit: expected epochs to be an integer >= 0; received epochs='2'", ValueError),
    (lambda m, x, y: m.fit(x, y, initial_epoch=-1, verbose=0), "initial_epoch", ValueError),
    (lambda m, x, y: m.fit(x, y, steps_per_epoch=0, verbose=0),
     "steps_per_epoch to be a positive integer", ValueError),
    (lambda m, x, y: m.fit(x[:0], y[:0], verbose=0), "empty", ValueError),
    (lambda m, x, y: m.fit(x, y, validation_split=1.0, verbose=0), "validation_split",
     ValueError),
    (lambda m, x, y: m.fit(x.astype(str), y, verbose=0), "numeric", TypeError),
    (lambda m, x, y: m.compile(optimizer="adamm", loss="mse"), "Valid optimizers", ValueError),
    (lambda m, x, y: m.compile(optimizer="adam", loss="msee"), "Valid losses", ValueError),
    (lambda m, x, y: m.compile(optimizer="adam", loss="mse", metrics=["accurcy"]),
     "Valid metrics", ValueError),
])
def test_bad_input_errors(call, match, exc):
    x, y = blobs(n=12)
    model = mlp()
    with pytest.raises(exc, match=match):
        call(model, x, y)
