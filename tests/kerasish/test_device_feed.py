"""The async input path (kerasish/engine/feeder.py on kernels_numba.device's pinned/stream
helpers, tested in tests/kernels_numba/test_device_async.py): batches arrive intact and
in order, fit gives the same result as the synchronous copy, nothing is reallocated
per step, and the CPU keeps the plain path.

`device`-parametrized tests run on the CPU (the helpers' fallback) and, marked
`cudasim`, on the CUDA kernels under the simulator (or a GPU with -m "cudasim or gpu").
"""

import os
import threading

import numpy as np
import pytest

import kerasish as keras
import kernels_numba
from kerasish import callbacks, config, layers, models
from kerasish.data import DataLoader
from kerasish.engine import feeder as feeder_module
from kerasish.engine.executor import TRAIN
from kernels_numba import _cuda_memory
from kernels_numba import device as kdevice

N, BATCH = 7, 3  # 3 batches per epoch, the last one partial (1 sample)


def tiny_model(seed=1):
    keras.utils.set_random_seed(seed)
    model = models.Sequential([keras.Input((2,)), layers.Dense(3, activation="softmax")])
    model.compile(optimizer="adam", loss="sparse_categorical_crossentropy",
                  metrics=["accuracy"])
    return model


def indexed_data():
    """x[i] = (i, -i) and y[i] = i % 3: every sample says where it came from."""
    i = np.arange(N)
    return np.stack([i, -i], axis=1).astype(np.float32), (i % 3).astype(np.int32)


def feed_threads():
    return [t for t in threading.enumerate() if t.name == "kerasish-device-feed"]


class CopySpy:
    """Records the stream of every copy_from_host_async call (then does the copy)."""

    def __init__(self, monkeypatch):
        self.streams = []
        real = kdevice.copy_from_host_async

        def spy(dst, host, stream=None):
            self.streams.append(stream)
            real(dst, host, stream)

        monkeypatch.setattr(kdevice, "copy_from_host_async", spy)


# -- the feeder: data intact and in order ------------------------------------------------

def test_feed_delivers_every_batch_intact_in_order(on_device, monkeypatch):
    spy = CopySpy(monkeypatch)
    model = tiny_model()
    ex = model._executor(BATCH, TRAIN)
    x, y = indexed_data()
    loader, twin = (DataLoader(x, y, batch_size=BATCH, seed=5) for _ in range(2))
    loader.validated = True
    twin.prefetch = 0
    slots = []
    for _ in range(3):  # epochs: a fresh permutation each, the same in the twin
        expected = list(twin)
        got = []
        for staged, none in ex.feeder().feed(iter(loader)):
            assert none is None
            s = ex.step(len(staged), staged.slot)
            staged.wait()
            got.append((kernels_numba.to_host(s.inputs[0]), kernels_numba.to_host(s.targets[0])))
            slots.append(staged.slot)
            staged.release()
        assert [len(g[0]) for g in got] == [3, 3, 1]
        for (gx, gy), (ex_x, ex_y) in zip(got, expected, strict=True):
            np.testing.assert_array_equal(gx, ex_x)
            np.testing.assert_array_equal(gy, ex_y)
        order = np.concatenate([g[0][:, 0] for g in got])
        assert sorted(order) == list(range(N))
    assert slots == [0, 1, 0] * 3  # double buffering: the slots alternate
    assert len(ex.x_slots) == len(ex.y_slots) == 2
    assert feed_threads() == []
    expected_stream = kdevice.copy_stream(on_device)
    assert spy.streams and all(s is expected_stream for s in spy.streams)


def test_feed_stops_its_threads_when_the_consumer_leaves_early(on_device):
    model = tiny_model()
    ex = model._executor(BATCH, TRAIN)
    x, y = indexed_data()
    loader = DataLoader(x, y, batch_size=BATCH, seed=0)
    loader.validated = True
    for k, (staged, _) in enumerate(ex.feeder().feed(iter(loader))):
        if k == 1:
            break  # this batch's slot is never released: the worker must still stop
        staged.release()
    assert feed_threads() == []
    assert not [t for t in threading.enumerate() if t.name == "kerasish-DataLoader"]


