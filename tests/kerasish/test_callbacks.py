"""Callbacks driven through CallbackList exactly as kerasish.trainer drives them, with a
small fake model (in-memory weights, JSON "save" files).

Exceptions, interrupts, BackupAndRestore and real model.fit runs are in
test_callbacks_fit.py.
"""

import json
import math
import os

import numpy as np
import pytest

from kerasish import callbacks as cb
from kerasish.utils import progbar

from .callback_helpers import FakeModel, run_fit

BAR = "\u2501" * 20


class FakeClock:
    def __init__(self):
        self.t = 0.0

    def __call__(self):
        return self.t


@pytest.fixture
def clock(monkeypatch):
    fake = FakeClock()
    monkeypatch.setattr(progbar, "_clock", fake)
    return fake


class Recorder(cb.Callback):
    def __init__(self):
        super().__init__()
        self.calls = []

    def __getattribute__(self, name):
        if name.startswith("on_"):
            calls = object.__getattribute__(self, "calls")
            return lambda *args, **kwargs: calls.append(name)
        return object.__getattribute__(self, name)


# ---------------------------------------------------------------- CallbackList, History


def test_hook_order_and_counts():
    rec = Recorder()
    run_fit(FakeModel(), [rec], epochs=2, steps=3)
    batch = ["on_train_batch_begin", "on_train_batch_end"] * 3
    epoch = ["on_epoch_begin", *batch, "on_epoch_end"]
    assert rec.calls == ["on_train_begin", *epoch, *epoch, "on_train_end"]


def test_defaults_are_appended_after_user_callbacks_and_get_params():
    model = FakeModel()
    user = cb.Callback()
    cbs = cb.CallbackList([user], add_history=True, add_progbar=True, model=model,
                          verbose=2, epochs=5, steps=7)
    assert [type(c).__name__ for c in cbs] == ["Callback", "History", "ProgbarLogger"]
    assert user.model is model and model.history is cbs.callbacks[1]
    assert user.params == {"verbose": 2, "epochs": 5, "steps": 7}
    with pytest.raises(TypeError, match="index 0"):
        cb.CallbackList([lambda: None])


def test_logs_are_sorted_python_floats():
    seen = []
    lam = cb.LambdaCallback(on_epoch_end=lambda e, logs: seen.append(logs),
                            on_train_batch_end=lambda b, logs: seen.append(logs))
    cbs = cb.CallbackList([lam], model=FakeModel(), verbose=0, epochs=1, steps=1)
    cbs.on_train_batch_end(0, {"loss": np.float32(0.5), "accuracy": np.float64(0.25)})
    epoch_logs = {"val_loss": np.float32(1), "loss": 2, "accuracy": 0.5}
    cbs.on_epoch_end(0, epoch_logs)
    assert list(seen[0]) == ["accuracy", "loss"] and type(seen[0]["loss"]) is float
    assert list(seen[1]) == ["accuracy", "loss", "val_loss"]
    assert all(type(v) is float for v in seen[1].values())
    assert seen[1] is epoch_logs  # updated in place, so callbacks' additions reach fit


def test_history_keys_lengths_and_params():
    model = FakeModel()
    history = run_fit(model, epochs=3, steps=2)
    assert history is model.history
    assert sorted(history.history) == ["accuracy", "loss", "val_accuracy", "val_loss"]
    assert all(len(v) == 3 for v in history.history.values())
    assert history.history["loss"] == [1.0, 0.5, 1.0 / 3]
    assert history.epoch == [0, 1, 2]
    assert history.params == {"verbose": 0, "epochs": 3, "steps": 2}


# ---------------------------------------------------------------- printed lines


