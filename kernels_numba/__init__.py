"""kernels_numba: the primitive library under kerasish (our "cuDNN").

Stateless forward/backward ops on caller-owned buffers, each implemented twice
with one name and signature: @cuda.jit kernels (kernels_numba.gpu) and a CPU
twin (kernels_numba.cpu). `ops` validates and dispatches on the buffers' device.
Imports and runs on machines without any CUDA driver.
"""

import os

# numba's OpenMP threads otherwise spin after each parallel loop and hold the cores
# the next BLAS call needs (measured: conv fwd+bwd 2x slower on 2 cores).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from kernels_numba import _blas  # noqa: E402

# OpenBLAS at one thread per call; kernels_numba.cpu.gemm splits GEMMs itself.
BLAS_THREADS = _blas.configure()

from kernels_numba import ops  # noqa: E402,F401
from kernels_numba.device import (  # noqa: E402,F401
    CPU,
    CUDA,
    allocation_count,
    check_cuda_available,
    copy_from_host,
    cuda_available,
    device_of,
    empty,
    resolve_device,
    synchronize,
    to_device,
    to_host,
    zeros,
)

__version__ = "0.1.0"
