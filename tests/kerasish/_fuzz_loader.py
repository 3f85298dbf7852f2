"""Subprocess half of test_fuzz_files.py: load every mutant listed in argv[1] (JSON;
the first argv[2] entries are the unmutated bases), report per file the outcome, the
time and the peak RSS, as JSON on stdout."""

import json
import resource
import sys
import time


def main():
    import numpy as np

    import kerasish
    from kerasish.datasets import _files
    from kerasish.utils.file_utils import get_file

    jobs = json.load(open(sys.argv[1]))
    n_base = int(sys.argv[2]) if len(sys.argv) > 2 else 4
    layers = kerasish.layers
    model = kerasish.Sequential([layers.Input((6,)), layers.Dense(5, name="d0"),
                                 layers.Dropout(0.2, name="drop"), layers.Dense(3, name="d1")],
                                name="fuzz")
    model.compile(optimizer="adam", loss="mse")
    model.optimizer.build(model.trainable_weights)

    def load(kind, path, extra):
        if kind == "h5":
            kerasish.saving.load_model(path)
        elif kind == "weights":
            model.load_weights(path)
        elif kind == "keras":
            kerasish.saving.load_model(path)
        elif kind == "extract":  # extra: [cache_dir, fname]; path is the cached archive
            get_file(extra[1], "http://127.0.0.1:9/" + extra[1], cache_dir=extra[0],
                     extract=True)
        elif kind == "idx":
            paths = list(extra)
            paths[extra.index("MUTANT")] = path
            _files.load_idx_files(paths, 10)
        else:
            _files.load_npz(path, 10)

    for kind, path, extra in jobs[:n_base]:  # the unmutated files: warm-up and baseline
        load(kind, path, extra)
    baseline = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    results = []
    for kind, path, extra in jobs[n_base:]:
        t0 = time.perf_counter()
        try:
            load(kind, path, extra)
            outcome = ["ok", ""]
        except Exception as e:  # noqa: BLE001 (classified by the test)
            outcome = [type(e).__name__, str(e),
                       isinstance(e, (ValueError, OSError))]
        results.append([path, time.perf_counter() - t0, *outcome])
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    json.dump({"baseline_mb": baseline, "peak_mb": peak, "results": results,
               "numpy": np.__version__}, sys.stdout)


if __name__ == "__main__":
    main()
