"""CUDA kernels for kernels_numba.ops.optim: one fused grid-stride kernel per parameter tensor.

The per-element math is kernels_numba.cpu.optim's `*_step` functions compiled as
device functions (one formula for both devices). Unused slots are passed as w.
"""

from kernels_numba._cuda import cuda, device_function, grid_1d, kernel, launch
from kernels_numba.cpu import optim as _math

F32_1D = "float32[::1]"
F32 = "float32"
B = "boolean"

# inline="always": compile_ptx without a driver cannot compile a separate device function.
_sgd_step = device_function(_math.sgd_step, inline="always")
_adam_step = device_function(_math.adam_step, inline="always")
_rmsprop_step = device_function(_math.rmsprop_step, inline="always")
_adagrad_step = device_function(_math.adagrad_step, inline="always")


# kernels


@kernel(f"void({F32_1D}, {F32_1D}, {F32_1D}, {F32}, {F32}, {B}, {B}, {F32}, {B})")
def _sgd_kernel(w, g, velocity, lr, momentum, nesterov, use_velocity, decay, zero_grad):
    for i in range(cuda.grid(1), w.size, cuda.gridsize(1)):
        _sgd_step(w, g, velocity, i, lr, momentum, nesterov, use_velocity, decay, zero_grad)


@kernel(f"void({F32_1D}, {F32_1D}, {F32_1D}, {F32_1D}, {F32}, {F32}, {F32}, {F32}, {F32}, {B})")
def _adam_kernel(w, g, m, v, alpha, one_minus_beta_1, one_minus_beta_2, epsilon, decay, zero_grad):
    for i in range(cuda.grid(1), w.size, cuda.gridsize(1)):
        _adam_step(
            w, g, m, v, i, alpha, one_minus_beta_1, one_minus_beta_2, epsilon, decay, zero_grad
        )


@kernel(
    f"void({F32_1D}, {F32_1D}, {F32_1D}, {F32_1D}, {F32_1D}, "
    f"{F32}, {F32}, {F32}, {F32}, {B}, {B}, {F32}, {B})"
)
def _rmsprop_kernel(
    w,
    g,
    velocity,
    momentum_buf,
    average_grad,
    lr,
    rho,
    momentum,
    epsilon,
    centered,
    use_momentum,
    decay,
    zero_grad,
):
    for i in range(cuda.grid(1), w.size, cuda.gridsize(1)):
        _rmsprop_step(
            w,
            g,
            velocity,
            momentum_buf,
            average_grad,
            i,
            lr,
            rho,
            momentum,
            epsilon,
            centered,
            use_momentum,
            decay,
            zero_grad,
        )


@kernel(f"void({F32_1D}, {F32_1D}, {F32_1D}, {F32}, {F32}, {F32}, {B})")
def _adagrad_kernel(w, g, accumulator, lr, epsilon, decay, zero_grad):
    for i in range(cuda.grid(1), w.size, cuda.gridsize(1)):
        _adagrad_step(w, g, accumulator, i, lr, epsilon, decay, zero_grad)


# launchers


def _flat(a):
    return a.reshape(a.size)


def _launch_flat(k, w, *args):
    grid, block = grid_1d(min(w.size, 65536 * 256))
    launch(k, grid, block, _flat(w), *args)


def sgd_update(w, g, velocity, *, lr, momentum, nesterov, decay, zero_grad):
    use_velocity = velocity is not None
    _launch_flat(
        _sgd_kernel,
        w,
        _flat(g),
        _flat(velocity if use_velocity else w),
        lr,
        momentum,
        nesterov,
        use_velocity,
        decay,
        zero_grad,
    )


def adam_update(
    w, g, m, v, *, alpha, one_minus_beta_1, one_minus_beta_2, epsilon, decay, zero_grad
):
    _launch_flat(
        _adam_kernel,
        w,
        _flat(g),
        _flat(m),
        _flat(v),
        alpha,
        one_minus_beta_1,
        one_minus_beta_2,
        epsilon,
        decay,
        zero_grad,
    )


def rmsprop_update(
    w, g, velocity, momentum_buf, average_grad, *, lr, rho, momentum, epsilon, centered, decay,
    zero_grad
):
    use_momentum = momentum_buf is not None
    _launch_flat(
        _rmsprop_kernel,
        w,
        _flat(g),
        _flat(velocity),
        _flat(momentum_buf if use_momentum else w),
        _flat(average_grad if centered else w),
        lr,
        rho,
        momentum,
        epsilon,
        centered,
        use_momentum,
        decay,
        zero_grad,
    )


def adagrad_update(w, g, accumulator, *, lr, epsilon, decay, zero_grad):
    _launch_flat(_adagrad_kernel, w, _flat(g), _flat(accumulator), lr, epsilon, decay, zero_grad)
