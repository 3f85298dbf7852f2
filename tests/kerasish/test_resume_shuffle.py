"""BackupAndRestore with shuffle=True (the default): an interrupted-and-resumed fit
gives bit-identical weights and losses to an uninterrupted one, because the DataLoader's
permutation state travels with the backup (issue 14, item 6). CPU only: the order of the
batches is what is tested."""

import json
import os

import numpy as np
import pytest

import kerasish
from kerasish import callbacks as cb
from kerasish.data import DataLoader

EPOCHS = 4


class _Interrupt(cb.Callback):
    def __init__(self, epoch, batch):
        super().__init__()
        self.epoch, self.batch = epoch, batch

    def on_epoch_begin(self, epoch, logs=None):
        self.current = epoch

    def on_train_batch_end(self, batch, logs=None):
        if self.current == self.epoch and batch == self.batch:
            raise RuntimeError("simulated crash")


def _data():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(37, 5)).astype(np.float32)
    y = (x[:, :1] + x[:, 1:2] > 0).astype(np.float32)
    return x, y


def _model():
    """Fixed layer names: the Dropout RNG state is matched by name, and a second model
    in one process would otherwise get `dropout_1` (a fresh process gets `dropout`)."""
    kerasish.utils.set_random_seed(1)
    layers = kerasish.layers
    m = kerasish.Sequential([layers.Input((5,)), layers.Dense(8, activation="relu", name="d0"),
                             layers.Dropout(0.3, name="drop"),
                             layers.Dense(1, activation="sigmoid", name="d1")])
    m.compile(optimizer="adam", loss="binary_crossentropy")
    return m


def _fit(model, callbacks):
    x, y = _data()
    return model.fit(x, y, batch_size=6, epochs=EPOCHS, shuffle=True, verbose=0,
                     callbacks=callbacks)


def _interrupted(backup, save_freq="epoch"):
    with pytest.raises(RuntimeError, match="simulated crash"):
        _fit(_model(), [cb.BackupAndRestore(backup, save_freq=save_freq), _Interrupt(2, 3)])
    return json.load(open(os.path.join(backup, "training_metadata.json")))


def test_resumed_shuffled_fit_is_bit_identical(tmp_path):
    straight = _model()
    want = _fit(straight, []).history["loss"]
    backup = str(tmp_path / "backup")
    meta = _interrupted(backup)
    assert meta["epoch"] == 2 and meta["loader"]["rng"]["bit_generator"] == "PCG64"
    resumed = _model()  # a fresh process would start from here too
    got = _fit(resumed, [cb.BackupAndRestore(backup)]).history["loss"]
    assert len(got) == EPOCHS - 2 and got == want[2:]  # exactly: same batches, same order
    for a, b in zip(straight.get_weights(), resumed.get_weights()):
        np.testing.assert_array_equal(a, b)


def test_mid_epoch_backup_keeps_the_order_the_epoch_started_with(tmp_path):
    """save_freq=N saves inside epoch 2, which is redone on resume: the saved order is
    epoch 2's, the same state an end-of-epoch-1 backup holds."""
    at_epoch_end = _interrupted(str(tmp_path / "a"))
    mid_epoch = _interrupted(str(tmp_path / "b"), save_freq=4)  # last save: epoch 2, batch 1
    assert mid_epoch["epoch"] == 2 and mid_epoch["batch"] == 1
    assert mid_epoch["loader"] == at_epoch_end["loader"]


def test_without_the_state_the_order_differs(tmp_path):
    """The control: dropping the saved loader state makes the resumed run diverge, so
    the test above really depends on it."""
    want = _fit(_model(), []).history["loss"]
    backup = str(tmp_path / "backup")
    with pytest.raises(RuntimeError):
        _fit(_model(), [cb.BackupAndRestore(backup), _Interrupt(2, 3)])
    path = os.path.join(backup, "training_metadata.json")
    meta = json.load(open(path))
    del meta["loader"]
    json.dump(meta, open(path, "w"))
    got = _fit(_model(), [cb.BackupAndRestore(backup)]).history["loss"]
    assert got != want[2:]


@pytest.mark.parametrize("text, msg", [
    ("{not json", "not valid JSON"), ('{"epoch": -3}', "'epoch' an int >= 0"),
    ('{"epoch": 1.5}', "'epoch' an int"), ("[1]", "JSON object"), ("{}", "no 'epoch'"),
    ('{"epoch": 1, "loader": {"epoch": 0, "rng": {"bit_generator": "MT19937"}}}',
     "PCG64 state"),
])
def test_corrupt_metadata_is_refused_naming_the_file(tmp_path, text, msg):
    backup = tmp_path / "b"
    backup.mkdir()
    (backup / "training_metadata.json").write_text(text)
    with pytest.raises(ValueError, match=msg) as e:
        _fit(_model(), [cb.BackupAndRestore(str(backup))])
    assert str(backup / "training_metadata.json") in str(e.value)


def test_loader_state_roundtrip_and_validation():
    x = np.arange(23)
    a = DataLoader(x, batch_size=4, seed=3, prefetch=0)
    list(a)
    state, start = a.get_state(), a.get_state(epoch_start=True)
    nxt = [b.tolist() for b, _ in a]
    b = DataLoader(x, batch_size=4, seed=99, prefetch=0)
    b.set_state(json.loads(json.dumps(state)))
    assert [q.tolist() for q, _ in b] == nxt and b.epoch == 2
    c = DataLoader(x, batch_size=4, seed=99, prefetch=0)
    c.set_state(start)  # redo the epoch it was in
    assert c.epoch == 0 and [q.tolist() for q, _ in c] != nxt
    for bad in ({"epoch": -1, "rng": state["rng"]}, {"rng": state["rng"]}, {"epoch": 0},
                {"epoch": 0, "rng": {"bit_generator": "PCG64", "state": "x"}}):
        with pytest.raises(ValueError, match="get_state"):
            DataLoader(x, seed=0).set_state(bad)