def test_verbose2_epoch_lines_exact(capsys, clock):
    run_fit(FakeModel(), epochs=2, steps=3, verbose=2, losses=[0.5, 0.25], clock=clock)
    assert capsys.readouterr().out == (
        "Epoch 1/2\n"
        "3/3 - 0s - 5ms/step - accuracy: 0.5000 - loss: 0.5000 - val_accuracy: 0.7500 - "
        "val_loss: 0.6250\n"
        "Epoch 2/2\n"
        "3/3 - 0s - 5ms/step - accuracy: 0.7500 - loss: 0.2500 - val_accuracy: 0.7500 - "
        "val_loss: 0.3750\n")


def test_verbose1_not_a_tty_prints_final_lines_only(capsys, clock):
    run_fit(FakeModel(), epochs=2, steps=3, verbose=1, losses=[0.5, 0.25], clock=clock,
            val=False)
    out = capsys.readouterr().out
    assert "\r" not in out and "\b" not in out and "\x1b" not in out
    assert out == (f"Epoch 1/2\n3/3 {BAR} 0s 5ms/step - accuracy: 0.5000 - loss: 0.5000\n"
                   f"Epoch 2/2\n3/3 {BAR} 0s 5ms/step - accuracy: 0.7500 - loss: 0.2500\n")


def test_single_epoch_has_no_epoch_line_and_auto_is_2_off_a_tty(capsys, clock):
    run_fit(FakeModel(), epochs=1, steps=2, verbose="auto", val=False, clock=clock)
    assert capsys.readouterr().out == (
        "2/2 - 0s - 5ms/step - accuracy: 0.0000e+00 - loss: 1.0000\n")


def test_verbose0_is_silent(capsys):
    run_fit(FakeModel(), epochs=2, steps=2, verbose=0)
    assert capsys.readouterr().out == ""


def test_evaluate_and_predict_lines_and_silent_validation_in_fit(capsys, clock):
    cbs = cb.CallbackList(None, add_progbar=True, model=FakeModel(), verbose=2, epochs=1,
                          steps=3)
    cbs.on_test_begin()
    for b in range(3):
        clock.t += 0.003
        cbs.on_test_batch_end(b, {"loss": 0.3, "accuracy": 0.9})
    cbs.on_test_end({"loss": 0.3, "accuracy": 0.9})
    cbs.on_predict_begin()
    for b in range(3):
        clock.t += 0.002
        cbs.on_predict_batch_end(b, {"outputs": np.zeros((2, 2))})
    cbs.on_predict_end()
    assert capsys.readouterr().out == ("3/3 - 0s - 3ms/step - accuracy: 0.9000 - loss: 0.3000\n"
                                       "3/3 - 0s - 2ms/step\n")
    # Inside fit, a validation pass through the same list prints nothing.
    cbs.on_train_begin()
    cbs.on_test_begin()
    cbs.on_test_batch_end(0, {"loss": 1.0})
    cbs.on_test_end({"loss": 1.0})
    assert capsys.readouterr().out == ""


def test_unknown_steps_show_the_count_at_the_end(capsys, clock):
    run_fit(FakeModel(), epochs=1, steps=4, verbose=2, val=False, clock=clock)
    capsys.readouterr()
    model = FakeModel()
    cbs = cb.CallbackList(None, add_progbar=True, model=model, verbose=2, epochs=1, steps=None)
    cbs.on_train_begin()
    cbs.on_epoch_begin(0)
    for b in range(4):
        clock.t += 0.005
        cbs.on_train_batch_end(b, {"loss": 1.0})
    cbs.on_epoch_end(0, {"loss": 1.0})
    assert capsys.readouterr().out == "4/4 - 0s - 5ms/step - loss: 1.0000\n"


# ---------------------------------------------------------------- monitor direction


@pytest.mark.parametrize("monitor, mode", [
    ("loss", "min"), ("val_loss", "min"), ("val_accuracy", "max"), ("acc", "max"),
    ("val_auc", "max"), ("precision", "max"), ("val_recall", "max"), ("f1_score", "max"),
    ("mae", "min"), ("val_mean_squared_error", "min")])
def test_auto_mode_from_the_metric_name(monitor, mode):
    assert cb.EarlyStopping(monitor=monitor).mode == mode


