"""Run conformance cases on one side and write their RESULTs as JSON.

    python tests/conformance/run_side.py keras|kerasish OUT.json CASE.py [CASE.py ...]

Each case's text is executed in a fresh namespace (one process for all, so Keras is imported
once), with `SIDE` and `WORKDIR` defined; the seeds are reset before each case. A case that
raises is recorded as {"error": "<Type>: <message>"} and the rest go on.
"""

import json
import os
import sys
import tempfile
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))


def _encode(value):
    import numpy as np

    if isinstance(value, dict):
        return {"__dict__": {str(k): _encode(v) for k, v in value.items()}}
    if isinstance(value, (list, tuple)):
        return [_encode(v) for v in value]
    if isinstance(value, (str, bool)) or value is None:
        return value
    if hasattr(value, "detach"):  # a torch tensor on the Keras side
        value = value.detach().cpu().numpy()
    if hasattr(value, "numpy") and not isinstance(value, np.ndarray):
        value = value.numpy()
    arr = np.asarray(value)
    if arr.dtype.kind in "fc":
        flat = arr.astype(float).ravel()
        return {"__array__": np.where(np.isfinite(arr), arr, 0).astype(float).tolist(),
                "shape": list(arr.shape), "dtype": str(arr.dtype),
                "nan": np.isnan(flat).nonzero()[0].tolist(),
                "posinf": np.isposinf(flat).nonzero()[0].tolist(),
                "neginf": np.isneginf(flat).nonzero()[0].tolist()}
    if arr.dtype.kind in "iub":
        return {"__array__": arr.tolist(), "shape": list(arr.shape), "dtype": str(arr.dtype)}
    return {"__repr__": repr(value)}


def run_cases(side, paths):
    if side == "keras":
        sys.path.insert(0, os.path.join(HERE, "keras_alias"))
        os.environ.setdefault("KERAS_BACKEND", "torch")
    results = {}
    for path in paths:
        name = os.path.splitext(os.path.basename(path))[0]
        with open(path, encoding="utf-8") as f:
            source = f.read()
        import numpy as np

        import kerasish as keras

        keras.utils.set_random_seed(0)
        np.random.seed(0)
        workdir = tempfile.mkdtemp(prefix=f"conformance-{side}-{name}-")
        namespace = {"__name__": "__conformance__", "__file__": path, "SIDE": side,
                     "WORKDIR": workdir}
        try:
            exec(compile(source, path, "exec"), namespace)
            out = {"result": _encode(namespace.get("RESULT", {})),
                   "tolerance": namespace.get("TOLERANCE", {})}
        except BaseException as exc:  # noqa: BLE001 - a failing case is a result
            tb = traceback.extract_tb(exc.__traceback__)
            where = next((f"{fr.filename}:{fr.lineno}" for fr in reversed(tb)
                          if fr.filename == path), "")
            out = {"error": f"{type(exc).__name__}: {exc}", "where": where}
        results[name] = out
        try:
            keras.backend.clear_session()
        except Exception:  # noqa: BLE001
            pass
    return results


def main(argv):
    side, out, *paths = argv
    if side not in ("keras", "kerasish"):
        raise SystemExit(f"run_side: expected side 'keras' or 'kerasish'; received {side!r}")
    results = run_cases(side, paths)
    tmp = out + ".tmp"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump(results, f)
    os.replace(tmp, out)


if __name__ == "__main__":
    main(sys.argv[1:])
