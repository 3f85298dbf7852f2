"""kernels_numba.autotune: the choice logic (fake clocks and fake candidates, so nothing
depends on this machine's timings), its per-machine cache, its budget, the switch, and
the real GEMM candidates it chooses among (each checked against float64)."""

import json
import os

import numpy as np
import pytest

from kernels_numba import autotune
from kernels_numba.cpu import gemm as gemm_module
from kernels_numba.testing import assert_close, randn


@pytest.fixture(autouse=True)
def fresh(tmp_path, monkeypatch):
    monkeypatch.setenv(autotune.ENV, "1")  # the suite runs with it off (tests/conftest.py)
    autotune.reset(tmp_path)
    monkeypatch.setattr(autotune, "_loaded", lambda: False)  # this machine's load aside
    yield tmp_path
    autotune.reset()


class Clock:
    """A fake timer: each candidate advances it by its own cost when it runs."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def fake_candidates(clock, costs, calls=None):
    calls = calls if calls is not None else []

    def make(name):
        def run():
            calls.append(name)
            clock.now += costs[name]
        return run

    return {name: make(name) for name in costs}, calls


def test_fastest_candidate_chosen_recorded_and_reused():
    clock = Clock()
    autotune.set_timer(clock)
    candidates, calls = fake_candidates(clock, {"a": 0.01, "b": 0.002, "c": 0.005})
    assert autotune.decide("op", "k1", candidates, "a") == "b"
    assert set(calls) == {"a", "b", "c"}
    data = json.loads(autotune.cache_path().read_text())
    assert data["machine"] == autotune.machine_key() and data["choices"] == {"op": {"k1": "b"}}
    # a new process (state forgotten, the same folder) reads the choice, times nothing
    autotune.reset(autotune.cache_path().parent)
    calls.clear()
    assert autotune.decide("op", "k1", candidates, "a") == "b"
    assert calls == []


def test_fixed_kept_unless_clearly_faster():
    clock = Clock()
    autotune.set_timer(clock)
    candidates, _ = fake_candidates(clock, {"fixed": 0.010, "other": 0.0099})
    assert autotune.decide("op", "close", candidates, "fixed") == "fixed"


def test_corrupted_cache_ignored_and_rewritten():
    path = autotune.cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('{"format": 1, "machine": ')  # a torn write
    clock = Clock()
    autotune.set_timer(clock)
    candidates, calls = fake_candidates(clock, {"a": 0.01, "b": 0.001})
    assert autotune.decide("op", "k", candidates, "a") == "b"
    assert calls  # tuned, not read
    assert json.loads(path.read_text())["choices"] == {"op": {"k": "b"}}


@pytest.mark.parametrize("bad", ["[1, 2]", "[" * 100000,
                                 '{"format": 1, "machine": null, "choices": 3}',
                                 '{"format": 99, "choices": {}}', "\xff\xfe"])
def test_other_broken_caches_ignored(bad):
    path = autotune.cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(bad, errors="surrogateescape")
    assert autotune.choices() == {}


def test_oversized_cache_ignored(monkeypatch):
    path = autotune.cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"format": autotune.FORMAT, "machine": autotune.machine_key(),
                                "choices": {"op": {"k": "b"}}}))
    assert autotune.choices() == {"op": {"k": "b"}}
    autotune.reset(path.parent)
    monkeypatch.setattr(autotune, "MAX_FILE_BYTES", 10)
    assert autotune.choices() == {}


def test_cache_from_another_machine_never_used():
    clock = Clock()
    autotune.set_timer(clock)
    path = autotune.cache_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    # another machine's choices copied under this machine's file name
    path.write_text(json.dumps({"format": autotune.FORMAT, "machine": "Other CPU|znver3|avx2",
                                "choices": {"op": {"k": "a"}}}))
    candidates, calls = fake_candidates(clock, {"a": 0.01, "b": 0.001})
    assert autotune.decide("op", "k", candidates, "a") == "b"
    assert calls
    assert json.loads(path.read_text())["machine"] == autotune.machine_key()
    # and another machine's key names another file
    autotune._state["machine"] = "Other CPU|znver3|avx2|format1"
    try:
        assert autotune.cache_path() != path
    finally:
        autotune._state["machine"] = None


def test_slow_candidate_stops_tuning_within_decision_budget():
    clock = Clock()
    autotune.set_timer(clock)
    autotune.set_budget(total_s=10.0, per_decision_s=0.25)
    candidates, calls = fake_candidates(clock, {"fixed": 0.001, "slow": 5.0, "fast": 0.0001})
    assert autotune.decide("op", "k", candidates, "fixed") == "fixed"
    assert calls.count("slow") == 1 and "fast" not in calls  # stopped at the first slow run
    assert autotune.spent() <= 0.25 + 5.0 + 4 * 0.001
    assert autotune.choices() == {}  # abandoned: not recorded (a later process may tune it)
    calls.clear()  # but this process does not try it again
    assert autotune.decide("op", "k", candidates, "fixed") == "fixed" and calls == []


def test_over_budget_keeps_best_timed_in_this_process_only():
    clock = Clock()
    autotune.set_timer(clock)
    autotune.set_budget(total_s=10.0, per_decision_s=0.1)
    candidates, calls = fake_candidates(clock, {"fixed": 0.01, "fast": 0.001, "slow": 1.0})
    assert autotune.decide("op", "k", candidates, "fixed") == "fast"
    assert calls.count("slow") == 1  # stopped there
    assert autotune.choices() == {} and not autotune.cache_path().exists()
    assert autotune.recorded("op", "k") == "fast" and not autotune.pending("op", "k")


def test_total_budget_spent_then_fixed_without_timing():
    clock = Clock()
    autotune.set_timer(clock)
    autotune.set_budget(total_s=0.05, per_decision_s=1.0)
    candidates, calls = fake_candidates(clock, {"fixed": 0.01, "b": 0.004})
    assert autotune.decide("op", "k1", candidates, "fixed") == "b"  # 3*0.01 + 3*0.004 spent
    assert autotune.spent() == pytest.approx(0.042)
    calls.clear()
    assert autotune.decide("op", "k2", candidates, "fixed") == "fixed"  # over the total
    assert autotune.spent() <= 0.05 + 0.01 + 1e-9 and calls.count("b") == 0
    calls.clear()
    assert autotune.decide("op", "k3", candidates, "fixed") == "fixed"
    assert calls == []


def test_off_times_nothing(monkeypatch):
    clock = Clock()
    autotune.set_timer(clock)
    candidates, calls = fake_candidates(clock, {"a": 0.01, "b": 0.001})
    autotune.set_enabled(False)
    assert autotune.decide("op", "k", candidates, "a") == "a" and calls == []
    autotune.reset(autotune.cache_path().parent)
    monkeypatch.setenv(autotune.ENV, "0")
    assert not autotune.enabled()
    assert autotune.decide("op", "k", candidates, "a") == "a" and calls == []
    monkeypatch.setenv(autotune.ENV, "yes")
    with pytest.raises(ValueError, match="KERASISH_AUTOTUNE: expected '0' or '1'; received 'yes'"):
        autotune.enabled()
    with pytest.raises(TypeError, match="set_autotune: expected True or False"):
        autotune.set_enabled(1)
    with pytest.raises(ValueError, match="expected total_s >= 0 seconds; received -1"):
        autotune.set_budget(total_s=-1)


def test_cache_written_atomically(monkeypatch):
    clock = Clock()
    autotune.set_timer(clock)
    candidates, _ = fake_candidates(clock, {"a": 0.01, "b": 0.001})
    assert autotune.decide("op", "k1", candidates, "a") == "b"
    path = autotune.cache_path()
    before = path.read_text()
    replaced = []
    real_replace = os.replace

    def failing_replace(src, dst):
        replaced.append((src, dst))
        raise OSError("disk full")

    monkeypatch.setattr(autotune.os, "replace", failing_replace)
    assert autotune.decide("op", "k2", candidates, "a") == "b"  # still chosen, in memory
    assert "disk full" in autotune.cache_error()
    assert path.read_text() == before  # the old file whole, never half-written
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temp file left
    src, dst = replaced[0]
    assert os.path.dirname(src) == str(path.parent) and dst == path
    monkeypatch.setattr(autotune.os, "replace", real_replace)
    assert autotune.decide("op", "k3", candidates, "a") == "b"
    assert json.loads(path.read_text())["choices"]["op"] == {"k1": "b", "k2": "b", "k3": "b"}


def test_unwritable_folder_keeps_choices_in_memory(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    autotune.reset(blocker / "sub")  # a folder under a file: cannot be made
    clock = Clock()
    autotune.set_timer(clock)
    candidates, _ = fake_candidates(clock, {"a": 0.01, "b": 0.001})
    assert autotune.decide("op", "k", candidates, "a") == "b"
    assert autotune.cache_error() and autotune.choices() == {"op": {"k": "b"}}


# ---- the real GEMM choices (kernels_numba/cpu/gemm.py)

def test_fixed_gemm_choice_is_the_pre_tuner_rule():
    own = gemm_module._own_sgemm()
    assert gemm_module._fixed_choice(7744, 64, 288, 2) == f"rows/{own}"
    assert gemm_module._fixed_choice(33, 517, 131, 2) == f"columns/{own}"
    assert gemm_module._fixed_choice(9, 32, 43265, 2) == f"reduction/{own}"
    assert gemm_module._fixed_choice(64, 64, 64, 2) == f"single/{own}"
    assert gemm_module._fixed_choice(7744, 64, 288, 1) == f"single/{own}"


needs_sgemm = pytest.mark.skipif(gemm_module._SGEMM is None, reason="no bound cblas_sgemm")


@needs_sgemm
@pytest.mark.parametrize("accumulate", [False, True])
@pytest.mark.parametrize("m,k,n,layout", [(301, 97, 65, "nn"), (9, 4099, 32, "tn"),
                                          (33, 131, 517, "nt")])
def test_every_gemm_candidate_matches_float64(m, k, n, layout, accumulate):
    a = randn((k, m) if layout[0] == "t" else (m, k), seed=1)
    b = randn((n, k) if layout[1] == "t" else (k, n), seed=2)
    a, b = (a.T if layout[0] == "t" else a), (b.T if layout[1] == "t" else b)
    c0 = randn((m, n), seed=3)
    expected = a.astype(np.float64) @ b.astype(np.float64) + (c0 if accumulate else 0)
    threads = 2
    fixed = gemm_module._fixed_choice(m, n, k, threads)
    names = gemm_module._candidates(m, n, k, threads, fixed)
    assert len(names) >= 4
    from kernels_numba import _blas

    for name in names:
        c = c0.copy() if accumulate else np.full((m, n), np.nan, np.float32)
        gemm_module.run_all(gemm_module._calls(name, c, a, b, accumulate, _blas.operand(a),
                                               _blas.operand(b), threads))
        assert_close(c, expected, rtol=1e-4, atol=1e-3, what=f"gemm {name}")


@needs_sgemm
def test_gemm_off_is_fixed_choice_bit_for_bit(monkeypatch):
    a, b = randn((9, 4099), seed=1), randn((4099, 32), seed=2)
    seen = []
    monkeypatch.setattr(autotune, "_time_candidates",
                        lambda cands, fixed, allowed: seen.append(fixed) or
                        (next(n for n in cands if n.startswith("rows")), True))
    monkeypatch.setattr(gemm_module.numba, "get_num_threads", lambda: 2)
    tuned = np.empty((9, 32), np.float32)
    gemm_module.gemm(tuned, a, b)
    assert seen == [f"reduction/{gemm_module._own_sgemm()}"]  # tuned at first use ...
    autotune.set_enabled(False)
    off = np.empty((9, 32), np.float32)
    gemm_module.gemm(off, a, b)
    fixed = np.empty((9, 32), np.float32)
    from kernels_numba import _blas

    gemm_module.run_all(gemm_module._calls(seen[0], fixed, a, b, False, _blas.operand(a),
                                           _blas.operand(b), 2))
    assert np.array_equal(off.view(np.int32), fixed.view(np.int32))
    assert_close(tuned, off, rtol=1e-5, atol=1e-4, what="tuned vs fixed")
    assert len(seen) == 1  # ... and never again


@needs_sgemm
@pytest.mark.parametrize("kind", ["mlp", "cnn"])
def test_small_model_trains_with_tuned_choices(monkeypatch, kind):
    import kerasish as keras
    from kerasish.utils import set_random_seed

    def layers():
        if kind == "mlp":
            return [keras.layers.Dense(128, activation="relu", input_shape=(300,)),
                    keras.layers.Dense(10)]
        return [keras.layers.Conv2D(16, 3, activation="relu", input_shape=(14, 14, 3)),
                keras.layers.Conv2D(16, 3, activation="relu"), keras.layers.MaxPooling2D(),
                keras.layers.Flatten(), keras.layers.Dense(10)]

    per_fit = []

    def run():
        set_random_seed(3)
        model = keras.Sequential(layers())
        model.compile(optimizer=keras.optimizers.SGD(learning_rate=0.01),
                      loss=keras.losses.SparseCategoricalCrossentropy(from_logits=True))
        rng = np.random.default_rng(0)
        x = rng.random((256, 300) if kind == "mlp" else (256, 14, 14, 3), dtype=np.float32)
        y = rng.integers(0, 10, 256)
        for _ in range(2):
            model.fit(x, y, batch_size=64, epochs=1, shuffle=False, verbose=0)
            per_fit.append(len(chosen))
        return [np.asarray(w) for w in model.get_weights()]

    chosen = []
    keras.config.set_autotune(False)
    assert keras.config.get_autotune() is False
    fixed = run()
    assert chosen == []

    def not_fixed(cands, fixed_name, allowed):  # a fake timing: anything but the fixed choice
        chosen.append(next(n for n in cands if n != fixed_name))
        return chosen[-1], True

    monkeypatch.setattr(autotune, "_time_candidates", not_fixed)
    monkeypatch.setattr(gemm_module, "TUNE_MIN_MACS", 1)
    keras.config.set_autotune(True)
    tuned = run()
    assert chosen  # the model's GEMMs ran on choices other than the fixed ones
    if kind == "cnn":
        assert "separate" in chosen  # and its convs on the separate passes
    assert per_fit[-1] == per_fit[-2]  # decided at the first fit's plan, never per step
    for w_fixed, w_tuned in zip(fixed, tuned):
        assert np.isfinite(w_tuned).all()
        assert_close(w_tuned, w_fixed, rtol=1e-4, atol=1e-5, what="weights tuned vs fixed")


# ---- the convolution algorithm (kernels_numba/cpu/conv2d.py): grouped pass or separate

def _conv_case():
    from kernels_numba import ops

    x, w, b = randn((9, 14, 13, 5), seed=1), randn((3, 3, 5, 6), seed=2), randn((6,), seed=3)
    y_shape = ops.conv2d_output_shape(x.shape, w.shape)
    ws = np.full(ops.conv2d_workspace_shape(x.shape, w.shape), np.nan, np.float32)
    return x, w, b, y_shape, ws


@needs_sgemm
@pytest.mark.parametrize("pick", ["grouped", "separate"])
def test_conv_variants_on_scratch_and_equal(monkeypatch, pick):
    from kernels_numba.cpu import conv2d

    x, w, b, y_shape, ws = _conv_case()
    decided = []

    def fake(cands, fixed, allowed):
        decided.append(sorted(cands))
        return (pick if "grouped" in cands else fixed), True

    monkeypatch.setattr(autotune, "_time_candidates", fake)
    y = np.full(y_shape, 7.0, np.float32)
    call = conv2d.conv2d_forward.bind(y, x, w, b, ws, activation="relu")
    assert ["grouped", "separate"] in decided
    assert (y == 7.0).all() and np.isnan(ws).all()  # tuning touched no caller's buffer
    call()
    dy = randn(y_shape, seed=4)
    dx = np.full(x.shape, 7.0, np.float32)
    back = conv2d.conv2d_backward_data.bind(dx, dy, w, ws)
    assert (dx == 7.0).all()
    back()
    autotune.set_enabled(False)  # the fixed choice: grouped, as before the tuner
    y_fixed, dx_fixed = np.empty(y_shape, np.float32), np.empty(x.shape, np.float32)
    conv2d.conv2d_forward(y_fixed, x, w, b, ws.copy(), activation="relu")
    conv2d.conv2d_backward_data(dx_fixed, dy, w, ws.copy())
    assert_close(y, y_fixed, rtol=1e-5, atol=1e-5, what=f"conv forward {pick}")
    assert_close(dx, dx_fixed, rtol=1e-5, atol=1e-5, what=f"conv backward-data {pick}")
    rec = autotune.choices()
    assert set(rec["cpu.conv2d_forward"].values()) == {pick}
    assert set(rec["cpu.conv2d_backward_data"].values()) == {pick}


# ---- the recurrent sgemm (kernels_numba/cpu/rnn_sequence.py)

@needs_sgemm
@pytest.mark.skipif(len(gemm_module.sgemm_names()) < 2, reason="one sgemm on this machine")
@pytest.mark.parametrize("cell", ["lstm", "gru"])
def test_recurrent_sgemm_choice(monkeypatch, cell):
    from kernels_numba import ops

    n, t, u = 16, 5, 24
    g = (4 if cell == "lstm" else 3) * u
    gates0, r = randn((t, n, g), 1), randn((u, g), 2) * 0.5
    h0 = np.zeros((t + 1, n, u), np.float32)
    h0[0] = randn((n, u), 3)

    def run():
        h, gates = h0.copy(), gates0.copy()
        c = np.zeros_like(h) if cell == "lstm" else None
        inner = np.zeros_like(gates) if cell == "gru" else None
        ops.rnn_sequence_forward(h, gates, r, c=c, inner=inner, cell=cell)
        dh = randn((n, u), 4)
        ops.rnn_sequence_backward(gates, dh, h, r, c=c, inner=inner, cell=cell,
                                  dc=None if c is None else np.zeros((n, u), np.float32))
        return h, gates, dh

    autotune.set_enabled(False)
    fixed = run()
    autotune.set_enabled(True)
    picked = []

    def fake(cands, fixed_name, allowed):
        if "openblas" in cands:
            picked.append(fixed_name)
            return "openblas", True
        return fixed_name, True

    monkeypatch.setattr(autotune, "_time_candidates", fake)
    tuned = run()
    assert picked == ["tiles"]  # timed once, at the first call
    assert list(autotune.choices()["cpu.rnn_sequence"].values()) == ["openblas"]
    for a, b in zip(tuned, fixed):
        assert np.isfinite(a).all()
        assert_close(a, b, rtol=1e-4, atol=1e-5, what=f"{cell} tuned vs fixed")
    again = run()
    assert picked == ["tiles"]  # recorded: not timed again
    for a, b in zip(again, tuned):
        assert np.array_equal(a, b)  # deterministic for a given choice


def test_choice_timed_under_load_kept_in_process_only(monkeypatch):
    monkeypatch.setattr(autotune, "_loaded", lambda: True)
    clock = Clock()
    autotune.set_timer(clock)
    candidates, calls = fake_candidates(clock, {"a": 0.01, "b": 0.001})
    assert autotune.decide("op", "k", candidates, "a") == "b"
    assert not autotune.cache_path().exists() and autotune.choices() == {}
    calls.clear()
    assert autotune.decide("op", "k", candidates, "a") == "b" and calls == []


def test_budget_from_environment(monkeypatch):
    monkeypatch.setenv(autotune.ENV_BUDGET, "0.5")
    assert autotune.budget() == (0.5, autotune.DECISION_BUDGET_S)
    monkeypatch.setenv(autotune.ENV_BUDGET, "0")  # no tuning time: every choice fixed
    clock = Clock()
    autotune.set_timer(clock)
    candidates, calls = fake_candidates(clock, {"a": 0.01, "b": 0.001})
    assert autotune.decide("op", "k", candidates, "a") == "a" and calls == []
    monkeypatch.setenv(autotune.ENV_BUDGET, "lots")
    with pytest.raises(ValueError, match="KERASISH_AUTOTUNE_BUDGET: expected a number"):
        autotune.budget()
    import kerasish

    kerasish.config.set_autotune_budget(total_s=3, per_decision_s=0.5)
    assert autotune.budget() == (3.0, 0.5)
