"""kerasish: Keras's API on our own Numba kernels (CUDA, with a fast CPU twin).

    import kerasish as keras
    model = keras.Sequential([keras.Input((784,)), keras.layers.Dense(10, "softmax")])
"""

__version__ = "0.1.0"

from kerasish import (  # noqa: E402,F401
    activations,
    backend,
    callbacks,
    config,
    constraints,
    data,
    datasets,
    initializers,
    layers,
    losses,
    metrics,
    models,
    optimizers,
    random,
    regularizers,
    utils,
)
from kerasish.device_scope import device  # noqa: E402,F401
from kerasish.layers import Input  # noqa: E402,F401
from kerasish.models import Model, Sequential  # noqa: E402,F401
from kerasish import ops  # noqa: E402,F401 - keras.ops (after models: ops nodes are layers)
from kerasish import applications  # noqa: E402,F401 - built from models and layers
from kerasish.tape.gradient_tape import GradientTape, UnconnectedGradients  # noqa: E402,F401


def __getattr__(name):
    # `keras.saving.load_model(...)` without paying for h5py at `import kerasish`.
    if name == "saving":
        import kerasish.saving

        return kerasish.saving
    raise AttributeError(f"module 'kerasish' has no attribute {name!r}")


__all__ = ["Sequential", "Model", "Input", "layers", "models", "optimizers", "losses",
           "metrics", "activations", "initializers", "callbacks", "utils", "data", "datasets",
           "config", "backend", "saving", "random", "device", "GradientTape",
           "UnconnectedGradients"]
