"""A 2-layer Transformer encoder training step on CPU (seq 128, d_model 128, 4 heads, ffn
4*d = 512, batch 32, post-norm, ReLU, no dropout, Adam, MSE on the encoder output):
kerasish (MultiHeadAttention on the fused attention kernel) vs PyTorch
nn.TransformerEncoderLayer, side by side in one run; then the attention op's memory at
seq 128, 512, 2048.

On the isolated harness (benchmarks/isolated.py): the batch is written as .npy files;
each round is a fresh process (kerasish: `--worker`; PyTorch: benchmarks/peer_torch.py
under `python -I`, NumPy and torch only, our variables removed) that runs two "epochs"
of --steps training steps and times the second; rounds alternate kerasish / PyTorch,
then PyTorch / kerasish, for --rounds pairs (at least 3). The medians of the per-step
times, their ratio (kerasish / PyTorch), peak RSS and the CPU model and ISA are printed.

Memory: the bytes of every buffer attention_forward/backward touch (q, k, v, out, lse,
dq, dk, dv, dout and the workspace, whose size does not depend on T) against the
(B*H, T, T) float32 score matrix an unfused attention stores (and the same again for
its probabilities in the backward), and the measured peak-RSS growth of one
forward+backward at each length (batch 2, run in increasing T in a fresh process).

    python -m benchmarks.bench_transformer [--rounds R] [--steps S] [--batch B] [--seq T]
        [--no-memory]
"""

import argparse
import multiprocessing as mp
import os
import resource
import sys
import tempfile
import time

import numpy as np

from benchmarks import isolated

BATCH, SEQ, D, HEADS, FFN, LAYERS = 32, 128, 128, 4, 512, 2


def data(seed=0, batch=BATCH, seq=SEQ):
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(batch, seq, D)).astype(np.float32)
    return x, rng.normal(size=(batch, seq, D)).astype(np.float32)


def kerasish_step(x, y):
    import kerasish
    from kerasish.layers.attention import MultiHeadAttention

    L = kerasish.layers
    kerasish.utils.set_random_seed(0)
    inp = kerasish.Input(x.shape[1:])
    h = inp
    for _ in range(LAYERS):  # as nn.TransformerEncoderLayer(norm_first=False)
        a = MultiHeadAttention(num_heads=HEADS, key_dim=D // HEADS)(h, h)
        h = L.LayerNormalization(epsilon=1e-5)(L.Add()([h, a]))
        f = L.Dense(D)(L.Dense(FFN, activation="relu")(h))
        h = L.LayerNormalization(epsilon=1e-5)(L.Add()([h, f]))
    model = kerasish.Model(inp, h)
    model.compile(kerasish.optimizers.Adam(1e-4), "mse")
    return lambda: model.train_on_batch(x, y)


def worker(a):
    """A fresh kerasish process: two rounds of --steps steps, the second timed."""
    x = np.load(os.path.join(a.data, "x.npy"))
    y = np.load(os.path.join(a.data, "y.npy"))
    step = kerasish_step(x, y)
    times = []
    for _ in range(2):  # the first compiles and plans
        t0 = time.perf_counter()
        for _ in range(a.steps):
            step()
        times.append((time.perf_counter() - t0) / a.steps)
    isolated.reply(framework="kerasish", epochs=times, epoch_s=times[-1],
                   peak_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)


def compare(rounds, steps, batch=BATCH, seq=SEQ):
    """benchmarks.isolated.alternate's dict: seconds per training step, fresh processes."""
    x, y = data(0, batch, seq)
    with tempfile.TemporaryDirectory(prefix="bench-transformer-") as tmp:
        isolated.write_arrays(tmp, x=x, y=y)
        ours = [sys.executable, "-m", "benchmarks.bench_transformer", "--worker", "--data",
                tmp, "--steps", str(steps)]
        peer = isolated.peer_command("transformer", tmp, steps=steps)
        return isolated.alternate({"kerasish": (ours, isolated.our_env(), False),
                                   "PyTorch": (peer, isolated.peer_env(), True)}, rounds)


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


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--rounds", type=int, default=5, help="fresh-process pairs, at least 3")
    p.add_argument("--steps", type=int, default=3, help="training steps per round")
    p.add_argument("--batch", type=int, default=BATCH)
    p.add_argument("--seq", type=int, default=SEQ)
    p.add_argument("--no-memory", action="store_true", help="skip the attention memory table")
    p.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--data", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    if a.worker:
        return worker(a)
    r = compare(a.rounds, a.steps, a.batch, a.seq)
    peaks = {name: max(res["peak_mb"] for res in r["results"][name]) for name in r["names"]}
    label = (f"Transformer encoder x{LAYERS} (seq {a.seq}, d {D}, {HEADS} heads, ffn {FFN}, "
             f"batch {a.batch}) train step, {a.steps} steps per round")
    print(isolated.result_line(label, r, unit="ms", scale=1e3, timed="2nd round timed") +
          "; peak RSS " + ", ".join(
        f"{name} {mb:.0f} MB" for name, mb in peaks.items()), flush=True)
    print(isolated.times_line(r, unit="ms", scale=1e3), flush=True)
    if a.no_memory:
        return 0
    print("attention op memory (fwd+bwd, batch 2 x 4 heads x 32; plan at batch 32):")
    for t, op_bytes, ws, grown, sec, plan, scores in memory():
        print(f"  T={t:5d}: op buffers {op_bytes / 2**20:7.2f} MiB (workspace {ws / 2**10:.0f} "
              f"KiB), peak RSS growth {grown:6.1f} MiB, {sec:.2f} s; batch-32 plan "
              f"{plan / 2**20:7.1f} MiB vs an unfused score matrix {scores / 2**20:8.1f} MiB",
              flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