def test_feed_rejects_a_batch_larger_than_the_plan(on_device):
    ex = tiny_model()._executor(2, TRAIN)
    x, y = indexed_data()
    with pytest.raises(ValueError, match="exceeds the planned batch size 2"):
        for staged, _ in ex.feeder().feed(iter([(x[:3], y[:3])])):
            staged.release()


def test_a_plan_refuses_a_batch_staged_for_another(on_device):
    model = tiny_model()
    ex, other = model._executor(BATCH, TRAIN), model._executor(BATCH + 1, TRAIN)
    x, y = indexed_data()
    with pytest.raises(RuntimeError, match="expected a batch staged for this plan"):
        for staged, _ in ex.feeder().feed(iter([(x[:BATCH], y[:BATCH])])):
            try:
                other.train_step(staged, None)
            finally:
                staged.release()


# -- fit through the feeder ---------------------------------------------------------------

def test_cpu_fit_keeps_the_synchronous_path(monkeypatch):
    spy = CopySpy(monkeypatch)
    model = tiny_model()
    x, y = indexed_data()
    model.fit(x, y, batch_size=BATCH, epochs=1, verbose=0, validation_data=(x, y))
    assert spy.streams == []
    assert all(ex._feeder is None for ex in model._executors.values())


def run_fit(async_input, monkeypatch):
    monkeypatch.setattr(feeder_module, "ASYNC_INPUT", async_input)
    model = tiny_model(seed=3)
    x, y = indexed_data()
    history = model.fit(x, y, batch_size=BATCH, epochs=2, shuffle=False, verbose=0,
                        validation_data=(x[:4], y[:4]), validation_freq=2)
    loader = DataLoader(x, y, batch_size=BATCH, seed=7)  # shuffled, checked per batch
    history2 = model.fit(loader, epochs=1, verbose=0)
    return model.get_weights(), history.history, history2.history


@pytest.mark.cudasim
def test_cuda_fit_through_the_feeder_matches_the_synchronous_copy(monkeypatch):
    if not kernels_numba.cuda_available():
        pytest.skip("CUDA kernels cannot run here: no GPU and NUMBA_ENABLE_CUDASIM is not 1")
    config.set_device("cuda")
    try:
        spy = CopySpy(monkeypatch)
        # (the optimizer's per-step scalars also travel by async copy, on the compute
        # stream: only the copy stream's copies are batches)
        feeds = lambda: [s for s in spy.streams if s is kdevice.copy_stream()]  # noqa: E731
        w_sync, h_sync, h2_sync = run_fit(False, monkeypatch)
        assert feeds() == []
        w_async, h_async, h2_async = run_fit(True, monkeypatch)
        # 2 epochs x 3 batches + 1 validation x 2 batches + 3 batches, each x and y
        assert len(feeds()) == 2 * (6 + 2 + 3)
    finally:
        config.set_device("cpu")
    for a, b in zip(w_sync, w_async, strict=True):
        np.testing.assert_allclose(b, a, rtol=1e-6, atol=1e-7)
    for sync, asyn in ((h_sync, h_async), (h2_sync, h2_async)):
        assert sync.keys() == asyn.keys()
        for key in sync:
            np.testing.assert_allclose(asyn[key], sync[key], rtol=1e-6, atol=1e-7)


def test_fit_allocates_nothing_after_the_first_step(on_device):
    model = tiny_model()
    x, y = indexed_data()
    counts = []
    probe = callbacks.LambdaCallback(
        on_train_batch_end=lambda batch, logs: counts.append(kernels_numba.allocation_count()))
    model.fit(x, y, batch_size=BATCH, epochs=2, verbose=0, callbacks=[probe])
    assert len(counts) == 6 and len(set(counts)) == 1, counts
    ex = model._executors[(BATCH, TRAIN)]
    assert (ex._feeder is not None) == (on_device == "cuda")


