"""The auto-tuner, cuDNN's way (torch.backends.cudnn.benchmark): at an op's first use with
given shapes, time each real implementation that can run it and keep the fastest.

`decide(op, key, candidates, fixed)` is the whole interface: `candidates` maps a name to
a zero-argument callable running that implementation once on scratch outputs (never on
the caller's arrays), `fixed` names the choice kernels_numba made before the tuner (the
one used when tuning is off, over budget, or failed). Callers decide at plan build /
bind time (kernels_numba/cpu/gemm.py's gemm_calls, cpu/conv2d.py's forward and
backward-data) or at a shape's first call (cpu/rnn_sequence.py's forward; its backward
reads the choice with `recorded`): a replayed launch plan repeats the chosen calls and
never comes back here; `recorded` / `pending` let a caller skip building scratch
candidates once a shape is decided.

Switch: `set_enabled(True|False)` (kerasish.config.set_autotune), else the environment
variable KERASISH_AUTOTUNE=0|1; on by default. Off returns `fixed` for every decision:
today's fixed choices, bit for bit.

Budget: TOTAL_BUDGET_S (2 s) of tuning per process and DECISION_BUDGET_S (0.25 s) per
decision, both settable (`set_budget`, KERASISH_AUTOTUNE_BUDGET=seconds). A decision that
runs past either is cut short: this process uses the best of what it timed (or the fixed
choice), not recorded; once the total is spent every later decision is the fixed one. A
decision timed while the load average exceeds twice the cores is kept in this process
only, too (timings then measure the other processes). A run in progress is never
interrupted: a decision can overrun its budget by one run. The fixed candidate's first
(warm-up) run is not counted: it is work (compiles, first touches) the op does anyway.

Cache: one JSON per machine, `<dir>/tune-<hash of the machine key>.json`, dir =
KERASISH_AUTOTUNE_DIR or ~/.cache/kerasish; the machine key (CPU model + the ISA numba
compiles for + FORMAT) is in the file name and checked inside, so a file copied from
another machine is never used. A file that does not parse, has another format or another
machine's key is ignored and rewritten at the next decision. Writes are atomic (a temp
file in the same folder, then os.replace); a folder that cannot be written leaves the
choices in memory only (`cache_error()` says why). Clear it: delete the file (`cache_path()`).
"""

import hashlib
import json
import os
import tempfile
import threading
import time
from pathlib import Path

FORMAT = 1
TOTAL_BUDGET_S = 2.0
DECISION_BUDGET_S = 0.25
REPEATS = 3  # timed runs per candidate after its warm-up; the best one counts
# A candidate replaces the fixed choice only when this much faster (timing noise must not
# flip choices from run to run).
MARGIN = 0.95
MAX_FILE_BYTES = 1 << 20
ENV, ENV_BUDGET, ENV_DIR = "KERASISH_AUTOTUNE", "KERASISH_AUTOTUNE_BUDGET", "KERASISH_AUTOTUNE_DIR"

_lock = threading.RLock()
_state = {"enabled": None, "total": None, "decision": DECISION_BUDGET_S, "spent": 0.0,
          "choices": None, "session": {}, "dir": None, "error": "", "timer": time.perf_counter,
          "machine": None, "active": False}


def enabled():
    """Whether decisions are tuned: set_enabled's value, else KERASISH_AUTOTUNE (default 1)."""
    if _state["enabled"] is not None:
        return _state["enabled"]
    value = os.environ.get(ENV, "1").strip()
    if value not in ("0", "1"):
        raise ValueError(f"{ENV}: expected '0' or '1'; received {value!r}")
    return value == "1"


def set_enabled(flag):
    """Turn tuning on (True) or off (False: every op makes its fixed choice)."""
    if not isinstance(flag, bool):
        raise TypeError(f"set_autotune: expected True or False; received {flag!r}")
    _state["enabled"] = flag


