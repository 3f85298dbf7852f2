"""The conformance harness: which cases exist, real Keras's cached results, and one run per side.

A `Session` takes cases (file cases from cases/, generated ones from generator.py) and returns,
for each test id, the outcome real Keras produced and the one kerasish produced:

- real Keras's outcome comes from `keras_results.json` when its key (sha256 of the Keras version
  and the case's source text) matches; otherwise (or with CONFORMANCE_REFRESH=1) the case runs
  on real Keras and the cache file is rewritten atomically. Without an importable Keras such a
  case has no reference and its tests skip, saying so.
- kerasish runs every case once, in one subprocess (never in the pytest process).

A file-crossing case (`CROSSING = True` in its text) runs in two phases: `PHASE == "save"` writes
into `CROSSDIR`, `PHASE == "load"` reads it; its RESULT is {"save": ..., "load": ...}. It gives
three test ids: NAME (kerasish saves, kerasish loads), NAME:keras->kerasish (real Keras's files,
from the cache, loaded by kerasish) and NAME:kerasish->keras (kerasish's files loaded by real Keras:
this direction always needs Keras, since kerasish's files change with kerasish), each compared with
real Keras saving and loading its own files.
"""

import base64
import hashlib
import importlib.metadata
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile
import zlib
from dataclasses import dataclass

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CASES_DIR = os.path.join(HERE, "cases")
CACHE_PATH = os.path.join(HERE, "keras_results.json")
_CROSSING = re.compile(r"^CROSSING\s*=\s*True\b", re.M)
DIRECTIONS = ("keras->kerasish", "kerasish->keras")
CI_EXAMPLES = 40  # generated models per CI run (generator.py)
GENERATED_PREFIX = "generated_"
# A saved file bigger than this is not kept in the cache (the case should use smaller models).
MAX_CACHED_FILE = 256 * 1024


@dataclass(frozen=True)
class Case:
    name: str
    source: str
    path: str  # the file run_side executes

    @property
    def crossing(self):
        return bool(_CROSSING.search(self.source))

    def test_ids(self):
        if not self.crossing:
            return [self.name]
        return [self.name] + [f"{self.name}:{d}" for d in DIRECTIONS]


def file_cases(folder=CASES_DIR):
    """Every case file in `folder` (names starting with '_' are helpers), sorted by name."""
    out = []
    for fname in sorted(os.listdir(folder)):
        if fname.endswith(".py") and not fname.startswith("_"):
            path = os.path.join(folder, fname)
            with open(path, encoding="utf-8") as f:
                out.append(Case(fname[:-3], f.read(), path))
    return out


def source_cases(pairs, folder):
    """Cases given as (name, source text): written into `folder` so run_side can execute them."""
    out = []
    for name, source in pairs:
        path = os.path.join(folder, name + ".py")
        with open(path, "w", encoding="utf-8") as f:
            f.write(source)
        out.append(Case(name, source, path))
    return out


def keras_version():
    """The installed Keras 3 version (read without importing it), or None."""
    try:
        version = importlib.metadata.version("keras")
    except importlib.metadata.PackageNotFoundError:
        return None
    if not version.startswith("3.") or importlib.util.find_spec("torch") is None:
        return None
    return version


def case_key(source, version):
    return hashlib.sha256(f"keras {version}\n{source}".encode()).hexdigest()


# -- the cache ---------------------------------------------------------------------------------

def _round(value, digits=7):
    """An encoded outcome with float arrays rounded to `digits` significant digits."""
    if isinstance(value, list):
        return [_round(v, digits) for v in value]
    if isinstance(value, dict):
        if "__array__" in value and value.get("dtype", "").startswith(("float", "complex")):
            return {**value, "__array__": _round_floats(value["__array__"], digits)}
        return {k: _round(v, digits) for k, v in value.items()}
    return value


def _round_floats(value, digits):
    if isinstance(value, list):
        return [_round_floats(v, digits) for v in value]
    if isinstance(value, float):
        return float(f"{value:.{digits}g}")
    return value