def test_auto_mode_unknown_name_asks_for_mode():
    with pytest.raises(ValueError, match="mode='max'"):
        cb.EarlyStopping(monitor="val_widgets")
    with pytest.raises(ValueError, match="mode='min'"):
        cb.ModelCheckpoint("x.h5", monitor="widgets", save_best_only=True)
    assert cb.EarlyStopping(monitor="val_widgets", mode="max").mode == "max"
    with pytest.warns(UserWarning, match="unknown"):
        assert cb.EarlyStopping(mode="sideways").mode == "min"


# ---------------------------------------------------------------- EarlyStopping


def test_early_stopping_stops_at_the_right_epoch_and_restores_best(capsys):
    model = FakeModel()
    stop = cb.EarlyStopping(patience=2, restore_best_weights=True, verbose=1)
    history = run_fit(model, [stop], epochs=6, steps=2, losses=[1.0, 0.5, 0.6, 0.7, 0.8, 0.9])
    assert history.epoch == [0, 1, 2, 3]  # best at epoch 1, two more without improvement
    assert stop.stopped_epoch == 3 and stop.best_epoch == 1
    assert model.get_weights()[0].tolist() == [4.0, 4.0]  # weights after epoch index 1
    assert capsys.readouterr().out == (
        "Epoch 4: early stopping\nRestoring model weights from the end of the best epoch: 2.\n")


def test_early_stopping_restores_best_even_without_stopping():
    model = FakeModel()
    stop = cb.EarlyStopping(monitor="loss", patience=5, restore_best_weights=True)
    run_fit(model, [stop], epochs=3, steps=2, losses=[1.0, 0.5, 0.7])
    assert stop.stopped_epoch == 0
    assert model.get_weights()[0].tolist() == [4.0, 4.0]


@pytest.mark.parametrize("kwargs, losses, ran", [
    ({"patience": 2}, [0.9, 0.95, 0.97, 0.99], 3),
    ({"patience": 2, "baseline": 0.5}, [0.9, 0.95, 0.97, 0.99], 2),
    ({"patience": 0}, [1, 2, 3, 4, 5], 2),
    ({"patience": 0, "start_from_epoch": 2}, [1, 2, 3, 4, 5], 4),
    ({"patience": 1, "min_delta": 0.1}, [1.0, 0.95, 0.9], 2),
    ({"patience": 1, "monitor": "accuracy"}, [0.9, 0.8, 0.85, 0.9], 3)])
def test_early_stopping_patience_baseline_warmup_min_delta(kwargs, losses, ran):
    kwargs = {"monitor": "loss", **kwargs}
    history = run_fit(FakeModel(), [cb.EarlyStopping(**kwargs)], epochs=len(losses),
                      losses=losses)
    assert len(history.epoch) == ran


def test_early_stopping_missing_monitor_warns_and_continues():
    with pytest.warns(UserWarning, match="not available"):
        history = run_fit(FakeModel(), [cb.EarlyStopping()], epochs=2, val=False)
    assert len(history.epoch) == 2


# ---------------------------------------------------------------- ModelCheckpoint


def test_checkpoint_formats_one_file_per_epoch(tmp_path):
    model = FakeModel()
    path = tmp_path / "sub" / "ckpt-{epoch:02d}-{val_loss:.2f}.h5"
    run_fit(model, [cb.ModelCheckpoint(path)], epochs=3)
    assert sorted(os.listdir(tmp_path / "sub")) == [
        "ckpt-01-1.12.h5", "ckpt-02-0.62.h5", "ckpt-03-0.46.h5"]
    data = json.loads((tmp_path / "sub" / "ckpt-02-0.62.h5").read_text())
    assert data == {"kind": "model", "w": [4.0, 4.0]}


