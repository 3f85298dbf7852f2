"""CPU twin of kernels_numba.ops.optim_factored (validated arguments only): Adafactor's
update on the (B, R, C) view, serial float32 loops (a variable's update is a few passes
over it; the CUDA kernel's sums are one block's tree, so the two agree to rounding)."""

import numba
import numpy as np

_ONE = np.float32(1.0)
_ZERO = np.float32(0.0)


@numba.njit(cache=True, error_model="numpy")
def _adafactor(w, g, r, c, v, ws, s, eps1, eps2, clip, factored, zero_grad):
    rho, beta, decay = s[0], s[1], s[2]
    nb, nr, nc = w.shape
    n = np.float32(nb * nr * nc)
    acc = _ZERO
    for b in range(nb):
        for i in range(nr):
            for j in range(nc):
                x = w[b, i, j] - w[b, i, j] * decay
                w[b, i, j] = x
                acc += x * x
    alpha = max(eps2, np.sqrt(acc / n)) * rho
    keep = _ONE - beta
    if factored:
        for b in range(nb):
            for i in range(nr):
                t = _ZERO
                for j in range(nc):
                    t += g[b, i, j] * g[b, i, j] + eps1
                r[b, i] = beta * r[b, i] + keep * (t / np.float32(nc))
            for j in range(nc):
                t = _ZERO
                for i in range(nr):
                    t += g[b, i, j] * g[b, i, j] + eps1
                c[b, j] = beta * c[b, j] + keep * (t / np.float32(nr))
            t = _ZERO
            for i in range(nr):
                t += r[b, i]
            ws[b] = t / np.float32(nr)
            for i in range(nr):
                for j in range(nc):
                    v[b, i, j] = (r[b, i] / ws[b]) * c[b, j]
    else:
        for b in range(nb):
            for i in range(nr):
                for j in range(nc):
                    v[b, i, j] = beta * v[b, i, j] + keep * (g[b, i, j] * g[b, i, j] + eps1)
    acc = _ZERO
    for b in range(nb):
        for i in range(nr):
            for j in range(nc):
                u = g[b, i, j] / np.sqrt(v[b, i, j])
                acc += u * u
    scale = max(_ONE, np.sqrt(acc / n) / clip)
    for b in range(nb):
        for i in range(nr):
            for j in range(nc):
                w[b, i, j] -= alpha * ((g[b, i, j] / np.sqrt(v[b, i, j])) / scale)
                if zero_grad:
                    g[b, i, j] = _ZERO


def views(w, g, r, c, v, workspace):
    """(B, R, C) views of w, g, v and (B, R), (B, C) ones of r and c (placeholders from
    the workspace when w has rank < 2); shared with the CUDA launcher."""
    shape = w.shape
    if len(shape) >= 2:
        nb = 1
        for d in shape[:len(shape) - 2]:
            nb *= d
        nr, nc = shape[len(shape) - 2], shape[len(shape) - 1]
        return (w.reshape(nb, nr, nc), g.reshape(nb, nr, nc), r.reshape(nb, nr),
                c.reshape(nb, nc), v.reshape(nb, nr, nc), True)
    n = w.size
    dummy = workspace[:1].reshape(1, 1)
    return (w.reshape(1, 1, n), g.reshape(1, 1, n), dummy, dummy, v.reshape(1, 1, n), False)


def adafactor_update(w, g, r, c, v, workspace, s, eps1, eps2, clip, zero_grad):
    w3, g3, r2, c2, v3, factored = views(w, g, r, c, v, workspace)
    _adafactor(w3, g3, r2, c2, v3, workspace, s, eps1, eps2, clip, factored, zero_grad)
