"""CUDA kernels for kernels_numba.ops.dropout: grid-stride loops over flat views.

The RNG is kernels_numba.cpu.dropout.hash_uniform compiled as a device function:
a pure function of (key, flat index), so the mask is the CPU twin's for any launch.
With use_steps the key argument is the seed and the key is step_key(seed, steps[0],
steps[1]), computed by each thread from the uint32 steps buffer (same key as the host's).
"""

from numba import float32, uint64

from kernels_numba._cuda import cuda, device_function, grid_1d, kernel, launch
from kernels_numba.cpu import dropout as _rng

F32_1D = "float32[::1]"

# inline="always": compile_ptx without a driver cannot compile a separate device function.
_hash_uniform = device_function(_rng.hash_uniform, inline="always")
_step_key = device_function(_rng.step_key, inline="always")
_ZERO = float32(0.0)


# kernels


@device_function
def resolve_key(key, use_steps, steps):
    if use_steps:
        return _step_key(key, uint64(steps[0]), uint64(steps[1]))
    return key


@kernel(f"void({F32_1D}, {F32_1D}, {F32_1D}, float32, float32, uint64, boolean, uint32[::1])")
def _dropout_forward_kernel(y, mask, x, rate, keep_scale, key, use_steps, steps):
    key = resolve_key(key, use_steps, steps)
    for i in range(cuda.grid(1), x.size, cuda.gridsize(1)):
        m = keep_scale if _hash_uniform(key, i) >= rate else _ZERO
        mask[i] = m
        y[i] = x[i] * m


@kernel(f"void({F32_1D}, {F32_1D}, {F32_1D})")
def _dropout_backward_kernel(dx, dy, mask):
    for i in range(cuda.grid(1), dx.size, cuda.gridsize(1)):
        dx[i] = dy[i] * mask[i]


# launchers


def _flat(a):
    return a.reshape(a.size)


def _launch_flat(k, y, *args):
    grid, block = grid_1d(min(y.size, 65536 * 256))
    launch(k, grid, block, _flat(y), *args)


_no_steps = []


def steps_args(key, steps):
    """(key, use_steps, steps) kernel arguments; a by-value call gets a stand-in buffer
    (allocated once per process, never read)."""
    if steps is None:
        if not _no_steps:
            from kernels_numba import device

            _no_steps.append(device.to_device(_rng.NO_STEPS, device.CUDA))
        return uint64(key), False, _no_steps[0]
    return uint64(key), True, steps


def dropout_forward(y, mask, x, rate, keep_scale, key, steps=None):
    _launch_flat(_dropout_forward_kernel, y, _flat(mask), _flat(x), rate, keep_scale,
                 *steps_args(key, steps))


def dropout_backward(dx, dy, mask):
    _launch_flat(_dropout_backward_kernel, dx, _flat(dy), _flat(mask))
