"""matmul, dot and tensordot on kernels_numba.ops.matmul (the GEMM the Dense layer uses).

matmul follows NumPy: 1-D operands are promoted (a row / a column) and dropped again;
N-D operands are stacks of matrices whose leading dims broadcast. An N-D x against a
2-D w (the custom-Dense case, `ops.matmul(x, w)`) is ONE GEMM over all rows, and so
are its two gradients; other stacks run one GEMM per matrix, and a gradient summed over
a broadcast stack accumulates in the GEMM (beta=1) in a fixed order. dot follows
np.dot (the last axis of x against the second-to-last of y).
"""

import itertools

import numpy as np

from kernels_numba import ops as K
from kerasish.ops.dispatch import broadcast_shapes, dims, is_batched, run
from kerasish.ops.operation import Operation, as_tensor, is_symbolic
from kerasish.tape import recording


class MatmulOp(Operation):
    def compute_output_shape(self, input_shape):
        a, b = (tuple(s) for s in input_shape)
        if not a or not b:
            raise ValueError(f"ops.matmul: expected inputs of rank >= 1; received shapes "
                             f"{a} and {b}")
        a2 = (1, *a) if len(a) == 1 else a
        b2 = (*b, 1) if len(b) == 1 else b
        if a2[-1] != b2[-2] or a2[-1] is None:
            raise ValueError(f"ops.matmul: the last axis of x1 {a} must match the "
                             f"{'only' if len(b) == 1 else 'second-to-last'} axis of x2 {b}")
        batch = broadcast_shapes("matmul", a2[:-2], b2[:-2]) if len(a2) > 2 or len(b2) > 2 \
            else ()
        out = (*batch, a2[-2], b2[-1])
        if len(a) == 1:
            out = (*out[:-2], out[-1])
        if len(b) == 1:
            out = out[:-1]
        self.flat = len(b) <= 2  # x (..., K) @ w: one GEMM over all rows of x
        return out

    def scratch_shapes(self, batch_size):
        a, b = (dims(s, batch_size) for s in self.input_shape)
        k = a[-1]
        m = int(np.prod(a[:-1], dtype=np.int64)) if self.flat else (a[-2] if len(a) > 1 else 1)
        n = b[-1] if len(b) > 1 else 1
        size = max(K.matmul_workspace_shape(m, n, k)[0], K.matmul_workspace_shape(m, k, n)[0],
                   K.matmul_workspace_shape(k, n, m)[0])
        return {"workspace": ((size,), np.float32)}

    def _ws(self):
        return self.scratch.get("workspace") if self.scratch else None

    def forward(self, y, x, training):
        a, b = x
        ws = self._ws()
        if self.flat:
            k = a.shape[a.ndim - 1]
            n = b.shape[1] if b.ndim == 2 else 1
            K.matmul(y.reshape((y.size // n, n)), a.reshape((a.size // k, k)),
                     b.reshape((k, n)), workspace=ws)
            return
        for ia, ib, iy, sa, sb, sy in self._stacks(a, b, y):
            K.matmul(y.reshape(sy)[iy], a.reshape(sa)[ia], b.reshape(sb)[ib], workspace=ws)

    def backward(self, dx, dy, x, y):
        a, b = x
        da, db = dx
        ws = self._ws()
        if self.flat:
            k = a.shape[a.ndim - 1]
            n = b.shape[1] if b.ndim == 2 else 1
            a2, g2 = a.reshape((a.size // k, k)), dy.reshape((dy.size // n, n))
            if da is not None:
                K.matmul(da.reshape(a2.shape), g2, b.reshape((k, n)), trans_b=True, workspace=ws)
            if db is not None:
                K.matmul(db.reshape((k, n)), a2, g2, trans_a=True, workspace=ws)
            return
        seen_a, seen_b = set(), set()
        for ia, ib, iy, sa, sb, sy in self._stacks(a, b, dy):
            g = dy.reshape(sy)[iy]
            if da is not None:
                K.matmul(da.reshape(sa)[ia], g, b.reshape(sb)[ib], trans_b=True,
                         beta=1.0 if ia in seen_a else 0.0, workspace=ws)
                seen_a.add(ia)
            if db is not None:
                K.matmul(db.reshape(sb)[ib], a.reshape(sa)[ia], g, trans_a=True,
                         beta=1.0 if ib in seen_b else 0.0, workspace=ws)
                seen_b.add(ib)

    @staticmethod
    def _stacks(a, b, y):
        """(a index, b index, y index, a/b/y shapes as stacks of matrices) per matrix."""
        a2 = (1, *a.shape) if a.ndim == 1 else tuple(a.shape)
        b2 = (*b.shape, 1) if b.ndim == 1 else tuple(b.shape)
        batch = np.broadcast_shapes(a2[:-2], b2[:-2])
        pad_a = (1,) * (len(batch) - len(a2[:-2])) + a2[:-2]
        pad_b = (1,) * (len(batch) - len(b2[:-2])) + b2[:-2]
        sa = (int(np.prod(pad_a)), *a2[-2:])
        sb = (int(np.prod(pad_b)), *b2[-2:])
        sy = (int(np.prod(batch)), a2[-2], b2[-1])
        for iy, idx in enumerate(itertools.product(*[range(n) for n in batch])):
            ia = int(np.ravel_multi_index([i if s > 1 else 0 for i, s in zip(idx, pad_a)],
                                          pad_a)) if pad_a else 0
            ib = int(np.ravel_multi_index([i if s > 1 else 0 for i, s in zip(idx, pad_b)],
                                          pad_b)) if pad_b else 0
            yield ia, ib, iy, sa, sb, sy


def matmul(x1, x2):
    return run(MatmulOp(), [x1, x2], as_list=True)


def dot(x1, x2):
    """np.dot: scalars multiply; x2 of rank <= 2 is matmul; a higher-rank x2 contracts
    its second-to-last axis (moved first, flattened, one matmul, reshaped)."""
    from kerasish.ops.elementwise import multiply
    from kerasish.ops.shapes import reshape, transpose

    x1, x2 = _tensors(*recording.align(x1, x2))  # a GradientTape's arrays
    s1, s2 = _shape(x1), _shape(x2)
    if not s1 or not s2:
        return multiply(x1, x2)
    if len(s2) <= 2:
        return matmul(x1, x2)
    if is_batched(s2):
        raise ValueError(f"ops.dot: a batched x2 {s2} of rank > 2 would put its batch axis "
                         f"inside the result; use ops.matmul")
    perm = (len(s2) - 2, *range(len(s2) - 2), len(s2) - 1)
    moved = reshape(transpose(x2, perm), (s2[-2], int(np.prod([s2[d] for d in perm[1:]]))))
    out = matmul(x1, moved)
    return reshape(out, (*(-1 if s is None else s for s in s1[:-1]), *s2[:-2], s2[-1]))


def _tensors(x1, x2):
    """Both as graph tensors when either is symbolic: a weight (Variable) reshaped or
    transposed here must be read each run, not copied into the graph as a constant."""
    if not is_symbolic(x1, x2):
        return x1, x2
    return as_tensor(x1), as_tensor(x2)


def _shape(x):
    return tuple(x.shape) if hasattr(x, "shape") else np.shape(x)


def tensordot(x1, x2, axes=2):
    """np.tensordot: `axes` an int N (the last N axes of x1 against the first N of x2) or
    a pair of axis lists. x1's free axes are moved first (its contracted ones flattened
    last) and x2's contracted axes first (x2 flattened to a matrix): one matmul, reshaped
    to x1's free then x2's free axes.
    A None batch may be a free axis of x1 only."""
    from kerasish.ops.dispatch import axis_of
    from kerasish.ops.shapes import reshape, transpose

    x1, x2 = _tensors(*recording.align(x1, x2))  # a GradientTape's arrays
    s1, s2 = _shape(x1), _shape(x2)
    if isinstance(axes, (int, np.integer)) and not isinstance(axes, bool):
        if not 0 <= axes <= min(len(s1), len(s2)):
            raise ValueError(f"ops.tensordot: expected axes in [0, {min(len(s1), len(s2))}] "
                             f"for shapes {s1} and {s2}; received axes={axes}")
        a1, a2 = list(range(len(s1) - axes, len(s1))), list(range(int(axes)))
    else:
        try:
            a1, a2 = ([axes[i]] if isinstance(axes[i], (int, np.integer)) else list(axes[i])
                      for i in (0, 1))
        except (TypeError, IndexError):
            raise ValueError(f"ops.tensordot: expected axes to be an int or a pair of axis "
                             f"lists; received axes={axes!r}") from None
        a1 = [axis_of("tensordot", a, len(s1), "axes[0]") for a in a1]
        a2 = [axis_of("tensordot", a, len(s2), "axes[1]") for a in a2]
    if len(a1) != len(a2) or any(s1[i] != s2[j] or s1[i] is None for i, j in zip(a1, a2)):
        raise ValueError(f"ops.tensordot: the contracted axes must have equal, known sizes; "
                         f"received shapes {s1} (axes {a1}) and {s2} (axes {a2})")
    free1 = [d for d in range(len(s1)) if d not in a1]
    free2 = [d for d in range(len(s2)) if d not in a2]
    if any(s2[d] is None for d in free2) or any(s1[d] is None for d in free1[1:]) or \
            (free1 and s1[free1[0]] is None and free1[0] != 0):
        raise ValueError(f"ops.tensordot: a None (batch) size may only be x1's first, free "
                         f"axis; received shapes {s1} and {s2} with axes {a1}, {a2}")
    k = int(np.prod([s1[d] for d in a1], dtype=np.int64))
    n = int(np.prod([s2[d] for d in free2], dtype=np.int64))
    lead = tuple(-1 if s1[d] is None else s1[d] for d in free1)
    m1 = x1 if free1 + a1 == list(range(len(s1))) else transpose(x1, (*free1, *a1))
    m2 = x2 if a2 + free2 == list(range(len(s2))) else transpose(x2, (*a2, *free2))
    # x1 keeps its free axes (one GEMM over all their rows, the batch included)
    m1 = m1 if tuple(_shape(m1)) == (*(s1[d] for d in free1), k) else \
        reshape(m1, (*lead, k) if lead else (1, k))
    m2 = m2 if tuple(_shape(m2)) == (k, n) else reshape(m2, (k, n))
    out = matmul(m1, m2)
    return reshape(out, (*lead, *(s2[d] for d in free2)))
