"""kernels_numba: the primitive library under kerasish (our "cuDNN").

Stateless forward/backward ops on caller-owned buffers, each implemented twice
with one name and signature: @cuda.jit kernels (kernels_numba.gpu) and a CPU
twin (kernels_numba.cpu). `ops` validates and dispatches on the buffers' device.
Imports and runs on machines without any CUDA driver.
"""

import os

from kernels_numba import _blas

# OpenBLAS at one thread per call; kernels_numba.cpu.gemm splits GEMMs itself.
BLAS_THREADS = _blas.configure()

if _blas.sgemm_function() is None:
    # BLAS keeps its own threads: numba's OpenMP threads must then sleep right after each
    # loop, or they hold the cores the next BLAS call needs (conv fwd+bwd 2x slower on
    # 2 cores). With the split GEMM numba's pool does all the work, and the default short
    # spin before sleeping wins (no wake-up latency between loops: CNN step 10-40% faster
    # on 2 cores, more when another process is busy).
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

from kernels_numba import ops  # noqa: E402,F401
from kernels_numba.device import (  # noqa: E402,F401
    CPU,
    CUDA,
    allocation_count,
    check_cuda_available,
    copy_from_host,
    cuda_available,
    cuda_status,
    device_of,
    empty,
    resolve_device,
    synchronize,
    to_device,
    to_host,
    zeros,
)

from kernels_numba._cuda import LaunchRecord, record_launches  # noqa: E402,F401

__version__ = "0.1.0"
