"""The harness itself (no real Keras needed): the cache's keys, stale entries re-run, crossing
files carried through the cache, the verdicts, and refusals.py against the README."""

import json
import os
import re
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import harness  # noqa: E402
from harness import Case, Session, case_key, verdict  # noqa: E402
from refusals import REFUSALS  # noqa: E402

VERSION = "3.15.1"


def _ok(value):
    return {"result": {"__dict__": {"v": value}}, "tolerance": {}}


class FakeRunner:
    """Stands in for run_side: records the jobs per side, answers each with its name's length."""

    def __init__(self):
        self.calls = []

    def __call__(self, side, jobs, tmp):
        self.calls.append((side, [dict(job) for job in jobs]))
        out = {}
        for job in jobs:
            if job.get("phase") == "save":
                with open(os.path.join(job["crossdir"], "model.keras"), "wb") as f:
                    f.write(side.encode())
                out[job["name"]] = _ok(0)
            elif job.get("phase") == "load":
                with open(os.path.join(job["crossdir"], "model.keras"), "rb") as f:
                    out[job["name"]] = _ok(len(f.read()))  # who saved: 5 keras, 8 kerasish
            else:
                out[job["name"]] = _ok(len(job["name"]))
        return out


def _cases(tmp_path, texts):
    out = []
    for name, text in texts.items():
        path = tmp_path / f"{name}.py"
        path.write_text(text)
        out.append(Case(name, text, str(path)))
    return out


def _entry(source, value, version=VERSION):
    return {"sha256": case_key(source, version), "keras_version": version, "outcome": _ok(value)}


def test_a_stale_hash_reruns_on_keras_and_the_cache_is_rewritten(tmp_path):
    cases = _cases(tmp_path, {"fresh": "RESULT = {'v': 1}\n", "edited": "RESULT = {'v': 2}\n"})
    cache = tmp_path / "keras_results.json"
    harness.write_cache({"fresh": _entry(cases[0].source, 99),
                         "edited": _entry("RESULT = {'v': 'old text'}\n", 99),
                         "gone": _entry("x", 1)}, str(cache))
    runner = FakeRunner()
    session = Session(cases, cache_path=str(cache), runner=runner, version=VERSION,
                      refresh=False, keep=lambda name: name != "gone").run()
    keras_calls = [jobs for side, jobs in runner.calls if side == "keras"]
    assert [[job["name"] for job in jobs] for jobs in keras_calls] == [["edited"]]
    assert session.keras_ran == ["edited"]
    assert session.expected["fresh"] == _ok(99)  # from the cache, not re-run
    assert session.expected["edited"] == _ok(len("edited"))
    written = json.loads(cache.read_text())["cases"]
    assert sorted(written) == ["edited", "fresh"]  # "gone" is no case any more
    assert written["edited"]["sha256"] == case_key(cases[1].source, VERSION)
    assert oct(os.stat(cache).st_mode & 0o777) == "0o644"
    # a second session finds everything current: real Keras does not run
    again = FakeRunner()
    Session(cases, cache_path=str(cache), runner=again, version=VERSION, refresh=False).run()
    assert [side for side, _ in again.calls] == ["kerasish"]


def test_a_new_keras_version_or_refresh_reruns_everything(tmp_path):
    cases = _cases(tmp_path, {"a": "RESULT = {}\n"})
    cache = tmp_path / "c.json"
    harness.write_cache({"a": _entry(cases[0].source, 1)}, str(cache))
    for kwargs in ({"version": "3.16.0", "refresh": False}, {"version": VERSION, "refresh": True}):
        runner = FakeRunner()
        Session(cases, cache_path=str(cache), runner=runner, write=False, **kwargs).run()
        assert [side for side, _ in runner.calls] == ["keras", "kerasish"]


def test_without_keras_cached_cases_run_and_the_others_skip_with_a_reason(tmp_path):
    cases = _cases(tmp_path, {"cached": "RESULT = {}\n", "new": "RESULT = {'n': 1}\n"})
    cache = tmp_path / "c.json"
    harness.write_cache({"cached": _entry(cases[0].source, 1)}, str(cache))
    runner = FakeRunner()
    session = Session(cases, cache_path=str(cache), runner=runner, version=False,
                      refresh=False).run()
    assert [side for side, _ in runner.calls] == ["kerasish"]
    assert "cached" in session.expected and "cached" not in session.skipped
    assert "not importable" in session.skipped["new"]


