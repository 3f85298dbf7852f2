"""MPI collectives with a deadline, and the job-wide abort that replaces a hang.

Every collective kerasish issues is non-blocking (`Iallreduce`, `Ibcast`) and polled
with a deadline: a rank whose peers stopped answering (one raised, hangs in user code,
or its machine went away) prints which collective it waited in and for how long, then
calls `comm.Abort`, which ends every rank of the job. An uncaught exception on any
rank also aborts the job at once (an excepthook installed by the strategy), so the
error ends the run within seconds instead of leaving the others blocked.

mpi4py is imported lazily: importing kerasish.distribute needs no MPI.
"""

import os
import pickle
import sys
import time
import traceback

import numpy as np

DEFAULT_TIMEOUT_S = 600.0  # a first step compiles numba kernels: ranks may differ by a lot
_SPIN = 200  # Test() calls before sleeping between polls (a step's wait is usually short)
_SLEEP_S = 1e-4


def import_mpi():
    """mpi4py's MPI module, or an ImportError saying how to install it."""
    try:
        from mpi4py import MPI
    except ImportError as e:  # no mpi4py, or no libmpi under it
        raise ImportError(
            "kerasish.distribute.MPIStrategy needs mpi4py and an MPI library: "
            "`apt-get install openmpi-bin libopenmpi-dev` (or mpich) then "
            f"`pip install 'kerasish[mpi]'` (received: {e})") from e
    return MPI


def timeout_from_env(timeout):
    if timeout is None:
        timeout = float(os.environ.get("KERASISH_MPI_TIMEOUT", DEFAULT_TIMEOUT_S))
    if not timeout > 0:
        raise ValueError(f"MPIStrategy: expected timeout > 0 seconds; received {timeout!r}")
    return float(timeout)


class Collectives:
    """The communicator, its rank and size, and deadline-polled collectives."""

    def __init__(self, comm, timeout):
        self.MPI = import_mpi()
        self.comm = comm
        self.rank, self.size = comm.Get_rank(), comm.Get_size()
        self.timeout = timeout
        self.calls = 0  # collectives issued (tests and the cost report read it)

    def abort(self, message, code=1):
        """Print `message` naming this rank, then end every rank of the job."""
        sys.stderr.write(f"kerasish.distribute: rank {self.rank} of {self.size}: "
                         f"{message}\n")
        sys.stderr.flush()
        sys.stdout.flush()
        self.comm.Abort(code)

    def wait(self, request, what):
        """Poll `request` until it completes; abort the job past the deadline."""
        self.calls += 1
        spins, start = 0, None
        while not request.Test():
            spins += 1
            if spins < _SPIN:
                continue
            now = time.monotonic()
            if start is None:
                start = now
            elif now - start > self.timeout:
                self.abort(
                    f"timed out after {self.timeout:.0f} s in the {what}: another rank "
                    f"did not reach it (it raised, hangs, or died). Aborting the whole "
                    f"job (KERASISH_MPI_TIMEOUT or MPIStrategy(timeout=...) sets the "
                    f"limit)")
            time.sleep(_SLEEP_S)

    def allreduce(self, buf, what, op="sum"):
        """In-place all-reduce of a host array or a device array (CUDA-aware MPI)."""
        mpi_op = {"sum": self.MPI.SUM, "max": self.MPI.MAX}[op]
        self.wait(self.comm.Iallreduce(self.MPI.IN_PLACE, buf, op=mpi_op), what)
        return buf

    def bcast(self, buf, what, root=0):
        """In-place broadcast of an array from `root`."""
        self.wait(self.comm.Ibcast(buf, root=root), what)
        return buf

    def bcast_object(self, obj, what, root=0):
        """A picklable object from `root` on every rank (length first, then bytes)."""
        data = pickle.dumps(obj) if self.rank == root else b""
        n = self.bcast(np.array([len(data)], np.int64), f"{what} (size)", root)
        raw = np.frombuffer(data, np.uint8).copy() if self.rank == root else \
            np.empty(int(n[0]), np.uint8)
        self.bcast(raw, what, root)
        return obj if self.rank == root else pickle.loads(raw.tobytes())

    def any_true(self, flag, what):
        return bool(self.allreduce(np.array([1 if flag else 0], np.int32), what, "max")[0])


_installed = []


def install_abort_on_exception(collectives):
    """sys.excepthook that prints the traceback, then aborts every rank (once)."""
    if _installed or collectives.size == 1:
        return
    previous = sys.excepthook

    def hook(kind, value, tb):
        try:
            sys.stderr.write(f"kerasish.distribute: rank {collectives.rank} raised:\n")
            traceback.print_exception(kind, value, tb)
        except Exception:  # noqa: BLE001 (the abort below matters more than the print)
            previous(kind, value, tb)
        collectives.abort(f"an exception on this rank ({kind.__name__}: {value}) ends the "
                          f"job; the other ranks are stopped instead of waiting for it")

    sys.excepthook = hook
    _installed.append(hook)
