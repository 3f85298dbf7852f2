"""`MPIStrategy`: synchronous data-parallel training over MPI ranks (Keras's
MultiWorkerMirroredStrategy idiom, Horovod's transport).

    strategy = kerasish.distribute.MPIStrategy()
    with strategy.scope():
        model = build_model()
        model.compile(...)
    model.fit(x, y, batch_size=256)   # 256 = the GLOBAL batch: 128 per rank at 2 ranks

launched with `mpirun -n N python train.py`. Every rank holds the whole model. At the
start of fit rank 0's weights, optimizer state, resume point and shuffle state are
broadcast; each rank trains on its slice of every global batch (sharding.py); after
the backward pass one all-reduce averages the gradient block (reducers.py), so every
rank applies the same update; logs are reduced from every rank's sums and counts;
`stop_training` set on any rank stops all of them after the same batch. Only rank 0
prints progress and writes files (callbacks with `chief_only = True`).

The trainer and executor reach this module only through `model._distribution` (an
object with the hook methods below), set by `compile` inside `strategy.scope()`.
"""

import contextlib

import numpy as np

import kernels_numba
from kerasish.distribute import reducers, sharding
from kerasish.distribute.collectives import (
    Collectives,
    import_mpi,
    install_abort_on_exception,
    timeout_from_env,
)

__all__ = ["MPIStrategy", "current_strategy"]

_scopes = []  # the strategies whose scope() is open, innermost last


def current_strategy():
    """The strategy of the innermost open `scope()`, or None."""
    return _scopes[-1] if _scopes else None


class MPIStrategy:
    """Data parallelism over the ranks of an MPI communicator.

    Args:
        comm: an mpi4py communicator (default `MPI.COMM_WORLD`).
        timeout: seconds a rank waits in one collective before it aborts the job with
            a message naming the collective (default $KERASISH_MPI_TIMEOUT or 600: the
            first step of each rank compiles kernels).
        cuda_aware: pass CUDA device buffers to MPI (True), stage through pinned host
            memory (False), or ask the MPI library (None; $KERASISH_MPI_CUDA_AWARE=0/1
            overrides).

    Raises:
        ImportError: mpi4py or the MPI library is missing (with the install commands).
    """

    def __init__(self, comm=None, timeout=None, cuda_aware=None):
        mpi = import_mpi()
        self.comm = mpi.COMM_WORLD if comm is None else comm
        self.collectives = Collectives(self.comm, timeout_from_env(timeout))
        self.cuda_aware = reducers.mpi_is_cuda_aware() if cuda_aware is None \
            else bool(cuda_aware)
        self.library = mpi.Get_library_version().splitlines()[0].split(",")[0].strip()
        install_abort_on_exception(self.collectives)

    @property
    def rank(self):
        return self.collectives.rank

    @property
    def num_replicas_in_sync(self):
        """The number of ranks (Keras's name)."""
        return self.collectives.size

    size = num_replicas_in_sync

    @property
    def is_chief(self):
        """True on rank 0, the rank that prints and writes checkpoints."""
        return self.rank == 0

    def __repr__(self):
        return f"MPIStrategy(rank={self.rank}, size={self.size}, library={self.library!r})"

    @contextlib.contextmanager
    def scope(self):
        """Models compiled inside train data-parallel under this strategy."""
        _scopes.append(self)
        try:
            yield self
        finally:
            _scopes.remove(self)

    def attach(self, model):
        """Train `model` under this strategy (what compile does inside `scope()`)."""
        model._distribution = ModelDistribution(self, model)
        return model

    def barrier(self):
        self.collectives.wait(self.comm.Ibarrier(), "barrier")

    def allreduce_stats(self, model):
        """The gradient all-reduce's cost so far for `model`: bytes per rank per step,
        steps, mean seconds per step (staging included) and the transport."""
        red = model._distribution.gradients
        return {"bytes_per_step": red.nbytes, "steps": red.steps,
                "seconds_per_step": red.seconds / max(red.steps, 1),
                "transport": red.mode, "ranks": self.size}