def mse_of(weights, x, y):
    """Dense's mean squared error in float64 NumPy, from the model's weights."""
    kernel, bias = (np.asarray(w, np.float64) for w in weights)
    return float(np.mean((x.astype(np.float64) @ kernel + bias - y) ** 2))


def test_batch_size_above_the_sample_count_runs_on_the_fed_plan(on_device):
    """A batch size above the sample count (evaluate's default 32 on 22 samples) plans
    for the 22 samples; the device feed staged the batch for that same plan, not for a
    32-sample one whose slot the step never reads (the step read stale data: a wrong
    loss after fit, a wrong update in fit itself)."""
    keras.utils.set_random_seed(2)
    model = models.Sequential([keras.Input((3,)), layers.Dense(2)])
    model.compile(optimizer="sgd", loss="mse")
    rng = np.random.default_rng(0)
    x = rng.normal(size=(22, 3)).astype(np.float32)
    y = rng.normal(size=(22, 2)).astype(np.float32)
    model.fit(x, y, batch_size=5, epochs=1, verbose=0)  # 5 batches, the last one of 2
    before = model.get_weights()
    # one batch of all 22 samples: the epoch's loss is the loss before its one update
    history = model.fit(x, y, batch_size=32, epochs=1, shuffle=False, verbose=0)
    np.testing.assert_allclose(history.history["loss"][0], mse_of(before, x, y), rtol=1e-5)
    weights = model.get_weights()
    kernel, bias = (np.asarray(w, np.float64) for w in before)
    grad = 2 * (x.astype(np.float64) @ kernel + bias - y) / y.size  # SGD's lr 0.01
    np.testing.assert_allclose(weights[0], kernel - 0.01 * x.T @ grad, rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(weights[1], bias - 0.01 * grad.sum(0), rtol=1e-5, atol=1e-7)
    expected = mse_of(weights, x, y)
    np.testing.assert_allclose(model.evaluate(x, y, verbose=0), expected, rtol=1e-5)
    np.testing.assert_allclose(model.evaluate(x[:12], y[:12], verbose=0),
                               mse_of(weights, x[:12], y[:12]), rtol=1e-5)
    # no 32-sample plan was made for 22 or 12 samples
    assert all(size <= 22 for size, *_ in model._executors), list(model._executors)


# -- which stream each copy takes (the simulator and a GPU) ------------------------------

@pytest.mark.cudasim
def test_cuda_batch_copies_go_through_the_copy_stream(monkeypatch):
    """Batches go through the copy stream (on a GPU: non-blocking, non-default); every
    other host->device copy is a synchronous one (stream 0: weights, optimizer state)
    or the optimizer's per-step scalars on the compute stream. Streams are objects:
    compared by identity, never with `== 0` (False for a real stream)."""
    if not kernels_numba.cuda_available():
        pytest.skip("CUDA kernels cannot run here")
    from kernels_numba import _cuda

    stream = kdevice.copy_stream()
    if os.environ.get("NUMBA_ENABLE_CUDASIM") != "1":
        assert _cuda_memory.stream_is_nonblocking(stream), stream
    issued = []
    real = _cuda_memory.copy_host_to_device

    def spy(dst, host, stream=0):
        issued.append(stream)
        real(dst, host, stream)

    monkeypatch.setattr(_cuda_memory, "copy_host_to_device", spy)
    config.set_device("cuda")
    try:
        model = tiny_model()
        x, y = indexed_data()
        model.fit(x, y, batch_size=BATCH, epochs=2, verbose=0)
    finally:
        config.set_device("cpu")
    compute = _cuda.compute_stream()
    assert sum(s is stream for s in issued) == 2 * 2 * 3  # x and y, 2 epochs x 3 batches
    others = [s for s in issued if s is not stream]
    assert any(s is compute for s in others)  # Adam's step scalars, one copy per step
    assert all(s is compute or (type(s) is int and s == 0) for s in others), others
    assert np.isfinite(model.get_weights()[0]).all()
