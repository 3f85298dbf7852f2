"""Data-parallel training over MPI: `MPIStrategy` (see mpi_strategy.py).

Importing this package does not import mpi4py; creating an MPIStrategy does.
"""

from kerasish.distribute.mpi_strategy import MPIStrategy, current_strategy
from kerasish.distribute.sharding import ShardedLoader

__all__ = ["MPIStrategy", "ShardedLoader", "current_strategy"]
