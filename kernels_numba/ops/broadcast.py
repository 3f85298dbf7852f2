"""Broadcasting elementwise ops: y = a (op) b and y = where(cond, a, b) under NumPy's
broadcasting rules, and their gradients.

Inputs have any shapes that broadcast (right-aligned, size 1 stretches); y has the
broadcast shape. Backward applies the elementwise rule and sums over the axes each
input was broadcast along, as a gather (one thread per gradient element walks its
broadcast axes: no atomics, fixed order). Gradients are overwritten.

`kind` is one of BINARY_KINDS. Comparisons write 1.0 or 0.0 (NaN compares false,
not_equal true) and have no gradient. maximum/minimum propagate NaN and follow
ops.merge's backward (ties split dy in halves; NaN on either side: both take dy).
power's b-gradient is dy * y * log(a), 0 where a == 0 and b >= 0 (torch's rule).
"""

from kernels_numba import _check, _strided
from kernels_numba.dispatch import impl

__all__ = ["broadcast_shape", "broadcast_binary", "broadcast_binary_backward",
           "broadcast_where", "broadcast_where_backward", "BINARY_KINDS"]
FAMILY = "broadcast"

BINARY_CODES = {
    "add": 0, "subtract": 1, "multiply": 2, "divide": 3, "power": 4, "maximum": 5,
    "minimum": 6, "equal": 7, "not_equal": 8, "less": 9, "less_equal": 10, "greater": 11,
    "greater_equal": 12,
}
WHERE_CODE = 13  # backward rule of where: dy routed by cond (operand a is cond)
BINARY_KINDS = tuple(BINARY_CODES)
COMPARISONS = ("equal", "not_equal", "less", "less_equal", "greater", "greater_equal")


def broadcast_shape(op, *shapes):
    """The NumPy broadcast of `shapes`; ValueError naming op and shapes when they clash."""
    nd = max((len(s) for s in shapes), default=0)
    out = []
    for d in range(nd):
        size = 1
        for s in shapes:
            k = d - (nd - len(s))
            if k < 0 or s[k] == 1:
                continue
            if size != 1 and s[k] != size:
                raise ValueError(f"{op}: incompatible shapes for broadcasting: "
                                 f"{' and '.join(str(tuple(x)) for x in shapes)}")
            size = s[k]
        out.append(size)
    return tuple(out)


_metas = {}


def gather_meta(op, space, target, operands):
    """Descriptor over index space `space`: kept dims are those `target` (broadcastable
    to space) spans, reduced dims those it is broadcast along; operand strides are the
    operands' broadcast strides over space. Cached by shapes."""
    key = (op, tuple(space), tuple(target), tuple(tuple(s) for s in operands))
    meta = _metas.get(key)
    if meta is None:
        tstr = _strided.broadcast_strides(target, space)
        ostr = [_strided.broadcast_strides(s, space) for s in operands]
        kept, reduced = [], []
        for d, size in enumerate(space):
            dim = (size, [s[d] for s in ostr])
            (kept if tstr[d] != 0 or size == 1 else reduced).append(dim)
        meta = _metas[key] = _strided.describe(op, kept, reduced, len(operands))
    return meta


def _code(op, kind):
    code = BINARY_CODES.get(kind)
    if code is None:
        raise ValueError(f"{op}: expected kind in {list(BINARY_KINDS)}; received {kind!r}")
    return code


def broadcast_binary(y, a, b, *, kind):
    """y = a (kind) b with broadcasting.

    Args:
        y: float32, the broadcast shape of a and b (may not overlap a or b unless equal
            to one of them in shape).
        a, b: float32, any broadcastable shapes.
        kind: one of BINARY_KINDS.
    """
    op = "broadcast_binary"
    code = _code(op, kind)
    sa = _check.array(op, "a", a)
    sb = _check.array(op, "b", b)
    plan = _forward_plans.get((sa, sb))
    if plan is None:
        shape = broadcast_shape(op, sa, sb)
        plan = _forward_plans[(sa, sb)] = (shape, gather_meta(op, shape, shape, (sa, sb)))
    _check.array(op, "y", y, shape=plan[0])
    impl(op, FAMILY, y=y, a=a, b=b)(y, a, b, plan[1], code)


_forward_plans = {}  # (a.shape, b.shape) -> (y shape, descriptor)


def broadcast_binary_backward(da, db, dy, a, b, *, kind):
    """Gradients of y = a (kind) b, reduced to each input's shape and overwritten.

    Args:
        da, db: float32 of a's / b's shape, or None (not needed).
        dy: float32, the broadcast shape.
        a, b: float32, the forward inputs.
        kind: one of BINARY_KINDS (comparisons give zeros).
    """
    op = "broadcast_binary_backward"
    code = _code(op, kind)
    sa = _check.array(op, "a", a)
    sb = _check.array(op, "b", b)
    shape = _check.array(op, "dy", dy, shape=broadcast_shape(op, sa, sb))
    for which, (name, target, tshape) in enumerate((("da", da, sa), ("db", db, sb))):
        if target is None:
            continue
        _check.array(op, name, target, shape=tshape)
        meta = gather_meta(op, shape, tshape, (shape, sa, sb))
        impl(op, FAMILY, t=target, dy=dy, a=a, b=b)(target, dy, a, b, meta, code, which)


def broadcast_where(y, cond, a, b):
    """y = a where cond != 0 (NaN counts as true) else b, with broadcasting.

    Args:
        y: float32, the broadcast shape of cond, a and b.
        cond, a, b: float32, any broadcastable shapes.
    """
    op = "broadcast_where"
    sc = _check.array(op, "cond", cond)
    sa = _check.array(op, "a", a)
    sb = _check.array(op, "b", b)
    _check.array(op, "y", y, shape=broadcast_shape(op, sc, sa, sb))
    meta = gather_meta(op, y.shape, y.shape, (sc, sa, sb))
    impl(op, FAMILY, y=y, cond=cond, a=a, b=b)(y, cond, a, b, meta)


def broadcast_where_backward(da, db, dy, cond):
    """Gradients of y = where(cond, a, b), overwritten: da = dy where cond, db = dy
    elsewhere, each summed to its own shape (passed by the buffer).

    Args:
        da, db: float32 of a's / b's shape (broadcastable to dy), or None.
        dy: float32, the broadcast shape.
        cond: float32, broadcastable to dy.
    """
    op = "broadcast_where_backward"
    sc = _check.array(op, "cond", cond)
    shape = _check.array(op, "dy", dy)
    for which, (name, target) in enumerate((("da", da), ("db", db))):
        if target is None:
            continue
        tshape = _check.array(op, name, target)
        if broadcast_shape(op, tshape, sc, shape) != tuple(shape):
            raise ValueError(f"{op}: expected {name} and cond to broadcast to dy's shape "
                             f"{tuple(shape)}; received {name} {tshape}, cond {sc}")
        meta = gather_meta(op, shape, tshape, (shape, sc, sc))
        impl(op, FAMILY, t=target, dy=dy, c=cond)(target, dy, cond, cond, meta,
                                                  WHERE_CODE, which)
