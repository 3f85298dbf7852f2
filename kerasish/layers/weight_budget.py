"""A cap on the weight bytes layers may create while a model is built from a file:
`add_weight` checks each weight's declared size against what is left before
allocating it, so a 19 KB config declaring a 4 GB Dense is refused before the 4 GB
exist (kerasish.saving sets the cap from the file; nothing is capped otherwise)."""

import contextlib
import contextvars

_BUDGET = contextvars.ContextVar("kerasish_weight_budget", default=None)


class _Budget:
    def __init__(self, limit, why):
        self.limit, self.why, self.used = int(limit), why, 0


@contextlib.contextmanager
def limit(nbytes, why):
    """Within the block, layers may create at most `nbytes` of weights in all; `why`
    ends the error message (the file and the limit's origin)."""
    token = _BUDGET.set(_Budget(nbytes, why))
    try:
        yield
    finally:
        _BUDGET.reset(token)


def take(layer, name, shape, nbytes):
    """Count one weight about to be allocated; ValueError when over the cap."""
    budget = _BUDGET.get()
    if budget is None:
        return
    if budget.used + nbytes > budget.limit:
        raise ValueError(
            f"Layer '{layer.name}': weight '{name}' of shape {tuple(shape)} ({nbytes:,} "
            f"bytes) would bring the model's weights to {budget.used + nbytes:,} bytes, "
            f"over the {budget.limit:,} allowed: {budget.why}")
    budget.used += nbytes
