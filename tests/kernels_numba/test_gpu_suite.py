"""GPU suite (real NVIDIA GPU only, `pytest -m gpu`): GEMM against cuBLAS and the seed
CNN's conv layers at batch 64, forward + backward, timed on the device.

The op tests themselves run on the GPU through the `cudasim`-marked cuda cases of the
`device` fixture: on a machine with a GPU, run `pytest -m "cudasim or gpu"` without
NUMBA_ENABLE_CUDASIM and they use the hardware.
"""

import os
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import kernels_numba as kn
from kernels_numba import ops

pytestmark = pytest.mark.gpu

if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1" or not kn.cuda_available():
    pytest.skip("needs a real CUDA GPU (not the simulator)", allow_module_level=True)

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
from benchmarks import bench_gemm  # noqa: E402


def test_gemm_against_cublas(capsys):
    bench_gemm.bench_cuda(repeat=10, sizes=[512, 2048, 4096])
    out = capsys.readouterr().out
    with capsys.disabled():
        print("\n" + out)
    assert "GFLOP/s" in out


@pytest.mark.parametrize("x_shape,w_shape", [((64, 28, 28, 1), (3, 3, 1, 32)),
                                             ((64, 13, 13, 32), (3, 3, 32, 64))])
def test_seed_conv_layers_forward_backward(capsys, x_shape, w_shape):
    rng = np.random.default_rng(0)
    x = kn.to_device(rng.standard_normal(x_shape).astype(np.float32), "cuda")
    w = kn.to_device(rng.standard_normal(w_shape).astype(np.float32) * 0.1, "cuda")
    b = kn.zeros((w_shape[-1],), device="cuda")
    kw = {"strides": (1, 1), "padding": "valid"}
    y_shape = ops.conv2d_output_shape(x_shape, w_shape, **kw)
    ws = kn.empty(ops.conv2d_workspace_shape(x_shape, w_shape, **kw), device="cuda")
    y, dy = kn.empty(y_shape, device="cuda"), kn.to_device(
        rng.standard_normal(y_shape).astype(np.float32), "cuda")
    dx, dw, db = kn.empty(x_shape, device="cuda"), kn.zeros(w_shape, device="cuda"), \
        kn.zeros((w_shape[-1],), device="cuda")

    def step():
        ops.conv2d_forward(y, x, w, b, ws, activation="relu", **kw)
        ops.conv2d_backward_filter(dw, db, dy, x, ws, **kw)
        ops.conv2d_backward_data(dx, dy, w, ws, **kw)

    step()
    kn.synchronize()
    t0 = time.perf_counter()
    for _ in range(20):
        step()
    kn.synchronize()
    ms = (time.perf_counter() - t0) / 20 * 1e3
    with capsys.disabled():
        print(f"\nconv {x_shape} * {w_shape}: forward+backward {ms:.3f} ms per step")
    assert np.isfinite(kn.to_host(dw)).all()


def test_gradient_and_loss_reductions_are_bitwise_repeatable():
    """Split-K weight gradients, bias gradients and loss/metric sums at the reference
    CNN's sizes give the same bits on every run (no float atomics, fixed-order partials),
    and match the CPU twin closely. On the simulator blocks run in order, so only real
    hardware can show a scheduling-dependent sum."""
    from kernels_numba import record_launches

    rng = np.random.default_rng(5)
    x_shape, w_shape = (64, 13, 13, 32), (3, 3, 32, 64)
    x_h = rng.standard_normal(x_shape).astype(np.float32)
    dy_h = rng.standard_normal((64, 11, 11, 64)).astype(np.float32)
    loss_h = rng.random(64 * 11 * 11).astype(np.float32)
    ws_shape = ops.conv2d_workspace_shape(x_shape, w_shape)

    def run(dev):
        x, dy, loss = (kn.to_device(a, dev) for a in (x_h, dy_h, loss_h))
        ws = kn.zeros(ws_shape, device=dev)
        dw, db, acc = kn.zeros(w_shape, device=dev), kn.zeros((64,), device=dev), \
            kn.zeros((1,), device=dev)
        ops.conv2d_backward_filter(dw, db, dy, x, ws)
        ops.sum_into(acc, loss)
        return kn.to_host(dw), kn.to_host(db), kn.to_host(acc)

    with record_launches() as calls:
        first = run("cuda")
    names = [c.name for c in calls]
    # split-K partials and the bias row reduce inside the one weight-gradient GEMM launch
    assert [n for n in names if n.startswith("_gemm_tn")] and \
        "_split_k_reduce_kernel" not in names and "_add_column_partials_kernel" not in names, names
    for _ in range(5):
        for a, b in zip(first, run("cuda")):
            np.testing.assert_array_equal(a, b)
    for a, b in zip(first, run("cpu")):
        np.testing.assert_allclose(a, b, rtol=1e-3, atol=1e-2)
