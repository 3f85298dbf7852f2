"""Compare two sides' RESULTs; run cases on both sides from the command line.

    python tests/conformance/compare.py [--cached] CASE.py [CASE.py ...]

runs each side in its own process (real Keras never shares one with kerasish) and prints one
line per test id (a crossing case has three): ok, or the keys that differ and how. Real Keras
runs afresh; with --cached its result comes from keras_results.json where current. The cache
file is never written from here (pytest writes it).
"""

import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))


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


def compare_case(keras_out, kerasish_out):
    """'ok' or a description of what differs, for one case's two recorded outcomes."""
    if "error" in keras_out:
        return f"the case fails on real Keras: {keras_out['error']}"
    if "error" in kerasish_out:
        return f"kerasish raised {kerasish_out['error']} at {kerasish_out.get('where')}"
    tol = {"rtol": 1e-5, "atol": 1e-6, **keras_out.get("tolerance", {})}
    diffs = differences(_decode(keras_out["result"]), _decode(kerasish_out["result"]), **tol)
    return "ok" if not diffs else "; ".join(diffs[:8])


def main(argv):
    """Run the cases on both sides (real Keras afresh unless --cached) and print a verdict each."""
    sys.path.insert(0, HERE)
    from harness import Case, Session

    cached = "--cached" in argv
    paths = [os.path.abspath(p) for p in argv if p != "--cached"]
    cases = []
    for p in paths:
        with open(p, encoding="utf-8") as f:
            cases.append(Case(os.path.splitext(os.path.basename(p))[0], f.read(), p))
    session = Session(cases, refresh=not cached, write=False).run()
    bad = 0
    for case in cases:
        for tid in case.test_ids():
            if tid in session.skipped:
                print(f"{tid}: skipped ({session.skipped[tid]})")
                continue
            exp, got = session.expected.get(tid), session.received.get(tid)
            verdict = compare_case(exp, got) if exp and got else "no outcome"
            bad += verdict != "ok"
            print(f"{tid}: {verdict}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