class ModelDistribution:
    """The hook methods the trainer, the executor and CallbackList call for one model."""

    def __init__(self, strategy, model):
        self.strategy, self.model = strategy, model
        self.coll = strategy.collectives
        self.gradients = reducers.GradientReducer(self.coll, model, strategy.cuda_aware)
        self._announced = False

    @property
    def is_chief(self):
        return self.coll.rank == 0

    # fit: the loader, the start, each step, the logs, the stop flag --------------------

    def shard_loader(self, loader):
        """fit's training loader -> this rank's shard of each global batch."""
        sharded = sharding.shard_loader(loader, self.coll.rank, self.coll.size)
        self.gradients.nominal = sharded.batch_size
        return sharded

    def on_train_begin(self):
        """After the callbacks' on_train_begin (BackupAndRestore ran on rank 0): rank 0's
        parameters, optimizer state, resume epoch and shuffle state on every rank."""
        from kerasish.engine import parameters
        from kerasish.layers import Dropout

        model, coll = self.model, self.coll
        parameters.pack(model)
        attach = getattr(parameters, "attach_optimizer", None)  # slots laid out like the block
        attach(model) if attach else model.optimizer.build(model._trainable_variables)
        self._bcast_block(model._parameter_block)
        opt = model.optimizer.variables
        values = coll.bcast_object([v.numpy() for v in opt], "optimizer state broadcast")
        if len(values) != len(opt):
            coll.abort(f"rank 0 has {len(values)} optimizer variables, this rank "
                       f"{len(opt)}: build the same model and optimizer on every rank")
        if coll.rank:
            for var, value in zip(opt, values):
                var.assign(value)
        loader = getattr(model, "_train_loader", None)
        dropouts = reducers.layers_of(model, Dropout)
        meta = coll.bcast_object({
            "initial_epoch": model._initial_epoch,
            "loader": loader.get_state() if hasattr(loader, "get_state") else None,
            "dropout": [layer._seed for layer in dropouts]}, "resume state broadcast")
        model._initial_epoch = meta["initial_epoch"]
        if meta["loader"] is not None and coll.rank:
            loader.set_state(meta["loader"])
        for layer, seed in zip(dropouts, meta["dropout"]):
            if seed is not None:  # own masks per rank, reproducible from rank 0's seed
                layer._seed = (int(seed) + 1_000_003 * coll.rank) & 0xFFFFFFFF
        if not self._announced and coll.rank == 0:
            red = self.gradients
            print(f"kerasish.distribute: {coll.size} ranks ({self.strategy.library}); "
                  f"per step one all-reduce of {model._trainable_size + 1:,} float32 "
                  f"({red.nbytes:,} bytes) through {red.mode}", flush=True)
        self._announced = True

    def _bcast_block(self, block):
        coll = self.coll
        if kernels_numba.device_of(block) == kernels_numba.CPU:
            coll.bcast(block, "parameter broadcast")
        elif self.strategy.cuda_aware:
            kernels_numba.synchronize(kernels_numba.CUDA)
            coll.bcast(block, "parameter broadcast")
        else:
            host = kernels_numba.to_host(block)
            coll.bcast(host, "parameter broadcast")
            kernels_numba.copy_from_host(block, host)

    def reduce_gradients(self, rows):
        """After backward, before the optimizer: the mean gradient of the global batch
        (and BatchNormalization's moving statistics) on every rank."""
        self.gradients(rows)
        reducers.reduce_batchnorm_statistics(self.coll, self.model, rows)

    def reduce_logs(self, read):
        return reducers.reduce_logs(self.coll, self.model, read)

    def any_stop(self, flag):
        """stop_training on any rank stops every rank (after the same batch)."""
        return self.coll.any_true(flag, "stop_training all-reduce")


def check_numpy_equal_on_ranks(strategy, array, what):
    """Max |array - rank 0's array| over the ranks (tests and examples)."""
    ref = strategy.collectives.bcast_object(np.asarray(array), f"{what} check")
    diff = np.array([float(np.max(np.abs(np.asarray(array, np.float64) - ref)))
                     if np.size(array) else 0.0])
    return float(strategy.collectives.allreduce(diff, f"{what} check", "max")[0])