def load_cache(path=CACHE_PATH):
    if not os.path.exists(path):
        return {}
    with open(path, encoding="utf-8") as f:
        data = json.load(f)
    return data.get("cases", {})


def write_cache(entries, path=CACHE_PATH):
    """Atomically rewrite the cache: one case a line, sorted, so a diff shows what changed."""
    lines = [f"  {json.dumps(name)}: {json.dumps(entries[name], separators=(',', ':'), sort_keys=True)}"
             for name in sorted(entries)]
    text = '{"format": 1, "cases": {\n' + ",\n".join(lines) + "\n}}\n"
    fd, tmp = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".keras_results.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(text)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 is not what a committed file should have
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def _pack_files(folder):
    files = {}
    for base, _, names in os.walk(folder):
        for fname in names:
            full = os.path.join(base, fname)
            rel = os.path.relpath(full, folder).replace(os.sep, "/")
            if os.path.getsize(full) > MAX_CACHED_FILE:
                raise ValueError(f"conformance cache: {rel} is {os.path.getsize(full)} bytes; "
                                 f"expected at most {MAX_CACHED_FILE} (use a smaller model)")
            with open(full, "rb") as f:  # zlib: a tiny model's .keras or .h5 shrinks ~10x
                files[rel] = base64.b64encode(zlib.compress(f.read(), 9)).decode("ascii")
    return files


def _unpack_files(files, folder):
    os.makedirs(folder, exist_ok=True)
    for rel, data in files.items():
        parts = rel.split("/")
        if rel.startswith("/") or ".." in parts:  # the cache is a file too: never write outside
            raise ValueError(f"conformance cache: expected a relative file name; received {rel!r}")
        inflate = zlib.decompressobj()
        raw = inflate.decompress(base64.b64decode(data), MAX_CACHED_FILE + 1)
        if len(raw) > MAX_CACHED_FILE or not inflate.eof:
            raise ValueError(f"conformance cache: {rel} inflates past {MAX_CACHED_FILE} bytes "
                             "or is truncated; expected a file the harness wrote")
        full = os.path.join(folder, *parts)
        os.makedirs(os.path.dirname(full), exist_ok=True)
        with open(full, "wb") as f:
            f.write(raw)


# -- running a side ----------------------------------------------------------------------------

def side_env(side):
    env = dict(os.environ)
    if side == "keras":
        env = {k: v for k, v in env.items() if not k.startswith(("KERASISH_", "KERNELS_NUMBA_"))}
        env["KERAS_BACKEND"] = "torch"
        env["PYTHONPATH"] = os.path.join(HERE, "keras_alias")
    else:
        env["PYTHONPATH"] = ROOT
    return env


def run_side_process(side, jobs, tmp):
    """Run `jobs` on `side` in one subprocess; their outcomes by job name."""
    sys.path.insert(0, HERE)
    from run_side import read_outcomes

    jobs_path = os.path.join(tmp, f"{side}-jobs-{len(os.listdir(tmp))}.json")
    out_path = jobs_path[:-5] + ".jsonl"
    with open(jobs_path, "w", encoding="utf-8") as f:
        json.dump(jobs, f)
    proc = subprocess.run([sys.executable, os.path.join(HERE, "run_side.py"), side, out_path,
                           "--jobs", jobs_path], env=side_env(side), cwd=ROOT,
                          capture_output=True, text=True)
    results = read_outcomes(out_path)
    if proc.returncode != 0:
        missing = [j["name"] for j in jobs if j["name"] not in results]
        tail = (proc.stderr or proc.stdout)[-1500:]
        for i, name in enumerate(missing):
            cause = "died during this case" if i == 0 else "died before this case"
            results[name] = {"error": f"the {side} run_side process (exit {proc.returncode}) "
                                      f"{cause}: {tail}", "where": ""}
    return results