def budget():
    """(total seconds per process, seconds per decision)."""
    total = _state["total"]
    if total is None:
        raw = os.environ.get(ENV_BUDGET, "")
        try:
            total = float(raw) if raw else TOTAL_BUDGET_S
        except ValueError:
            raise ValueError(f"{ENV_BUDGET}: expected a number of seconds; received {raw!r}")
        if total < 0:
            raise ValueError(f"{ENV_BUDGET}: expected seconds >= 0; received {raw!r}")
    return total, _state["decision"]


def set_budget(total_s=None, per_decision_s=None):
    """Set the process's total tuning budget and/or the per-decision one, in seconds."""
    for name, value in (("total_s", total_s), ("per_decision_s", per_decision_s)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, (int, float))
                                  or value < 0):
            raise ValueError(f"set_autotune_budget: expected {name} >= 0 seconds; "
                             f"received {value!r}")
    if total_s is not None:
        _state["total"] = float(total_s)
    if per_decision_s is not None:
        _state["decision"] = float(per_decision_s)


def spent():
    """Seconds spent tuning in this process (counted against the total budget)."""
    return _state["spent"]


def set_timer(timer):
    """The clock decisions are timed with (tests inject a fake one); None: perf_counter."""
    _state["timer"] = timer or time.perf_counter


def reset(directory=None):
    """Forget this process's choices, spent budget and switches (tests); `directory`: where
    the cache lives from now on (None: KERASISH_AUTOTUNE_DIR or ~/.cache/kerasish)."""
    with _lock:
        _state.update(enabled=None, total=None, decision=DECISION_BUDGET_S, spent=0.0,
                      choices=None, session={}, dir=directory, error="", timer=time.perf_counter,
                      active=False)


def machine_key():
    """CPU model + the ISA numba compiles for: what a choice is valid for."""
    if _state["machine"] is None:
        import llvmlite.binding as llvm
        import numba

        features = numba.config.CPU_FEATURES or llvm.get_host_cpu_features().flatten()
        wanted = ("avx2", "fma", "avx512f", "avx512bw", "avx512vl", "avx512bf16", "amx-tile",
                  "neon", "sve")
        isa = "+".join(f for f in wanted if f"+{f}" in features.split(","))
        name = numba.config.CPU_NAME or llvm.get_host_cpu_name()
        _state["machine"] = f"{_cpu_model()}|{name}|{isa or 'baseline'}|format{FORMAT}"
    return _state["machine"]


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith(("model name", "Model", "cpu model")):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine() or "unknown CPU"


def cache_path():
    """The JSON file holding this machine's choices."""
    directory = _state["dir"] or os.environ.get(ENV_DIR) or Path.home() / ".cache" / "kerasish"
    digest = hashlib.sha256(machine_key().encode()).hexdigest()[:16]
    return Path(directory) / f"tune-{digest}.json"


def cache_error():
    """Why the last cache write failed, or ""."""
    return _state["error"]


def _load():
    """This machine's recorded choices ({op: {key: name}}); anything unusable is ignored."""
    try:
        path = cache_path()
        if path.stat().st_size > MAX_FILE_BYTES:  # not ours: a few hundred choices are ~50 KB
            return {}
        data = json.loads(path.read_text())
        if (isinstance(data, dict) and data.get("format") == FORMAT
                and data.get("machine") == machine_key() and isinstance(data.get("choices"), dict)):
            return {op: {str(k): v for k, v in keys.items() if isinstance(v, str)}
                    for op, keys in data["choices"].items() if isinstance(keys, dict)}
    except (OSError, ValueError, UnicodeDecodeError, AttributeError, RecursionError):
        pass
    return {}


def _save():
    path = cache_path()
    text = json.dumps({"format": FORMAT, "machine": machine_key(),
                       "choices": _state["choices"]}, indent=1, sort_keys=True)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=path.name + ".", suffix=".tmp", dir=path.parent)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(text)
            os.replace(tmp, path)
        except BaseException:
            os.unlink(tmp)
            raise
        _state["error"] = ""
    except OSError as exc:  # a read-only home: the choices stay in memory
        _state["error"] = f"{type(exc).__name__}: {exc}"


