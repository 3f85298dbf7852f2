"""Optimizer updates (Keras 3 formulas), one fused kernel per parameter tensor.

w, g and every slot buffer have the same shape (any), float32, C-contiguous; the
kernels see them flattened. The host folds step-dependent scalars (Adam's
alpha = lr*sqrt(1-beta_2**t)/(1-beta_1**t)) in float64 to float32.

Per-step scalars: the kernels read every value that changes from step to step (the
learning rate, Adam's alpha, decay = weight_decay*lr, ...) from a small float32 buffer
`scalars` on w's device, never as kernel arguments, so one recorded launch (or a CUDA
graph) replays unchanged on every step. A caller that steps repeatedly (an Optimizer)
fills a host array with `<op>_scalars(out, ...)` (layouts: SCALARS), copies it once
per step into the buffer (`StepScalars`), and passes `scalars=`. Without `scalars`,
an op takes lr/step by value and fills a shared scratch buffer itself (a synchronous
copy on CUDA: fine for one-off calls, not for a training loop). Constant
hyperparameters (betas, epsilon, rho, momentum, clipvalue) stay by-value arguments.
`zero_grad=True` also sets g = 0 in the same kernel (saves a launch per tensor).
`weight_decay` (every op): Keras 3's decoupled decay, w -= w * weight_decay * lr before
the update (its base optimizer applies it so for every optimizer; AdamW is Adam with it).
Slots that decay (momentum velocities, first and second moments, RMSprop's averages,
Adadelta's accumulators, Lion's m) store a value below float32's smallest normal
(1.18e-38) as 0 on both devices, as TensorFlow's CPU kernels flush to zero: a denormal
slot makes every later x86 update of it take microcode assists (10x the reference CNN's
Adam step), while the weight it would move is below its own rounding. NaN and Inf are
kept.

Gradient clipping, fused (every op takes these keywords; at most one of the two):
- `clipvalue=c`: each gradient element clipped to [-c, c] (Keras clipvalue).
- `grad_scale=s`: a float32 device buffer the kernel reads (no host round trip):
  with `segments=None`, s has one element and every gradient is multiplied by s[0]
  (global_clipnorm, or one variable's clipnorm); with `segments` (int64 (K, 2): sorted,
  non-overlapping [start, end) ranges of the flat buffer, one per variable of a
  parameter block), element i of segment k is multiplied by s[k], and elements in no
  segment (alignment gaps) read 0. ops.sum_squares + ops.clip_norm_scales make s.
"""

import math

import numpy as np

from kernels_numba import _check, _cuda
from kernels_numba import device as kdevice
from kernels_numba.dispatch import impl

__all__ = ["sgd_update", "adam_update", "rmsprop_update", "adagrad_update", "grad_transform",
           "sgd_scalars", "adam_scalars", "rmsprop_scalars", "adagrad_scalars", "StepScalars",
           "SCALARS"]
FAMILY = "optim"

# What each update reads from its `scalars` buffer, in order (optim_more adds its own).
SCALARS = {
    "sgd_update": ("lr", "decay"),
    "adam_update": ("alpha", "decay"),
    "rmsprop_update": ("lr", "decay"),
    "adagrad_update": ("lr", "decay"),
}