def _combine(save, load):
    """A crossing case's two phases as one outcome {"save": ..., "load": ...}."""
    for phase, out in (("save", save), ("load", load)):
        if out is None:
            return {"error": f"the {phase} phase did not run", "where": ""}
        if "error" in out:
            return {"error": f"{phase} phase: {out['error']}", "where": out.get("where", "")}
    return {"result": {"__dict__": {"save": save["result"], "load": load["result"]}},
            "tolerance": {**save.get("tolerance", {}), **load.get("tolerance", {})}}


class Session:
    """Both sides' outcomes for a set of cases, each side run at most once (twice for Keras
    when crossing cases need kerasish's files loaded by it)."""

    def __init__(self, cases, cache_path=CACHE_PATH, runner=run_side_process, refresh=None,
                 write=True, keep=None, version=None):
        self.cases = list(cases)
        self.cache_path = cache_path
        self.runner = runner
        self.refresh = (os.environ.get("CONFORMANCE_REFRESH") == "1") if refresh is None else refresh
        self.write = write
        self.keep = keep  # name -> bool: what the rewritten cache keeps (None: everything)
        self.version = keras_version() if version is None else (version or None)  # False: none
        self.expected, self.received, self.skipped = {}, {}, {}
        self.keras_ran = []  # names run on real Keras this session (cache misses)

    def run(self):
        with tempfile.TemporaryDirectory(prefix="conformance-") as tmp:
            self._run(tmp)
        return self

    def _run(self, tmp):
        entries = load_cache(self.cache_path) if self.cache_path else {}
        keras_files = {}
        stale = []
        for case in self.cases:
            entry = entries.get(case.name)
            # Without Keras here, a result is still current if it was made for this text (by
            # the Keras version it records).
            version = self.version or (entry or {}).get("keras_version")
            if (entry and not self.refresh and version
                    and entry.get("sha256") == case_key(case.source, version)):
                self._set_expected(case, entry["outcome"])
                keras_files[case.name] = entry.get("files", {})
            else:
                stale.append(case)
        if stale and not self.version:
            for case in stale:
                for tid in case.test_ids():
                    self.skipped[tid] = (f"{case.name}: real Keras 3 (with torch) is not importable "
                                         "here and keras_results.json has no current result for "
                                         "this case's text")
        elif stale:
            jobs = []
            for case in stale:
                if case.crossing:
                    cross = os.path.join(tmp, "keras-files", case.name)
                    os.makedirs(cross)
                    jobs += [{"name": f"{case.name}@save", "path": case.path, "phase": "save",
                              "crossdir": cross},
                             {"name": f"{case.name}@load", "path": case.path, "phase": "load",
                              "crossdir": cross}]
                else:
                    jobs.append({"name": case.name, "path": case.path})
            got = self.runner("keras", jobs, tmp)
            for case in stale:
                if case.crossing:
                    outcome = _combine(got.get(f"{case.name}@save"), got.get(f"{case.name}@load"))
                    files = _pack_files(os.path.join(tmp, "keras-files", case.name))
                else:
                    outcome, files = got.get(case.name), {}
                entry = {"sha256": case_key(case.source, self.version),
                         "keras_version": self.version, "outcome": _round(outcome)}
                if files:
                    entry["files"] = files
                entries[case.name] = entry
                keras_files[case.name] = files
                self._set_expected(case, entry["outcome"])
                self.keras_ran.append(case.name)
            if self.write and self.cache_path:
                if self.keep is not None:  # e.g. a larger generated budget run by hand
                    entries = {k: v for k, v in entries.items() if self.keep(k)}
                write_cache(entries, self.cache_path)
        self._run_kerasish(tmp, keras_files)

    def _set_expected(self, case, outcome):
        for tid in case.test_ids():
            self.expected[tid] = outcome

    def _run_kerasish(self, tmp, keras_files):
        jobs = []
        for case in self.cases:
            if not case.crossing:
                jobs.append({"name": case.name, "path": case.path})
                continue
            own = os.path.join(tmp, "kerasish-files", case.name)
            os.makedirs(own)
            jobs += [{"name": f"{case.name}@save", "path": case.path, "phase": "save",
                      "crossdir": own},
                     {"name": f"{case.name}@load", "path": case.path, "phase": "load",
                      "crossdir": own}]
            if case.name in keras_files:
                theirs = os.path.join(tmp, "keras-files-cached", case.name)
                _unpack_files(keras_files[case.name], theirs)
                jobs.append({"name": f"{case.name}@load-keras", "path": case.path,
                             "phase": "load", "crossdir": theirs})
        got = self.runner("kerasish", jobs, tmp)
        back = []
        for case in self.cases:
            if not case.crossing:
                self.received[case.name] = got.get(case.name)
                continue
            save = got.get(f"{case.name}@save")
            self.received[case.name] = _combine(save, got.get(f"{case.name}@load"))
            if case.name in keras_files:
                self.received[f"{case.name}:keras->kerasish"] = _combine(
                    save, got.get(f"{case.name}@load-keras"))
            if save is not None and "error" not in save:
                back.append(case)
            else:
                self.received[f"{case.name}:kerasish->keras"] = _combine(save, None)
        if back and not self.version:
            for case in back:
                self.skipped.setdefault(f"{case.name}:kerasish->keras",
                                        "loading kerasish's files needs real Keras 3 (with "
                                        "torch), which is not importable here")
        elif back:
            jobs = [{"name": f"{c.name}@load-kerasish", "path": c.path, "phase": "load",
                     "crossdir": os.path.join(tmp, "kerasish-files", c.name)} for c in back]
            loaded = self.runner("keras", jobs, tmp)
            for case in back:
                self.received[f"{case.name}:kerasish->keras"] = _combine(
                    got.get(f"{case.name}@save"), loaded.get(f"{case.name}@load-kerasish"))


