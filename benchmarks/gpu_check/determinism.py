"""gpu_check step `determinism`: the reference CNN fit twice from one seed on the default
device (CUDA on the lent GPU) must give the same weights bit for bit (no float atomics
anywhere: tests/kerasish/test_determinism.py is the same check in the test suite).

    python -m benchmarks.gpu_check.determinism [--images 200] [--size 28] [--tiny] [--json F]
"""

import argparse
import sys
import time

import numpy as np

from benchmarks.gpu_check._common import TINY, images, reference_cnn, result


def fit_weights(x, y, size, widths, batch):
    model = reference_cnn(size, widths=widths)
    model.fit(x, y, batch_size=batch, epochs=1, shuffle=True, verbose=0)
    return model.get_weights()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--images", type=int, default=200, help="3 full batches + a partial one")
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--size", type=int, default=28)
    p.add_argument("--tiny", action="store_true", help=f"widths {TINY} (the dry run)")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)
    from kerasish import config

    x, y, source = images(args.images, args.size)
    widths = TINY if args.tiny else (32, 64, 64)
    t0 = time.perf_counter()
    first = fit_weights(x, y, args.size, widths, args.batch)
    second = fit_weights(x, y, args.size, widths, args.batch)
    differ = [i for i, (a, b) in enumerate(zip(first, second)) if not np.array_equal(a, b)]
    device = config.get_device()
    result(f"two fits on {device} ({args.images} images, {source.split(' (')[0]}) "
           + ("bit-equal" if not differ else f"DIFFER in weights {differ}")
           + f" ({time.perf_counter() - t0:.1f} s)", args.json, "determinism",
           {"device": device, "bit_equal": not differ, "differing_weights": differ})
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
