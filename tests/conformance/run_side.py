"""Run conformance cases on one side and write their outcomes, one JSON line per case.

    python tests/conformance/run_side.py keras|kerasish OUT.jsonl CASE.py [CASE.py ...]
    python tests/conformance/run_side.py keras|kerasish OUT.jsonl --jobs JOBS.json

Each case's text is executed in a fresh namespace (one process for all, so Keras is imported
once), with `SIDE` and `WORKDIR` defined; the seeds are reset before each case. A case that
raises is recorded as {"error": "<Type>: <message>"} and the rest go on. A line is written as
soon as a case ends, so a case that kills the process leaves the earlier ones' outcomes.

A job file is a JSON list of {"name", "path"} with, for a file-crossing case (see README.md),
"phase" ("save" or "load") and "crossdir" (the folder the save phase writes and the load phase
reads); the case then also sees `PHASE` and `CROSSDIR`.
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


def run_job(side, job):
    """One case (or one phase of a crossing case) run in a fresh namespace: its outcome."""
    import numpy as np

    import kerasish as keras

    path, name = job["path"], job["name"]
    with open(path, encoding="utf-8") as f:
        source = f.read()
    keras.utils.set_random_seed(0)
    np.random.seed(0)
    safe = "".join(c if c.isalnum() else "_" for c in name)[:40]
    workdir = tempfile.mkdtemp(prefix=f"conformance-{side}-{safe}-")
    namespace = {"__name__": "__conformance__", "__file__": path, "SIDE": side,
                 "WORKDIR": workdir}
    if "phase" in job:
        namespace.update(PHASE=job["phase"], CROSSDIR=job["crossdir"])
    cwd = os.getcwd()
    try:
        os.chdir(workdir)  # a case that writes a relative path writes into its own folder
        exec(compile(source, path, "exec"), namespace)
        out = {"result": _encode(namespace.get("RESULT", {})),
               "tolerance": namespace.get("TOLERANCE", {})}
    except BaseException as exc:  # noqa: BLE001 - a failing case is a result
        tb = traceback.extract_tb(exc.__traceback__)
        where = next((f"{fr.filename}:{fr.lineno}" for fr in reversed(tb)
                      if fr.filename == path), "")
        out = {"error": f"{type(exc).__name__}: {exc}"[:2000], "where": where}
    finally:
        os.chdir(cwd)
    try:
        keras.backend.clear_session()
    except Exception:  # noqa: BLE001
        pass
    return out


def run_jobs(side, jobs, out_path=None):
    """Run the jobs in order; their outcomes by name (appended to out_path as JSON lines)."""
    if side == "keras":
        sys.path.insert(0, os.path.join(HERE, "keras_alias"))
        os.environ.setdefault("KERAS_BACKEND", "torch")
    import warnings

    warnings.filterwarnings("ignore")  # cases' own warnings are not what the harness compares
    results = {}
    out = open(out_path, "w", encoding="utf-8") if out_path else None
    try:
        for job in jobs:
            results[job["name"]] = outcome = run_job(side, job)
            if out:
                out.write(json.dumps({"name": job["name"], "outcome": outcome}) + "\n")
                out.flush()
    finally:
        if out:
            out.close()
    return results


def run_cases(side, paths):
    """The plain form: each case file once, named for its file."""
    return run_jobs(side, [{"name": os.path.splitext(os.path.basename(p))[0], "path": p}
                           for p in paths])


def read_outcomes(path):
    """The outcomes a run_side process wrote (those it reached, if it died)."""
    results = {}
    if os.path.exists(path):
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    row = json.loads(line)
                    results[row["name"]] = row["outcome"]
    return results


def main(argv):
    if len(argv) < 2:
        raise SystemExit("usage: run_side.py keras|kerasish OUT.jsonl (CASE.py ... | --jobs JOBS.json)")
    side, out, *rest = argv
    if side not in ("keras", "kerasish"):
        raise SystemExit(f"run_side: expected side 'keras' or 'kerasish'; received {side!r}")
    if rest[:1] == ["--jobs"]:
        with open(rest[1], encoding="utf-8") as f:
            jobs = json.load(f)
    else:
        jobs = [{"name": os.path.splitext(os.path.basename(p))[0], "path": os.path.abspath(p)}
                for p in rest]
    run_jobs(side, jobs, out)


if __name__ == "__main__":
    main(sys.argv[1:])
