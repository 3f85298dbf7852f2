"""The reference CNN's CPU step with Conv2D(relu) -> MaxPooling2D's fused backward against
the separate backward ops.

    python -m benchmarks.ab_conv_pool [--rounds 8] [--steps 40] [--threads 2]

One process, two copies of the model (the same seed): "separate" plans its training step
with the fusion off (kerasish/engine/conv_pool.py's ENABLED, read when a plan is made),
"fused" with it on. Each round times a fit over `steps` copies of one batch (batch 64)
once per copy, alternating, each its best of 2 passes, after a warm-up that captures
the launch plans. The machine's speed drifts from minute to minute, so compare within a
round: each round's line, then the medians.
"""


def main(argv=None):
    # (profile_step imports no numba)
    from benchmarks.profile_step import _fit, ab_arguments, print_rounds

    args = ab_arguments(__doc__, argv)  # NUMBA_NUM_THREADS first
    import numpy as np

    from benchmarks.train import BATCH, kerasish_model
    from kerasish.engine import conv_pool

    rng = np.random.default_rng(0)
    x = rng.random((BATCH, 28, 28, 1), dtype=np.float32)
    y = rng.integers(0, 10, BATCH)
    xs, ys = np.concatenate([x] * args.steps), np.concatenate([y] * args.steps)
    models, enabled = {}, conv_pool.ENABLED
    try:
        for name, flag in (("separate", False), ("fused", True)):
            conv_pool.ENABLED = flag
            models[name] = kerasish_model("cnn", 0, "cpu")
            models[name].fit(xs[: 3 * BATCH], ys[: 3 * BATCH], batch_size=BATCH, epochs=1,
                             shuffle=False, verbose=0)  # plan, compile, capture
    finally:
        conv_pool.ENABLED = enabled
    times = {name: [] for name in models}
    for r in range(args.rounds):
        for name, model in models.items():
            times[name].append(1e3 * min(_fit(model, xs, ys, args.steps) for _ in range(2)))
        print(f"  round {r}: " + ", ".join(f"{n} {t[-1]:.2f}" for n, t in times.items())
              + " ms/step", flush=True)
    print_rounds(times, BATCH, args.threads)


if __name__ == "__main__":
    main()