def test_checkpoint_save_best_only_messages_and_reload(tmp_path, capsys):
    model = FakeModel()
    path = str(tmp_path / "best.weights.h5")
    ckpt = cb.ModelCheckpoint(path, save_best_only=True, save_weights_only=True, verbose=1)
    run_fit(model, [ckpt], epochs=4, losses=[1.0, 0.5, 0.7, 0.4])
    assert model.saves == ["best.weights.h5"] * 3  # epochs 1, 2 and 4 improve
    out = capsys.readouterr().out
    assert (f"\nEpoch 1: val_loss improved from None to 1.12500, saving model to {path}\n"
            f"\nEpoch 1: finished saving model to {path}\n") in out
    assert "\nEpoch 3: val_loss did not improve from 0.62500\n" in out
    fresh = FakeModel()
    fresh.load_weights(path)
    assert fresh.get_weights()[0].tolist() == [8.0, 8.0]
    assert json.loads(open(path).read())["kind"] == "weights"


def test_checkpoint_initial_value_threshold_and_mode_max(tmp_path):
    model = FakeModel()
    ckpt = cb.ModelCheckpoint(tmp_path / "m-{epoch}.h5", save_best_only=True,
                              initial_value_threshold=0.5)
    run_fit(model, [ckpt], epochs=3)
    assert model.saves == ["m-3.h5"]  # only val_loss 0.458 beats 0.5
    model = FakeModel()
    ckpt = cb.ModelCheckpoint(tmp_path / "a-{epoch}.h5", monitor="accuracy",
                              save_best_only=True)
    run_fit(model, [ckpt], epochs=3, losses=[0.5, 0.6, 0.4])
    assert model.saves == ["a-1.h5", "a-3.h5"]


def test_checkpoint_every_n_batches(tmp_path):
    model = FakeModel()
    run_fit(model, [cb.ModelCheckpoint(tmp_path / "b-{epoch}-{batch}.h5", save_freq=3)],
            epochs=3, steps=2)
    assert model.saves == ["b-2-1.h5", "b-3-2.h5"]


def test_checkpoint_argument_checks(tmp_path):
    cb.ModelCheckpoint("model.keras")  # Keras 3's format is accepted
    with pytest.raises(ValueError, match=r"\.weights\.h5"):
        cb.ModelCheckpoint("w.ckpt", save_weights_only=True)
    with pytest.raises(ValueError, match=r"\.h5"):
        cb.ModelCheckpoint("model.pt")
    with pytest.raises(ValueError, match="save_freq"):
        cb.ModelCheckpoint("m.h5", save_freq="batch")
    cb.ModelCheckpoint("legacy.h5", save_weights_only=True)  # legacy weights name is fine
    with pytest.raises(KeyError, match="Failed to format"):
        run_fit(FakeModel(), [cb.ModelCheckpoint(tmp_path / "{nope}.h5")], epochs=1)


# ---------------------------------------------------------------- CSVLogger


def test_csv_logger_header_rows_and_append(tmp_path):
    path = tmp_path / "log.csv"
    run_fit(FakeModel(), [cb.CSVLogger(path)], epochs=2)
    assert path.read_bytes() == (b"epoch,accuracy,loss,val_accuracy,val_loss\r\n"
                                 b"0,0.0,1.0,0.75,1.125\r\n1,0.5,0.5,0.75,0.625\r\n")
    run_fit(FakeModel(), [cb.CSVLogger(path, append=True)], epochs=1)
    assert path.read_text().count("epoch,") == 1
    assert path.read_text().splitlines()[-1] == "0,0.0,1.0,0.75,1.125"


def test_csv_logger_separator_na_and_flush(tmp_path):
    path = tmp_path / "log.csv"
    seen = []
    peek = cb.LambdaCallback(on_epoch_end=lambda e, logs: seen.append(path.read_text()))
    run_fit(FakeModel(), [cb.CSVLogger(path, separator=";"), peek], epochs=2, val=False)
    assert seen[0].splitlines() == ["epoch;accuracy;loss;val_accuracy;val_loss",
                                    "0;0.0;1.0;NA;NA"]  # flushed before the epoch ends
    assert len(path.read_text().splitlines()) == 3


# ---------------------------------------------------------------- learning rate


