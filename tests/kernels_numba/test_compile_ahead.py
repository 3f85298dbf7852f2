"""The compile-ahead helper (kernels_numba/cpu/compile_ahead.py): a fresh machine's parts
compiled in a second process, each part once, with the same results; a helper that dies
or never finishes leaves this process to compile the part itself."""

import os
import re
import subprocess
import sys
import textwrap

import numba
import numpy as np
import pytest

from kernels_numba.cpu import _parallel, compile_ahead

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _claim_name(name):
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


# -- end to end: a fresh cache, the helper started at first use ---------------------------

_FRESH_CHILD = textwrap.dedent("""
    import numpy as np
    from numba.core import event
    compiled = []
    class Log(event.Listener):
        def on_start(self, ev):
            fn = ev.data["dispatcher"].py_func
            compiled.append(f"{fn.__module__}.{fn.__qualname__}")
        def on_end(self, ev):
            pass
    event.register("numba:compile", Log())
    from kernels_numba.cpu import compile_ahead, loss, optim
    assert compile_ahead._state["proc"] is None  # never at import
    import kernels_numba
    kernels_numba.first_use.prepare()  # the first CPU op's setup: starts it on a fresh cache
    proc = compile_ahead._state["proc"]
    print("HELPER_STARTED", proc is not None)
    if proc is not None:
        proc.wait(600)  # the helper's whole list, before this process needs any of it
    rng = np.random.default_rng(0)
    z = rng.standard_normal((37, 10)).astype(np.float32)
    probs, dz, acc = np.empty_like(z), np.empty_like(z), np.zeros(2, np.float32)
    loss.softmax_sparse_ce_train(probs, dz, acc[:1], acc[1:], z,
                                 np.arange(37, dtype=np.int32) % 10, scale=1 / 37)
    w = rng.standard_normal(1001).astype(np.float32)
    g = rng.standard_normal(1001).astype(np.float32)
    m, v = np.zeros_like(w), np.zeros_like(w)
    optim.adam_update(w, g, m, v, scalars=np.array([1e-3, 0.0], np.float32),
                      one_minus_beta_1=0.1, one_minus_beta_2=0.001, epsilon=1e-7,
                      zero_grad=False, grad=(optim.PLAIN, 0.0, None, None))
    print("BITS", b"".join(a.tobytes() for a in (probs, dz, acc, w, m, v)).hex())
    print("MAIN", sorted(compiled))
    print("HELPER", compile_ahead.helper_compiled())
    print("DIR", compile_ahead._state["dir"])
""")


def _run(code, env):
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env=env, cwd=ROOT, timeout=900)
    assert run.returncode == 0, run.stderr[-3000:]
    return dict(line.split(" ", 1) for line in run.stdout.splitlines() if " " in line)


@pytest.mark.skipif(not compile_ahead.enabled(), reason="compile-ahead is off here "
                    "(one core, MPI, or KERNELS_NUMBA_COMPILE_AHEAD=0)")
def test_fresh_cache_helper_compiles_each_part_once_with_the_same_bits(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "KERNELS_NUMBA_COMPILE_AHEAD"}
    ahead = _run(_FRESH_CHILD, {**env, "NUMBA_CACHE_DIR": str(tmp_path / "a")})
    alone = _run(_FRESH_CHILD, {**env, "NUMBA_CACHE_DIR": str(tmp_path / "b"),
                                "KERNELS_NUMBA_COMPILE_AHEAD": "0"})
    assert ahead["HELPER_STARTED"] == "True" and alone["HELPER_STARTED"] == "False"
    helper = eval(ahead["HELPER"])  # noqa: S307 - our own child's printed list
    loss_part = "kernels_numba.cpu.loss_train._rows_softmax_sparse_ce_train"
    adam_part = "kernels_numba.cpu.optim._adam_part"
    assert {loss_part, adam_part} <= set(helper), helper
    main = eval(ahead["MAIN"])  # noqa: S307
    assert not {_claim_name(n) for n in main} & set(helper), (main, helper)  # never twice
    assert loss_part in eval(alone["MAIN"]) and loss_part not in main  # noqa: S307
    assert ahead["BITS"] == alone["BITS"]  # the same compiler's code: the same results
    assert not os.path.exists(ahead["DIR"])  # the claims directory went with the process


