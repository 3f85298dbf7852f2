"""Compare two sides' RESULTs; run cases on both sides from the command line.

    python tests/conformance/compare.py CASE.py [CASE.py ...]

runs each side in its own process (real Keras never shares one with kerasish) and prints one
line per case: ok, or the keys that differ and how.
"""

import json
import os
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _decode(value):
    if isinstance(value, list):
        return [_decode(v) for v in value]
    if isinstance(value, dict):
        if "__dict__" in value:
            return {k: _decode(v) for k, v in value["__dict__"].items()}
        if "__array__" in value:
            arr = np.array(value["__array__"], dtype=value["dtype"]).reshape(value["shape"])
            flat = arr.reshape(-1)
            for key, fill in (("nan", np.nan), ("posinf", np.inf), ("neginf", -np.inf)):
                if value.get(key):
                    flat[value[key]] = fill
            return arr
        return value
    return value


def differences(expected, received, rtol=1e-5, atol=1e-6, path="RESULT"):
    """The list of human-readable differences between two decoded values."""
    if isinstance(expected, dict) and isinstance(received, dict):
        out = []
        if set(expected) != set(received):
            out.append(f"{path}: keys {sorted(expected)} vs {sorted(received)}")
        for k in sorted(set(expected) & set(received)):
            out += differences(expected[k], received[k], rtol, atol, f"{path}[{k!r}]")
        return out
    if isinstance(expected, list) and isinstance(received, list):
        if len(expected) != len(received):
            return [f"{path}: length {len(expected)} vs {len(received)}"]
        out = []
        for i, (a, b) in enumerate(zip(expected, received)):
            out += differences(a, b, rtol, atol, f"{path}[{i}]")
        return out
    if isinstance(expected, (np.ndarray, int, float)) and isinstance(received, (np.ndarray, int, float)):
        a, b = np.asarray(expected), np.asarray(received)
        if a.shape != b.shape:
            return [f"{path}: shape {a.shape} vs {b.shape}"]
        if a.dtype.kind in "fc" or b.dtype.kind in "fc":
            if not np.allclose(a, b, rtol=rtol, atol=atol, equal_nan=True):
                err = np.nanmax(np.abs(a.astype(float) - b.astype(float))) if a.size else 0
                return [f"{path}: max abs difference {err:.3g} (rtol {rtol}, atol {atol})"]
            return []
        return [] if np.array_equal(a, b) else [f"{path}: {a.tolist()} vs {b.tolist()}"]
    if expected != received:
        return [f"{path}: {expected!r} vs {received!r}"]
    return []


def run_side(side, paths, out):
    env = dict(os.environ)
    if side == "keras":
        env = {k: v for k, v in env.items() if not k.startswith(("KERASISH_", "KERNELS_NUMBA_"))}
        env["KERAS_BACKEND"] = "torch"
        env["PYTHONPATH"] = os.path.join(HERE, "keras_alias")
    else:
        env["PYTHONPATH"] = ROOT
    subprocess.run([sys.executable, os.path.join(HERE, "run_side.py"), side, out, *paths],
                   env=env, check=True, cwd=ROOT)
    with open(out, encoding="utf-8") as f:
        return json.load(f)


def compare_case(keras_out, kerasish_out):
    """'ok' or a description of what differs, for one case's two recorded outcomes."""
    if "error" in keras_out:
        return f"the case fails on real Keras: {keras_out['error']}"
    if "error" in kerasish_out:
        return f"kerasish raised {kerasish_out['error']} at {kerasish_out.get('where')}"
    tol = {"rtol": 1e-5, "atol": 1e-6, **keras_out.get("tolerance", {})}
    diffs = differences(_decode(keras_out["result"]), _decode(kerasish_out["result"]), **tol)
    return "ok" if not diffs else "; ".join(diffs[:8])


def main(paths):
    paths = [os.path.abspath(p) for p in paths]
    with tempfile.TemporaryDirectory() as tmp:
        ref = run_side("keras", paths, os.path.join(tmp, "keras.json"))
        ours = run_side("kerasish", paths, os.path.join(tmp, "kerasish.json"))
    bad = 0
    for name in ref:
        verdict = compare_case(ref[name], ours[name])
        bad += verdict != "ok"
        print(f"{name}: {verdict}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