def test_crossing_files_travel_both_ways_and_through_the_cache(tmp_path):
    text = "CROSSING = True\nRESULT = {}\n"
    cases = _cases(tmp_path, {"cross": text})
    assert cases[0].test_ids() == ["cross", "cross:keras->kerasish", "cross:kerasish->keras"]
    cache = tmp_path / "c.json"
    runner = FakeRunner()
    s = Session(cases, cache_path=str(cache), runner=runner, version=VERSION, refresh=False).run()
    load = lambda n: {"result": {"__dict__": {"save": _ok(0)["result"], "load": _ok(n)["result"]}},  # noqa: E731
                      "tolerance": {}}
    assert s.expected["cross"] == load(5)  # real Keras loading its own file
    assert s.received["cross"] == load(8)  # kerasish loading its own
    assert s.received["cross:keras->kerasish"] == load(5)
    assert s.received["cross:kerasish->keras"] == load(8)
    assert [side for side, _ in runner.calls] == ["keras", "kerasish", "keras"]
    # warm cache: Keras's file comes from the cache; Keras runs only to load kerasish's
    warm = FakeRunner()
    s = Session(cases, cache_path=str(cache), runner=warm, version=VERSION, refresh=False).run()
    assert s.received["cross:keras->kerasish"] == load(5)
    assert [(side, [j["name"] for j in jobs]) for side, jobs in warm.calls][-1] == (
        "keras", ["cross@load-kerasish"])


def test_cached_files_never_land_outside_their_folder(tmp_path):
    for bad in ("../evil", "/etc/x", "a/../../b"):
        with pytest.raises(ValueError, match="expected a relative file name"):
            harness._unpack_files({bad: ""}, str(tmp_path / "f"))


def test_rounding_keeps_seven_significant_digits():
    enc = {"__array__": [[0.123456789, 12345.6789]], "shape": [1, 2], "dtype": "float32"}
    assert harness._round(enc)["__array__"] == [[0.1234568, 12345.68]]
    ints = {"__array__": [123456789], "shape": [1], "dtype": "int64"}
    assert harness._round(ints) == ints


def test_verdicts_for_refusals_and_known_failures():
    err = {"error": "NotImplementedError: Layer Foo: mixed precision is not supported", "where": ""}
    refusals = {"r": ("mixed precision", "mixed precision is not supported")}
    assert verdict("r", _ok(1), err, refusals, {})[0] == "pass"
    status, message = verdict("r", _ok(1), _ok(1), refusals, {})
    assert status == "fail" and "remove it from REFUSALS" in message
    status, message = verdict("r", _ok(1), {"error": "KeyError: 3"}, refusals, {})
    assert status == "fail" and "containing 'mixed precision is not supported'" in message
    known = {"k": "Foo's bias differs"}
    assert verdict("k", _ok(1), _ok(2), {}, known)[0] == "xfail"
    status, message = verdict("k", _ok(1), _ok(1), {}, known)
    assert status == "fail" and "passes now" in message
    status, message = verdict("c", {"error": "TypeError: x"}, _ok(1), {}, {})
    assert status == "fail" and "fails on real Keras" in message
    assert verdict("c", _ok(1.0), _ok(1.0 + 1e-9), {}, {}) == ("pass", "")
    assert verdict("c", _ok(1.0), _ok(1.1), {}, {})[0] == "fail"


def test_every_refused_feature_is_in_the_readme_not_yet_row():
    with open(os.path.join(harness.ROOT, "README.md"), encoding="utf-8") as f:
        row = next(line for line in f if line.startswith("| not (yet) |"))
    for case, (feature, _) in REFUSALS.items():
        assert feature in row, f"refusals.py: {case} refuses {feature!r}, absent from the README's row"


def test_every_refusal_and_known_failure_names_a_case():
    from known_failures import KNOWN_FAILURES

    names = {c.name for c in harness.file_cases()}
    for listed in list(REFUSALS) + [k.split(":")[0] for k in KNOWN_FAILURES]:
        assert listed in names or listed.startswith("generated_"), f"{listed}: no such case"


def test_readme_counts_match_the_corpus():
    with open(os.path.join(harness.ROOT, "README.md"), encoding="utf-8") as f:
        text = f.read()
    found = re.search(r"corpus of (\d+) case programs", text)
    assert found, "README: expected the Conformance paragraph's 'corpus of N case programs'"
    assert int(found.group(1)) == len(harness.file_cases())


def test_cached_files_round_trip_compressed_and_bombs_are_refused(tmp_path):
    src = tmp_path / "src"
    (src / "sub").mkdir(parents=True)
    (src / "sub" / "m.h5").write_bytes(b"\0" * 5000 + b"end")
    packed = harness._pack_files(str(src))
    assert len(packed["sub/m.h5"]) < 200
    harness._unpack_files(packed, str(tmp_path / "dst"))
    assert (tmp_path / "dst" / "sub" / "m.h5").read_bytes() == b"\0" * 5000 + b"end"
    import base64
    import zlib
    bomb = base64.b64encode(zlib.compress(b"\0" * (harness.MAX_CACHED_FILE + 10))).decode()
    with pytest.raises(ValueError, match="inflates past"):
        harness._unpack_files({"big": bomb}, str(tmp_path / "bomb"))


def test_a_larger_budget_by_hand_adds_nothing_to_the_committed_cache(tmp_path):
    cases = _cases(tmp_path, {"generated_000": "RESULT = {}\n", "generated_500": "RESULT = {1: 1}\n"})
    cache = tmp_path / "c.json"
    Session(cases, cache_path=str(cache), runner=FakeRunner(), version=VERSION, refresh=False,
            keep=lambda name: name == "generated_000").run()
    assert sorted(json.loads(cache.read_text())["cases"]) == ["generated_000"]