def _number(op, name, value, expected, ok):
    """float(value), checked finite and ok(value); `expected` words the rule for the error."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"{op}: expected {name} to be a number; received {value!r}") from None
    if not (math.isfinite(v) and ok(v)):
        raise ValueError(f"{op}: expected {name} {expected}; received {value!r}")
    return v


def _nonnegative(op, name, value):
    return _number(op, name, value, ">= 0", lambda v: v >= 0.0)


def _unit(op, name, value):
    return _number(op, name, value, "in [0, 1]", lambda v: 0.0 <= v <= 1.0)


def _beta(op, name, value):
    return _number(op, name, value, "in [0, 1)", lambda v: 0.0 <= v < 1.0)


def _compute_stream():
    """The stream kernels launch on (where the per-step copy must be ordered), or None
    in the simulator (its copies are synchronous anyway)."""
    stream = getattr(_cuda, "compute_stream", None)
    if stream is not None:
        return stream()
    return None if _cuda.SIMULATOR else _cuda.cuda.default_stream()


class StepScalars:
    """A per-step scalar buffer: `buffer` (on `device`, what the kernels read) and the
    host array to fill each step (`host()`), sent with ONE asynchronous copy (`upload()`).

    CUDA: `turns` (2) pinned host arrays used in turn, each guarded by an Event recorded
    after its copy, so a host array is never rewritten while its copy may still be
    pending (the host may run up to `turns` steps ahead of the device). CPU: the buffer
    is the host array itself (no copy at all). `buffer` never changes: launches that
    read it stay valid on every step. Any dtype (uint32 for ops.dropout's steps).
    """

    def __init__(self, size, device=kdevice.CPU, dtype=np.float32, turns=2):
        self.size, self.device = int(size), device
        self.buffer = kdevice.zeros((self.size,), dtype, device)
        if device == kdevice.CPU:
            self._hosts, self._events = [self.buffer], [None]
        else:  # turns=1: one fixed host array (e.g. a copy captured into a CUDA graph)
            self._hosts = [kdevice.pinned_empty((self.size,), dtype, device)
                           for _ in range(turns)]
            self._events = [kdevice.Event(device) for _ in range(turns)]
        self._turn = 0

    def host(self):
        """The host array for the next upload (its previous copy is known finished)."""
        event = self._events[self._turn]
        if event is not None:
            event.synchronize()
        return self._hosts[self._turn]

    def upload(self):
        """Issue the copy of host() into buffer, ordered before later launches."""
        if self.device == kdevice.CPU:
            return
        stream = _compute_stream()
        kdevice.copy_from_host_async(self.buffer, self._hosts[self._turn], stream)
        self._events[self._turn].record(stream)
        self._turn = (self._turn + 1) % len(self._hosts)


_scratch = {}  # (device, size) -> the buffer of by-value calls


def _scalars(op, w, scalars, fill, **values):
    """The buffer an update reads: `scalars` checked, or (by-value call) a scratch buffer
    filled from `values` by `fill`."""
    names = SCALARS[op]
    if scalars is not None:
        given = sorted(k for k, v in values.items() if v is not None)
        if given:
            raise ValueError(f"{op}: expected per-step values either in the scalars buffer or "
                             f"as arguments, not both; received scalars and {given}")
        _check.array(op, "scalars", scalars, shape=(len(names),))
        _check.same_device(op, w=w, scalars=scalars)
        return scalars
    device = kdevice.device_of(w)
    view = _scratch.get((device, len(names)))
    if view is None:  # one buffer per device and size, so the CPU twin's packing is reused
        view = _scratch[(device, len(names))] = kdevice.zeros((len(names),), np.float32, device)
    if device == kdevice.CPU:
        fill(view, **values)  # the CPU runs synchronously: the last call is done with it
        return view
    host = np.empty((len(names),), np.float32)
    fill(host, **values)
    kdevice.copy_from_host(view, host)  # synchronous: ordered after earlier launches
    return view


def _lr(op, lr):
    if lr is None:
        raise TypeError(f"{op}: expected lr (or a scalars buffer); received neither")
    return _nonnegative(op, "lr", lr)


def _step(op, step):
    if step is None:
        raise TypeError(f"{op}: expected step (or a scalars buffer); received neither")
    return _check.positive_int(op, "step", step)


def _decay_of(op, weight_decay, lr):
    return 0.0 if weight_decay is None else _nonnegative(op, "weight_decay", weight_decay) * lr


def sgd_scalars(out, *, lr, weight_decay=None, op="sgd_update"):
    """Fill out[:2] with sgd_update's per-step values (lr, weight_decay*lr)."""
    lr = _lr(op, lr)
    out[0] = lr
    out[1] = _decay_of(op, weight_decay, lr)


def rmsprop_scalars(out, *, lr, weight_decay=None):
    """Fill out[:2] with rmsprop_update's per-step values (lr, weight_decay*lr)."""
    sgd_scalars(out, lr=lr, weight_decay=weight_decay, op="rmsprop_update")


def adagrad_scalars(out, *, lr, weight_decay=None):
    """Fill out[:2] with adagrad_update's per-step values (lr, weight_decay*lr)."""
    sgd_scalars(out, lr=lr, weight_decay=weight_decay, op="adagrad_update")


def adam_scalars(out, *, lr, step, beta_1=0.9, beta_2=0.999, weight_decay=None):
    """Fill out[:2] with adam_update's per-step values: alpha =
    lr*sqrt(1-beta_2**step)/(1-beta_1**step) (in float64), weight_decay*lr."""
    op = "adam_update"
    lr, step = _lr(op, lr), _step(op, step)
    beta_1, beta_2 = _beta(op, "beta_1", beta_1), _beta(op, "beta_2", beta_2)
    out[0] = lr * math.sqrt(1.0 - beta_2**step) / (1.0 - beta_1**step)
    out[1] = _decay_of(op, weight_decay, lr)


def _buffers(op, w, **others):
    """Validate w and the buffers that must share its shape (None entries skipped)."""
    shape = _check.array(op, "w", w)
    for name, a in others.items():
        if a is not None:
            _check.array(op, name, a, shape=shape)


# grad_at modes of the kernels (kernels_numba.cpu.optim)
PLAIN, CLIP_VALUE, SCALE_ONE, SCALE_SEGMENTS = 0, 1, 2, 3


def grad_transform(op, w, clipvalue=None, grad_scale=None, segments=None):
    """(mode, clipvalue, scales, segments) for the kernels, checked: what an update op
    does to each gradient element before using it (see the module docstring)."""
    if clipvalue is not None and grad_scale is not None:
        raise ValueError(f"{op}: expected at most one of clipvalue and grad_scale; received "
                         f"clipvalue={clipvalue!r} and a grad_scale buffer")
    if clipvalue is not None:
        c = _number(op, "clipvalue", clipvalue, "> 0", lambda v: v > 0.0)
        return CLIP_VALUE, np.float32(c), None, None
    if grad_scale is None:
        if segments is not None:
            raise ValueError(f"{op}: expected segments only with a grad_scale buffer; "
                             f"received segments without grad_scale")
        return PLAIN, np.float32(0.0), None, None
    if segments is None:
        _check.array(op, "grad_scale", grad_scale, shape=(1,))
        _check.same_device(op, w=w, grad_scale=grad_scale)
        return SCALE_ONE, np.float32(0.0), grad_scale, None
    (k, _) = _check.array(op, "segments", segments, shape=(None, 2), dtype=np.int64)
    if k < 1:
        raise ValueError(f"{op}: expected at least one segment; received shape (0, 2)")
    _check.array(op, "grad_scale", grad_scale, shape=(k,))
    _check.same_device(op, w=w, grad_scale=grad_scale, segments=segments)
    if isinstance(segments, np.ndarray):  # device tables are checked when they are made
        _check_segments(op, segments, int(np.prod(_check.array(op, "w", w), dtype=np.int64)))
    return SCALE_SEGMENTS, np.float32(0.0), grad_scale, segments


def _check_segments(op, segments, size):
    starts, ends = segments[:, 0], segments[:, 1]
    if (starts < 0).any() or (ends > size).any() or (ends < starts).any() or \
            (starts[1:] < ends[:-1]).any():
        raise ValueError(f"{op}: expected segments as sorted, non-overlapping [start, end) "
                         f"ranges inside [0, {size}]; received {segments.tolist()[:8]}")


def sgd_update(w, g, velocity=None, *, lr=None, momentum=0.0, nesterov=False,
               weight_decay=None, zero_grad=False, clipvalue=None, grad_scale=None,
               segments=None, scalars=None):
    """SGD: w -= lr*g; with momentum m = momentum*m - lr*g, then w += m.

    Nesterov: m as above, then w += momentum*m - lr*g.

    Args:
        w: parameter, any shape, float32 (updated in place).
        g: gradient, same shape (set to 0 when zero_grad).
        velocity: momentum slot m, same shape, or None (only when momentum == 0).
        lr: learning rate >= 0 (per step: or in `scalars`).
        momentum: in [0, 1].
        nesterov: Nesterov momentum (needs velocity).
        weight_decay: >= 0, decoupled (w -= w*weight_decay*lr first); None = 0.
        zero_grad: also zero g.
        clipvalue, grad_scale, segments: gradient clipping (module docstring).
        scalars: float32 (2,) on w's device: (lr, weight_decay*lr), from sgd_scalars.
    """
    op = "sgd_update"
    _buffers(op, w, g=g, velocity=velocity)
    momentum = _unit(op, "momentum", momentum)
    if velocity is None and (momentum != 0.0 or nesterov):
        raise ValueError(
            f"{op}: expected a velocity buffer when momentum > 0 or nesterov; received None "
            f"(momentum={momentum}, nesterov={nesterov})"
        )
    scalars = _scalars(op, w, scalars, sgd_scalars, lr=lr, weight_decay=weight_decay)
    fn = impl(op, FAMILY, w=w, g=g, velocity=velocity)
    fn(w, g, velocity, scalars=scalars, momentum=np.float32(momentum), nesterov=bool(nesterov),
       zero_grad=bool(zero_grad), grad=grad_transform(op, w, clipvalue, grad_scale, segments))


def adam_update(w, g, m, v, *, lr=None, step=None, beta_1=0.9, beta_2=0.999, epsilon=1e-7,
                weight_decay=None, zero_grad=False, clipvalue=None, grad_scale=None,
                segments=None, scalars=None):
    """Adam (Keras epsilon-hat form); weight_decay > 0 gives AdamW's decoupled w -= w*wd*lr first.

    m += (g-m)*(1-beta_1); v += (g*g-v)*(1-beta_2); w -= m*alpha/(sqrt(v)+epsilon),
    alpha = lr*sqrt(1-beta_2**step)/(1-beta_1**step).

    Args:
        w: parameter, any shape, float32 (updated in place).
        g: gradient, same shape (set to 0 when zero_grad).
        m: first-moment slot, same shape.
        v: second-moment slot, same shape.
        lr: learning rate >= 0 (per step: or in `scalars`).
        step: t = iterations + 1 (positive int; or in `scalars`).
        beta_1: in [0, 1).
        beta_2: in [0, 1).
        epsilon: >= 0.
        weight_decay: >= 0 (AdamW); None = 0.
        zero_grad: also zero g.
        clipvalue, grad_scale, segments: gradient clipping (module docstring).
        scalars: float32 (2,) on w's device: (alpha, weight_decay*lr), from adam_scalars
            (with the same betas).
    """
    op = "adam_update"
    _buffers(op, w, g=g, m=m, v=v)
    beta_1 = _beta(op, "beta_1", beta_1)
    beta_2 = _beta(op, "beta_2", beta_2)
    epsilon = _nonnegative(op, "epsilon", epsilon)
    scalars = _scalars(op, w, scalars,
                       lambda out, **k: adam_scalars(out, beta_1=beta_1, beta_2=beta_2, **k),
                       lr=lr, step=step, weight_decay=weight_decay)
    fn = impl(op, FAMILY, w=w, g=g, m=m, v=v)
    fn(w, g, m, v, scalars=scalars, one_minus_beta_1=np.float32(1.0 - beta_1),
       one_minus_beta_2=np.float32(1.0 - beta_2), epsilon=np.float32(epsilon),
       zero_grad=bool(zero_grad), grad=grad_transform(op, w, clipvalue, grad_scale, segments))


def rmsprop_update(w, g, velocity, momentum_buf=None, average_grad=None, *, lr=None, rho=0.9,
                   momentum=0.0, epsilon=1e-7, centered=False, weight_decay=None,
                   zero_grad=False, clipvalue=None, grad_scale=None, segments=None,
                   scalars=None):
    """RMSprop (Keras): v = rho*v + (1-rho)*g*g; inc = lr*g/sqrt(den), den = v + eps
    (centered: a = rho*a + (1-rho)*g, den = v - a*a + eps); momentum: mom = momentum*mom + inc,
    w -= mom; else w -= inc.

    Args:
        w: parameter, any shape, float32 (updated in place).
        g: gradient, same shape (set to 0 when zero_grad).
        velocity: mean-square slot v, same shape.
        momentum_buf: momentum slot, same shape; required when momentum > 0, else ignored.
        average_grad: mean-gradient slot a, same shape; required when centered, else ignored.
        lr: learning rate >= 0 (per step: or in `scalars`).
        rho: in [0, 1].
        momentum: in [0, 1].
        epsilon: >= 0.
        centered: center the second moment.
        weight_decay: >= 0, decoupled (w -= w*weight_decay*lr first); None = 0.
        zero_grad: also zero g.
        clipvalue, grad_scale, segments: gradient clipping (module docstring).
        scalars: float32 (2,) on w's device: (lr, weight_decay*lr), from rmsprop_scalars.
    """
    op = "rmsprop_update"
    rho = _unit(op, "rho", rho)
    momentum = _unit(op, "momentum", momentum)
    epsilon = _nonnegative(op, "epsilon", epsilon)
    if momentum > 0.0 and momentum_buf is None:
        raise ValueError(f"{op}: expected a momentum_buf buffer when momentum > 0; received None")
    if centered and average_grad is None:
        raise ValueError(f"{op}: expected an average_grad buffer when centered=True; received None")
    momentum_buf = momentum_buf if momentum > 0.0 else None
    average_grad = average_grad if centered else None
    _buffers(op, w, g=g, velocity=velocity, momentum_buf=momentum_buf, average_grad=average_grad)
    scalars = _scalars(op, w, scalars, rmsprop_scalars, lr=lr, weight_decay=weight_decay)
    fn = impl(op, FAMILY, w=w, g=g, velocity=velocity, momentum_buf=momentum_buf,
              average_grad=average_grad)
    fn(w, g, velocity, momentum_buf, average_grad, scalars=scalars, rho=np.float32(rho),
       momentum=np.float32(momentum), epsilon=np.float32(epsilon), centered=bool(centered),
       zero_grad=bool(zero_grad), grad=grad_transform(op, w, clipvalue, grad_scale, segments))


def adagrad_update(w, g, accumulator, *, lr=None, epsilon=1e-7, weight_decay=None,
                   zero_grad=False, clipvalue=None, grad_scale=None, segments=None,
                   scalars=None):
    """Adagrad (Keras): acc += g*g; w -= lr*g/sqrt(acc + epsilon).

    Args:
        w: parameter, any shape, float32 (updated in place).
        g: gradient, same shape (set to 0 when zero_grad).
        accumulator: slot, same shape (Keras starts it at 0.1).
        lr: learning rate >= 0 (per step: or in `scalars`).
        epsilon: >= 0.
        weight_decay: >= 0, decoupled (w -= w*weight_decay*lr first); None = 0.
        zero_grad: also zero g.
        clipvalue, grad_scale, segments: gradient clipping (module docstring).
        scalars: float32 (2,) on w's device: (lr, weight_decay*lr), from adagrad_scalars.
    """
    op = "adagrad_update"
    _buffers(op, w, g=g, accumulator=accumulator)
    epsilon = _nonnegative(op, "epsilon", epsilon)
    scalars = _scalars(op, w, scalars, adagrad_scalars, lr=lr, weight_decay=weight_decay)
    fn = impl(op, FAMILY, w=w, g=g, accumulator=accumulator)
    fn(w, g, accumulator, scalars=scalars, epsilon=np.float32(epsilon), zero_grad=bool(zero_grad),
       grad=grad_transform(op, w, clipvalue, grad_scale, segments))


# Nadam, Adamax, Adadelta, Lion, Ftrl, Adafactor and the gradient norms live in their own family
# files (size); they are part of the optimizer ops, so this module exports them too.
from kernels_numba.ops.norms import *  # noqa: E402,F401,F403
from kernels_numba.ops.norms import __all__ as _norms_all  # noqa: E402
from kernels_numba.ops.optim_more import *  # noqa: E402,F401,F403
from kernels_numba.ops.optim_more import LAYOUTS as _more_layouts  # noqa: E402
from kernels_numba.ops.optim_more import __all__ as _more_all  # noqa: E402

from kernels_numba.ops.optim_factored import *  # noqa: E402,F401,F403
from kernels_numba.ops.optim_factored import LAYOUTS as _factored_layouts  # noqa: E402
from kernels_numba.ops.optim_factored import __all__ as _factored_all  # noqa: E402

SCALARS.update(_more_layouts)
SCALARS.update(_factored_layouts)

__all__ = __all__ + list(_norms_all) + list(_more_all) + list(_factored_all)
