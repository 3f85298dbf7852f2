"""A 2-layer Transformer encoder training step on CPU (seq 128, d_model 128, 4 heads, ffn
4*d = 512, batch 32, post-norm, ReLU, no dropout, Adam, MSE on the encoder output):
kerasish (MultiHeadAttention on the fused attention kernel) vs PyTorch
nn.TransformerEncoderLayer, side by side in one run; then the attention op's memory at
seq 128, 512, 2048.

Each framework runs in its own worker process (own threads, own peak RSS); rounds
alternate kerasish, PyTorch, ... so a change in machine load hits both alike. A round is
STEPS training steps; the medians and their ratio (kerasish / PyTorch) are printed.

Memory: the bytes of every buffer attention_forward/backward touch (q, k, v, out, lse,
dq, dk, dv, dout and the workspace, whose size does not depend on T) against the
(B*H, T, T) float32 score matrix an unfused attention stores (and the same again for
its probabilities in the backward), and the measured peak-RSS growth of one
forward+backward at each length (batch 2, run in increasing T in a fresh process).

    python -m benchmarks.bench_transformer [--rounds R] [--steps S]
"""

import argparse
import multiprocessing as mp
import os
import resource
import statistics
import time

import numpy as np

BATCH, SEQ, D, HEADS, FFN, LAYERS = 32, 128, 128, 4, 512, 2


def data(seed=0):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(BATCH, SEQ, D)).astype(np.float32)
    return x, rng.normal(size=(BATCH, SEQ, D)).astype(np.float32)