# -- the verdict -------------------------------------------------------------------------------

def verdict(test_id, expected, received, refusals, known_failures):
    """(status, message): status 'pass', 'fail' or 'xfail', for one test id's two outcomes."""
    sys.path.insert(0, HERE)
    from compare import compare_case

    name = test_id.split(":")[0]
    if expected is not None and "error" in expected:
        return "fail", f"{test_id}: the case fails on real Keras: {expected['error']}"
    if received is None:
        return "fail", f"{test_id}: kerasish produced no outcome"
    if name in refusals:
        feature, fragment = refusals[name]
        if "error" not in received:
            return "fail", (f"{test_id}: listed in refusals.py as refusing {feature!r}, but it "
                            "now runs on kerasish: remove it from REFUSALS")
        if fragment not in received["error"]:
            return "fail", (f"{test_id}: expected kerasish to refuse {feature!r} with an error "
                            f"containing {fragment!r}; received {received['error']}")
        return "pass", ""
    found = compare_case(expected, received)
    key = test_id if test_id in known_failures else name
    if key in known_failures:
        if found == "ok":
            return "fail", (f"{test_id}: listed in KNOWN_FAILURES ({known_failures[key]}) but it "
                            "passes now: remove it from the list")
        return "xfail", f"{known_failures[key]} -- {found}"
    return ("pass", "") if found == "ok" else ("fail", f"{test_id}: {found}")


def check(session, test_id, known=None, skip_keras_errors=False):
    """The pytest side of one test id: pass, fail, skip or xfail with the reason (`known` adds
    known failures to known_failures.py's, e.g. the generator's; skip_keras_errors: a case that
    fails on real Keras skips instead of failing, for drawn models)."""
    import pytest

    sys.path.insert(0, HERE)
    from known_failures import KNOWN_FAILURES
    from refusals import REFUSALS

    if test_id in session.skipped:
        pytest.skip(session.skipped[test_id])
    expected = session.expected.get(test_id)
    if skip_keras_errors and expected is not None and "error" in expected:
        pytest.skip(f"{test_id}: real Keras itself fails on this drawn model: {expected['error']}")
    status, message = verdict(test_id, session.expected.get(test_id),
                              session.received.get(test_id), REFUSALS,
                              {**KNOWN_FAILURES, **(known or {})})
    if status == "xfail":
        pytest.xfail(message)
    if status == "fail":
        pytest.fail(message, pytrace=False)