def choices():
    """A copy of this process's choices, as the cache file holds them."""
    with _lock:
        if _state["choices"] is None:
            _state["choices"] = _load()
        return {op: dict(keys) for op, keys in _state["choices"].items()}


def recorded(op, key):
    """The choice recorded for `op` at `key`, or None (always None with tuning off)."""
    if not enabled():
        return None
    with _lock:
        return _recorded(op, key)


def _recorded(op, key):
    if _state["choices"] is None:
        _state["choices"] = _load()
    found = _state["choices"].get(op, {}).get(key)
    return found if found is not None else _state["session"].get(op, {}).get(key)


def pending(op, key):
    """Whether decide(op, key, ...) would time candidates now: on, nothing recorded, budget
    left (callers make their scratch buffers and candidates only then)."""
    if not enabled():
        return False
    with _lock:
        if _state["active"]:
            return False
        if _recorded(op, key) is not None:
            return False
        return _state["spent"] < budget()[0]


def decide(op, key, candidates, fixed):
    """The name of the implementation to use for `op` at `key` (its shapes, dtype, threads):
    the recorded choice, else the fastest of `candidates` timed now within budget, else
    `fixed`."""
    if fixed not in candidates:
        raise ValueError(f"autotune.decide({op}): expected the fixed choice among the "
                         f"candidates {sorted(candidates)}; received {fixed!r}")
    if len(candidates) < 2 or not enabled():
        return fixed
    with _lock:
        if _state["active"]:  # a candidate's own ops (nested decisions) keep their fixed choice
            return fixed
        if _state["choices"] is None:
            _state["choices"] = _load()
        known = _recorded(op, key)
        if known in candidates:
            return known
        total, per = budget()
        if _state["spent"] >= total:
            return fixed
        from kernels_numba import first_use

        _state["active"] = True
        try:
            with first_use.cpu_work():  # NumPy's OpenBLAS at one thread per call, as in fit
                timed = _time_candidates(candidates, fixed, min(per, total - _state["spent"]))
        finally:
            _state["active"] = False
        if timed is None or not timed[1] or _loaded():
            # over budget, or timed on a machine busy with other work: this process keeps
            # the best of what it timed (or the fixed choice) without timing it again; the
            # file does not, so a later process tunes it
            best = fixed if timed is None else timed[0]
            _state["session"].setdefault(op, {})[key] = best
            return best
        _state["choices"].setdefault(op, {})[key] = timed[0]
        _save()
        return timed[0]


def _loaded():
    """Whether the machine runs more than twice as many tasks as it has cores (the 1-minute
    load average): timings then measure the contention (a parallel region waits tens of ms
    for a core another process holds, so a one-thread product wins), not the machine."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    try:
        return os.getloadavg()[0] > 2 * cores
    except (AttributeError, OSError):
        return False


def _time_candidates(candidates, fixed, allowed):
    """(the fastest candidate's name, whether every candidate was timed), or None when
    the time `allowed` ran out before the fixed one and another were timed. The fixed
    candidate runs first: a warm-up (not counted), then REPEATS timed runs; each other
    candidate REPEATS timed runs (their best counts, so a cold first run does not), or two
    when those are already twice the best so far."""
    timer = _state["timer"]
    used, times = 0.0, {}
    order = [fixed] + [name for name in candidates if name != fixed]
    for name in order:
        run = candidates[name]
        warm_up = name == fixed  # the fixed choice's warm-up is the op's own first run
        for i in range(REPEATS + warm_up):
            t0 = timer()
            run()
            elapsed = timer() - t0
            if warm_up and i == 0:
                continue
            used += elapsed
            _state["spent"] += elapsed
            times[name] = min(times.get(name, elapsed), elapsed)
            if used > allowed:
                if fixed not in times or len(times) < 2:
                    return None
                return _fastest(times, fixed), False
            others = [t for n, t in times.items() if n != name]
            if i - warm_up >= 1 and others and times[name] > 2 * min(others):
                break  # it loses: stop spending budget on it
    return _fastest(times, fixed), True


def _fastest(times, fixed):
    fastest = min(times, key=times.get)
    return fastest if times[fastest] < MARGIN * times[fixed] else fixed