# -- the claim protocol, in this process -------------------------------------------------

def _ahead_test_part(args, p, parts):
    a = numba.carray(args, 1)
    a[0] = a[0] * 3 + 1


_HELPER_STANDIN = textwrap.dedent("""
    import sys
    from tests.kernels_numba import test_compile_ahead as t
    t.PART.address  # compiled into NUMBA_CACHE_DIR, as the helper would
    open(sys.argv[1], "w").close()
""")

PART = _parallel.lazy_part(_ahead_test_part)


@pytest.fixture
def claims(tmp_path, monkeypatch):
    """A claims directory and a fresh disk cache for PART (a new lazy_part each time)."""
    monkeypatch.setattr(numba.config, "CACHE_DIR", str(tmp_path / "cache"))
    part = _parallel.lazy_part(_ahead_test_part)
    monkeypatch.setattr(sys.modules[__name__], "PART", part)
    state = {"dir": str(tmp_path / "claims"), "proc": None, "started": True, "mine": set()}
    os.mkdir(state["dir"])
    monkeypatch.setattr(compile_ahead, "_state", state)
    monkeypatch.setattr(compile_ahead, "loaded_from_helper", [])
    return part, state


def _compiles(run):
    from numba.core import event

    names = []

    class Log(event.Listener):
        def on_start(self, ev):
            fn = ev.data["dispatcher"].py_func
            if fn.__module__ == __name__:  # not numba's own overloads (carray's views)
                names.append(fn.__qualname__)

        def on_end(self, ev):
            pass

    with event.install_listener("numba:compile", Log()):
        run()
    return names


def _use(part):
    a = np.array([5], np.int64)
    part.serial(a)
    assert a[0] == 16


def test_waits_for_the_helpers_claim_then_loads_it(claims):
    part, state = claims
    open(os.path.join(state["dir"], _claim_name(part.name) + ".claim"), "w").close()
    done = os.path.join(state["dir"], _claim_name(part.name) + ".done")
    env = {**os.environ, "NUMBA_CACHE_DIR": numba.config.CACHE_DIR,
           "KERNELS_NUMBA_COMPILE_AHEAD": "0"}
    state["proc"] = subprocess.Popen([sys.executable, "-c", _HELPER_STANDIN, done], env=env,
                                     cwd=ROOT)
    try:
        assert _compiles(lambda: _use(part)) == []  # loaded, not compiled here
    finally:
        assert state["proc"].wait(600) == 0
    assert compile_ahead.loaded_from_helper == [part.name]


def test_a_dead_helpers_claim_is_compiled_here(claims):
    part, state = claims
    open(os.path.join(state["dir"], _claim_name(part.name) + ".claim"), "w").close()
    state["proc"] = subprocess.Popen([sys.executable, "-c", "pass"])
    state["proc"].wait(60)  # it claimed the part and exited without finishing it
    assert _compiles(lambda: _use(part)) == ["_ahead_test_part"]
    assert compile_ahead.loaded_from_helper == []


def test_unclaimed_part_is_claimed_and_compiled_here(claims):
    part, state = claims
    assert _compiles(lambda: _use(part)) == ["_ahead_test_part"]
    assert os.path.exists(os.path.join(state["dir"], _claim_name(part.name) + ".claim"))
    assert compile_ahead.claim(part.name)  # ours: a second ask is still ours


@pytest.mark.parametrize("env", [{"KERNELS_NUMBA_COMPILE_AHEAD": "0"},
                                 {"OMPI_COMM_WORLD_SIZE": "2"}, {"PMI_SIZE": "4"}])
def test_off_by_request_and_under_mpi(monkeypatch, env):
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    assert not compile_ahead.enabled()
