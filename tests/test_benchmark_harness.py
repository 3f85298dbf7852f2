"""benchmarks/isolated.py, the harness the PyTorch comparisons run on: the real peer
worker (benchmarks/peer_torch.py) runs in a process that holds no module of ours and
none of our environment variables, even when the caller's environment has them; a peer
result that shows one is refused; pairs alternate their order; result lines name the
CPU and its ISA."""

import json
import sys

import numpy as np
import pytest

from benchmarks import isolated

pytest.importorskip("torch")


def test_the_real_peer_worker_holds_nothing_of_ours(tmp_path, monkeypatch):
    # the caller's environment carries ours, as a kerasish benchmark's does
    for name, value in (("KERNELS_NUMBA_BLAS", "native"), ("NUMBA_NUM_THREADS", "1"),
                        ("KERASISH_DEVICE", "cpu"), ("OMP_WAIT_POLICY", "PASSIVE"),
                        ("OPENBLAS_NUM_THREADS", "1"), ("PYTHONPATH", isolated.ROOT)):
        monkeypatch.setenv(name, value)
    rng = np.random.default_rng(0)
    isolated.write_arrays(tmp_path, x=rng.random((128, 28, 28), dtype=np.float32),
                          y=rng.integers(0, 10, 128).astype(np.int32))
    cmd = isolated.peer_command("gru", tmp_path, epochs=2, units=4, threads=1)
    assert cmd[1] == "-I"  # isolated mode: no PYTHONPATH, no user site, no script folder
    result = isolated.run(cmd, isolated.peer_env(), peer=True)
    assert result["framework"] == "torch" and len(result["epochs"]) == 2
    assert result["epoch_s"] == result["epochs"][1] > 0  # the second epoch is the timed one
    assert "torch" in result["modules"]
    for module in ("kerasish", "kernels_numba", "benchmarks", "numba", "llvmlite"):
        assert module not in result["modules"], module
    leaked = [k for k in result["env"]
              if k.startswith(("KERNELS_NUMBA_", "KERASISH_", "NUMBA_", "PYTHON")) or
              k in ("OMP_WAIT_POLICY", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")]
    assert leaked == []
    assert result["threads"] == 1


def _fake(result):
    return [sys.executable, "-c", f"print({isolated.RESULT!r} + {json.dumps(json.dumps(result))})"]


def test_a_peer_result_holding_our_module_is_refused():
    with pytest.raises(RuntimeError, match="held our modules or variables: \\['kerasish'\\]"):
        isolated.run(_fake({"epoch_s": 1.0, "modules": ["kerasish", "torch"], "env": []}),
                     isolated.peer_env(), peer=True)
    with pytest.raises(RuntimeError, match="NUMBA_NUM_THREADS"):
        isolated.run(_fake({"epoch_s": 1.0, "modules": [], "env": ["NUMBA_NUM_THREADS"]}),
                     isolated.peer_env(), peer=True)


def test_a_failing_worker_says_so():
    with pytest.raises(RuntimeError, match="exited with 3"):
        isolated.run([sys.executable, "-c", "import sys; sys.exit(3)"], isolated.peer_env())


def test_pairs_alternate_and_ratios_are_medians():
    order = []

    def spec(name, seconds):
        def make(i):
            return _fake({"epoch_s": seconds[i]}), isolated.peer_env(), False
        return make

    res = isolated.alternate({"a": spec("a", [1.0, 2.0, 4.0]), "b": spec("b", [2.0, 2.0, 2.0])},
                             3, on_result=lambda i, name, r: order.append(name))
    assert order == ["a", "b", "b", "a", "a", "b"]
    assert res["median"] == {"a": 2.0, "b": 2.0} and res["ratio"] == 1.0
    assert res["pair_ratios"] == [0.5, 1.0, 2.0] and res["pair_ratio"] == 1.0
    line = isolated.result_line("test", res)
    assert "3 fresh-process pairs" in line and res["machine"] in line
    with pytest.raises(ValueError, match="expected at least 3 pairs; received 2"):
        isolated.alternate({"a": spec("a", [1, 1]), "b": spec("b", [1, 1])}, 2)


def test_machine_names_the_cpu_and_its_isa(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text("processor\t: 0\nmodel name\t: Some Xeon\n"
                    "flags\t\t: fpu sse2 avx2 avx512f avx512_vnni amx_tile amx_bf16\n")
    assert isolated.machine(str(info)).startswith("Some Xeon, ")
    assert isolated.machine(str(info)).endswith("AVX2 + AVX-512 + VNNI + AMX")
    assert isolated.isa({"avx2", "avx_vnni"}) == ["AVX2", "VNNI"]
    assert isolated.isa({"sse2"}) == ["no AVX2"]
