"""The reference CNN's CPU step with conv2d's grouped passes against the separate ones.

    python -m benchmarks.ab_conv_grouped [--rounds 8] [--steps 40] [--threads 2]

One process, one model: each round times a fit over `steps` copies of one batch (batch 64)
once per variant, alternating, each its best of 2 passes, after a warm-up that captures
its launch plan. The variants:
- "separate": im2col, a split GEMM and the epilogue; GEMM and col2im.
- "grouped forward": the grouped forward only.
- "grouped": the grouped forward and backward-data, as kernels_numba/cpu/conv2d.py runs
  them.
The machine's speed drifts from minute to minute, so compare the variants within a round:
each round's line, then the medians.
"""


def main(argv=None):
    # (profile_step imports no numba)
    from benchmarks.profile_step import _drop_launch_plans, _fit, ab_arguments, print_rounds

    args = ab_arguments(__doc__, argv)  # NUMBA_NUM_THREADS first
    import numpy as np

    from benchmarks.train import BATCH, kerasish_model
    from kernels_numba.cpu import conv2d

    model = kerasish_model("cnn", 0, "cpu")
    rng = np.random.default_rng(0)
    x = rng.random((BATCH, 28, 28, 1), dtype=np.float32)
    y = rng.integers(0, 10, BATCH)
    xs, ys = np.concatenate([x] * args.steps), np.concatenate([y] * args.steps)
    grouped = conv2d._grouped_calls

    def forward_only(mode, *rest):
        return grouped(mode, *rest) if mode == conv2d.FORWARD else None

    variants = {"separate": lambda *a: None, "grouped forward": forward_only,
                "grouped": grouped}
    times = {name: [] for name in variants}
    try:
        for r in range(args.rounds):
            for name, make in variants.items():
                conv2d._grouped_calls = make
                _drop_launch_plans(model)  # the next steps capture this variant's plan
                model.fit(xs[: 3 * BATCH], ys[: 3 * BATCH], batch_size=BATCH, epochs=1,
                          shuffle=False, verbose=0)
                times[name].append(1e3 * min(_fit(model, xs, ys, args.steps)
                                             for _ in range(2)))
            print(f"  round {r}: " + ", ".join(f"{n} {t[-1]:.2f}" for n, t in times.items())
                  + " ms/step", flush=True)
    finally:
        conv2d._grouped_calls = grouped
    print_rounds(times, BATCH, args.threads)


if __name__ == "__main__":
    main()