def kerasish_step(x, y):
    import kerasish
    from kerasish.layers.attention import MultiHeadAttention

    L = kerasish.layers
    kerasish.utils.set_random_seed(0)
    inp = kerasish.Input((SEQ, D))
    h = inp
    for _ in range(LAYERS):  # as nn.TransformerEncoderLayer(norm_first=False)
        a = MultiHeadAttention(num_heads=HEADS, key_dim=D // HEADS)(h, h)
        h = L.LayerNormalization(epsilon=1e-5)(L.Add()([h, a]))
        f = L.Dense(D)(L.Dense(FFN, activation="relu")(h))
        h = L.LayerNormalization(epsilon=1e-5)(L.Add()([h, f]))
    model = kerasish.Model(inp, h)
    model.compile(kerasish.optimizers.Adam(1e-4), "mse")
    return lambda: model.train_on_batch(x, y)


def torch_step(x, y):
    import torch

    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(D, HEADS, dim_feedforward=FFN, dropout=0.0,
                                             batch_first=True)
    net = torch.nn.TransformerEncoder(layer, LAYERS, enable_nested_tensor=False)
    opt = torch.optim.Adam(net.parameters(), 1e-4, eps=1e-7)
    xt, yt = torch.from_numpy(x), torch.from_numpy(y)

    def step():
        net.train()
        opt.zero_grad()
        loss = torch.nn.functional.mse_loss(net(xt), yt)
        loss.backward()
        opt.step()
    return step


def _worker(framework, steps, conn):
    if framework == "torch":
        os.environ["KERNELS_NUMBA_BLAS"] = "native"
        import numba
        import torch

        import kernels_numba  # noqa: F401 - same thread count as kerasish's pool

        torch.set_num_threads(numba.get_num_threads())
    x, y = data()
    step = (kerasish_step if framework == "kerasish" else torch_step)(x, y)
    for _ in range(2):  # compile / warm up
        step()
    conn.send("ready")
    while conn.recv() == "round":
        t0 = time.perf_counter()
        for _ in range(steps):
            step()
        conn.send(((time.perf_counter() - t0) / steps,
                   resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024))


def compare(rounds, steps):
    ctx = mp.get_context("spawn")
    workers = {}
    for name in ("kerasish", "torch"):
        parent, child = ctx.Pipe()
        proc = ctx.Process(target=_worker, args=(name, steps, child), daemon=True)
        proc.start()
        workers[name] = (proc, parent)
    for name, (_, conn) in workers.items():
        if conn.recv() != "ready":
            raise RuntimeError(f"the {name} worker did not start")
    times, peaks = {name: [] for name in workers}, {}
    for _ in range(rounds):
        for name, (_, conn) in workers.items():
            conn.send("round")
            seconds, peaks[name] = conn.recv()
            times[name].append(seconds)
    for proc, conn in workers.values():
        conn.send("stop")
        proc.join()
    med = {name: statistics.median(v) for name, v in times.items()}
    pairs = [a / b for a, b in zip(times["kerasish"], times["torch"])]
    return times, med, peaks, med["kerasish"] / med["torch"], statistics.median(pairs)


def _rss_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _memory_worker(conn):
    from kernels_numba.ops import attention as A

    rows = []
    for t in (16, 128, 512, 2048):  # 16: compiles the kernels (not reported)
        b, h, dh = 2, HEADS, D // HEADS
        shape = (b, t, h, dh)
        rng = np.random.default_rng(t)
        q, k, v, g = (rng.normal(size=shape).astype(np.float32) for _ in range(4))
        out, dq, dk, dv = (np.empty(shape, np.float32) for _ in range(4))
        lse = np.empty((b, h, t), np.float32)
        ws = np.empty(A.attention_workspace_shape(shape, shape), np.float32)
        before = _rss_mb()
        t0 = time.perf_counter()
        A.attention_forward(out, lse, q, k, v, None, ws)
        A.attention_backward(dq, dk, dv, g, q, k, v, out, lse, None, ws)
        seconds = time.perf_counter() - t0
        grown = _rss_mb() - before
        op_bytes = sum(a.nbytes for a in (q, k, v, out, lse, dq, dk, dv, g, ws))
        # the plan's buffers at the benchmark's batch, per attention call
        big = (BATCH, t, h, dh)
        plan = 9 * 4 * int(np.prod(big)) + 4 * BATCH * h * t + \
            4 * int(np.prod(A.attention_workspace_shape(big, big)))
        if t == 16:
            continue
        rows.append((t, op_bytes, ws.nbytes, grown, seconds, plan, 4 * BATCH * h * t * t))
    conn.send(rows)


def memory():
    ctx = mp.get_context("spawn")
    parent, child = ctx.Pipe()
    proc = ctx.Process(target=_memory_worker, args=(child,), daemon=True)
    proc.start()
    rows = parent.recv()
    proc.join()
    return rows


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--steps", type=int, default=3, help="training steps per round")
    a = p.parse_args()
    times, med, peaks, ratio, pair = compare(a.rounds, a.steps)
    print(f"Transformer encoder x{LAYERS} (seq {SEQ}, d {D}, {HEADS} heads, ffn {FFN}, batch "
          f"{BATCH}) train step, {a.rounds} alternating rounds of {a.steps}: kerasish "
          f"{med['kerasish'] * 1e3:.0f} ms, PyTorch {med['torch'] * 1e3:.0f} ms (medians), "
          f"ratio {ratio:.2f} (median per-round {pair:.2f}); peak RSS kerasish "
          f"{peaks['kerasish']:.0f} MB, PyTorch {peaks['torch']:.0f} MB", flush=True)
    print("  rounds (ms/step): kerasish " + " ".join(f"{v * 1e3:.0f}" for v in
                                                     times["kerasish"]) +
          " | PyTorch " + " ".join(f"{v * 1e3:.0f}" for v in times["torch"]), flush=True)
    print("attention op memory (fwd+bwd, batch 2 x 4 heads x 32; plan at batch 32):")
    for t, op_bytes, ws, grown, sec, plan, scores in memory():
        print(f"  T={t:5d}: op buffers {op_bytes / 2**20:7.2f} MiB (workspace {ws / 2**10:.0f} "
              f"KiB), peak RSS growth {grown:6.1f} MiB, {sec:.2f} s; batch-32 plan "
              f"{plan / 2**20:7.1f} MiB vs an unfused score matrix {scores / 2**20:8.1f} MiB",
              flush=True)


if __name__ == "__main__":
    main()
