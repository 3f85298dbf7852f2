"""Our Python per CUDA training step of the reference CNN, with every kernel launch
replaced by a no-op recorder (kernels_numba.record_launches(execute=False)).

    NUMBA_ENABLE_CUDASIM=1 python -m benchmarks.host_overhead [--steps 200] [--repeats 5]

What is timed is everything kerasish does on the host for one `train_on_batch`-sized
step (the executor's train_step: input copy, the layers or the replayed launch plan,
losses, metrics, the optimizer) except the kernels themselves. Two configurations
side by side in one process, alternating: "live" (KERASISH_REPLAY off: every layer's
Python runs each step) and "replay" (engine/launch_plan.py: the layer launches are
bound once and re-issued). Without a GPU it runs on numba's CUDA simulator, whose
device arrays are Python objects: their copies and views cost more than real device
arrays do, so the figures are an upper bound for a real GPU.
"""

import argparse
import statistics
import time

import numpy as np


def _model():
    import kerasish as keras
    from kerasish import layers

    keras.utils.set_random_seed(0)
    model = keras.Sequential([
        keras.Input((28, 28, 1)), layers.Conv2D(32, 3, activation="relu"),
        layers.MaxPooling2D(2), layers.Conv2D(64, 3, activation="relu"),
        layers.MaxPooling2D(2), layers.Flatten(), layers.Dense(64, activation="relu"),
        layers.Dense(10, activation="softmax")])
    model.compile("adam", "sparse_categorical_crossentropy", metrics=["accuracy"])
    return model


def _per_step_us(ex, xs, ys, steps):
    import kernels_numba

    with kernels_numba.record_launches(execute=False) as calls:
        for _ in range(3):  # capture (two equal steps make the plan replayable)
            ex.train_step(xs, ys)
        start = len(calls)
        t0 = time.perf_counter()
        for _ in range(steps):
            ex.train_step(xs, ys)
        dt = time.perf_counter() - t0
    return dt / steps * 1e6, (len(calls) - start) / steps


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--steps", type=int, default=200)
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args(argv)

    from kerasish import config
    from kernels_numba import _cuda

    config.set_device("cuda")
    model = _model()
    rng = np.random.default_rng(0)
    x = rng.random((64, 28, 28, 1), dtype=np.float32)
    y = rng.integers(0, 10, 64)
    xs, ys = model._check_x(x, "x"), model._check_y(y, "y")
    results = {"live": [], "replay": []}
    launches = {}
    for _ in range(args.repeats):
        for name in ("live", "replay"):
            model._executors.clear()
            ex = model._executor(64, "train")
            ex._replay = name == "replay"
            us, n = _per_step_us(ex, xs, ys, args.steps)
            results[name].append(us)
            launches[name] = n
    where = "numba's CUDA simulator" if _cuda.SIMULATOR else "a CUDA device"
    print(f"reference CNN train step, batch 64, launches replaced by a no-op recorder, on "
          f"{where}; {args.repeats} alternating repeats of {args.steps} steps")
    for name, values in results.items():
        print(f"  {name:6s}: {statistics.median(values):8.1f} us per step (median; runs "
              f"{', '.join(f'{v:.0f}' for v in values)}), {launches[name]:.0f} launches "
              f"per step")
    return results


if __name__ == "__main__":
    main()
