"""kerasish.GradientTape (TensorFlow's tape API) over the engine's reverse mode.

Loaded lazily: graph/nodes.py and the ops import `kerasish.tape.recording` (small, no
engine imports) while the engine itself is still importing."""


def __getattr__(name):
    if name in ("GradientTape", "UnconnectedGradients"):
        from kerasish.tape import gradient_tape

        return getattr(gradient_tape, name)
    raise AttributeError(f"module 'kerasish.tape' has no attribute {name!r}")
