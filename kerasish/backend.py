"""kerasish.backend: the parts of `keras.backend` that Keras scripts call.

`backend()` answers "numpy": user code that branches on Keras's backend name
(`if keras.backend.backend() == "tensorflow": ...`) must take the path that treats
tensors as NumPy arrays, which is what kerasish gives back (eager results are
ndarrays; `.numpy()` also works). No TensorFlow, JAX or torch path applies, and
Keras's own NumPy backend is the one whose user-facing tensors are the same kind.
"""

from kerasish.config import epsilon, floatx, image_data_format
from kerasish.utils import clear_session

__all__ = ["backend", "clear_session", "epsilon", "floatx", "image_data_format"]


def backend():
    """The backend name user code branches on: "numpy" (see the module docstring)."""
    return "numpy"
