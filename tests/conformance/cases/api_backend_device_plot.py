"""backend.backend() names a backend user code can branch on; keras.device("cpu") scopes
model building; utils.plot_model without pydot (not installed here) raises Keras's ImportError."""

import os
import sys

import numpy as np

import kerasish as keras

with keras.device("cpu"):
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(2)])
    model.set_weights([np.ones((3, 2), "float32"), np.zeros(2, "float32")])
    predicted = model.predict(np.ones((1, 3), "float32"), verbose=0)

# A script, not a notebook (in one, both print the message and return): pydot is absent.
notebook = sys.modules.pop("IPython.core.magics.namespace", None)
try:
    keras.utils.plot_model(model, to_file=os.path.join(WORKDIR, "model.png"))
    plot = "drawn"
except ImportError as e:
    plot = str(e)
if notebook is not None:
    sys.modules["IPython.core.magics.namespace"] = notebook

RESULT = {
    "backend_known": keras.backend.backend() in ("tensorflow", "jax", "torch", "numpy"),
    "floatx": keras.backend.floatx(),
    "predicted": predicted,
    "plot": plot,
    "plot_file": os.path.exists(os.path.join(WORKDIR, "model.png")),
}
