"""Compiling ahead on the second core: a fresh machine's first training step.

numba compiles on one thread (its compiler lock is per process), so an empty disk cache
made the reference CNN's first step compile its 8-11 functions one after another, 4-5 s
on one core, with the other core idle. At first use (kernels_numba/first_use.py's
prepare(): kerasish's Model.compile() on the CPU or the first CPU op; never at import,
where it would take a core from whatever else the process runs) when the
disk cache lacks even the one parallel loop (a fresh machine), or else at this process's
first real compile of a part (a cache miss: never on a warm machine), `start()` launches
one helper process,
`python -m kernels_numba.cpu.compile_ahead`. It compiles parts most training steps reach
late (`_ahead_parts`, the last-reached first) into the same disk cache while this process
compiles the parts it reaches, in order. (torch.compile uses worker processes for the
same reason.)

Each part is compiled once. Whoever first creates `<dir>/<part>.claim` (O_EXCL) compiles
it, then writes `<part>.done`. This process, reaching a part the helper claimed, waits for
that file and loads the part from the disk cache. If the helper died or its cache entry
is missing, it compiles the part itself. Both processes run the same compiler on the same
machine: the code, and every result, is the same either way.

KERNELS_NUMBA_COMPILE_AHEAD=0 turns it off (no helper: every compile in this process). It
is also off under MPI (each rank's own fork is unwelcome there), on one core, and when
the helper cannot be started.
"""

import atexit
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

_DIR_ENV = "KERNELS_NUMBA_COMPILE_AHEAD_DIR"  # set for the helper: the claims directory
_MPI_ENV = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMI_RANK", "MPI_LOCALNRANKS")
_WAIT_S = 300.0  # a helper compile never takes this long; past it, compile here

_state = {"dir": os.environ.get(_DIR_ENV), "proc": None, "started": False, "mine": set()}
loaded_from_helper = []  # the parts this process waited for and loaded


def enabled():
    if os.environ.get("KERNELS_NUMBA_COMPILE_AHEAD", "1") == "0":
        return False
    if any(name in os.environ for name in _MPI_ENV):
        return False
    cores = os.sched_getaffinity(0) if hasattr(os, "sched_getaffinity") else range(
        os.cpu_count() or 1)
    return len(cores) > 1


def _ahead_parts():
    """What the helper compiles, in its order: the parts a training step reaches last come
    first (Adam, the sparse cross-entropy rows, conv2d's part for a second conv), so this
    process, compiling from the front of the step, and the helper, from its back, meet in
    the middle, with at most one part waited for. An order that started with what the step
    needs early (the max-pool) made this process wait for the helper: 5.5-6.3 s against
    4.1-5.2 s for the reference CNN's first step, in the same slow phase of the machine.
    SGD comes after the CNN's backward parts: the reference MLP uses it, but reaches it
    late; with SGD before the dense bias+ReLU part, the CNN's first step compiled that
    part itself (5.23 s)."""
    from kernels_numba.cpu import (conv2d_columns, dense, gemm, loss_train, optim, pool2d,
                                   sgemm_tiles)
    from kernels_numba.ops.activation import KIND_CODES

    parts = [optim._adam_part[0], loss_train._rows_softmax_sparse_ce_train,
             conv2d_columns._conv_part, pool2d._maxpool_2x2_masked_part,
             dense._bias_activation_part(KIND_CODES["relu"]), optim._sgd_part[0],
             pool2d._maxpool_2x2_relu_part]
    if gemm._SGEMM is not None:
        parts.append(gemm._split_part)
    if gemm.TILES:
        parts.append(sgemm_tiles.sgemm)
    return parts


def _file(name, suffix):
    return os.path.join(_state["dir"], re.sub(r"[^A-Za-z0-9_.-]", "_", name) + suffix)


def start():
    """Launch the helper, once per process, when a part has to be compiled."""
    if _state["started"] or _state["dir"] is not None:
        return
    _state["started"] = True
    if not enabled():
        return
    import kernels_numba

    root = os.path.dirname(os.path.dirname(os.path.abspath(kernels_numba.__file__)))
    claims = tempfile.mkdtemp(prefix="kernels_numba-ahead-")
    env = {**os.environ, _DIR_ENV: claims, "NUMBA_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")])}
    if "NUMBA_CACHE_DIR" in env:  # the helper runs in `root`: a relative path would move
        env["NUMBA_CACHE_DIR"] = os.path.abspath(env["NUMBA_CACHE_DIR"])
    try:
        proc = subprocess.Popen([sys.executable, "-m", "kernels_numba.cpu.compile_ahead"],
                                cwd=root, env=env, stdin=subprocess.DEVNULL,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    except (OSError, ValueError):  # no usable interpreter to start: compile here
        shutil.rmtree(claims, ignore_errors=True)
        return
    _state["dir"], _state["proc"] = claims, proc
    atexit.register(_stop, proc, claims)


def start_if_cold(dispatcher):
    """At first use: a disk cache without even `dispatcher` (the one parallel loop)
    is a fresh machine's, so start now, and the helper's own import overlaps this
    process's first compiles."""
    index = getattr(getattr(getattr(dispatcher, "_cache", None), "_cache_file", None),
                    "_index_path", None)
    if index is not None and not os.path.exists(index):
        start()


def _stop(proc, claims):
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
    shutil.rmtree(claims, ignore_errors=True)


def claim(name):
    """True: compile `name` here (no helper, or this process claimed it first)."""
    if _state["dir"] is None or name in _state["mine"]:
        return True
    try:
        os.close(os.open(_file(name, ".claim"), os.O_CREAT | os.O_EXCL | os.O_WRONLY))
        _state["mine"].add(name)
        return True
    except FileExistsError:
        return False
    except OSError:  # the directory is gone (the helper's owner exited): compile here
        return True


def finished(name):
    """After compiling (and caching) a claimed part: tell the other process."""
    if _state["dir"] is not None:
        try:
            open(_file(name, ".done"), "w").close()
        except OSError:
            pass


def wait(name):
    """Wait for the helper to finish `name`; False if it died or took too long."""
    done, proc = _file(name, ".done"), _state["proc"]
    deadline = time.monotonic() + _WAIT_S
    while not os.path.exists(done):
        if proc is not None and proc.poll() is not None or time.monotonic() > deadline:
            return os.path.exists(done)
        time.sleep(0.002)
    return True


def helper_compiled():
    """The parts the helper has compiled so far (their names as the claim files spell them)."""
    if _state["proc"] is None:
        return []
    return sorted(f[:-5] for f in os.listdir(_state["dir"]) if f.endswith(".done"))


def helper_main():
    """The helper: compile each part of `_ahead_parts` nobody has claimed yet."""
    for part in _ahead_parts():
        if claim(part.name):
            part.address  # compiles it (a cache miss) into the disk cache
            finished(part.name)


if __name__ == "__main__":
    from kernels_numba.cpu import compile_ahead  # the package's module, not a second copy

    compile_ahead.helper_main()