def test_learning_rate_scheduler_two_and_one_argument(capsys):
    model = FakeModel()
    sched = cb.LearningRateScheduler(lambda epoch, lr: lr * 0.5, verbose=1)
    history = run_fit(model, [sched], epochs=3)
    assert model.optimizer.learning_rate == pytest.approx(0.00125)
    assert history.history["learning_rate"] == pytest.approx([0.005, 0.0025, 0.00125])
    assert "\nEpoch 1: LearningRateScheduler setting learning rate to 0.005.\n" in (
        capsys.readouterr().out)
    model = FakeModel()
    run_fit(model, [cb.LearningRateScheduler(lambda epoch: 0.1 / (epoch + 1))], epochs=3)
    assert model.optimizer.learning_rate == pytest.approx(0.1 / 3)
    with pytest.raises(ValueError, match="should be a float"):
        run_fit(FakeModel(), [cb.LearningRateScheduler(lambda epoch, lr: "fast")], epochs=1)


def test_reduce_lr_on_plateau(capsys):
    model = FakeModel()
    reduce = cb.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1, verbose=1)
    history = run_fit(model, [reduce], epochs=6, losses=[1.0, 1.0, 1.0, 1.0, 0.5, 0.5])
    assert history.history["learning_rate"] == pytest.approx(
        [0.01, 0.01, 0.005, 0.0025, 0.00125, 0.00125])  # the rate during each epoch
    assert model.optimizer.learning_rate == pytest.approx(0.000625)
    assert "\nEpoch 2: ReduceLROnPlateau reducing learning rate to 0.005.\n" in (
        capsys.readouterr().out)
    model = FakeModel()
    reduce = cb.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1, min_lr=0.003)
    run_fit(model, [reduce], epochs=5, losses=[1.0] * 5)
    assert model.optimizer.learning_rate == pytest.approx(0.003)
    model = FakeModel()
    reduce = cb.ReduceLROnPlateau(monitor="loss", factor=0.5, patience=1, cooldown=2)
    run_fit(model, [reduce], epochs=6, losses=[1.0, 1.0, 1.0, 1.0, 0.5, 0.5])
    assert model.optimizer.learning_rate == pytest.approx(0.00125)  # epochs 2, 4, 6
    with pytest.raises(ValueError, match="factor"):
        cb.ReduceLROnPlateau(factor=1.0)


# ---------------------------------------------------------------- TerminateOnNaN


def test_terminate_on_nan_stops_within_the_epoch(capsys):
    rec = Recorder()
    model = FakeModel()
    history = run_fit(model, [cb.TerminateOnNaN(), rec], epochs=3, steps=4,
                      batch_loss=lambda e, b: math.nan if (e, b) == (1, 1) else 1.0)
    assert rec.calls.count("on_train_batch_end") == 4 + 2
    assert history.epoch == [0, 1] and model.stop_training
    assert capsys.readouterr().out == "Batch 1: Invalid loss, terminating training\n"
    with pytest.raises(RuntimeError, match="NaN or Inf loss encountered at batch 0"):
        run_fit(FakeModel(), [cb.TerminateOnNaN(raise_error=True)], epochs=1,
                batch_loss=lambda e, b: math.inf)


# ---------------------------------------------------------------- LambdaCallback


def test_lambda_callback_hooks_and_extra_kwargs():
    calls = []
    lam = cb.LambdaCallback(on_train_begin=lambda logs: calls.append("train_begin"),
                            on_epoch_end=lambda epoch, logs: calls.append(("epoch", epoch)),
                            on_train_batch_end=lambda batch, logs: calls.append(batch),
                            on_test_end=lambda logs: calls.append("test_end"))
    cbs = cb.CallbackList([lam], model=FakeModel())
    cbs.on_train_begin()
    cbs.on_train_batch_end(0, {"loss": 1.0})
    cbs.on_epoch_end(0, {})
    cbs.on_test_end()
    assert calls == ["train_begin", 0, ("epoch", 0), "test_end"]
