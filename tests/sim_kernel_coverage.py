"""A pytest plugin for the simulator stage: every registered CUDA kernel must run in it.

    NUMBA_ENABLE_CUDASIM=1 python -m pytest tests -m "cudasim and not slow" -n 2 \\
        -p tests.sim_kernel_coverage

Model-level simulator cases may sit behind `slow` only while an op-level case runs the
same kernels; this plugin keeps that true. It wraps the simulator's kernel call (the
class method, so every module's kernels and every replayed launch are seen), collects
the names of the kernels that ran in each process (xdist workers write theirs to a
folder the controller made), and at the end fails the session naming every kernel of
kernels_numba._cuda.KERNELS that no selected test ran. A run that selects only some
tests (`-k`, a file) is not a coverage run: the check is skipped unless the whole
`tests` folder was collected without -k.
"""

import importlib
import os
import pkgutil
import tempfile
from pathlib import Path

import pytest

_ENV = "KERNELS_NUMBA_SIM_COVERAGE_DIR"
_seen = set()


def _active():
    return os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"


def pytest_configure(config):
    if not _active():
        return
    from numba.cuda.simulator import kernel as simulated

    call = simulated.FakeCUDAKernel.__call__
    if getattr(call, "_coverage", False):
        return

    def recording(self, *args):
        if not self._device:
            _seen.add(f"{self.fn.__module__}.{self.fn.__name__}")
        return call(self, *args)

    recording._coverage = True
    simulated.FakeCUDAKernel.__call__ = recording
    if not hasattr(config, "workerinput"):  # the controller (or a run without xdist)
        os.environ.setdefault(_ENV, tempfile.mkdtemp(prefix="sim-kernel-coverage-"))


def pytest_sessionfinish(session, exitstatus):
    if not _active():
        return
    folder = Path(os.environ[_ENV]) if os.environ.get(_ENV) else None
    worker = getattr(session.config, "workerinput", None)
    if worker is not None:  # an xdist worker: hand the names to the controller
        if folder is not None:
            (folder / f"{worker['workerid']}.txt").write_text("\n".join(sorted(_seen)))
        return
    seen = set(_seen)
    if folder is not None:
        for path in folder.glob("*.txt"):
            seen.update(path.read_text().split())
    args = [str(a) for a in session.config.args]
    whole = not session.config.getoption("keyword") and \
        all(Path(a).resolve() == Path(session.config.rootpath, "tests").resolve() for a in args)
    if not whole or session.testscollected == 0:
        return
    import kernels_numba.gpu as gpu_pkg
    from kernels_numba import _cuda

    for mod in pkgutil.iter_modules(gpu_pkg.__path__):
        importlib.import_module(f"kernels_numba.gpu.{mod.name}")
    registered = {name for name, spec in _cuda.KERNELS.items() if spec.dispatcher is not None}
    missing = sorted(registered - seen)
    session.config._sim_kernel_coverage = (len(registered), missing)
    if missing:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    result = getattr(config, "_sim_kernel_coverage", None)
    if result is None:
        return
    total, missing = result
    if missing:
        terminalreporter.section("kernels no simulator test ran", red=True)
        for name in missing:
            terminalreporter.line(f"  {name}")
        terminalreporter.line(f"{len(missing)} of {total} registered kernels never ran: add "
                              "or un-slow an op-level case (tests/sim_kernel_coverage.py)")
    else:
        terminalreporter.line(f"simulator kernel coverage: all {total} registered kernels ran")
