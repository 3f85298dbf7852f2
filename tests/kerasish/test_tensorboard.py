"""keras.callbacks.TensorBoard: event files read back with TensorBoard's own reader
(values equal the History and the batch logs), histograms, the Keras graph, refusals."""

import json
import os
import sys

import numpy as np
import pytest

import kerasish as keras

X = np.random.default_rng(0).normal(size=(50, 4)).astype(np.float32)
Y = (X[:, 0] > 0).astype(np.int64) + (X[:, 1] > 0)


def _model(lr=0.01):
    keras.utils.set_random_seed(1)
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(6, activation="relu"),
                              keras.layers.Dense(3, activation="softmax")])
    model.compile(optimizer=keras.optimizers.Adam(lr), loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    return model


def _read(run_dir):
    """{tag: [(step, value array)]} through tensorboard's EventAccumulator."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.util import tensor_util

    acc = EventAccumulator(run_dir, size_guidance={"tensors": 0})
    acc.Reload()
    return {tag: [(e.step, tensor_util.make_ndarray(e.tensor_proto)) for e in acc.Tensors(tag)]
            for tag in acc.Tags()["tensors"]}


def _plugin(run_dir, plugin):
    from tensorboard.backend.event_processing import plugin_event_accumulator

    acc = plugin_event_accumulator.EventAccumulator(run_dir)
    acc.Reload()
    return sorted(acc.PluginTagToContent(plugin))


def test_missing_package_is_refused_with_install_hint_at_the_first_write(monkeypatch,
                                                                          tmp_path):
    monkeypatch.setitem(sys.modules, "tensorboard.summary.writer.event_file_writer", None)
    tb = keras.callbacks.TensorBoard(str(tmp_path / "logs"))  # constructs, as Keras's does
    model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    model.compile("sgd", "mse")
    with pytest.raises(ImportError, match=r"pip install tensorboard.*\[tensorboard\]"):
        model.fit(np.zeros((4, 2), np.float32), np.zeros((4, 1), np.float32), verbose=0,
                  callbacks=[tb])


def test_scalars_equal_history_and_batch_logs(tmp_path):
    pytest.importorskip("tensorboard", reason="pip install tensorboard (the extra)")
    schedule = keras.optimizers.schedules.ExponentialDecay(0.01, decay_steps=2,
                                                           decay_rate=0.5)
    model = _model(schedule)
    batch_logs, rates = [], []
    record = keras.callbacks.LambdaCallback(
        on_train_batch_end=lambda b, logs: batch_logs.append(dict(logs)),
        on_epoch_end=lambda e, logs: rates.append(model.optimizer.learning_rate))
    tb = keras.callbacks.TensorBoard(tmp_path, update_freq=2, write_steps_per_second=True)
    history = model.fit(X, Y, batch_size=16, epochs=3, validation_split=0.2, verbose=0,
                        callbacks=[tb, record]).history
    train, val = _read(str(tmp_path / "train")), _read(str(tmp_path / "validation"))
    for name in ("loss", "accuracy"):
        assert train[f"epoch_{name}"] == [(e, np.float32(v)) for e, v in
                                          enumerate(history[name])]
        assert val[f"epoch_{name}"] == [(e, np.float32(v)) for e, v in
                                        enumerate(history[f"val_{name}"])]
        # the validation pass after epoch e ran at iterations 3 (e + 1): 3 batches an epoch
        assert val[f"evaluation_{name}_vs_iterations"] == [
            (3 * (e + 1), np.float32(v)) for e, v in enumerate(history[f"val_{name}"])]
        assert train[f"batch_{name}"] == [(step, np.float32(batch_logs[step - 1][name]))
                                          for step in (2, 4, 6, 8)]  # 9 batches in all
    assert train["epoch_learning_rate"] == [(e, np.float32(r)) for e, r in enumerate(rates)]
    assert len(set(rates)) == 3  # the schedule moved: the logged rate follows it
    assert [s for s, _ in train["epoch_steps_per_second"]] == [0, 1, 2]
    assert all(v > 0 for _, v in train["epoch_steps_per_second"] + train[
        "batch_steps_per_second"])
    assert "epoch_loss" in _plugin(str(tmp_path / "train"), "scalars")
    names = os.listdir(tmp_path / "train")
    assert len(names) == 1 and names[0].startswith("events.out.tfevents.")


def test_epoch_only_histograms_graph_and_evaluate(tmp_path):
    pytest.importorskip("tensorboard", reason="pip install tensorboard (the extra)")
    from tensorboard.plugins.graph import keras_util

    model = _model()
    weights = []
    record = keras.callbacks.LambdaCallback(
        on_epoch_end=lambda e, logs: weights.append([w.numpy() for w in model.weights]))
    tb = keras.callbacks.TensorBoard(str(tmp_path), histogram_freq=2)
    model.fit(X, Y, batch_size=25, epochs=3, verbose=0, callbacks=[tb, record])
    train = _read(str(tmp_path / "train"))
    assert not [t for t in train if t.startswith("batch_")]  # update_freq="epoch"
    assert not (tmp_path / "validation").exists()  # no validation: no empty run
    paths = [w.path for w in model.weights]
    assert sorted(t for t in train if t.endswith("/histogram")) == sorted(
        f"{p}/histogram" for p in paths)
    for k, path in enumerate(paths):
        hist = train[f"{path}/histogram"]
        assert [s for s, _ in hist] == [0, 2]  # epochs 0 and 2
        for epoch, buckets in hist:
            w = weights[epoch][k]
            assert buckets.shape == (30, 3) and buckets[:, 2].sum() == w.size
            assert buckets[0, 0] == w.min() and np.isclose(buckets[-1, 1], w.max())
    (step, graph), = train["keras"]
    config = json.loads(graph.item())
    assert step == 0 and config["class_name"] == "Sequential"
    nodes = [n.name for n in keras_util.keras_model_to_graph_def(config).node]
    assert [layer.name for layer in model.layers] == [n.split("/")[-1] for n in nodes][1:]
    evaluate_tb = keras.callbacks.TensorBoard(str(tmp_path / "eval"))
    loss, accuracy = model.evaluate(X, Y, verbose=0, callbacks=[evaluate_tb])
    val = _read(str(tmp_path / "eval" / "validation"))
    assert val == {"evaluation_loss_vs_iterations": [(6, np.float32(loss))],
                   "evaluation_accuracy_vs_iterations": [(6, np.float32(accuracy))]}


@pytest.mark.parametrize("kwargs, match", [
    (dict(write_images=True), "write_images is not supported"),
    (dict(profile_batch=3), "profile_batch is not supported"),
    (dict(embeddings_freq=1), "embeddings_freq is not supported"),
    (dict(embeddings_metadata="m.tsv"), "embeddings_metadata is not supported"),
    (dict(update_freq=0), "update_freq 'epoch', 'batch' or an int >= 1; received 0"),
    (dict(update_freq="often"), "received 'often'"),
    (dict(histogram_freq=-1), "histogram_freq an int >= 0"),
])
def test_refused_arguments_name_themselves(tmp_path, kwargs, match):
    pytest.importorskip("tensorboard", reason="pip install tensorboard (the extra)")
    with pytest.raises(ValueError, match=match):
        keras.callbacks.TensorBoard(str(tmp_path), **kwargs)
